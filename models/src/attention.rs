//! Decode attention: the attention runs table (`augur collect attention`), one row per
//! (shape, schedule) with the median seconds per launch and the check against the f64
//! reference; a tree that picks a schedule from the attention-shape features; its export and
//! its evaluation against the per-shape oracle, FlashAttention-2's split rule, the best single
//! schedule and PyTorch SDPA. Rows of schedule `fa2` are FlashAttention-2's split rule run on
//! augur's split-KV kernel (the baseline of issue 8), with its split count in `fa2_splits`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use augur_features::attention::{AttentionFeatures, AttentionShape};
use augur_features::FeatureSchema;
use serde::{Deserialize, Serialize};

use crate::runs::{bad, open_csv};
use crate::train::{cv_depth, fit_costs, geomean, CostSample};
use crate::tree::{clean, Tree};
use crate::{read_text, write_atomic, ModelError};

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

// ---- the model ---------------------------------------------------------------------------

/// Format name and version of attention model files.
pub const ATTENTION_FORMAT: &str = "augur-attention-model";
pub const ATTENTION_FORMAT_VERSION: u32 = 1;

/// What an attention model was trained on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttentionTraining {
    /// SHA-256 over the training shapes (spec, schedule, seconds).
    pub digest: String,
    pub shapes: usize,
    /// Groups (head configuration and batch size) kept out of training, for `augur eval`.
    pub held_out_groups: Vec<String>,
    pub folds: usize,
}

/// A trained decode-attention schedule selector: one tree over the attention-shape features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttentionModel {
    pub format: String,
    pub format_version: u32,
    pub task: String,
    pub schema: FeatureSchema,
    pub device: String,
    pub augur_version: String,
    /// Schedule names; classes are indices into this list.
    pub schedules: Vec<String>,
    /// Input names (attention features, schema order).
    pub inputs: Vec<String>,
    /// Schema index of each input.
    pub features: Vec<usize>,
    pub tree: Tree,
    /// Depth chosen by cross-validation over shape groups.
    pub max_depth: usize,
    /// Geomean of oracle / selected over the cross-validation folds.
    pub cv_oracle_ratio: f64,
    pub training: AttentionTraining,
}

/// The group of a shape for folds and the holdout: its head configuration and batch size (all
/// KV lengths and layouts of one group train or test together).
pub fn group_of(shape: &AttentionShape) -> String {
    format!(
        "q{}/kv{}/d{} {:?} x{}",
        shape.q_heads,
        shape.kv_heads,
        shape.head_dim,
        shape.dtype,
        shape.kv_lens.len()
    )
    .to_lowercase()
}

impl AttentionModel {
    fn inputs_of(&self, shape: &AttentionShape) -> Option<Vec<f64>> {
        let f = shape.features().ok()?;
        let v = f.values();
        Some(self.features.iter().map(|&i| clean(v[i])).collect())
    }

    /// The schedule for a shape (None when the shape is invalid).
    pub fn choose(&self, shape: &AttentionShape) -> Option<&str> {
        let x = self.inputs_of(shape)?;
        Some(&self.schedules[self.tree.predict(&x)])
    }

    /// The splits a shape passes: (input name, value, threshold, went left).
    pub fn path(&self, shape: &AttentionShape) -> Vec<(String, f64, f64, bool)> {
        self.inputs_of(shape)
            .map(|x| self.tree.named_path(&x, &self.inputs))
            .unwrap_or_default()
    }

    pub fn validate(&self) -> Result<(), String> {
        crate::check_header(
            (&self.format, self.format_version),
            (ATTENTION_FORMAT, ATTENTION_FORMAT_VERSION),
            &self.schema,
            &AttentionFeatures::schema(),
        )?;
        if self.schedules.is_empty() || self.inputs.len() != self.features.len() {
            return Err("no schedules, or inputs unlike features".into());
        }
        let n = self.schema.features.len();
        if let Some(f) = self.features.iter().find(|&&f| f >= n) {
            return Err(format!("feature index {f} beyond the schema"));
        }
        self.tree
            .validate(self.features.len(), self.schedules.len())
    }

