//! The overlap selector (issue 24): which pattern runs a tensor-parallel layer's GEMM + collective
//! fastest (`bulk`, `chunked:C`, `pull:C`, `push:C`, ...), one tree per operation and GPU count
//! over the layer's overlap features (schema `overlap`), trained on `augur overlap tp` CSVs
//! (each tree from runs timed one way, `held` or `barrier`).
//!
//! Params -> checked params -> fit, as the other selectors; the samples are layers (one shape on
//! one GPU count, from one run), every checked pattern's time their costs, and cross-validation
//! and the held-out evaluation group them by the layer's weight (N, K): no shape of a held-out
//! weight is trained on, whatever its M or GPU count.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use augur_features::attention::Dtype;
use augur_features::message::LinkType;
use augur_features::overlap::{OverlapFeatures, OverlapOp, OverlapShape};
use augur_features::FeatureSchema;
use serde::{Deserialize, Serialize};

use crate::costs::{fit_costs, CostSample};
use crate::runs::bad;
use crate::train::geomean;
use crate::tree::Tree;
use crate::ModelError;

/// Format name and version of overlap model files.
pub const OVERLAP_FORMAT: &str = "augur-overlap-model";
pub const OVERLAP_FORMAT_VERSION: u32 = 1;

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
    fn group(&self) -> u64 {
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

/// Hyper-parameters (linfa style: params -> check -> fit).
#[derive(Debug, Clone)]
pub struct OverlapTrainParams {
    /// Depths tried by cross-validation (1..=this).
    pub max_depth: usize,
    pub min_weight_leaf: f32,
    /// Folds over the layers' weights (fewer when there are fewer weights).
    pub folds: usize,
    /// Margins tried by cross-validation (with the depth): under a margin m, a pattern other
    /// than `bulk` labels a layer only where it beats bulk by more than m (0.05: 5%), so that
    /// near-ties go to the safe default and the trees do not learn timing noise; the folds are
    /// scored on the measured times as they are.
    pub bulk_margins: Vec<f64>,
}

impl Default for OverlapTrainParams {
    fn default() -> Self {
        OverlapTrainParams {
            max_depth: 4,
            min_weight_leaf: 1.0,
            folds: 4,
            bulk_margins: vec![0.0, 0.02, 0.05, 0.1],
        }
    }
}

#[derive(Debug, Clone)]
pub struct CheckedOverlapTrainParams(OverlapTrainParams);

impl OverlapTrainParams {
    pub fn check(self) -> Result<CheckedOverlapTrainParams, ModelError> {
        crate::costs::check_cost_params(self.max_depth, self.folds, self.min_weight_leaf)?;
        if self.bulk_margins.is_empty() {
            return Err(ModelError::Params("no bulk margin to try".into()));
        }
        if let Some(m) = self.bulk_margins.iter().find(|m| !(0.0..1.0).contains(*m)) {
            return Err(ModelError::Params(format!(
                "bulk margin {m} outside [0, 1)"
            )));
        }
        Ok(CheckedOverlapTrainParams(self))
    }
}

/// The tree of one operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpTree {
    /// `all-gather+gemm` or `gemm+reduce-scatter`.
    pub op: String,
    /// Pattern names; classes are indices into this list.
    pub patterns: Vec<String>,
    pub inputs: Vec<String>,
    /// Schema index of each input.
    pub features: Vec<usize>,
    pub tree: Tree,
    pub max_depth: usize,
    /// Geomean of oracle / selected over the cross-validation folds.
    pub cv_oracle_ratio: f64,
    /// The margin over bulk the labels were made with (see
    /// [`OverlapTrainParams::bulk_margins`]); 0 in files written before it existed.
    #[serde(default)]
    pub bulk_margin: f64,
    /// The group size it was trained on: one tree per operation and GPU count, each learning
    /// from its own GPU count's runs only (the patterns and their ranking differ between 2 and
    /// 4 GPUs). None in files written before (one tree per operation over every GPU count).
    /// A group size with no tree of its own takes the nearest one's ([`OverlapModel::tree_for`]).
    #[serde(default)]
    pub world_size: Option<usize>,
    /// How its runs timed their calls (`augur overlap tp --start`): `held` or `barrier`
    /// (`barrier` in files written before held starts existed).
    #[serde(default = "barrier")]
    pub start: String,
}

fn barrier() -> String {
    "barrier".into()
}

/// What a model was trained on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverlapTraining {
    pub layers: usize,
    /// Distinct weights (N, K): the cross-validation groups.
    pub weights: usize,
    pub world_sizes: Vec<usize>,
    /// The weights (N, K) themselves, sorted, so that an evaluation can leave them out (empty in
    /// files from before they were recorded: every layer then counts as seen).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weight_list: Vec<[usize; 2]>,
}

/// A trained overlap-pattern selector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverlapModel {
    pub format: String,
    pub format_version: u32,
    pub task: String,
    pub schema: FeatureSchema,
    pub device: String,
    pub augur_version: String,
    pub trees: Vec<OpTree>,
    pub training: OverlapTraining,
}

