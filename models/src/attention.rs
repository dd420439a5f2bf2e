//! Decode attention: the attention runs table (`augur collect attention`), one row per
//! (shape, schedule) with the median seconds per launch and the check against the f64
//! reference. Rows of schedule `fa2` are FlashAttention-2's split rule run on augur's split-KV
//! kernel (the baseline of issue 8), with its split count in `fa2_splits`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use augur_features::attention::{AttentionFeatures, AttentionShape};
use serde::Serialize;

use crate::runs::{bad, open_csv};
use crate::ModelError;

/// Columns before the features.
pub const HEAD: [&str; 5] = [
    "shape",
    "device",
    "driver",
    "augur_version",
    "schema_version",
];
/// Columns after the features.
pub const TAIL: [&str; 8] = [
    "schedule",
    "status",
    "error",
    "median_s",
    "live_kv_gbs",
    "reps",
    "check_max_error",
    "fa2_splits",
];

/// The name of the FlashAttention-2 rule's rows.
pub const FA2: &str = "fa2";

/// The header of an attention runs CSV.
pub fn header() -> Vec<String> {
    let mut h: Vec<String> = HEAD.iter().map(|s| s.to_string()).collect();
    h.extend(
        AttentionFeatures::schema()
            .names()
            .map(|n| format!("f_{n}")),
    );
    h.extend(TAIL.iter().map(|s| s.to_string()));
    h
}

/// Whether a file is an attention runs CSV (by its header's first column).
pub fn is_attention_runs_file(path: &Path) -> bool {
    csv::Reader::from_path(path)
        .ok()
        .and_then(|mut r| {
            r.headers()
                .ok()
                .and_then(|h| h.get(0).map(|c| c == HEAD[0]))
        })
        .unwrap_or(false)
}

/// One measured (shape, schedule).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttentionRun {
    /// The shape's spec (`attention:q_heads=..,lens=..`).
    pub spec: String,
    pub device: String,
    pub driver: String,
    pub augur_version: String,
    pub schedule: String,
    /// Seconds per launch (median), None if it failed (`error`).
    pub median_s: Option<f64>,
    pub error: String,
    /// K and V bytes of the live tokens (for GB/s).
    pub kv_bytes: f64,
    pub reps: usize,
    /// Largest |o - reference| over the checked outputs; None when not checked.
    pub check_max_error: Option<f64>,
    pub fa2_splits: usize,
}

impl AttentionRun {
    /// The CSV fields.
    pub fn record(&self) -> Result<Vec<String>, ModelError> {
        let shape = AttentionShape::parse(&self.spec)
            .map_err(|e| ModelError::Train(format!("{}: {e}", self.spec)))?;
        let f = shape
            .features()
            .map_err(|e| ModelError::Train(format!("{}: {e}", self.spec)))?;
        let mut r = vec![
            self.spec.clone(),
            self.device.clone(),
            self.driver.clone(),
            self.augur_version.clone(),
            AttentionFeatures::schema().version.to_string(),
        ];
        r.extend(f.values().iter().map(|v| format!("{v}")));
        r.push(self.schedule.clone());
        match self.median_s {
            Some(t) => {
                r.push("ok".into());
                r.push(String::new());
                r.push(format!("{t:e}"));
                r.push(format!("{:.1}", self.kv_bytes / t / 1e9));
            }
            None => {
                r.push("failed".into());
                r.push(self.error.replace(['\n', '\r'], " "));
                r.extend([String::new(), String::new()]);
            }
        }
        r.push(self.reps.to_string());
        r.push(
            self.check_max_error
                .map_or(String::new(), |e| format!("{e:e}")),
        );
        r.push(self.fa2_splits.to_string());
        Ok(r)
    }
}

/// An attention runs table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttentionRuns {
    pub runs: Vec<AttentionRun>,
}

/// One shape with every schedule's run.
#[derive(Debug, Clone)]
pub struct AttentionCase {
    pub spec: String,
    pub shape: AttentionShape,
    pub device: String,
    /// (schedule, seconds or None when it failed), `fa2` included.
    pub runs: Vec<(String, Option<f64>)>,
    pub fa2_splits: usize,
}

impl AttentionCase {
    pub fn time(&self, schedule: &str) -> Option<f64> {
        self.runs
            .iter()
            .find(|(s, _)| s == schedule)
            .and_then(|(_, t)| *t)
    }