    pub fn from_json(text: &str, origin: &str) -> Result<AttentionModel, ModelError> {
        crate::parse_json(text, origin, "attention model", AttentionModel::validate)
    }

    pub fn read(path: &Path) -> Result<AttentionModel, ModelError> {
        AttentionModel::from_json(&read_text(path)?, &path.display().to_string())
    }

    /// Write as pretty JSON through a temporary file and a rename.
    pub fn write(&self, path: &Path) -> Result<(), ModelError> {
        write_atomic(path, &self.to_json())
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a model always serializes")
    }

    fn class_tree(&self) -> crate::export::ClassTree<'_> {
        crate::export::ClassTree {
            tree: &self.tree,
            inputs: &self.inputs,
            classes: &self.schedules,
            schema: &self.schema,
            noun: "shapes",
        }
    }
}

// ---- training ----------------------------------------------------------------------------

/// Hyper-parameters of attention training (linfa style: params -> check -> fit).
#[derive(Debug, Clone)]
pub struct AttentionTrainParams {
    /// Depths tried by cross-validation (1..=this).
    pub max_depth: usize,
    pub min_weight_leaf: f32,
    pub folds: usize,
    /// Every n-th shape group (sorted) is held out of training for `augur eval` (0: none).
    pub holdout_every: usize,
}

impl Default for AttentionTrainParams {
    fn default() -> Self {
        AttentionTrainParams {
            max_depth: 6,
            min_weight_leaf: 1.0,
            folds: 5,
            holdout_every: 5,
        }
    }
}

/// Checked parameters.
#[derive(Debug, Clone)]
pub struct CheckedAttentionTrainParams(AttentionTrainParams);

impl AttentionTrainParams {
    pub fn check(self) -> Result<CheckedAttentionTrainParams, ModelError> {
        crate::train::check_cost_params(self.max_depth, self.folds, self.min_weight_leaf)?;
        if self.holdout_every == 1 {
            return Err(ModelError::Params(
                "holdout every 1st group leaves nothing to train on".into(),
            ));
        }
        Ok(CheckedAttentionTrainParams(self))
    }
}

/// The groups of `cases` held out when every `every`-th is (0: none), in an order that mixes
/// configurations and batch sizes (sorted by a hash of the name: a plain sort would hold out
/// one batch size of every configuration). Returned sorted by name.
pub fn held_out_groups(cases: &[AttentionCase], every: usize) -> Vec<String> {
    if every == 0 {
        return Vec::new();
    }
    let fnv = |s: &str| {
        s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100000001b3)
        })
    };
    let mut g: Vec<String> = cases.iter().map(|c| group_of(&c.shape)).collect();
    g.sort_by_key(|x| (fnv(x), x.clone()));
    g.dedup();
    let mut out: Vec<String> = g
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % every == every - 1)
        .map(|(_, g)| g)
        .collect();
    out.sort();
    out
}

