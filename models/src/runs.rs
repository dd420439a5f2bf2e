//! The runs table: what `augur collect` measured, one CSV row per (matrix, kernel).
//!
//! Every row carries the matrix's identity and family (for grouped cross-validation), its SpMV
//! features in schema order (columns `f_<name>`), what gathering them cost, and one kernel's setup
//! and per-call medians, or `failed` with the error.
//!
//! Runs format 2 (issue 17): every kernel row says how its per-call figure was timed (`timing`:
//! `throughput`, N calls back to back between two events, on a GPU; `wall`, a host clock around
//! each call, on the CPU) and carries, apart, the latency of one call from an idle stream
//! (`latency_s`, launch cost included) and on a GPU the throughput and graph-replay figures side
//! by side (`throughput_s`, `graph_s`, `batch` calls per timed sample). Format 1 had one
//! per-launch figure that included the host's launch latency; it is refused with "re-collect". The file is append-only: a row that is
//! repeated later (a resumed or re-run collection) replaces the earlier one when read. A matrix is
//! identified by its name and its source (file path or spec): two files of one name in two folders
//! are two matrices (issue 19).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use augur_features::spmv::SpmvFeatures;
use augur_features::FeatureSchema;
use serde::{Deserialize, Serialize};

use crate::ModelError;

/// The fixed columns before the features.
pub const HEAD_COLUMNS: [&str; 20] = [
    "matrix",
    "family",
    "source",
    "rows",
    "cols",
    "nnz",
    "precision",
    "backend",
    "device",
    "driver",
    "augur_version",
    "schema_version",
    "iterations",
    "known_s",
    "gather_s",
    "sample_s",
    "upload_s",
    "upload_gather_s",
    "sample_upload_s",
    "gather_upload_s",
];
/// Head columns of the older runs formats still read, newest first: before the gathered tier
/// was timed on the host beside the upload (`gather_upload_s` unknown), before the sampled tier
/// was timed beside the upload (`sample_upload_s` unknown too), and before the upload was timed
/// (`upload_s` and `upload_gather_s` unknown too).
const HEAD_COLUMNS_OLDER: [usize; 3] = [19, 18, 16];
/// The fixed columns after the features.
pub const TAIL_COLUMNS: [&str; 11] = [
    "kernel",
    "status",
    "error",
    "setup_s",
    "per_iter_s",
    "timing",
    "latency_s",
    "throughput_s",
    "graph_s",
    "batch",
    "reps",
];

/// The longest time a runs file may record (seconds, about 28 hours): anything longer is damage,
/// not a measurement.
pub const MAX_SECONDS: f64 = 1e5;

/// How a row's `per_iter_s` was timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LabelTiming {
    /// Calls back to back between two GPU events, no host synchronisation inside.
    Throughput,
    /// Calls captured in a CUDA graph and replayed.
    Graph,
    /// A host clock around each call (CPU kernels).
    Wall,
}

impl LabelTiming {
    pub fn name(self) -> &'static str {
        match self {
            LabelTiming::Throughput => "throughput",
            LabelTiming::Graph => "graph",
            LabelTiming::Wall => "wall",
        }
    }

    pub fn parse(s: &str) -> Option<LabelTiming> {
        [
            LabelTiming::Throughput,
            LabelTiming::Graph,
            LabelTiming::Wall,
        ]
        .into_iter()
        .find(|m| m.name() == s)
    }
}

/// The header line of a runs CSV for the current SpMV schema.
pub fn header() -> Vec<String> {
    let mut h: Vec<String> = HEAD_COLUMNS.iter().map(|s| s.to_string()).collect();
    h.extend(SpmvFeatures::schema().names().map(|n| format!("f_{n}")));
    h.extend(TAIL_COLUMNS.iter().map(|s| s.to_string()));
    h
}

/// The header of runs of an older format with `head` head columns (still read).
fn header_with_head(head: usize) -> Vec<String> {
    let mut h = header();
    h.drain(head..HEAD_COLUMNS.len());
    h
}

