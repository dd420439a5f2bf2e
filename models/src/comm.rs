//! Communication patterns: the comm runs table (`augur collect comm`), a per-collective tree
//! that picks a pattern from the message features, its export, and its evaluation against NCCL
//! alone, fixed size cutoffs and the per-size oracle, with bus bandwidth tables and an SVG plot.
//!
//! A comm run row is one (collective, dtype, world size, bytes, pattern) with the median
//! seconds per call. Sizes and bus bandwidth follow nccl-tests (see `augur_features::message`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use augur_features::attention::Dtype;
use augur_features::message::{Collective, LinkType, MessageFeatures, MessageShape};
use augur_features::FeatureSchema;
use serde::{Deserialize, Serialize};

use crate::tree::{clean, Tree};
use crate::ModelError;

/// Columns before the features.
pub const HEAD: [&str; 10] = [
    "collective",
    "dtype",
    "bytes",
    "world",
    "link",
    "gpus",
    "device",
    "driver",
    "augur_version",
    "schema_version",
];
/// Columns after the features.
pub const TAIL: [&str; 9] = [
    "pattern",
    "status",
    "error",
    "median_s",
    "algbw_gbs",
    "busbw_gbs",
    "reps",
    "batch",
    "check",
];

/// The header of a comm runs CSV.
pub fn header() -> Vec<String> {
    let mut h: Vec<String> = HEAD.iter().map(|s| s.to_string()).collect();
    h.extend(MessageFeatures::schema().names().map(|n| format!("f_{n}")));
    h.extend(TAIL.iter().map(|s| s.to_string()));
    h
}

/// Whether a CSV header is a comm runs header (its first column).
pub fn is_comm_header(first_column: &str) -> bool {
    first_column == HEAD[0]
}

pub fn collective_name(c: Collective) -> &'static str {
    match c {
        Collective::AllReduce => "all-reduce",
        Collective::AllGather => "all-gather",
        Collective::ReduceScatter => "reduce-scatter",
    }
}

pub fn dtype_name(d: Dtype) -> &'static str {
    match d {
        Dtype::F16 => "f16",
        Dtype::Bf16 => "bf16",
        Dtype::F32 => "f32",
    }
}

fn link_name(l: LinkType) -> &'static str {
    match l {
        LinkType::Pcie => "pcie",
        LinkType::Nvlink => "nvlink",
        LinkType::SameDevice => "same-device",
    }
}

/// One measured (message, pattern).
#[derive(Debug, Clone, PartialEq)]
pub struct CommRun {
    pub shape: MessageShape,
    /// GPU ordinals, `0;1;2;3`.
    pub gpus: String,
    pub device: String,
    pub driver: String,
    pub augur_version: String,
    pub pattern: String,
    /// Seconds per call, None if it failed (`error`).
    pub median_s: Option<f64>,
    pub error: String,
    pub reps: usize,
    pub batch: usize,
    pub check: String,
}

impl CommRun {
    /// Algorithm bandwidth (bytes / time) and bus bandwidth (nccl-tests), GB/s.
    pub fn bandwidths(&self) -> Option<(f64, f64)> {
        let t = self.median_s?;
        let alg = self.shape.bytes as f64 / t / 1e9;
        Some((alg, alg * self.shape.collective.bus_factor(self.shape.world_size)))
    }