impl CheckedAttentionTrainParams {
    /// One tree over the attention features, labels the schedules of the runs (not `fa2`);
    /// depth by cross-validation over shape groups.
    pub fn fit(
        &self,
        runs: &AttentionRuns,
        augur_version: &str,
    ) -> Result<AttentionModel, ModelError> {
        let p = &self.0;
        let cases = runs.cases();
        if cases.is_empty() {
            return Err(ModelError::Train("no attention runs".into()));
        }
        let devices: std::collections::BTreeSet<&str> =
            cases.iter().map(|c| c.device.as_str()).collect();
        if devices.len() > 1 {
            return Err(ModelError::Train(format!(
                "runs from several devices ({}): train one model per GPU",
                devices.into_iter().collect::<Vec<_>>().join(", ")
            )));
        }
        let mut schedules: Vec<String> = Vec::new();
        for c in &cases {
            for (s, _) in &c.runs {
                if s != FA2 && !schedules.contains(s) {
                    schedules.push(s.clone());
                }
            }
        }
        let schema = AttentionFeatures::schema();
        // query_len is 1 for every decode shape.
        let features: Vec<usize> = schema
            .features
            .iter()
            .enumerate()
            .filter(|(_, f)| f.name != "query_len")
            .map(|(i, _)| i)
            .collect();
        let inputs: Vec<String> = features
            .iter()
            .map(|&i| schema.features[i].name.clone())
            .collect();
        let held = held_out_groups(&cases, p.holdout_every);
        let mut groups: Vec<String> = cases.iter().map(|c| group_of(&c.shape)).collect();
        groups.sort();
        groups.dedup();
        let mut digest = sha2::Sha256::new();
        let mut samples = Vec::new();
        for c in &cases {
            let g = group_of(&c.shape);
            if held.contains(&g) {
                continue;
            }
            let f = c
                .shape
                .features()
                .map_err(|e| ModelError::Train(format!("{}: {e}", c.spec)))?;
            let v = f.values();
            let times: Vec<Option<f64>> = schedules.iter().map(|s| c.time(s)).collect();
            let gi = groups.binary_search(&g).expect("group") as u64;
            if let Some(s) =
                CostSample::new(features.iter().map(|&i| clean(v[i])).collect(), &times, gi)
            {
                use sha2::Digest;
                digest.update(format!("{}|{:?}\n", c.spec, c.runs).as_bytes());
                samples.push(s);
            }
        }
        let train: Vec<&CostSample> = samples.iter().collect();
        if train.is_empty() {
            return Err(ModelError::Train(
                "no training shapes (every group is held out, or no schedule ran)".into(),
            ));
        }
        let (depth, cv) = cv_depth(&train, p.max_depth, p.folds, p.min_weight_leaf)?;
        let tree = fit_costs(&train, depth, p.min_weight_leaf)?;
        use sha2::Digest;
        let model = AttentionModel {
            format: ATTENTION_FORMAT.into(),
            format_version: ATTENTION_FORMAT_VERSION,
            task: "attention".into(),
            schema,
            device: cases[0].device.clone(),
            augur_version: augur_version.into(),
            schedules,
            inputs,
            features,
            tree,
            max_depth: depth,
            cv_oracle_ratio: cv,
            training: AttentionTraining {
                digest: digest
                    .finalize()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
                shapes: train.len(),
                held_out_groups: held,
                folds: p.folds,
            },
        };
        model.validate().map_err(ModelError::Train)?;
        Ok(model)
    }
}

// ---- export --------------------------------------------------------------------------------

/// Readable rules.
pub fn export_text(model: &AttentionModel) -> String {
    let mut out = format!(
        "augur decode-attention schedule model for {} (schedules: {}; depth {} by cross-validation over shape groups, oracle ratio {:.3}; trained on {} shapes, {} groups held out)\n",
        model.device,
        model.schedules.join(", "),
        model.max_depth,
        model.cv_oracle_ratio,
        model.training.shapes,
        model.training.held_out_groups.len()
    );
    model.class_tree().text(1, &mut out);
    out
}

/// Graphviz DOT.
pub fn export_dot(model: &AttentionModel) -> String {
    let mut out = String::from(
        "digraph augur_attention {\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\"];\n",
    );
    model.class_tree().dot("n", "  ", &mut out);
    out.push_str("}\n");
    out
}