/// What is known about one matrix in a collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixInfo {
    pub matrix: String,
    /// Grouping key for cross-validation: manifest family for files, generator + parameters
    /// without the seed for generated matrices.
    pub family: String,
    /// The file path or the generator spec it came from.
    pub source: String,
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    /// `f32` or `f64`.
    pub precision: String,
    /// `cpu` or `cuda`.
    pub backend: String,
    pub device: String,
    pub driver: String,
    pub augur_version: String,
    pub schema_version: u32,
    /// The iteration counts the collection was made for, e.g. `1;10;100`.
    pub iterations: String,
    /// Seconds for the known features.
    pub known_s: f64,
    /// Seconds to compute the gathered tier (the known and exact features) on the backend, as a
    /// plan computes it (median; on a GPU the device pass and the copy back). Runs collected
    /// before the tiers were separated also count the sampled tier here (a conservative charge).
    pub gather_s: f64,
    /// Seconds to compute the sampled tier on the host (median): what the sampled features cost.
    pub sample_s: f64,
    /// GPU runs: seconds a plan takes to copy the matrix to the device (median; None on the CPU
    /// and in runs collected before it was timed).
    pub upload_s: Option<f64>,
    /// GPU runs: seconds of the upload with the gathered tier computed during it, as a plan
    /// that gathers makes it (the device pass on the pattern while the values copy): `upload_s`
    /// plus the median difference of alternated pairs (at least 0). What gathering adds to a
    /// plan made from a host matrix is `upload_gather_s - upload_s`.
    pub upload_gather_s: Option<f64>,
    /// Seconds the sampled tier costs a plan made from a host matrix, as the plan computes it:
    /// on a worker beside the upload for a large matrix (what the plan's thread pays: the
    /// hand-off and any wait after the upload), before it for a small one (median; None in runs
    /// collected before it was timed).
    pub sample_upload_s: Option<f64>,
    /// GPU runs: seconds the gathered tier's row-length statistics cost a plan made from a host
    /// matrix when the host computes them from the row pointers beside the upload
    /// (`spmv::row_features`), as the sampled tier is: what the plan's thread pays (median; None
    /// in runs collected before it was timed). What a model whose gathered trees read no column
    /// statistics pays for that tier.
    pub gather_upload_s: Option<f64>,
    /// Every feature, schema order.
    pub features: Vec<f64>,
}

impl MatrixInfo {
    /// What the gathered tier adds to a plan made from a host matrix when the host computes it
    /// while the matrix uploads (seconds, >= 0); None where the runs did not time the upload.
    pub fn gather_during_upload_s(&self) -> Option<f64> {
        Some((self.upload_gather_s? - self.upload_s?).max(0.0))
    }

    /// The matrix's identity in a runs table: its name and where it came from (two files named
    /// `foo.mtx.gz` in different folders are two matrices; the name stays what is displayed).
    pub fn key(&self) -> (String, String) {
        (self.matrix.clone(), self.source.clone())
    }
}

/// One kernel measured on one matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRun {
    pub kernel: String,
    /// None when the kernel failed on this matrix (its error in `error`).
    pub timing: Option<Timing>,
    pub error: String,
}

/// Setup and per-call medians.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub setup_s: f64,
    /// Seconds per call in a loop, timed as `timing` says: the figure the labels use.
    pub per_iter_s: f64,
    pub timing: LabelTiming,
    /// Seconds of one call from an idle stream, the host's launch cost included (= per_iter_s
    /// for wall-clock timing).
    pub latency_s: f64,
    /// GPU: calls back to back between two events.
    pub throughput_s: Option<f64>,
    /// GPU: calls replayed from a CUDA graph (None where they could not be captured).
    pub graph_s: Option<f64>,
    /// Calls per timed throughput/graph sample (1 for wall-clock timing).
    pub batch: usize,
    /// Timed samples behind the medians.
    pub reps: usize,
}

impl Timing {
    /// A host-clock timing (CPU kernels): one figure serves every mode.
    pub fn wall(setup_s: f64, per_iter_s: f64, reps: usize) -> Timing {
        Timing {
            setup_s,
            per_iter_s,
            timing: LabelTiming::Wall,
            latency_s: per_iter_s,
            throughput_s: None,
            graph_s: None,
            batch: 1,
            reps,
        }
    }
}