/// The features a tree reads, and their schema indices: every one but the operation's flag
/// (one tree per operation and GPU count; the GPU count stays an input for the trees of older
/// files, which had one tree per operation).
fn inputs() -> (Vec<usize>, Vec<String>) {
    crate::costs::inputs_except(&OverlapFeatures::schema(), &["all_gather"])
}

fn x_of(shape: &OverlapShape, features: &[usize]) -> Option<Vec<f64>> {
    let v = shape.features().ok()?.values();
    Some(features.iter().map(|&i| v[i]).collect())
}

/// A layer as the trainer sees it: its features, its measured time per pattern (None: not
/// run), its weight (the cross-validation group).
struct Row {
    x: Vec<f64>,
    times: Vec<Option<f64>>,
    group: u64,
}

/// Cost samples of `rows` labelled under `margin`: every pattern but `bulk` (index `bulk`)
/// costs its time x (1 + margin).
fn labelled(rows: &[Row], bulk: Option<usize>, margin: f64) -> Vec<CostSample> {
    rows.iter()
        .filter_map(|r| {
            let t: Vec<Option<f64>> = r
                .times
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    t.map(|t| {
                        if Some(i) == bulk {
                            t
                        } else {
                            t * (1.0 + margin)
                        }
                    })
                })
                .collect();
            CostSample::new(r.x.clone(), &t, r.group)
        })
        .collect()
}

/// The depth (1..=max) and margin (of `margins`) with the best geomean oracle / selected on the
/// measured times over folds of weights (`train::cv_depth_scored`); a deeper tree or a larger
/// margin must win by 0.1%. Returns (depth, margin, its ratio); NaN for the ratio with one
/// weight.
fn cv_depth_margin(
    rows: &[Row],
    bulk: Option<usize>,
    p: &OverlapTrainParams,
    margins: &[f64],
) -> Result<(usize, f64, f64), ModelError> {
    let truth = labelled(rows, bulk, 0.0);
    let truth: Vec<&CostSample> = truth.iter().collect();
    let mut groups: Vec<u64> = truth.iter().map(|s| s.group).collect();
    groups.sort_unstable();
    groups.dedup();
    let mut sorted = margins.to_vec();
    sorted.sort_by(f64::total_cmp);
    if groups.len() < 2 {
        return Ok((1, sorted[0], f64::NAN));
    }
    let folds = p.folds.min(groups.len()).max(2);
    let mut best = (1usize, sorted[0], f64::NEG_INFINITY);
    for &m in &sorted {
        // The same rows as `truth`, in the same order (a row's samples exist for any margin).
        let samples = labelled(rows, bulk, m);
        let refs: Vec<&CostSample> = samples.iter().collect();
        let (depth, score) =
            crate::costs::cv_depth_scored(&refs, &truth, p.max_depth, folds, p.min_weight_leaf)?;
        if score > best.2 + 1e-3 {
            best = (depth, m, score);
        }
    }
    Ok(best)
}

impl CheckedOverlapTrainParams {
    pub fn fit(&self, layers: &[Layer], augur_version: &str) -> Result<OverlapModel, ModelError> {
        let p = &self.0;
        if layers.is_empty() {
            return Err(ModelError::Train("no overlap runs".into()));
        }
        crate::costs::one_device(layers.iter().map(|l| l.device.as_str()), "machine")?;
        let (features, names) = inputs();
        let mut trees = Vec::new();
        let mut worlds: Vec<usize> = layers.iter().map(|l| l.shape.world_size).collect();
        worlds.sort_unstable();
        worlds.dedup();
        // One tree per operation and GPU count, from that GPU count's layers only.
        let groups = [OverlapOp::AllGatherGemm, OverlapOp::GemmReduceScatter]
            .into_iter()
            .flat_map(|op| worlds.iter().map(move |&w| (op, w)));
        for (op, world) in groups {
            let mine: Vec<&Layer> = layers
                .iter()
                .filter(|l| l.shape.op == op && l.shape.world_size == world)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let mut patterns: Vec<String> = Vec::new();
            for l in &mine {
                for (name, _) in &l.times {
                    if !patterns.contains(name) {
                        patterns.push(name.clone());
                    }
                }
            }
            let rows: Vec<Row> = mine
                .iter()
                .filter_map(|l| {
                    Some(Row {
                        x: x_of(&l.shape, &features)?,
                        times: patterns.iter().map(|q| l.time(q)).collect(),
                        group: l.group(),
                    })
                })
                .collect();
            let bulk = patterns.iter().position(|q| q == "bulk");
            let (depth, margin, cv) = cv_depth_margin(&rows, bulk, p, &p.bulk_margins)?;
            let samples = labelled(&rows, bulk, margin);
            let refs: Vec<&CostSample> = samples.iter().collect();
            trees.push(OpTree {
                op: op.name().into(),
                patterns,
                inputs: names.clone(),
                features: features.clone(),
                tree: fit_costs(&refs, depth, p.min_weight_leaf)?,
                max_depth: depth,
                cv_oracle_ratio: cv,
                bulk_margin: margin,
                world_size: Some(world),
                start: mine[0].start.clone(),
            });
        }
        let mut weights: Vec<[usize; 2]> = layers.iter().map(|l| [l.shape.n, l.shape.k]).collect();
        weights.sort_unstable();
        weights.dedup();
        let model = OverlapModel {
            format: OVERLAP_FORMAT.into(),
            format_version: OVERLAP_FORMAT_VERSION,
            task: "overlap".into(),
            schema: OverlapFeatures::schema(),
            device: layers[0].device.clone(),
            augur_version: augur_version.into(),
            trees,
            training: OverlapTraining {
                layers: layers.len(),
                weights: weights.len(),
                world_sizes: worlds,
                weight_list: weights,
            },
        };
        model.validate().map_err(ModelError::Train)?;
        Ok(model)
    }
}