/// A Rust module: `enum AttentionSchedule` and `fn select(f: &AttentionFeatures) ->
/// Option<AttentionSchedule>`.
pub fn export_rust(model: &AttentionModel) -> String {
    use crate::export::variant;
    let mut out = format!(
        "// Generated by `augur export --format rust` from an attention model for {}.\n// Attention schema v{}.\n\nuse augur_features::attention::AttentionFeatures;\n\n/// The schedules the model chooses from.\n#[derive(Debug, Clone, Copy, PartialEq, Eq)]\npub enum AttentionSchedule {{\n",
        model.device, model.schema.version
    );
    for n in &model.schedules {
        let _ = writeln!(out, "    {},", variant(n));
    }
    out.push_str("}\n\nimpl AttentionSchedule {\n    /// The schedule's name in augur.\n    pub fn name(self) -> &'static str {\n        match self {\n");
    for n in &model.schedules {
        let _ = writeln!(
            out,
            "            AttentionSchedule::{} => \"{n}\",",
            variant(n)
        );
    }
    out.push_str("        }\n    }\n}\n\n/// The schedule for a decode-attention shape.\n#[allow(clippy::all, unused_variables)]\npub fn select(f: &AttentionFeatures) -> Option<AttentionSchedule> {\n");
    model.class_tree().rust("AttentionSchedule", 1, &mut out);
    out.push_str("}\n");
    out
}

// ---- evaluation ----------------------------------------------------------------------------

/// One shape evaluated.
#[derive(Debug, Clone, Serialize)]
pub struct AttentionEvalRow {
    pub spec: String,
    pub group: String,
    /// Whether its group was held out of training.
    pub unseen: bool,
    pub selected: String,
    pub oracle: String,
    pub selected_us: f64,
    pub oracle_us: f64,
    /// FlashAttention-2's split rule on augur's split-KV kernel (None: not measured).
    pub fa2_us: Option<f64>,
    pub fa2_splits: usize,
    /// The schedule best over all shapes (geomean), on this shape.
    pub single: String,
    pub single_us: f64,
    /// Outside baselines on this shape by name (`fa2_varlen`, `sdpa`), microseconds, timed in
    /// the same mode as the schedules (those given and run).
    pub baselines_us: BTreeMap<String, f64>,
    /// Live K and V bytes / selected time, GB/s.
    pub selected_gbs: f64,
    pub kv_bytes: f64,
}

/// Evaluate `model` on every shape of `runs` that ran every schedule of the model;
/// `baselines`: seconds by baseline name, then by shape spec ([`read_baselines`]).
pub fn evaluate(
    model: &AttentionModel,
    runs: &AttentionRuns,
    baselines: &Baselines,
) -> Result<Vec<AttentionEvalRow>, ModelError> {
    let cases: Vec<AttentionCase> = runs
        .cases()
        .into_iter()
        .filter(|c| model.schedules.iter().all(|s| c.time(s).is_some()))
        .collect();
    // The best single schedule: highest geomean oracle / its time over the shapes.
    let single = model
        .schedules
        .iter()
        .max_by(|a, b| {
            let score = |s: &str| {
                geomean(
                    cases
                        .iter()
                        .filter_map(|c| Some(c.oracle()?.1 / c.time(s)?)),
                )
            };
            score(a).total_cmp(&score(b))
        })
        .cloned()
        .unwrap_or_default();
    let mut rows = Vec::new();
    for c in &cases {
        let pick = model
            .choose(&c.shape)
            .ok_or_else(|| ModelError::Train(format!("{}: no features", c.spec)))?;
        let (oracle, oracle_t) = c.oracle().expect("every schedule ran");
        let t = c.time(pick).expect("every schedule ran");
        let kv_bytes = c.shape.features().map(|f| f.kv_bytes).unwrap_or(0.0);
        rows.push(AttentionEvalRow {
            spec: c.spec.clone(),
            group: group_of(&c.shape),
            unseen: model.training.held_out_groups.contains(&group_of(&c.shape)),
            selected: pick.to_string(),
            oracle: oracle.to_string(),
            selected_us: t * 1e6,
            oracle_us: oracle_t * 1e6,
            fa2_us: c.time(FA2).map(|t| t * 1e6),
            fa2_splits: c.fa2_splits,
            single: single.clone(),
            single_us: c.time(&single).expect("every schedule ran") * 1e6,
            baselines_us: baselines
                .iter()
                .filter_map(|(b, by)| Some((b.clone(), by.get(&c.spec)? * 1e6)))
                .collect(),
            selected_gbs: kv_bytes / t / 1e9,
            kv_bytes,
        });
    }
    Ok(rows)
}