#[cfg(test)]
impl MatrixInfo {
    /// A test matrix of the synthetic backend and device: no feature or gathering cost, no
    /// upload timings.
    pub(crate) fn synthetic(
        matrix: String,
        family: String,
        (rows, nnz): (usize, usize),
        iterations: &str,
        features: Vec<f64>,
    ) -> MatrixInfo {
        MatrixInfo {
            matrix,
            family,
            source: "synthetic".into(),
            rows,
            cols: rows,
            nnz,
            precision: "f32".into(),
            backend: "test".into(),
            device: "synthetic".into(),
            driver: String::new(),
            augur_version: "0".into(),
            schema_version: augur_features::spmv::SpmvFeatures::schema().version,
            iterations: iterations.into(),
            known_s: 0.0,
            gather_s: 0.0,
            sample_s: 0.0,
            upload_s: None,
            upload_gather_s: None,
            sample_upload_s: None,
            gather_upload_s: None,
            features,
        }
    }
}

impl KernelRun {
    /// Total seconds for `k` calls: setup, the first call at its latency (launch cost included),
    /// and the other k - 1 at the per-call figure of a loop (None if it failed).
    pub fn cost(&self, k: f64) -> Option<f64> {
        self.timing
            .map(|t| t.setup_s + t.latency_s + (k - 1.0).max(0.0) * t.per_iter_s)
    }
}

/// All kernels measured on one matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixRuns {
    pub info: MatrixInfo,
    pub kernels: Vec<KernelRun>,
}

impl MatrixRuns {
    /// The features as the struct.
    pub fn features(&self) -> SpmvFeatures {
        SpmvFeatures::from_values(&self.info.features).expect("checked when read")
    }
}

/// A runs table: matrices in first-seen order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Runs {
    pub matrices: Vec<MatrixRuns>,
}

pub(crate) fn bad(path: &Path, line: u64, msg: impl Into<String>) -> ModelError {
    ModelError::Runs {
        path: path.to_path_buf(),
        line,
        msg: msg.into(),
    }
}

/// Open a CSV whose header must be `expected`; a different header is an error at line 1 naming
/// the first differing column, its text made by `describe(column, found, expected)`.
pub(crate) fn open_csv(
    path: &Path,
    expected: &[String],
    describe: impl Fn(usize, &str, &str) -> String,
) -> Result<CsvReader, ModelError> {
    open_csv_one_of(path, &[expected], describe).map(|(rdr, _)| rdr)
}

/// A CSV reader over a runs file.
pub type CsvReader = csv::Reader<Box<dyn std::io::Read>>;

/// `builder`'s reader over the file at `path`, gunzipped as it is read when the name ends in
/// `.gz` (every runs table reads either way: `augur train runs.csv.gz`).
pub fn csv_reader(builder: &csv::ReaderBuilder, path: &Path) -> Result<CsvReader, ModelError> {
    let file = std::fs::File::open(path).map_err(|e| ModelError::Io {
        path: path.to_path_buf(),
        msg: e.to_string(),
    })?;
    let read: Box<dyn std::io::Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(std::io::BufReader::new(
            file,
        )))
    } else {
        Box::new(file)
    };
    Ok(builder.from_reader(read))
}

/// [`open_csv`] for a file whose header may be any of `accepted` (the current one first, then
/// older ones still read); returns the reader and which header it has. A header that is none
/// of them is described against the first.
pub(crate) fn open_csv_one_of(
    path: &Path,
    accepted: &[&[String]],
    describe: impl Fn(usize, &str, &str) -> String,
) -> Result<(CsvReader, usize), ModelError> {
    let mut rdr = csv_reader(csv::ReaderBuilder::new().flexible(false), path)?;
    let h: Vec<String> = rdr
        .headers()
        .map_err(|e| bad(path, 1, e.to_string()))?
        .iter()
        .map(String::from)
        .collect();
    if let Some(i) = accepted.iter().position(|a| h[..] == a[..]) {
        return Ok((rdr, i));
    }
    let expected = accepted[0];
    let first = h
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(h.len().min(expected.len()));
    Err(bad(
        path,
        1,
        describe(
            first + 1,
            h.get(first).map_or("<end>", |s| s.as_str()),
            expected.get(first).map_or("<end>", |s| s.as_str()),
        ),
    ))
}