    /// The CSV fields.
    pub fn record(&self) -> Result<Vec<String>, ModelError> {
        let f = self
            .shape
            .features()
            .map_err(|e| ModelError::Train(e.to_string()))?;
        let mut r = vec![
            collective_name(self.shape.collective).to_string(),
            dtype_name(self.shape.dtype).to_string(),
            self.shape.bytes.to_string(),
            self.shape.world_size.to_string(),
            link_name(self.shape.link).to_string(),
            self.gpus.clone(),
            self.device.clone(),
            self.driver.clone(),
            self.augur_version.clone(),
            MessageFeatures::schema().version.to_string(),
        ];
        r.extend(f.values().iter().map(|v| format!("{v}")));
        r.push(self.pattern.clone());
        match (self.median_s, self.bandwidths()) {
            (Some(t), Some((alg, bus))) => {
                r.push("ok".into());
                r.push(String::new());
                r.push(format!("{t:e}"));
                r.push(format!("{alg:.3}"));
                r.push(format!("{bus:.3}"));
            }
            _ => {
                r.push("failed".into());
                r.push(self.error.replace(['\n', '\r'], " "));
                r.extend([String::new(), String::new(), String::new()]);
            }
        }
        r.push(self.reps.to_string());
        r.push(self.batch.to_string());
        r.push(self.check.clone());
        Ok(r)
    }
}

/// A comm runs table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommRuns {
    pub runs: Vec<CommRun>,
}

fn bad(path: &Path, line: u64, msg: impl Into<String>) -> ModelError {
    ModelError::Runs {
        path: path.to_path_buf(),
        line,
        msg: msg.into(),
    }
}

impl CommRuns {
    /// Read comm runs CSVs; a later row for the same (collective, dtype, world, bytes, gpus'
    /// device, pattern) replaces an earlier one. Errors name the file and line.
    pub fn read(paths: &[PathBuf]) -> Result<CommRuns, ModelError> {
        let expected = header();
        let nf = MessageFeatures::schema().features.len();
        let mut out: Vec<CommRun> = Vec::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for path in paths {
            let mut rdr = csv::ReaderBuilder::new()
                .flexible(false)
                .from_path(path)
                .map_err(|e| ModelError::Io {
                    path: path.clone(),
                    msg: e.to_string(),
                })?;
            let h: Vec<String> = rdr
                .headers()
                .map_err(|e| bad(path, 1, e.to_string()))?
                .iter()
                .map(String::from)
                .collect();
            if h != expected {
                let first = h
                    .iter()
                    .zip(&expected)
                    .position(|(a, b)| a != b)
                    .unwrap_or(h.len().min(expected.len()));
                return Err(bad(
                    path,
                    1,
                    format!(
                        "header is not a comm runs header of message schema v{} at column {}: \
                         found `{}`, expected `{}` (re-run `augur collect comm`)",
                        MessageFeatures::schema().version,
                        first + 1,
                        h.get(first).map_or("<end>", |s| s.as_str()),
                        expected.get(first).map_or("<end>", |s| s.as_str()),
                    ),
                ));
            }
            for rec in rdr.records() {
                let rec = rec.map_err(|e| {
                    let line = e.position().map_or(0, |p| p.line());
                    bad(path, line, e.to_string())
                })?;
                let line = rec.position().map_or(0, |p| p.line());
                let get = |i: usize| rec.get(i).unwrap_or("");
                let count = |i: usize| -> Result<usize, ModelError> {
                    get(i).parse::<usize>().map_err(|_| {
                        bad(
                            path,
                            line,
                            format!("column `{}`: `{}` is not a count", expected[i], get(i)),
                        )
                    })
                };
                let spec = format!(
                    "message:collective={},dtype={},bytes={},world={},link={}",
                    get(0),
                    get(1),
                    get(2),
                    get(3),
                    get(4)
                );
                let shape = MessageShape::parse(&spec).map_err(|e| bad(path, line, e.to_string()))?;
                let t = HEAD.len() + nf;
                let status = get(t + 1);
                let median_s = match status {
                    "ok" => {
                        let s = get(t + 3);
                        let v: f64 = s.parse().map_err(|_| {
                            bad(path, line, format!("column `median_s`: `{s}` is not a number"))
                        })?;
                        if !(v > 0.0 && v.is_finite()) {
                            return Err(bad(
                                path,
                                line,
                                format!("median_s {v} must be finite and > 0"),
                            ));
                        }
                        Some(v)
                    }
                    "failed" => None,
                    other => {
                        return Err(bad(
                            path,
                            line,
                            format!("status `{other}`: expected `ok` or `failed`"),
                        ))
                    }
                };
                let run = CommRun {
                    shape,
                    gpus: get(5).to_string(),
                    device: get(6).to_string(),
                    driver: get(7).to_string(),
                    augur_version: get(8).to_string(),
                    pattern: get(t).to_string(),
                    median_s,
                    error: get(t + 2).to_string(),
                    reps: count(t + 6)?,
                    batch: count(t + 7)?,
                    check: get(t + 8).to_string(),
                };
                if run.pattern.is_empty() {
                    return Err(bad(path, line, "empty pattern"));
                }
                let key = format!("{}|{}", message_key(&run), run.pattern);
                match index.get(&key) {
                    Some(&i) => out[i] = run,
                    None => {
                        index.insert(key, out.len());
                        out.push(run);
                    }
                }
            }
        }
        Ok(CommRuns { runs: out })
    }