impl OverlapModel {
    /// The tree for `op` on groups of `world` GPUs: the operation's tree for that GPU count,
    /// else the nearest GPU count's (halfway between two goes to the larger; [`Self::ranges`]),
    /// or its only tree in files from before trees per GPU count.
    pub fn tree_for(&self, op: OverlapOp, world: usize) -> Option<&OpTree> {
        self.ranges()
            .into_iter()
            .find(|(t, lo, hi)| t.op == op.name() && (*lo..*hi).contains(&(world as f64)))
            .map(|r| r.0)
    }

    /// Each tree with the group sizes it serves, [lo, hi): every size for a tree without one;
    /// for the trees of one operation by GPU count w_1 < w_2 < ..., the bounds are the
    /// midpoints between neighbours (the nearest tree; halfway goes to the larger).
    fn ranges(&self) -> Vec<(&OpTree, f64, f64)> {
        self.trees
            .iter()
            .map(|t| {
                let Some(w) = t.world_size else {
                    return (t, f64::NEG_INFINITY, f64::INFINITY);
                };
                let mut lo = f64::NEG_INFINITY;
                let mut hi = f64::INFINITY;
                for o in self.trees.iter().filter(|o| o.op == t.op) {
                    if let Some(v) = o.world_size {
                        let mid = (v + w) as f64 / 2.0;
                        if v < w {
                            lo = lo.max(mid);
                        } else if v > w {
                            hi = hi.min(mid);
                        }
                    }
                }
                (t, lo, hi)
            })
            .collect()
    }

    /// The pattern for a layer (None: no tree for its operation, or a shape that does not cut).
    pub fn choose(&self, shape: &OverlapShape) -> Option<&str> {
        let t = self.tree_for(shape.op, shape.world_size)?;
        Some(&t.patterns[t.tree.predict(&x_of(shape, &t.features)?)])
    }

    /// Why: (input, value, threshold, went left) per split on the layer's path.
    pub fn path(&self, shape: &OverlapShape) -> Vec<(String, f64, f64, bool)> {
        let Some(t) = self.tree_for(shape.op, shape.world_size) else {
            return Vec::new();
        };
        x_of(shape, &t.features).map_or_else(Vec::new, |x| t.tree.named_path(&x, &t.inputs))
    }

    pub fn validate(&self) -> Result<(), String> {
        crate::check_header(
            (&self.format, self.format_version),
            (OVERLAP_FORMAT, OVERLAP_FORMAT_VERSION),
            &self.schema,
            &OverlapFeatures::schema(),
        )?;
        if self.trees.is_empty() {
            return Err("no trees".into());
        }
        let n = self.schema.features.len();
        for t in &self.trees {
            if OverlapOp::parse(&t.op).is_none() {
                return Err(format!("unknown operation `{}`", t.op));
            }
            if t.patterns.is_empty() || t.inputs.len() != t.features.len() {
                return Err(format!("{}: no patterns, or inputs unlike features", t.op));
            }
            if t.features.iter().any(|&f| f >= n) {
                return Err(format!("{}: a feature index beyond the schema", t.op));
            }
            t.tree
                .validate(t.features.len(), t.patterns.len())
                .map_err(|e| format!("{}: {e}", t.op))?;
            if t.start != "held" && t.start != "barrier" {
                return Err(format!("{}: start `{}`: held or barrier", t.op, t.start));
            }
            let same = self.trees.iter().filter(|o| o.op == t.op);
            if same
                .clone()
                .any(|o| o.world_size.is_none() != t.world_size.is_none())
                || same.filter(|o| o.world_size == t.world_size).count() > 1
            {
                return Err(format!(
                    "{}: two trees for one GPU count, or trees with and without one",
                    t.op
                ));
            }
        }
        Ok(())
    }