impl Runs {
    /// Read one or more runs CSVs (rows of later files and later lines replace earlier ones with the
    /// same matrix and kernel). Errors name the file and line.
    pub fn read(paths: &[PathBuf]) -> Result<Runs, ModelError> {
        let mut order: Vec<(String, String)> = Vec::new();
        let mut by: BTreeMap<(String, String), (MatrixInfo, Vec<KernelRun>)> = BTreeMap::new();
        let current = header();
        let older = HEAD_COLUMNS_OLDER.map(header_with_head);
        for path in paths {
            // Runs of older formats lack the later cost columns: still read.
            let accepted: [&[String]; 4] = [&current, &older[0], &older[1], &older[2]];
            let (mut rdr, which) = open_csv_one_of(path, &accepted, |col, found, want| {
                if want == "timing" && found == "reps" {
                    return "runs format 1 (one per-launch figure with the host's launch latency \
                            inside, before issue 17): re-collect with this augur's `augur collect`"
                        .to_string();
                }
                format!(
                    "header does not match SpMV schema v{} at column {col}: found `{found}`, \
                     expected `{want}` (collected with another feature schema? re-run `augur collect`)",
                    SpmvFeatures::schema().version,
                )
            })?;
            let expected = accepted[which];
            let head = match which {
                0 => HEAD_COLUMNS.len(),
                i => HEAD_COLUMNS_OLDER[i - 1],
            };
            let nf = SpmvFeatures::schema().features.len();
            for rec in rdr.records() {
                let rec = rec.map_err(|e| {
                    let line = e.position().map_or(0, |p| p.line());
                    bad(path, line, e.to_string())
                })?;
                let line = rec.position().map_or(0, |p| p.line());
                let get = |i: usize| rec.get(i).unwrap_or("");
                let num = |i: usize| -> Result<f64, ModelError> {
                    let s = get(i);
                    s.parse::<f64>().map_err(|_| {
                        bad(
                            path,
                            line,
                            format!("column `{}`: `{s}` is not a number", expected[i]),
                        )
                    })
                };
                let int = |i: usize| -> Result<usize, ModelError> {
                    let s = get(i);
                    s.parse::<usize>().map_err(|_| {
                        bad(
                            path,
                            line,
                            format!("column `{}`: `{s}` is not a count", expected[i]),
                        )
                    })
                };
                let mut features = Vec::with_capacity(nf);
                for i in 0..nf {
                    let c = head + i;
                    let v = num(c)?;
                    if !v.is_finite() {
                        return Err(bad(
                            path,
                            line,
                            format!("column `{}`: feature {v} is not finite", expected[c]),
                        ));
                    }
                    features.push(v);
                }
                // Costs: finite, >= 0, and below MAX_SECONDS (a time of 1e308 is damage, not a
                // measurement, and would turn every cost sum infinite).
                let seconds = |i: usize| -> Result<f64, ModelError> {
                    let v = num(i)?;
                    if !(0.0..=MAX_SECONDS).contains(&v) {
                        return Err(bad(
                            path,
                            line,
                            format!(
                                "column `{}`: {v} s is not a time in 0..={MAX_SECONDS:e} s",
                                expected[i]
                            ),
                        ));
                    }
                    Ok(v)
                };
                let (known_s, gather_s, sample_s) = (seconds(13)?, seconds(14)?, seconds(15)?);
                let optional = |i: usize| -> Result<Option<f64>, ModelError> {
                    if head <= i || get(i).is_empty() {
                        Ok(None)
                    } else {
                        seconds(i).map(Some)
                    }
                };
                let (upload_s, upload_gather_s) = (optional(16)?, optional(17)?);
                let sample_upload_s = optional(18)?;
                let gather_upload_s = optional(19)?;
                let info = MatrixInfo {
                    matrix: get(0).to_string(),
                    family: get(1).to_string(),
                    source: get(2).to_string(),
                    rows: int(3)?,
                    cols: int(4)?,
                    nnz: int(5)?,
                    precision: get(6).to_string(),
                    backend: get(7).to_string(),
                    device: get(8).to_string(),
                    driver: get(9).to_string(),
                    augur_version: get(10).to_string(),
                    schema_version: int(11)? as u32,
                    iterations: get(12).to_string(),
                    known_s,
                    gather_s,
                    sample_s,
                    upload_s,
                    upload_gather_s,
                    sample_upload_s,
                    gather_upload_s,
                    features,
                };
                if info.matrix.is_empty() {
                    return Err(bad(path, line, "empty matrix name"));
                }
                // The same column names can mean other values under another schema version
                // (v3 changed how `sampled_max_mean_ratio` is computed).
                let version = SpmvFeatures::schema().version;
                if info.schema_version != version {
                    return Err(bad(
                        path,
                        line,
                        format!(
                            "`{}` was collected with SpMV feature schema v{}, this augur computes \
                             v{version}: re-collect it (or its feature tiers: \
                             bench/tier-cost-gpu.sh and bench/patch_tier_costs.py)",
                            info.matrix, info.schema_version
                        ),
                    ));
                }
                let t = head + nf;
                let kernel = get(t).to_string();
                let status = get(t + 1);
                let run = match status {
                    "ok" => {
                        let opt = |i: usize| -> Result<Option<f64>, ModelError> {
                            if get(i).is_empty() {
                                Ok(None)
                            } else {
                                num(i).map(Some)
                            }
                        };
                        let mode = LabelTiming::parse(get(t + 5)).ok_or_else(|| {
                            bad(
                                path,
                                line,
                                format!(
                                    "column `timing`: `{}` is not throughput, graph or wall",
                                    get(t + 5)
                                ),
                            )
                        })?;
                        let timing = Timing {
                            setup_s: num(t + 3)?,
                            per_iter_s: num(t + 4)?,
                            timing: mode,
                            latency_s: num(t + 6)?,
                            throughput_s: opt(t + 7)?,
                            graph_s: opt(t + 8)?,
                            batch: int(t + 9)?,
                            reps: int(t + 10)?,
                        };
                        let positive = |v: f64| v > 0.0 && v <= MAX_SECONDS;
                        let valid = (0.0..=MAX_SECONDS).contains(&timing.setup_s)
                            && positive(timing.per_iter_s)
                            && positive(timing.latency_s)
                            && timing.throughput_s.is_none_or(positive)
                            && timing.graph_s.is_none_or(positive);
                        if !valid {
                            return Err(bad(
                                path,
                                line,
                                format!(
                                    "kernel `{kernel}`: setup {} s must be in 0..={MAX_SECONDS:e} \
                                     s, per_iter_s {} s, latency_s {} s and the mode figures \
                                     in (0, {MAX_SECONDS:e}] s",
                                    timing.setup_s, timing.per_iter_s, timing.latency_s
                                ),
                            ));
                        }
                        KernelRun {
                            kernel,
                            timing: Some(timing),
                            error: String::new(),
                        }
                    }
                    "failed" => KernelRun {
                        kernel,
                        timing: None,
                        error: get(t + 2).to_string(),
                    },
                    other => {
                        return Err(bad(
                            path,
                            line,
                            format!("status `{other}`: expected `ok` or `failed`"),
                        ))
                    }
                };
                let entry = by.entry(info.key()).or_insert_with(|| {
                    order.push(info.key());
                    (info.clone(), Vec::new())
                });
                if entry.0.family != info.family || entry.0.nnz != info.nnz {
                    // A re-collection of the same matrix: the later one wins wholesale.
                    entry.1.clear();
                }
                entry.0 = info;
                match entry.1.iter_mut().find(|r| r.kernel == run.kernel) {
                    Some(r) => *r = run,
                    None => entry.1.push(run),
                }
            }
        }
        Ok(Runs {
            matrices: order
                .into_iter()
                .map(|m| {
                    let (info, kernels) = by.remove(&m).expect("every key was inserted");
                    MatrixRuns { info, kernels }
                })
                .collect(),
        })
    }