    /// The fastest schedule that ran (the `fa2` row is a rule, not a schedule).
    pub fn oracle(&self) -> Option<(&str, f64)> {
        self.runs
            .iter()
            .filter(|(s, _)| s != FA2)
            .filter_map(|(s, t)| t.map(|t| (s.as_str(), t)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }
}

impl AttentionRuns {
    /// Read attention runs CSVs; a later row for the same (shape, device, schedule) replaces
    /// an earlier one. Errors name the file and line.
    pub fn read(paths: &[PathBuf]) -> Result<AttentionRuns, ModelError> {
        let expected = header();
        let nf = AttentionFeatures::schema().features.len();
        let t = HEAD.len() + nf;
        let mut out: Vec<AttentionRun> = Vec::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for path in paths {
            let mut rdr = open_csv(path, &expected, |col, found, want| {
                format!(
                    "header is not an attention runs header of attention schema v{} at column \
                     {col}: found `{found}`, expected `{want}` (re-run `augur collect attention`)",
                    AttentionFeatures::schema().version,
                )
            })?;
            for rec in rdr.records() {
                let rec = rec.map_err(|e| {
                    let line = e.position().map_or(0, |p| p.line());
                    bad(path, line, e.to_string())
                })?;
                let line = rec.position().map_or(0, |p| p.line());
                let get = |i: usize| rec.get(i).unwrap_or("");
                let number = |i: usize| -> Result<f64, ModelError> {
                    get(i).parse::<f64>().map_err(|_| {
                        bad(
                            path,
                            line,
                            format!("column `{}`: `{}` is not a number", expected[i], get(i)),
                        )
                    })
                };
                let spec = get(0).to_string();
                let shape = AttentionShape::parse(&spec)
                    .map_err(|e| bad(path, line, format!("shape `{spec}`: {e}")))?;
                let kv_bytes = shape
                    .features()
                    .map_err(|e| bad(path, line, e.to_string()))?
                    .kv_bytes;
                let median_s = match get(t + 1) {
                    "ok" => {
                        let v = number(t + 3)?;
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
                let check_max_error = match get(t + 6) {
                    "" => None,
                    _ => Some(number(t + 6)?),
                };
                let run = AttentionRun {
                    spec,
                    device: get(1).to_string(),
                    driver: get(2).to_string(),
                    augur_version: get(3).to_string(),
                    schedule: get(t).to_string(),
                    median_s,
                    error: get(t + 2).to_string(),
                    kv_bytes,
                    reps: number(t + 5)? as usize,
                    check_max_error,
                    fa2_splits: number(t + 7)? as usize,
                };
                if run.schedule.is_empty() {
                    return Err(bad(path, line, "empty schedule"));
                }
                let key = format!("{}|{}|{}", run.spec, run.device, run.schedule);
                match index.get(&key) {
                    Some(&i) => out[i] = run,
                    None => {
                        index.insert(key, out.len());
                        out.push(run);
                    }
                }
            }
        }
        Ok(AttentionRuns { runs: out })
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

    /// The shapes (one per spec and device) with every schedule's run, in first-seen order.
    pub fn cases(&self) -> Vec<AttentionCase> {
        let mut order: Vec<String> = Vec::new();
        let mut by: BTreeMap<String, AttentionCase> = BTreeMap::new();
        for r in &self.runs {
            let key = format!("{}|{}", r.spec, r.device);
            let c = by.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                AttentionCase {
                    spec: r.spec.clone(),
                    shape: AttentionShape::parse(&r.spec).expect("parsed when read"),
                    device: r.device.clone(),
                    runs: Vec::new(),
                    fa2_splits: r.fa2_splits,
                }
            });
            c.runs.push((r.schedule.clone(), r.median_s));
        }
        order
            .into_iter()
            .map(|k| by.remove(&k).expect("key"))
            .collect()
    }
}

/// One CSV row of `run` (header excluded), for writers that append as they measure.
pub fn row_csv(run: &AttentionRun) -> Result<Vec<u8>, ModelError> {
    let mut wr = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    wr.write_record(run.record()?)
        .map_err(|e| ModelError::Train(e.to_string()))?;
    wr.into_inner()
        .map_err(|e| ModelError::Train(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(spec: &str, schedule: &str, t: Option<f64>) -> AttentionRun {
        AttentionRun {
            spec: spec.into(),
            device: "GPU".into(),
            driver: "13.0".into(),
            augur_version: "0".into(),
            schedule: schedule.into(),
            median_s: t,
            error: if t.is_none() {
                "boom\nline".into()
            } else {
                String::new()
            },
            kv_bytes: 0.0,
            reps: 10,
            check_max_error: t.map(|_| 1e-7),
            fa2_splits: 3,
        }
    }

    #[test]
    fn runs_round_trip_and_group_into_cases() {
        let a = "attention:q_heads=8,kv_heads=2,head_dim=64,dtype=bf16,lens=100;7";
        let b = "attention:q_heads=4,head_dim=128,dtype=f16,lens=3*5,page=16";
        let runs = AttentionRuns {
            runs: vec![
                run(a, "gqa", Some(2e-5)),
                run(a, "split-2", Some(1e-5)),
                run(a, FA2, Some(5e-6)),
                run(b, "gqa", None),
                run(b, "head", Some(3e-6)),
            ],
        };
        let dir = std::env::temp_dir().join(format!("augur-att-runs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("runs.csv");
        let mut buf = Vec::new();
        runs.write(&mut buf).unwrap();
        std::fs::write(&p, &buf).unwrap();
        assert!(is_attention_runs_file(&p));
        let back = AttentionRuns::read(std::slice::from_ref(&p)).unwrap();
        assert_eq!(back.runs.len(), 5);
        assert_eq!(back.runs[3].median_s, None);
        assert_eq!(back.runs[3].error, "boom line");
        assert!(back.runs[0].kv_bytes > 0.0);
        let cases = back.cases();
        assert_eq!(cases.len(), 2);
        // The fa2 row is faster but is a rule, not a schedule.
        assert_eq!(cases[0].oracle(), Some(("split-2", 1e-5)));
        assert_eq!(cases[0].time(FA2), Some(5e-6));
        assert_eq!(cases[1].oracle(), Some(("head", 3e-6)));
        // A bad row names its file and line.
        let text = String::from_utf8(buf).unwrap();
        let broken = text.replacen(",ok,", ",maybe,", 1);
        std::fs::write(&p, broken).unwrap();
        let e = AttentionRuns::read(std::slice::from_ref(&p))
            .unwrap_err()
            .to_string();
        assert!(e.contains("runs.csv:2:") && e.contains("maybe"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
