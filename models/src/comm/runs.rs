//! The comm runs table (`augur collect comm`): rows, messages, completeness.

use super::*;

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

/// Whether a file is a comm runs CSV (by its header's first column; false when unreadable).
pub fn is_comm_runs_file(path: &Path) -> bool {
    crate::runs::first_column_is(path, HEAD[0])
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
        Some((
            alg,
            alg * self.shape.collective.bus_factor(self.shape.world_size),
        ))
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

impl CommRuns {
    /// Read comm runs CSVs; a later row for the same (collective, dtype, world, bytes, gpus'
    /// device, pattern) replaces an earlier one. Errors name the file and line.
    pub fn read(paths: &[PathBuf]) -> Result<CommRuns, ModelError> {
        let expected = header();
        let nf = MessageFeatures::schema().features.len();
        let mut out: Vec<CommRun> = Vec::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for path in paths {
            let mut rdr = open_csv(path, &expected, |col, found, want| {
                format!(
                    "header is not a comm runs header of message schema v{} at column {col}: \
                     found `{found}`, expected `{want}` (re-run `augur collect comm`)",
                    MessageFeatures::schema().version,
                )
            })?;
            for rec in crate::runs::records(path, &mut rdr) {
                let (rec, line) = rec?;
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
                let shape =
                    MessageShape::parse(&spec).map_err(|e| bad(path, line, e.to_string()))?;
                let t = HEAD.len() + nf;
                let status = get(t + 1);
                let median_s = crate::runs::status_median(path, line, status, get(t + 3))?;
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
                crate::runs::upsert(&mut out, &mut index, key, run);
            }
        }
        Ok(CommRuns { runs: out })
    }

    /// Write as CSV (header and every row).
    pub fn write(&self, w: impl Write) -> Result<(), ModelError> {
        crate::runs::write_table(w, header(), self.runs.iter().map(CommRun::record))
    }

    /// The messages (one per collective, dtype, world, bytes, device) with every pattern's run,
    /// in first-seen order.
    pub fn messages(&self) -> Vec<Message> {
        crate::runs::group_in_order(
            &self.runs,
            message_key,
            |r| Message {
                shape: r.shape.clone(),
                device: r.device.clone(),
                runs: Vec::new(),
            },
            |m, r| m.runs.push((r.pattern.clone(), r.median_s)),
        )
    }
}

/// The messages that were measured with every pattern any message of the same collective, GPU
/// count and size has (in either dtype), and how many were not. Runs collected at different
/// times can cover different patterns (a pattern added later); comparing a message over fewer
/// patterns than its size peers would teach a tree that the missing pattern loses there.
pub fn complete_messages(msgs: Vec<Message>) -> (Vec<Message>, usize) {
    let key = |m: &Message| {
        format!(
            "{}|{}|{}",
            collective_name(m.shape.collective),
            m.shape.world_size,
            m.shape.bytes
        )
    };
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in &msgs {
        let e = seen.entry(key(m)).or_default();
        for (p, _) in &m.runs {
            if !e.contains(p) {
                e.push(p.clone());
            }
        }
    }
    let before = msgs.len();
    let kept: Vec<Message> = msgs
        .into_iter()
        .filter(|m| {
            seen[&key(m)]
                .iter()
                .all(|p| m.runs.iter().any(|(q, _)| q == p))
        })
        .collect();
    let dropped = before - kept.len();
    (kept, dropped)
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
    crate::runs::row_bytes(run.record()?)
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