    /// Kernel names in first-seen order.
    pub fn kernel_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for m in &self.matrices {
            for r in &m.kernels {
                if !names.contains(&r.kernel) {
                    names.push(r.kernel.clone());
                }
            }
        }
        names
    }

    /// The feature schema of the runs (always the current SpMV one: `read` refuses others).
    pub fn schema(&self) -> FeatureSchema {
        SpmvFeatures::schema()
    }

    /// Write as CSV (header and every row), e.g. for `augur collect merge`.
    pub fn write(&self, w: impl Write) -> Result<(), ModelError> {
        let mut wr = csv::Writer::from_writer(w);
        let e = |e: csv::Error| ModelError::Io {
            path: PathBuf::from("<output>"),
            msg: e.to_string(),
        };
        wr.write_record(header()).map_err(e)?;
        for m in &self.matrices {
            for r in &m.kernels {
                wr.write_record(record(&m.info, r)).map_err(e)?;
            }
        }
        wr.flush().map_err(|x| ModelError::Io {
            path: PathBuf::from("<output>"),
            msg: x.to_string(),
        })
    }
}

/// The CSV fields of one row.
pub fn record(info: &MatrixInfo, run: &KernelRun) -> Vec<String> {
    let mut r = vec![
        info.matrix.clone(),
        info.family.clone(),
        info.source.clone(),
        info.rows.to_string(),
        info.cols.to_string(),
        info.nnz.to_string(),
        info.precision.clone(),
        info.backend.clone(),
        info.device.clone(),
        info.driver.clone(),
        info.augur_version.clone(),
        info.schema_version.to_string(),
        info.iterations.clone(),
        format!("{:e}", info.known_s),
        format!("{:e}", info.gather_s),
        format!("{:e}", info.sample_s),
        info.upload_s.map_or(String::new(), |v| format!("{v:e}")),
        info.upload_gather_s
            .map_or(String::new(), |v| format!("{v:e}")),
        info.sample_upload_s
            .map_or(String::new(), |v| format!("{v:e}")),
        info.gather_upload_s
            .map_or(String::new(), |v| format!("{v:e}")),
    ];
    r.extend(info.features.iter().map(|v| format!("{v}")));
    r.push(run.kernel.clone());
    match run.timing {
        Some(t) => {
            let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:e}"));
            r.push("ok".into());
            r.push(String::new());
            r.push(format!("{:e}", t.setup_s));
            r.push(format!("{:e}", t.per_iter_s));
            r.push(t.timing.name().into());
            r.push(format!("{:e}", t.latency_s));
            r.push(opt(t.throughput_s));
            r.push(opt(t.graph_s));
            r.push(t.batch.to_string());
            r.push(t.reps.to_string());
        }
        None => {
            r.push("failed".into());
            r.push(run.error.replace(['\n', '\r'], " "));
            r.extend(vec![String::new(); 7]);
            r.push("0".into());
        }
    }
    r
}