    fn class_tree<'a>(&'a self, t: &'a OpTree) -> crate::export::ClassTree<'a> {
        crate::export::ClassTree {
            tree: &t.tree,
            inputs: &t.inputs,
            classes: &t.patterns,
            schema: &self.schema,
            noun: "layers",
        }
    }

    fn groups(&self) -> Vec<crate::export::GroupTree<'_>> {
        self.ranges()
            .into_iter()
            .map(|(t, lo, hi)| {
                let flag = if t.op == OverlapOp::AllGatherGemm.name() {
                    1.0
                } else {
                    0.0
                };
                let mut condition = format!("f.all_gather == {flag:.1}");
                if lo.is_finite() {
                    condition += &format!(" && f.world_size >= {lo:.1}");
                }
                if hi.is_finite() {
                    condition += &format!(" && f.world_size < {hi:.1}");
                }
                crate::export::GroupTree {
                    label: tree_label(t),
                    condition,
                    tree: self.class_tree(t),
                }
            })
            .collect()
    }

    /// Graphviz DOT: one cluster per tree (operation, and GPU count).
    pub fn export_dot(&self) -> String {
        crate::export::grouped_dot("augur_overlap", 'o', &self.groups())
    }

    /// A Rust module: `enum OverlapPattern` and `fn select(f: &OverlapFeatures) ->
    /// Option<OverlapPattern>`.
    pub fn export_rust(&self) -> String {
        let r = crate::export::GroupedRust {
            header: format!(
                "// Generated by `augur export --format rust` from an overlap model for {}.\n// Overlap schema v{}.\n\nuse augur_features::overlap::OverlapFeatures;\n\n",
                self.device, self.schema.version
            ),
            enum_name: "OverlapPattern",
            features: "OverlapFeatures",
            select_doc: "The pattern for a layer (None for an operation the model was not trained on).",
        };
        crate::export::grouped_rust(&r, &self.groups())
    }

    /// Readable rules, one tree per operation (and GPU count).
    pub fn export_text(&self) -> String {
        let mut out = format!(
            "augur overlap-pattern model for {} (GPUs per group: {:?}; trained on {} layers of {} \
             weights)\n",
            self.device, self.training.world_sizes, self.training.layers, self.training.weights
        );
        for t in &self.trees {
            let timed = match (t.world_size, t.start.as_str()) {
                (None, _) => String::new(),
                (Some(_), "held") => "; calls timed from a held start".into(),
                (Some(_), _) => "; calls timed from a barrier".into(),
            };
            let _ = writeln!(
                out,
                "\n{} (patterns: {}; depth {} and bulk margin {} by cross-validation over \
                 weights, oracle ratio {:.3}{timed}):",
                tree_label(t),
                t.patterns.join(", "),
                t.max_depth,
                t.bulk_margin,
                t.cv_oracle_ratio
            );
            self.class_tree(t).text(1, &mut out);
        }
        out
    }
}

/// A tree's name: its operation, and its GPU count where it has one.
fn tree_label(t: &OpTree) -> String {
    match t.world_size {
        Some(w) => format!("{} on {w} GPUs", t.op),
        None => t.op.clone(),
    }
}

/// One held-out layer: what the model trained without its weight picked, against the oracle,
/// bulk (NCCL then cuBLASLt) and the perfect overlap.
#[derive(Debug, Clone, Serialize)]
pub struct OverlapEvalRow {
    pub shape: OverlapShape,
    pub selected: String,
    pub selected_s: f64,
    pub oracle: String,
    pub oracle_s: f64,
    pub bulk_s: Option<f64>,
    pub bound_s: Option<f64>,
}

/// Leave one weight out: for every weight (N, K), a model trained on the layers of the other
/// weights picks for this weight's layers. A pick the layer did not run (or failed) costs
/// twice its slowest pattern.
pub fn evaluate_held_out(
    params: &CheckedOverlapTrainParams,
    layers: &[Layer],
) -> Result<Vec<OverlapEvalRow>, ModelError> {
    let mut weights: Vec<u64> = layers.iter().map(Layer::group).collect();
    weights.sort_unstable();
    weights.dedup();
    if weights.len() < 2 {
        return Err(ModelError::Eval(
            "one weight (N, K) only: nothing to hold out".into(),
        ));
    }
    let mut rows = Vec::new();
    for w in weights {
        let train: Vec<Layer> = layers.iter().filter(|l| l.group() != w).cloned().collect();
        let model = params.fit(&train, "held-out")?;
        rows.extend(
            layers
                .iter()
                .filter(|l| l.group() == w)
                .filter_map(|l| eval_row(&model, l)),
        );
    }
    Ok(rows)
}