/// A summary of rows: (label, shapes, selected / oracle geomean, worst, share picking the
/// fastest, x FA2 rule, x best single, x SDPA geomean and least, long-KV GB/s median).
#[derive(Debug, Clone, Serialize)]
pub struct AttentionSummary {
    pub group: String,
    pub shapes: usize,
    pub oracle_ratio: f64,
    pub worst: f64,
    pub picks_fastest: f64,
    pub vs_fa2: f64,
    pub vs_single: f64,
    /// Per outside baseline: its time / selected time, geomean and least, over the shapes it ran.
    pub vs_baselines: BTreeMap<String, BaselineRatio>,
}

/// A baseline's time over augur's selected time on the shapes where it ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BaselineRatio {
    pub shapes: usize,
    pub geomean: f64,
    pub least: f64,
}

fn summary_of(label: &str, rows: &[&AttentionEvalRow]) -> AttentionSummary {
    let mut ratios: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in rows {
        for (b, t) in &r.baselines_us {
            ratios.entry(b.clone()).or_default().push(t / r.selected_us);
        }
    }
    AttentionSummary {
        group: label.to_string(),
        shapes: rows.len(),
        oracle_ratio: geomean(rows.iter().map(|r| r.oracle_us / r.selected_us)),
        worst: rows
            .iter()
            .map(|r| r.oracle_us / r.selected_us)
            .fold(f64::INFINITY, f64::min),
        picks_fastest: rows.iter().filter(|r| r.selected == r.oracle).count() as f64
            / rows.len().max(1) as f64,
        vs_fa2: geomean(rows.iter().filter_map(|r| Some(r.fa2_us? / r.selected_us))),
        vs_single: geomean(rows.iter().map(|r| r.single_us / r.selected_us)),
        vs_baselines: ratios
            .into_iter()
            .map(|(b, v)| {
                let r = BaselineRatio {
                    shapes: v.len(),
                    geomean: geomean(v.iter().copied()),
                    least: v.iter().copied().fold(f64::INFINITY, f64::min),
                };
                (b, r)
            })
            .collect(),
    }
}

/// Summaries: all shapes, the held-out groups, and per head configuration.
pub fn summarize(rows: &[AttentionEvalRow]) -> Vec<AttentionSummary> {
    let all: Vec<&AttentionEvalRow> = rows.iter().collect();
    let mut out = vec![summary_of("all", &all)];
    let unseen: Vec<&AttentionEvalRow> = rows.iter().filter(|r| r.unseen).collect();
    if !unseen.is_empty() {
        out.push(summary_of("held-out groups", &unseen));
    }
    let mut configs: Vec<String> = rows
        .iter()
        .map(|r| {
            r.group
                .rsplit_once(" x")
                .map_or(r.group.clone(), |(c, _)| c.to_string())
        })
        .collect();
    configs.sort();
    configs.dedup();
    for cfg in configs {
        let mine: Vec<&AttentionEvalRow> = rows
            .iter()
            .filter(|r| r.group.starts_with(&format!("{cfg} x")))
            .collect();
        out.push(summary_of(&cfg, &mine));
    }
    out
}

