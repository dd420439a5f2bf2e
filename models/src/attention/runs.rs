//! The attention runs table (`augur collect attention`): one row per (shape, schedule).

use super::*;

/// Columns before the features.
pub const HEAD: [&str; 5] = [
    "shape",
    "device",
    "driver",
    "augur_version",
    "schema_version",
];
/// Columns after the features.
pub const TAIL: [&str; 12] = [
    "schedule",
    "status",
    "error",
    "median_s",
    "timing",
    "latency_s",
    "graph_s",
    "batch",
    "live_kv_gbs",
    "reps",
    "check_max_error",
    "fa2_splits",
];

/// How `median_s` is timed (runs format 2, issue 17): launches back to back between two events.
pub const TIMING: &str = "throughput";

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
    crate::runs::first_column_is(path, HEAD[0])
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
    /// Seconds per launch (median) in throughput mode (launches back to back between two
    /// events: the label figure), None if it failed (`error`).
    pub median_s: Option<f64>,
    /// One launch from an idle stream, launch cost included (median).
    pub latency_s: Option<f64>,
    /// Launches replayed from a CUDA graph (median; None where not captured).
    pub graph_s: Option<f64>,
    /// Launches per throughput/graph sample.
    pub batch: usize,
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
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:e}"));
        match self.median_s {
            Some(t) => {
                r.push("ok".into());
                r.push(String::new());
                r.push(format!("{t:e}"));
                r.push(TIMING.into());
                r.push(opt(self.latency_s));
                r.push(opt(self.graph_s));
                r.push(self.batch.to_string());
                r.push(format!("{:.1}", self.kv_bytes / t / 1e9));
            }
            None => {
                r.push("failed".into());
                r.push(self.error.replace(['\n', '\r'], " "));
                r.extend(vec![String::new(); 6]);
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
                if want == "timing" && found == "live_kv_gbs" {
                    return "attention runs format 1 (one per-launch figure with the host's \
                            launch latency inside, before issue 17): re-run `augur collect \
                            attention`"
                        .to_string();
                }
                format!(
                    "header is not an attention runs header of attention schema v{} at column \
                     {col}: found `{found}`, expected `{want}` (re-run `augur collect attention`)",
                    AttentionFeatures::schema().version,
                )
            })?;
            for rec in crate::runs::records(path, &mut rdr) {
                let (rec, line) = rec?;
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
                let median_s = crate::runs::status_median(path, line, get(t + 1), get(t + 3))?;
                let opt = |i: usize| -> Result<Option<f64>, ModelError> {
                    match get(i) {
                        "" => Ok(None),
                        _ => number(i).map(Some),
                    }
                };
                let check_max_error = opt(t + 10)?;
                let (latency_s, graph_s) = (opt(t + 5)?, opt(t + 6)?);
                if median_s.is_some() && get(t + 4) != TIMING {
                    return Err(bad(
                        path,
                        line,
                        format!("column `timing`: `{}`, expected `{TIMING}`", get(t + 4)),
                    ));
                }
                if [latency_s, graph_s]
                    .iter()
                    .flatten()
                    .any(|v| !(*v > 0.0 && v.is_finite()))
                {
                    return Err(bad(
                        path,
                        line,
                        "latency_s and graph_s must be finite and > 0",
                    ));
                }
                let run = AttentionRun {
                    spec,
                    device: get(1).to_string(),
                    driver: get(2).to_string(),
                    augur_version: get(3).to_string(),
                    schedule: get(t).to_string(),
                    median_s,
                    latency_s,
                    graph_s,
                    batch: if get(t + 7).is_empty() {
                        0
                    } else {
                        number(t + 7)? as usize
                    },
                    error: get(t + 2).to_string(),
                    kv_bytes,
                    reps: number(t + 9)? as usize,
                    check_max_error,
                    fa2_splits: number(t + 11)? as usize,
                };
                if run.schedule.is_empty() {
                    return Err(bad(path, line, "empty schedule"));
                }
                let key = format!("{}|{}|{}", run.spec, run.device, run.schedule);
                crate::runs::upsert(&mut out, &mut index, key, run);
            }
        }
        Ok(AttentionRuns { runs: out })
    }

    /// Write as CSV (header and every row).
    pub fn write(&self, w: impl Write) -> Result<(), ModelError> {
        crate::runs::write_table(w, header(), self.runs.iter().map(AttentionRun::record))
    }

    /// The shapes (one per spec and device) with every schedule's run, in first-seen order.
    pub fn cases(&self) -> Vec<AttentionCase> {
        crate::runs::group_in_order(
            &self.runs,
            |r| format!("{}|{}", r.spec, r.device),
            |r| AttentionCase {
                spec: r.spec.clone(),
                shape: AttentionShape::parse(&r.spec).expect("parsed when read"),
                device: r.device.clone(),
                runs: Vec::new(),
                fa2_splits: r.fa2_splits,
            },
            |c, r| c.runs.push((r.schedule.clone(), r.median_s)),
        )
    }
}

/// One CSV row of `run` (header excluded), for writers that append as they measure.
pub fn row_csv(run: &AttentionRun) -> Result<Vec<u8>, ModelError> {
    crate::runs::row_bytes(run.record()?)
}