/// `model`'s pick for layer `l` against the layer's oracle, bulk and bound (None: no pattern of
/// the layer passed its check). A pick the layer did not run (or whose check failed) costs twice
/// its slowest pattern.
fn eval_row(model: &OverlapModel, l: &Layer) -> Option<OverlapEvalRow> {
    let (oracle, oracle_s) = l.oracle()?;
    let worst = l.times.iter().map(|t| t.1).fold(0.0, f64::max);
    let selected = model.choose(&l.shape).unwrap_or("bulk").to_string();
    Some(OverlapEvalRow {
        shape: l.shape.clone(),
        selected_s: l.time(&selected).unwrap_or(2.0 * worst),
        selected,
        oracle: oracle.into(),
        oracle_s,
        bulk_s: l.time("bulk"),
        bound_s: l.bound(),
    })
}

/// A trained model's picks on measured layers (`augur eval --model <overlap model> RUNS`): every
/// layer (`unseen` false) or only those whose weight (N, K) the model was not trained on (a
/// model that does not list its weights counts every layer as seen). Returns the rows and how
/// many layers were left out as seen. A pick the layer did not run (or whose check failed)
/// costs twice its slowest pattern, as in [`evaluate_held_out`].
pub fn evaluate_model(
    model: &OverlapModel,
    layers: &[Layer],
    unseen: bool,
) -> (Vec<OverlapEvalRow>, usize) {
    let trained = |l: &Layer| {
        model.training.weight_list.is_empty()
            || model
                .training
                .weight_list
                .binary_search(&[l.shape.n, l.shape.k])
                .is_ok()
    };
    let mut rows = Vec::new();
    let mut seen = 0;
    for l in layers {
        if unseen && trained(l) {
            seen += 1;
            continue;
        }
        rows.extend(eval_row(model, l));
    }
    (rows, seen)
}

/// Every evaluated layer as CSV: its shape, the pick, the oracle, bulk and the bound in
/// microseconds, selected / oracle and bulk / selected.
pub fn rows_csv(rows: &[OverlapEvalRow]) -> String {
    let mut out = String::from(
        "op,gpus,dtype,m,n,k,selected,selected_us,oracle,oracle_us,bulk_us,bound_us,\
         selected_over_oracle,bulk_over_selected\n",
    );
    let us = |t: Option<f64>| t.map_or(String::new(), |t| format!("{:.3}", t * 1e6));
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{:.4},{}",
            r.shape.op.name(),
            r.shape.world_size,
            crate::comm::dtype_name(r.shape.dtype),
            r.shape.m,
            r.shape.n,
            r.shape.k,
            r.selected,
            us(Some(r.selected_s)),
            r.oracle,
            us(Some(r.oracle_s)),
            us(r.bulk_s),
            us(r.bound_s),
            r.oracle_s / r.selected_s,
            r.bulk_s
                .map_or(String::new(), |b| format!("{:.4}", b / r.selected_s)),
        );
    }
    out
}

/// The summary of held-out rows per GPU count, each operation apart (and by M bucket) and both
/// together:
/// layers, selected / oracle (geomean, worst), bulk / selected (geomean, least), the bound's
/// gain over bulk (geomean), and the share of that gain the picks took where it is >= 1.2x
/// (mean; layers counted).
pub fn summary(rows: &[OverlapEvalRow]) -> String {
    let mut worlds: Vec<usize> = rows.iter().map(|r| r.shape.world_size).collect();
    worlds.sort_unstable();
    worlds.dedup();
    let mut out = String::from(
        "operation             GPUs  layers  sel/oracle  worst  vs bulk  least  bound gain  share (bound >= 1.2x)\n",
    );
    for w in worlds {
        let mut ops: Vec<OverlapOp> = rows
            .iter()
            .filter(|r| r.shape.world_size == w)
            .map(|r| r.shape.op)
            .collect();
        ops.sort_by_key(|o| o.name());
        ops.dedup();
        let mut groups: Vec<(String, Option<OverlapOp>)> = ops
            .iter()
            .map(|o| (o.name().to_string(), Some(*o)))
            .collect();
        if ops.len() > 1 {
            groups.push(("both".into(), None));
        }
        for (name, op) in groups {
            let mine: Vec<&OverlapEvalRow> = rows
                .iter()
                .filter(|r| r.shape.world_size == w && op.is_none_or(|o| r.shape.op == o))
                .collect();
            summary_line(&mut out, &name, w, &mine);
            if op.is_none() {
                continue;
            }
            // Every M bucket of the operation as well: where overlap cannot pay (small M) and
            // where it does.
            for (bucket, lo, hi) in M_BUCKETS {
                let some: Vec<&OverlapEvalRow> = mine
                    .iter()
                    .copied()
                    .filter(|r| (lo..hi).contains(&r.shape.m))
                    .collect();
                if !some.is_empty() {
                    summary_line(&mut out, &format!("  {bucket}"), w, &some);
                }
            }
        }
    }
    out
}

/// The M buckets of the held-out summary: below 256 rows, 256 to 2047, 2048 and more.
const M_BUCKETS: [(&str, usize, usize); 3] = [
    ("M < 256", 0, 256),
    ("256 <= M < 2048", 256, 2048),
    ("M >= 2048", 2048, usize::MAX),
];