/// The summary as a text table; `timing` names the mode of every figure in it.
pub fn summary_table(
    model: &AttentionModel,
    rows: &[AttentionEvalRow],
    s: &[AttentionSummary],
    timing: &str,
) -> String {
    let single = rows.first().map_or("-", |r| r.single.as_str());
    let names = baseline_names(rows);
    let mut out = format!(
        "attention model for {}, {timing} timing (every figure, augur's and the baselines'): selected vs per-shape oracle, FlashAttention-2's split rule (on augur's split-KV kernel), the best single schedule ({single}){}\n",
        model.device,
        if names.is_empty() {
            String::new()
        } else {
            format!(" and the outside baselines ({}: their time / selected time, geomean and least)", names.join(", "))
        }
    );
    let _ = write!(
        out,
        "{:<22} {:>6} {:>7} {:>6} {:>5} {:>7} {:>8}",
        "group", "shapes", "oracle", "worst", "acc", "x fa2", "x single"
    );
    for b in &names {
        let _ = write!(out, " {:>13} {:>7}", format!("x {b}"), "least");
    }
    out.push('\n');
    for r in s {
        let _ = write!(
            out,
            "{:<22} {:>6} {:>7.4} {:>6.3} {:>4.0}% {:>7.3} {:>8.3}",
            r.group,
            r.shapes,
            r.oracle_ratio,
            r.worst,
            r.picks_fastest * 100.0,
            r.vs_fa2,
            r.vs_single,
        );
        for b in &names {
            match r.vs_baselines.get(b) {
                Some(v) => {
                    let _ = write!(out, " {:>13.3} {:>7.3}", v.geomean, v.least);
                }
                None => {
                    let _ = write!(out, " {:>13} {:>7}", "-", "-");
                }
            }
        }
        out.push('\n');
    }
    out
}

/// The baselines named in any row, sorted.
fn baseline_names(rows: &[AttentionEvalRow]) -> Vec<String> {
    let mut n: Vec<String> = rows
        .iter()
        .flat_map(|r| r.baselines_us.keys().cloned())
        .collect();
    n.sort();
    n.dedup();
    n
}

/// Every shape as CSV (one `<baseline>_us` column per baseline given).
pub fn rows_csv(rows: &[AttentionEvalRow]) -> String {
    let names = baseline_names(rows);
    let mut out = String::from(
        "shape,group,unseen,selected,oracle,selected_us,oracle_us,fa2_us,fa2_splits,single,single_us",
    );
    for b in &names {
        let _ = write!(out, ",{b}_us");
    }
    out.push_str(",selected_gbs\n");
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    for r in rows {
        let _ = write!(
            out,
            "\"{}\",{},{},{},{},{:.3},{:.3},{},{},{},{:.3}",
            r.spec,
            r.group,
            r.unseen,
            r.selected,
            r.oracle,
            r.selected_us,
            r.oracle_us,
            opt(r.fa2_us),
            r.fa2_splits,
            r.single,
            r.single_us,
        );
        for b in &names {
            let _ = write!(out, ",{}", opt(r.baselines_us.get(b).copied()));
        }
        let _ = writeln!(out, ",{:.1}", r.selected_gbs);
    }
    out
}

/// Outside baselines' seconds per call: by baseline name, then by shape spec.
pub type Baselines = BTreeMap<String, BTreeMap<String, f64>>;

/// The columns of `bench/attention_baselines.py`'s CSV.
pub const BASELINE_COLUMNS: [&str; 9] = [
    "shape",
    "baseline",
    "median_s",
    "latency_s",
    "graph_s",
    "batch",
    "live_kv_bytes",
    "status",
    "check_max_error",
];

/// The timing modes an attention evaluation can use: `throughput` (the runs' `median_s`, the
/// label figure), `graph` and `latency`.
pub const TIMINGS: [&str; 3] = ["throughput", "graph", "latency"];

fn check_timing(timing: &str) -> Result<(), ModelError> {
    if TIMINGS.contains(&timing) {
        Ok(())
    } else {
        Err(ModelError::Train(format!(
            "timing `{timing}`: expected one of {}",
            TIMINGS.join(", ")
        )))
    }
}