    /// Write as CSV (header and every row).
    pub fn write(&self, w: impl Write) -> Result<(), ModelError> {
        let mut wr = csv::Writer::from_writer(w);
        let e = |e: csv::Error| ModelError::Io {
            path: PathBuf::from("<output>"),
            msg: e.to_string(),
        };
        wr.write_record(header()).map_err(e)?;
        for r in &self.runs {
            wr.write_record(r.record()?).map_err(e)?;
        }
        wr.flush().map_err(|x| ModelError::Io {
            path: PathBuf::from("<output>"),
            msg: x.to_string(),
        })
    }

    /// The messages (one per collective, dtype, world, bytes, device) with every pattern's run,
    /// in first-seen order.
    pub fn messages(&self) -> Vec<Message> {
        let mut order: Vec<String> = Vec::new();
        let mut by: BTreeMap<String, Message> = BTreeMap::new();
        for r in &self.runs {
            let key = message_key(r);
            let m = by.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                Message {
                    shape: r.shape.clone(),
                    device: r.device.clone(),
                    runs: Vec::new(),
                }
            });
            m.runs.push((r.pattern.clone(), r.median_s));
        }
        order
            .into_iter()
            .map(|k| by.remove(&k).expect("inserted"))
            .collect()
    }
}

fn message_key(r: &CommRun) -> String {
    format!(
        "{}|{}|{}|{}|{}",
        collective_name(r.shape.collective),
        dtype_name(r.shape.dtype),
        r.shape.world_size,
        r.shape.bytes,
        r.device
    )
}

/// The CSV text of one row (no header), for appending as rows come.
pub fn row_csv(run: &CommRun) -> Result<Vec<u8>, ModelError> {
    let mut wr = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    wr.write_record(run.record()?).map_err(|e| ModelError::Io {
        path: PathBuf::from("<buffer>"),
        msg: e.to_string(),
    })?;
    wr.into_inner().map_err(|e| ModelError::Io {
        path: PathBuf::from("<buffer>"),
        msg: e.to_string(),
    })
}

/// One message with every pattern measured on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub shape: MessageShape,
    pub device: String,
    /// (pattern, seconds per call or None if it failed).
    pub runs: Vec<(String, Option<f64>)>,
}

impl Message {
    pub fn time(&self, pattern: &str) -> Option<f64> {
        self.runs
            .iter()
            .find(|(p, _)| p == pattern)
            .and_then(|(_, t)| *t)
    }

    /// The fastest pattern and its time.
    pub fn oracle(&self) -> Option<(&str, f64)> {
        self.runs
            .iter()
            .filter_map(|(p, t)| t.map(|t| (p.as_str(), t)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    pub fn features(&self) -> Vec<f64> {
        self.shape
            .features()
            .map(|f| f.values().iter().map(|&v| clean(v)).collect())
            .unwrap_or_default()
    }
}
