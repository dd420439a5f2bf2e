//! Reading `augur overlap tp` CSVs into layers (one shape on one GPU count, from one run).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use augur_features::attention::Dtype;
use augur_features::message::LinkType;
use augur_features::overlap::{OverlapOp, OverlapShape};

use crate::runs::bad;
use crate::ModelError;

/// The first columns of every `augur overlap tp` CSV.
const LEAD: [&str; 9] = [
    "device", "gpus", "op", "dtype", "m", "n", "k", "pattern", "passed",
];

/// One layer measured: its shape, every checked pattern's seconds per call, and the parts alone.
#[derive(Debug, Clone)]
pub struct Layer {
    pub device: String,
    /// The file it came from (one run: its times are compared with each other only).
    pub run: usize,
    pub shape: OverlapShape,
    pub times: Vec<(String, f64)>,
    pub gemm_s: Option<f64>,
    pub comm_s: Option<f64>,
    /// How its calls were timed (`augur overlap tp --start`): `held` or `barrier` (files
    /// without the column: `barrier`, the only way before it).
    pub start: String,
}

impl Layer {
    pub fn time(&self, pattern: &str) -> Option<f64> {
        self.times.iter().find(|t| t.0 == pattern).map(|t| t.1)
    }

    /// The fastest pattern and its time.
    pub fn oracle(&self) -> Option<(&str, f64)> {
        self.times
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(p, t)| (p.as_str(), *t))
    }

    /// The perfect overlap: max(GEMM alone, collective alone).
    pub fn bound(&self) -> Option<f64> {
        Some(self.gemm_s?.max(self.comm_s?))
    }

    /// The cross-validation group: the layer's weight (N, K).
    pub(super) fn group(&self) -> u64 {
        ((self.shape.n as u64) << 32) | self.shape.k as u64
    }
}

/// Read `augur overlap tp` CSVs (any of its headers: the columns are found by name). Patterns
/// whose check failed are left out; `sms` is the GPUs' SM count (for the tile waves; the CSVs
/// from before the features were added do not say it).
pub fn read_layers(paths: &[PathBuf], sms: usize) -> Result<Vec<Layer>, ModelError> {
    let mut layers: Vec<Layer> = Vec::new();
    for (run, path) in paths.iter().enumerate() {
        let mut rdr = crate::runs::csv_reader(&csv::ReaderBuilder::new(), path)?;
        let head = rdr
            .headers()
            .map_err(|e| bad(path, 1, e.to_string()))?
            .clone();
        let col = |name: &str| -> Result<usize, ModelError> {
            head.iter().position(|h| h == name).ok_or_else(|| {
                bad(
                    path,
                    1,
                    format!("no column `{name}`: not an `augur overlap tp` CSV"),
                )
            })
        };
        let cols = [
            "device", "gpus", "op", "dtype", "m", "n", "k", "pattern", "passed", "us",
        ]
        .map(col);
        let [device, gpus, op, dtype, m, n, k, pattern, passed, us] = cols;
        let (device, gpus, op, dtype, m, n, k) = (device?, gpus?, op?, dtype?, m?, n?, k?);
        let (pattern, passed, us) = (pattern?, passed?, us?);
        let link = head.iter().position(|h| h == "f_link_nvlink");
        let start = head.iter().position(|h| h == "start");
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for rec in crate::runs::records(path, &mut rdr) {
            let (rec, line) = rec?;
            let get = |i: usize| rec.get(i).unwrap_or("");
            let count = |i: usize, what: &str| -> Result<usize, ModelError> {
                get(i)
                    .parse::<usize>()
                    .map_err(|_| bad(path, line, format!("{what} `{}` is not a count", get(i))))
            };
            let op_v = OverlapOp::parse(get(op))
                .ok_or_else(|| bad(path, line, format!("op `{}` unknown", get(op))))?;
            let dtype_v = Dtype::parse(get(dtype))
                .ok_or_else(|| bad(path, line, format!("dtype `{}` unknown", get(dtype))))?;
            let link_v = match link.map(get) {
                Some("0") => LinkType::Pcie,
                _ => LinkType::Nvlink,
            };
            let shape = OverlapShape {
                op: op_v,
                m: count(m, "m")?,
                n: count(n, "n")?,
                k: count(k, "k")?,
                dtype: dtype_v,
                world_size: count(gpus, "gpus")?,
                link: link_v,
                sms,
            };
            shape
                .validate()
                .map_err(|e| bad(path, line, e.to_string()))?;
            let secs = get(us)
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| bad(path, line, format!("us `{}` is not a time", get(us))))?
                / 1e6;
            let start_v = match start.map(get) {
                None => "barrier",
                Some(v @ ("held" | "barrier")) => v,
                Some(v) => return Err(bad(path, line, format!("start `{v}`: held or barrier"))),
            };
            let key = format!("{}|{:?}", get(device), shape);
            let i = *index.entry(key).or_insert_with(|| {
                layers.push(Layer {
                    device: get(device).to_string(),
                    run,
                    shape: shape.clone(),
                    times: Vec::new(),
                    gemm_s: None,
                    comm_s: None,
                    start: start_v.to_string(),
                });
                layers.len() - 1
            });
            let l = &mut layers[i];
            if l.start != start_v {
                return Err(bad(
                    path,
                    line,
                    format!(
                        "start `{start_v}`, where this layer's other rows were timed `{}`",
                        l.start
                    ),
                ));
            }
            match get(pattern) {
                "gemm" => l.gemm_s = Some(secs),
                "comm" => l.comm_s = Some(secs),
                "" => return Err(bad(path, line, "empty pattern")),
                p if get(passed) == "true" => {
                    if l.time(p).is_some() {
                        return Err(bad(
                            path,
                            line,
                            format!("pattern `{p}` twice for one layer"),
                        ));
                    }
                    l.times.push((p.to_string(), secs));
                }
                _ => {}
            }
        }
    }
    layers.retain(|l| !l.times.is_empty());
    // Times from a held start leave out the host's launch cost, which a barrier's include:
    // each tree (an operation on one GPU count) learns from one way.
    let mut first: BTreeMap<(&str, usize), &Layer> = BTreeMap::new();
    for l in &layers {
        let a = *first
            .entry((l.shape.op.name(), l.shape.world_size))
            .or_insert(l);
        if a.start != l.start {
            let (held, barrier) = if a.start == "held" { (a, l) } else { (l, a) };
            return Err(ModelError::Train(format!(
                "{} times the {} on {} GPUs from a held start and {} from a barrier (or has no \
                 `start` column, from before held starts): the host's launch cost is in one and \
                 not the other; give one way per operation and GPU count",
                paths[held.run].display(),
                l.shape.op.name(),
                l.shape.world_size,
                paths[barrier.run].display()
            )));
        }
    }
    Ok(layers)
}

/// Whether `path` is an `augur overlap tp` CSV (its first columns; the header only is read).
pub fn is_overlap_csv(path: &Path) -> bool {
    crate::runs::header_starts_with(path, &LEAD)
}