/// The rows of one matrix as CSV text (no header), written by `collect` in one `write_all` so
/// that a matrix's rows land together.
pub fn matrix_rows_csv(info: &MatrixInfo, runs: &[KernelRun]) -> Result<Vec<u8>, ModelError> {
    let mut wr = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    for r in runs {
        wr.write_record(record(info, r))
            .map_err(|e| ModelError::Io {
                path: PathBuf::from("<buffer>"),
                msg: e.to_string(),
            })?;
    }
    wr.into_inner().map_err(|e| ModelError::Io {
        path: PathBuf::from("<buffer>"),
        msg: e.to_string(),
    })
}

/// Whether a CSV file's header starts with `first` (false when unreadable): how `train`, `eval`
/// and `collect merge` tell the runs tables apart.
pub(crate) fn first_column_is(path: &Path, first: &str) -> bool {
    header_starts_with(path, &[first])
}

/// Whether the CSV at `path` has a header whose first columns are `columns` (reads the header
/// only).
pub(crate) fn header_starts_with(path: &Path, columns: &[&str]) -> bool {
    csv_reader(&csv::ReaderBuilder::new(), path)
        .ok()
        .and_then(|mut r| {
            r.headers()
                .ok()
                .map(|h| h.len() >= columns.len() && h.iter().zip(columns).all(|(a, b)| a == *b))
        })
        .unwrap_or(false)
}