/// Baseline times from `bench/attention_baselines.py`'s CSV in one timing mode (`throughput`:
/// `median_s`; `graph`; `latency`); rows not `ok`, or without that mode's figure, left out.
/// Errors name the file and line.
pub fn read_baselines(path: &Path, timing: &str) -> Result<Baselines, ModelError> {
    check_timing(timing)?;
    let expected: Vec<String> = BASELINE_COLUMNS.iter().map(|s| s.to_string()).collect();
    let mut rdr = open_csv(path, &expected, |col, found, want| {
        format!(
            "not a baselines CSV of bench/attention_baselines.py at column {col}: found \
             `{found}`, expected `{want}` (SDPA-only files of the former \
             bench/attention_sdpa.py timed one eager call each: re-run the baselines script)"
        )
    })?;
    let col = match timing {
        "throughput" => 2,
        "latency" => 3,
        _ => 4,
    };
    let mut out = Baselines::new();
    for rec in crate::runs::records(path, &mut rdr) {
        let (rec, line) = rec?;
        let get = |i: usize| rec.get(i).unwrap_or("");
        if get(7) != "ok" || get(col).is_empty() {
            continue;
        }
        let t: f64 = get(col).parse().map_err(|_| {
            bad(
                path,
                line,
                format!("column `{}`: `{}` is not a number", expected[col], get(col)),
            )
        })?;
        if !(t > 0.0 && t.is_finite()) {
            return Err(bad(
                path,
                line,
                format!("{} {t} must be finite and > 0", expected[col]),
            ));
        }
        out.entry(get(1).to_string())
            .or_default()
            .insert(get(0).to_string(), t);
    }
    Ok(out)
}

impl AttentionRuns {
    /// The runs with `median_s` taken from another timing mode (`graph`: the graph replay,
    /// None where not captured; `latency`: one launch from an idle stream; `throughput`: as
    /// they are), so that evaluation compares every side in one mode.
    pub fn in_timing(&self, timing: &str) -> Result<AttentionRuns, ModelError> {
        check_timing(timing)?;
        let mut out = self.clone();
        for r in &mut out.runs {
            r.median_s = match timing {
                "graph" => r.median_s.and(r.graph_s),
                "latency" => r.median_s.and(r.latency_s),
                _ => r.median_s,
            };
        }
        Ok(out)
    }
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
            latency_s: t.map(|t| t * 1.5),
            graph_s: t.map(|t| t * 0.9),
            batch: 8,
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

    /// Runs where `gqa` wins below 2048 tokens per sequence and `split-8` above, over 3 head
    /// configurations x 4 batch sizes (12 groups) x 6 lengths; `fa2` in between.
    fn synthetic() -> AttentionRuns {
        let mut runs = Vec::new();
        for (hq, hk) in [(32, 8), (16, 16), (64, 8)] {
            for batch in [1, 4, 16, 64] {
                for len in [128, 512, 1024, 4096, 16384, 65536] {
                    let spec = format!(
                        "attention:q_heads={hq},kv_heads={hk},head_dim=128,dtype=bf16,lens={len}*{batch}"
                    );
                    let base = (len * batch) as f64 * 1e-9;
                    let (g, s8) = if len < 2048 {
                        (base, 2.0 * base)
                    } else {
                        (3.0 * base, base)
                    };
                    runs.push(run(&spec, "gqa", Some(g)));
                    runs.push(run(&spec, "split-8", Some(s8)));
                    runs.push(run(&spec, "head", Some(4.0 * base)));
                    runs.push(run(&spec, FA2, Some(1.5 * base)));
                }
            }
        }
        AttentionRuns { runs }
    }