fn summary_line(out: &mut String, name: &str, w: usize, mine: &[&OverlapEvalRow]) {
    let ratio = |r: &&OverlapEvalRow| r.oracle_s / r.selected_s;
    let vs = |r: &&OverlapEvalRow| r.bulk_s.map(|b| b / r.selected_s);
    let gains: Vec<f64> = mine.iter().filter_map(vs).collect();
    let bounds: Vec<f64> = mine
        .iter()
        .filter_map(|r| Some(r.bulk_s? / r.bound_s?))
        .collect();
    let shares: Vec<f64> = mine
        .iter()
        .filter_map(|r| {
            let (b, o) = (r.bulk_s?, r.bound_s?);
            (b / o >= 1.2).then(|| (b - r.selected_s) / (b - o))
        })
        .collect();
    let _ = writeln!(
        out,
        "{name:<20}  {w:>4}  {:>6}  {:>10.3}  {:>5.3}  {:>7.3}  {:>5.3}  {:>10.3}  {:.2} ({} layers)",
        mine.len(),
        geomean(mine.iter().map(ratio)),
        mine.iter().map(ratio).fold(f64::INFINITY, f64::min),
        geomean(gains.iter().copied()),
        gains.iter().copied().fold(f64::INFINITY, f64::min),
        geomean(bounds.iter().copied()),
        if shares.is_empty() {
            f64::NAN
        } else {
            shares.iter().sum::<f64>() / shares.len() as f64
        },
        shares.len()
    );
}