/// Write `header` and `rows` as CSV.
pub(crate) fn write_table(
    w: impl std::io::Write,
    header: Vec<String>,
    rows: impl Iterator<Item = Result<Vec<String>, ModelError>>,
) -> Result<(), ModelError> {
    let io = |msg: String| ModelError::Io {
        path: std::path::PathBuf::from("<output>"),
        msg,
    };
    let mut wr = csv::Writer::from_writer(w);
    wr.write_record(header).map_err(|e| io(e.to_string()))?;
    for r in rows {
        wr.write_record(r?).map_err(|e| io(e.to_string()))?;
    }
    wr.flush().map_err(|e| io(e.to_string()))
}

/// One CSV row (no header), for writers that append rows as they measure.
pub(crate) fn row_bytes(fields: Vec<String>) -> Result<Vec<u8>, ModelError> {
    let io = |msg: String| ModelError::Io {
        path: std::path::PathBuf::from("<buffer>"),
        msg,
    };
    let mut wr = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    wr.write_record(fields).map_err(|e| io(e.to_string()))?;
    wr.into_inner().map_err(|e| io(e.to_string()))
}

/// Each record of `rdr` (from `path`) with its line, a malformed record an error at its line.
pub(crate) fn records<'a>(
    path: &'a Path,
    rdr: &'a mut CsvReader,
) -> impl Iterator<Item = Result<(csv::StringRecord, u64), ModelError>> + 'a {
    rdr.records().map(move |rec| {
        let rec =
            rec.map_err(|e| bad(path, e.position().map_or(0, |p| p.line()), e.to_string()))?;
        let line = rec.position().map_or(0, |p| p.line());
        Ok((rec, line))
    })
}

/// The seconds of a row by its status column: `ok` with a finite median > 0, or None for
/// `failed`; anything else is an error at the row's line.
pub(crate) fn status_median(
    path: &Path,
    line: u64,
    status: &str,
    median: &str,
) -> Result<Option<f64>, ModelError> {
    match status {
        "ok" => {
            let v: f64 = median.parse().map_err(|_| {
                bad(
                    path,
                    line,
                    format!("column `median_s`: `{median}` is not a number"),
                )
            })?;
            if !(v > 0.0 && v.is_finite()) {
                return Err(bad(
                    path,
                    line,
                    format!("median_s {v} must be finite and > 0"),
                ));
            }
            Ok(Some(v))
        }
        "failed" => Ok(None),
        other => Err(bad(
            path,
            line,
            format!("status `{other}`: expected `ok` or `failed`"),
        )),
    }
}

/// Push `v` under `key`, or replace the earlier entry with that key (first-seen order kept).
pub(crate) fn upsert<T>(
    out: &mut Vec<T>,
    index: &mut std::collections::BTreeMap<String, usize>,
    key: String,
    v: T,
) {
    match index.get(&key) {
        Some(&i) => out[i] = v,
        None => {
            index.insert(key, out.len());
            out.push(v);
        }
    }
}

/// Rows grouped by `key` in first-seen order: `new` makes a group from its first row, `add`
/// adds every row of the group (the first included).
pub(crate) fn group_in_order<R, G>(
    rows: &[R],
    key: impl Fn(&R) -> String,
    new: impl Fn(&R) -> G,
    add: impl Fn(&mut G, &R),
) -> Vec<G> {
    let mut groups: Vec<G> = Vec::new();
    let mut index: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for r in rows {
        let i = *index.entry(key(r)).or_insert_with(|| {
            groups.push(new(r));
            groups.len() - 1
        });
        add(&mut groups[i], r);
    }
    groups
}