    #[test]
    fn training_finds_the_length_cutoff_and_exports_and_evaluates() {
        let runs = synthetic();
        let m = AttentionTrainParams::default()
            .check()
            .unwrap()
            .fit(&runs, "test")
            .unwrap();
        assert_eq!(m.schedules, ["gqa", "split-8", "head"]);
        assert!(!m.schedules.contains(&FA2.to_string()));
        // 12 groups, every 5th held out.
        assert_eq!(m.training.held_out_groups.len(), 2);
        assert_eq!(m.training.shapes, 10 * 6);
        let shape = |len: usize| {
            AttentionShape::parse(&format!(
                "attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens={len}*8"
            ))
            .unwrap()
        };
        assert_eq!(m.choose(&shape(300)), Some("gqa"));
        assert_eq!(m.choose(&shape(30000)), Some("split-8"));
        assert!(!m.path(&shape(300)).is_empty());
        // Round trip and the exports.
        let back = AttentionModel::from_json(&m.to_json(), "mem").unwrap();
        assert_eq!(back, m);
        assert!(matches!(
            crate::AnyModel::from_json(&m.to_json(), "mem").unwrap(),
            crate::AnyModel::Attention(_)
        ));
        let text = export_text(&m);
        assert!(
            text.contains("-> gqa") && text.contains("-> split-8") && text.contains("if "),
            "{text}"
        );
        assert!(export_dot(&m).starts_with("digraph augur_attention"));
        let rust = export_rust(&m);
        assert!(
            rust.contains("pub enum AttentionSchedule")
                && rust.contains("AttentionSchedule::Split8"),
            "{rust}"
        );
        // Evaluation: the synthetic oracle is learnable, so the pick is the oracle; FA2 costs
        // 1.5x the oracle below the cutoff... and the best single schedule is split-8 or gqa.
        let mut sdpa = BTreeMap::new();
        sdpa.insert(
            runs.runs[0].spec.clone(),
            2.0 * runs.runs[0].median_s.unwrap(),
        );
        let baselines: Baselines = [("sdpa".to_string(), sdpa)].into_iter().collect();
        let rows = evaluate(&m, &runs, &baselines).unwrap();
        assert_eq!(rows.len(), 72);
        assert!(rows.iter().all(|r| r.selected == r.oracle));
        assert_eq!(rows.iter().filter(|r| r.unseen).count(), 12);
        let sums = summarize(&rows);
        assert_eq!(sums[0].group, "all");
        assert!((sums[0].oracle_ratio - 1.0).abs() < 1e-9);
        assert!((sums[0].vs_fa2 - 1.5).abs() < 1e-9, "{}", sums[0].vs_fa2);
        assert!(sums[0].vs_single > 1.0);
        let sd = sums[0].vs_baselines["sdpa"];
        assert_eq!((sd.shapes, sd.geomean, sd.least), (1, 2.0, 2.0));
        assert_eq!(sums[1].group, "held-out groups");
        let table = summary_table(&m, &rows, &sums, "throughput");
        assert!(
            table.contains("held-out groups") && table.contains("x sdpa"),
            "{table}"
        );
        let csv = rows_csv(&rows);
        assert_eq!(csv.lines().count(), 73);
        assert!(csv.lines().next().unwrap().contains(",sdpa_us,"), "{csv}");
        // The graph mode replaces every time by its graph figure (0.9x in `run`): the ratios
        // stay, the oracle times move.
        let g = evaluate(&m, &runs.in_timing("graph").unwrap(), &Baselines::new()).unwrap();
        assert!((g[0].oracle_us - 0.9 * rows[0].oracle_us).abs() < 1e-9 * rows[0].oracle_us);
        assert!(runs.in_timing("wall").is_err());
        // A model of another format is refused with its origin named.
        let wrong = m.to_json().replace(ATTENTION_FORMAT, "augur-comm-model");
        let e = AttentionModel::from_json(&wrong, "x.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.json"), "{e}");
        // Bad parameters are refused.
        assert!(AttentionTrainParams {
            folds: 1,
            ..Default::default()
        }
        .check()
        .is_err());
        assert!(AttentionTrainParams {
            holdout_every: 1,
            ..Default::default()
        }
        .check()
        .is_err());
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