/// Whether `path` is an `augur overlap tp` CSV (its first columns; the header only is read).
pub fn is_overlap_csv(path: &Path) -> bool {
    crate::runs::header_starts_with(path, &LEAD)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AnyModel, ExportFormat, ModelFile};

    /// A CSV of `augur overlap tp`'s first header: two weights, two M, 2 GPUs; `push:1` wins at
    /// the larger M, `bulk` at the smaller.
    fn csv(dir: &Path) -> PathBuf {
        let mut t = String::from(
            "device,gpus,op,dtype,m,n,k,pattern,passed,max_err_over_bound,us,bulk_over_pattern,\
             share_of_bound\n",
        );
        for (n, k) in [(6144, 4096), (8192, 8192), (28672, 4096)] {
            for m in [512, 16384] {
                let big = m > 1000;
                for (p, us) in [
                    ("gemm", 50.0),
                    ("comm", 60.0),
                    ("bulk", if big { 300.0 } else { 100.0 }),
                    ("push:1", if big { 200.0 } else { 150.0 }),
                ] {
                    let _ = writeln!(
                        t,
                        "GPU X,2,all-gather+gemm,bf16,{m},{n},{k},{p},true,0.5,{us},,"
                    );
                }
                // A failed pattern is left out.
                let _ = writeln!(
                    t,
                    "GPU X,2,all-gather+gemm,bf16,{m},{n},{k},pull:1,false,9,1,,"
                );
            }
        }
        let path = dir.join("tp.csv");
        std::fs::write(&path, t).unwrap();
        path
    }

    #[test]
    fn trains_on_tp_runs_and_picks_by_shape_held_out() {
        let dir = std::env::temp_dir().join(format!("augur-overlap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = csv(&dir);
        assert!(is_overlap_csv(&path));
        let layers = read_layers(&[path], 132).unwrap();
        assert_eq!(layers.len(), 6);
        assert!(layers.iter().all(|l| l.time("pull:1").is_none()));
        assert_eq!(layers[0].bound(), Some(60e-6));
        let params = OverlapTrainParams::default().check().unwrap();
        let model = params.fit(&layers, "test").unwrap();
        let shape = |m| OverlapShape {
            op: OverlapOp::AllGatherGemm,
            m,
            n: 10240,
            k: 8192,
            dtype: Dtype::Bf16,
            world_size: 2,
            link: LinkType::Nvlink,
            sms: 132,
        };
        assert_eq!(model.choose(&shape(16384)), Some("push:1"));
        assert_eq!(model.choose(&shape(256)), Some("bulk"));
        assert!(!model.path(&shape(256)).is_empty());
        assert!(model.export_text().contains("push:1"));
        let json = serde_json::to_string(&model).unwrap();
        let back: OverlapModel = serde_json::from_str(&json).unwrap();
        back.validate().unwrap();
        let file = dir.join("model.json");
        model.write(&file).unwrap();
        assert_eq!(OverlapModel::read(&file).unwrap(), model);
        // Any model file reader takes it; its three exports name the picks.
        let any = AnyModel::read(&file).unwrap();
        assert_eq!(any.domain(), "overlap");
        for f in [ExportFormat::Text, ExportFormat::Dot, ExportFormat::Rust] {
            let e = any.export(f);
            assert!(e.contains("push:1") || e.contains("Push1"), "{f:?}: {e}");
        }
        let rust = any.export(ExportFormat::Rust);
        assert!(
            rust.contains("pub fn select(f: &OverlapFeatures)")
                && rust.contains("f.all_gather == 1.0")
        );
        assert!(any
            .export(ExportFormat::Dot)
            .starts_with("digraph augur_overlap"));
        // Held out by weight, every layer is picked right: selected / oracle 1.
        let rows = evaluate_held_out(&params, &layers).unwrap();
        assert_eq!(rows.len(), 6);
        assert!(rows.iter().all(|r| r.selected == r.oracle), "{rows:?}");
        let table = summary(&rows);
        assert!(table.contains("1.000"));
        // Each M bucket with layers gets its line (M 512 and 16384 here), the empty one none.
        let bucket = |b: &str| table.lines().find(|l| l.starts_with(&format!("  {b} ")));
        let (mid, big) = (bucket("256 <= M < 2048"), bucket("M >= 2048"));
        assert!(mid.is_some_and(|l| l.contains(" 3 ")), "{table}");
        assert!(big.is_some_and(|l| l.contains(" 3 ")), "{table}");
        assert!(bucket("M < 256").is_none(), "{table}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_trained_model_is_evaluated_on_the_weights_it_did_not_see() {
        let dir = std::env::temp_dir().join(format!("augur-overlap-eval-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let layers = read_layers(&[csv(&dir)], 132).unwrap();
        // Trained without N 28672: its two layers are the unseen ones.
        let train: Vec<Layer> = layers
            .iter()
            .filter(|l| l.shape.n != 28672)
            .cloned()
            .collect();
        let params = OverlapTrainParams::default().check().unwrap();
        let model = params.fit(&train, "test").unwrap();
        assert_eq!(model.training.weight_list, [[6144, 4096], [8192, 8192]]);
        let (rows, seen) = evaluate_model(&model, &layers, true);
        assert_eq!((rows.len(), seen), (2, 4));
        assert!(rows.iter().all(|r| r.shape.n == 28672), "{rows:?}");
        assert!(rows.iter().all(|r| r.selected == r.oracle), "{rows:?}");
        let (all, seen) = evaluate_model(&model, &layers, false);
        assert_eq!((all.len(), seen), (6, 0));
        // One CSV line per layer: the pick, its time, and bulk over it (push:1 at M 16384:
        // 300 / 200 us).
        let text = rows_csv(&all);
        assert_eq!(text.lines().count(), 7);
        assert!(
            text.lines().any(|l| l.starts_with(
                "all-gather+gemm,2,bf16,16384,28672,4096,push:1,200.000,push:1,200.000,300.000,"
            ) && l.ends_with(",1.0000,1.5000")),
            "{text}"
        );
        // A model file from before the weights were listed reads, and counts every layer seen.
        let mut json: serde_json::Value = serde_json::to_value(&model).unwrap();
        json["training"]
            .as_object_mut()
            .unwrap()
            .remove("weight_list");
        let old: OverlapModel = serde_json::from_value(json).unwrap();
        assert!(old.training.weight_list.is_empty());
        assert_eq!(evaluate_model(&old, &layers, true).1, 6);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_bulk_margin_sends_near_ties_to_bulk() {
        // At the small M, push:1 beats bulk by 3% on five weights and loses by 1.5x on the
        // sixth; at the large M it wins by 1.5x on every weight.
        let row = |m: u64, push: f64, g: u64| Row {
            x: vec![m as f64],
            times: vec![Some(100.0), Some(push)],
            group: g,
        };
        let mut rows = Vec::new();
        for g in 0..6u64 {
            rows.push(row(64, if g < 5 { 97.0 } else { 150.0 }, g));
            rows.push(row(16384, 66.0, g));
        }
        let push_labels = |m: f64| {
            labelled(&rows, Some(0), m)
                .iter()
                .filter(|s| s.best == 1)
                .count()
        };
        // No margin: push:1 labels 5 small layers and the 6 large; 5%: the large only.
        assert_eq!((push_labels(0.0), push_labels(0.05)), (11, 6));
        // A fold holding out the sixth weight learns push:1 at the small M without a margin
        // (1.5x slower there); with 5% or more it keeps bulk (3% slower on the five).
        let p = OverlapTrainParams::default();
        let (_, margin, cv) = cv_depth_margin(&rows, Some(0), &p, &p.bulk_margins).unwrap();
        assert!(margin >= 0.05, "{margin}");
        assert!(cv > 0.98, "{cv}");
        let (_, none, cv0) = cv_depth_margin(&rows, Some(0), &p, &[0.0]).unwrap();
        assert_eq!(none, 0.0);
        assert!(cv0 < cv - 0.01, "{cv0} {cv}");
        let e = OverlapTrainParams {
            bulk_margins: vec![0.0, 1.5],
            ..Default::default()
        }
        .check()
        .unwrap_err()
        .to_string();
        assert!(e.contains("bulk margin 1.5 outside [0, 1)"), "{e}");
    }

    #[test]
    fn held_and_barrier_runs_are_not_mixed() {
        let dir = std::env::temp_dir().join(format!("augur-overlap-start-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let old = csv(&dir);
        // The same rows timed from a held start: a `start` column after `us`.
        let held = dir.join("held.csv");
        let text = std::fs::read_to_string(&old).unwrap();
        let mut lines = text.lines();
        let mut t = lines.next().unwrap().replace(",us,", ",us,start,") + "\n";
        for l in lines {
            let f: Vec<&str> = l.split(',').collect();
            t += &format!("{},held,{}\n", f[..11].join(","), f[11..].join(","));
        }
        std::fs::write(&held, &t).unwrap();
        let layers = read_layers(std::slice::from_ref(&held), 132).unwrap();
        assert_eq!(layers.len(), 6);
        assert!(layers.iter().all(|l| l.start == "held"));
        let model = OverlapTrainParams::default()
            .check()
            .unwrap()
            .fit(&layers, "test")
            .unwrap();
        assert!(model.trees.iter().all(|t| t.start == "held"));
        assert!(model.export_text().contains("timed from a held start"));
        let e = read_layers(&[held.clone(), old.clone()], 132)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("held.csv") && e.contains("tp.csv") && e.contains("launch cost"),
            "{e}"
        );
        // Older files (no column) read as timed from a barrier; a model without the field too.
        assert!(read_layers(std::slice::from_ref(&old), 132)
            .unwrap()
            .iter()
            .all(|l| l.start == "barrier"));
        let json = serde_json::to_string(&model)
            .unwrap()
            .replace(r#","start":"held""#, "");
        let back: OverlapModel = serde_json::from_str(&json).unwrap();
        assert_eq!(back.trees[0].start, "barrier");
        std::fs::write(&held, t.replacen(",held,", ",eager,", 1)).unwrap();
        let e = read_layers(&[held], 132).unwrap_err().to_string();
        assert!(
            e.contains("held.csv:2") && e.contains("start `eager`"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_tree_per_gpu_count_and_the_nearest_for_others() {
        let dir = std::env::temp_dir().join(format!("augur-overlap-worlds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let two = csv(&dir);
        // The same layers on 4 GPUs, where bulk is the fastest everywhere.
        let four = dir.join("four.csv");
        let text = std::fs::read_to_string(&two).unwrap();
        let t: String = text
            .lines()
            .map(|l| {
                let l = l.replacen("GPU X,2,", "GPU X,4,", 1);
                (if l.contains(",bulk,") {
                    l.replace(",300,", ",100,")
                } else {
                    l
                }) + "\n"
            })
            .collect();
        std::fs::write(&four, t).unwrap();
        let layers = read_layers(&[two, four], 132).unwrap();
        let model = OverlapTrainParams::default()
            .check()
            .unwrap()
            .fit(&layers, "test")
            .unwrap();
        assert_eq!(
            model.trees.iter().map(|t| t.world_size).collect::<Vec<_>>(),
            [Some(2), Some(4)]
        );
        let shape = |world| OverlapShape {
            op: OverlapOp::AllGatherGemm,
            m: 12288,
            n: 12288,
            k: 8192,
            dtype: Dtype::Bf16,
            world_size: world,
            link: LinkType::Nvlink,
            sms: 132,
        };
        assert_eq!(model.choose(&shape(2)), Some("push:1"));
        assert_eq!(model.choose(&shape(4)), Some("bulk"));
        // Halfway goes to the larger; beyond, the nearest.
        assert_eq!(model.choose(&shape(3)), Some("bulk"));
        assert_eq!(model.choose(&shape(8)), Some("bulk"));
        let rust = model.export_rust();
        assert!(
            rust.contains("if f.all_gather == 1.0 && f.world_size < 3.0 {"),
            "{rust}"
        );
        assert!(
            rust.contains("if f.all_gather == 1.0 && f.world_size >= 3.0 {"),
            "{rust}"
        );
        let text = model.export_text();
        assert!(
            text.contains("all-gather+gemm on 4 GPUs (patterns"),
            "{text}"
        );
        assert!(model
            .export_dot()
            .contains("label=\"all-gather+gemm on 2 GPUs\""));
        // Two trees for one GPU count are refused.
        let mut bad = model.clone();
        bad.trees[1].world_size = Some(2);
        assert!(bad
            .validate()
            .unwrap_err()
            .contains("two trees for one GPU count"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_bad_row_names_its_line() {
        let dir = std::env::temp_dir().join(format!("augur-overlap-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.csv");
        std::fs::write(
            &path,
            "device,gpus,op,dtype,m,n,k,pattern,passed,us\nX,2,all-gather+gemm,bf16,512,6144,4096,bulk,true,fast\n",
        )
        .unwrap();
        let e = read_layers(std::slice::from_ref(&path), 132)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.csv:2") && e.contains("us `fast`"), "{e}");
        std::fs::write(&path, "device,gpus\nX,2\n").unwrap();
        let e = read_layers(&[path], 132).unwrap_err().to_string();
        assert!(e.contains("no column `op`"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
