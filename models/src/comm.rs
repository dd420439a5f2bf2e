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

use crate::runs::{bad, open_csv};
use crate::train::{cv_depth, fit_costs, CostSample};
use crate::tree::{clean, Tree};
use crate::{read_text, write_atomic, ModelError};

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

// ---- the model ---------------------------------------------------------------------------

/// Format name and version of comm model files.
pub const COMM_FORMAT: &str = "augur-comm-model";
pub const COMM_FORMAT_VERSION: u32 = 1;

/// The tree of one collective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveTree {
    /// `all-reduce` or `all-gather`.
    pub collective: String,
    /// Pattern names; classes are indices into this list.
    pub patterns: Vec<String>,
    /// Input names (message features, schema order).
    pub inputs: Vec<String>,
    /// Schema index of each input.
    pub features: Vec<usize>,
    pub tree: Tree,
    /// Depth chosen by cross-validation over message sizes.
    pub max_depth: usize,
    /// Geomean of oracle / selected over the cross-validation folds.
    pub cv_oracle_ratio: f64,
}

/// What a comm model was trained on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommTraining {
    /// SHA-256 over the training messages (shape, pattern, seconds).
    pub digest: String,
    pub messages: usize,
    /// Which sizes were kept out of training (`between`: sizes that are not a power of two).
    pub holdout: String,
    pub world_sizes: Vec<usize>,
    pub dtypes: Vec<String>,
    pub folds: usize,
    /// Messages left out because they lack a pattern their size peers have
    /// ([`complete_messages`]).
    #[serde(default)]
    pub incomplete: usize,
}

/// A trained communication-pattern selector: one tree per collective over the message features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommModel {
    pub format: String,
    pub format_version: u32,
    pub task: String,
    pub schema: FeatureSchema,
    pub device: String,
    pub augur_version: String,
    pub trees: Vec<CollectiveTree>,
    pub training: CommTraining,
}

impl CollectiveTree {
    /// This tree as the exporters walk it.
    fn class_tree<'a>(&'a self, model: &'a CommModel) -> crate::export::ClassTree<'a> {
        crate::export::ClassTree {
            tree: &self.tree,
            inputs: &self.inputs,
            classes: &self.patterns,
            schema: &model.schema,
            noun: "messages",
        }
    }
}

impl CommModel {
    /// The tree for a collective.
    pub fn tree_for(&self, c: Collective) -> Option<&CollectiveTree> {
        self.trees
            .iter()
            .find(|t| t.collective == collective_name(c))
    }

    /// The pattern for a message (None: the model has no tree for its collective).
    pub fn choose(&self, shape: &MessageShape) -> Option<&str> {
        let t = self.tree_for(shape.collective)?;
        let f = shape.features().ok()?;
        let v = f.values();
        let x: Vec<f64> = t.features.iter().map(|&i| clean(v[i])).collect();
        Some(&t.patterns[t.tree.predict(&x)])
    }

    /// The leaf path of a message: (input name, value, threshold, went left) per split.
    pub fn path(&self, shape: &MessageShape) -> Vec<(String, f64, f64, bool)> {
        let (Some(t), Ok(f)) = (self.tree_for(shape.collective), shape.features()) else {
            return Vec::new();
        };
        let v = f.values();
        let x: Vec<f64> = t.features.iter().map(|&i| clean(v[i])).collect();
        t.tree.named_path(&x, &t.inputs)
    }

    pub fn from_json(text: &str, origin: &str) -> Result<CommModel, ModelError> {
        crate::parse_json(text, origin, "comm model", CommModel::validate)
    }

    pub fn read(path: &Path) -> Result<CommModel, ModelError> {
        CommModel::from_json(&read_text(path)?, &path.display().to_string())
    }

    /// Write as pretty JSON through a temporary file and a rename.
    pub fn write(&self, path: &Path) -> Result<(), ModelError> {
        write_atomic(path, &self.to_json())
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a model always serializes")
    }

    pub fn validate(&self) -> Result<(), String> {
        crate::check_header(
            (&self.format, self.format_version),
            (COMM_FORMAT, COMM_FORMAT_VERSION),
            &self.schema,
            &MessageFeatures::schema(),
        )?;
        if self.trees.is_empty() {
            return Err("no trees".into());
        }
        let n = self.schema.features.len();
        for t in &self.trees {
            if Collective::parse(&t.collective).is_none() {
                return Err(format!("unknown collective `{}`", t.collective));
            }
            if t.patterns.is_empty() || t.inputs.len() != t.features.len() {
                return Err(format!(
                    "{}: no patterns, or inputs unlike features",
                    t.collective
                ));
            }
            if let Some(f) = t.features.iter().find(|&&f| f >= n) {
                return Err(format!(
                    "{}: feature index {f} beyond the schema",
                    t.collective
                ));
            }
            t.tree
                .validate(t.features.len(), t.patterns.len())
                .map_err(|e| format!("{}: {e}", t.collective))?;
        }
        Ok(())
    }
}

// ---- training ----------------------------------------------------------------------------

/// Hyper-parameters of comm training (linfa style: params -> check -> fit).
#[derive(Debug, Clone)]
pub struct CommTrainParams {
    /// Depths tried by cross-validation (1..=this).
    pub max_depth: usize,
    pub min_weight_leaf: f32,
    pub folds: usize,
    /// Keep sizes that are not a power of two out of training (for `augur eval`).
    pub holdout_between: bool,
}

impl Default for CommTrainParams {
    fn default() -> Self {
        CommTrainParams {
            max_depth: 6,
            min_weight_leaf: 1.0,
            folds: 4,
            holdout_between: true,
        }
    }
}

/// Checked parameters.
#[derive(Debug, Clone)]
pub struct CheckedCommTrainParams(CommTrainParams);

impl CommTrainParams {
    pub fn check(self) -> Result<CheckedCommTrainParams, ModelError> {
        crate::train::check_cost_params(self.max_depth, self.folds, self.min_weight_leaf)?;
        Ok(CheckedCommTrainParams(self))
    }
}

/// Whether a message size is held out of training (not a power of two).
pub fn held_out(bytes: usize, holdout_between: bool) -> bool {
    holdout_between && !bytes.is_power_of_two()
}

fn samples_of(msgs: &[&Message], patterns: &[String], features: &[usize]) -> Vec<CostSample> {
    msgs.iter()
        .filter_map(|m| {
            let times: Vec<Option<f64>> = patterns.iter().map(|p| m.time(p)).collect();
            let f = m.features();
            CostSample::new(
                features.iter().map(|&i| f[i]).collect(),
                &times,
                m.shape.bytes as u64,
            )
        })
        .collect()
}

impl CheckedCommTrainParams {
    /// One tree per collective in `runs` (for its patterns), depth chosen by cross-validation
    /// over message sizes (a size never spans two folds).
    pub fn fit(&self, runs: &CommRuns, augur_version: &str) -> Result<CommModel, ModelError> {
        let p = &self.0;
        let (msgs, incomplete) = complete_messages(runs.messages());
        if msgs.is_empty() {
            return Err(ModelError::Train("no comm runs".into()));
        }
        let devices: std::collections::BTreeSet<&str> =
            msgs.iter().map(|m| m.device.as_str()).collect();
        if devices.len() > 1 {
            return Err(ModelError::Train(format!(
                "runs from several devices ({}): train one model per machine",
                devices.into_iter().collect::<Vec<_>>().join(", ")
            )));
        }
        let schema = MessageFeatures::schema();
        // Every message feature but the collective flags (one tree per collective) and the
        // fused-GEMM ones (no fused messages are measured).
        let skip = [
            "all_reduce",
            "all_gather",
            "reduce_scatter",
            "gemm_m",
            "gemm_n",
            "gemm_k",
            "gemm_flops",
        ];
        let features: Vec<usize> = schema
            .features
            .iter()
            .enumerate()
            .filter(|(_, f)| !skip.contains(&f.name.as_str()))
            .map(|(i, _)| i)
            .collect();
        let inputs: Vec<String> = features
            .iter()
            .map(|&i| schema.features[i].name.clone())
            .collect();
        let mut trees = Vec::new();
        let mut digest = sha2::Sha256::new();
        let mut trained = 0usize;
        for c in [
            Collective::AllReduce,
            Collective::AllGather,
            Collective::ReduceScatter,
        ] {
            let mine: Vec<&Message> = msgs.iter().filter(|m| m.shape.collective == c).collect();
            if mine.is_empty() {
                continue;
            }
            let mut patterns: Vec<String> = Vec::new();
            for m in &mine {
                for (pname, _) in &m.runs {
                    if !patterns.contains(pname) {
                        patterns.push(pname.clone());
                    }
                }
            }
            let all = samples_of(&mine, &patterns, &features);
            let train: Vec<&CostSample> = all
                .iter()
                .filter(|s| !held_out(s.group as usize, p.holdout_between))
                .collect();
            if train.is_empty() {
                return Err(ModelError::Train(format!(
                    "{}: no training sizes (every size is held out)",
                    collective_name(c)
                )));
            }
            for m in &mine {
                if !held_out(m.shape.bytes, p.holdout_between) {
                    use sha2::Digest;
                    digest.update(format!("{:?}|{:?}\n", m.shape, m.runs).as_bytes());
                    trained += 1;
                }
            }
            // Folds by size (a size never spans two folds).
            let best = cv_depth(&train, p.max_depth, p.folds, p.min_weight_leaf)?;
            let tree = fit_costs(&train, best.0, p.min_weight_leaf)?;
            trees.push(CollectiveTree {
                collective: collective_name(c).into(),
                patterns,
                inputs: inputs.clone(),
                features: features.clone(),
                tree,
                max_depth: best.0,
                cv_oracle_ratio: best.1,
            });
        }
        let mut worlds: Vec<usize> = msgs.iter().map(|m| m.shape.world_size).collect();
        worlds.sort_unstable();
        worlds.dedup();
        let mut dtypes: Vec<String> = msgs
            .iter()
            .map(|m| dtype_name(m.shape.dtype).to_string())
            .collect();
        dtypes.sort();
        dtypes.dedup();
        use sha2::Digest;
        let model = CommModel {
            format: COMM_FORMAT.into(),
            format_version: COMM_FORMAT_VERSION,
            task: "comm".into(),
            schema,
            device: msgs[0].device.clone(),
            augur_version: augur_version.into(),
            trees,
            training: CommTraining {
                digest: digest
                    .finalize()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
                messages: trained,
                holdout: if p.holdout_between {
                    "between".into()
                } else {
                    "none".into()
                },
                world_sizes: worlds,
                dtypes,
                folds: p.folds,
                incomplete,
            },
        };
        model.validate().map_err(ModelError::Train)?;
        Ok(model)
    }
}

// ---- export --------------------------------------------------------------------------------

/// Readable rules, one tree per collective.
pub fn export_text(model: &CommModel) -> String {
    let mut out = format!(
        "augur communication-pattern model for {} (GPUs per group: {:?}; dtypes: {}; trained on {} messages, holdout: {}; {} incomplete messages left out)\n",
        model.device,
        model.training.world_sizes,
        model.training.dtypes.join(", "),
        model.training.messages,
        model.training.holdout,
        model.training.incomplete
    );
    for t in &model.trees {
        let _ = writeln!(
            out,
            "\n{} (patterns: {}; depth {} by cross-validation, oracle ratio {:.3}):",
            t.collective,
            t.patterns.join(", "),
            t.max_depth,
            t.cv_oracle_ratio
        );
        t.class_tree(model).text(1, &mut out);
    }
    out
}

/// Graphviz DOT: one cluster per collective.
pub fn export_dot(model: &CommModel) -> String {
    use crate::export::dot_escape;
    let mut out = String::from(
        "digraph augur_comm {\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\"];\n",
    );
    for (c, t) in model.trees.iter().enumerate() {
        let _ = writeln!(
            out,
            "  subgraph cluster_{c} {{\n    label=\"{}\";",
            dot_escape(&t.collective)
        );
        t.class_tree(model).dot(&format!("c{c}_"), "    ", &mut out);
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}

/// A Rust module: `enum CommPattern` and `fn select(f: &MessageFeatures) -> Option<CommPattern>`.
pub fn export_rust(model: &CommModel) -> String {
    use crate::export::variant;
    let mut names: Vec<&str> = Vec::new();
    for t in &model.trees {
        for p in &t.patterns {
            if !names.contains(&p.as_str()) {
                names.push(p);
            }
        }
    }
    let mut out = format!(
        "// Generated by `augur export --format rust` from a comm model for {}.\n// Message schema v{}.\n\nuse augur_features::message::MessageFeatures;\n\n/// The patterns the model chooses from.\n#[derive(Debug, Clone, Copy, PartialEq, Eq)]\npub enum CommPattern {{\n",
        model.device, model.schema.version
    );
    for n in &names {
        let _ = writeln!(out, "    {},", variant(n));
    }
    out.push_str("}\n\nimpl CommPattern {\n    /// The pattern's name in augur.\n    pub fn name(self) -> &'static str {\n        match self {\n");
    for n in &names {
        let _ = writeln!(out, "            CommPattern::{} => \"{n}\",", variant(n));
    }
    out.push_str("        }\n    }\n}\n\n/// The pattern for a message (None for a collective the model was not trained on).\n#[allow(clippy::all, unused_variables)]\npub fn select(f: &MessageFeatures) -> Option<CommPattern> {\n");
    for t in &model.trees {
        let flag = t.collective.replace('-', "_");
        let _ = writeln!(out, "    if f.{flag} == 1.0 {{");
        t.class_tree(model).rust("CommPattern", 2, &mut out);
        out.push_str("    }\n");
    }
    out.push_str("    None\n}\n");
    out
}

// ---- evaluation ----------------------------------------------------------------------------

/// One message evaluated.
#[derive(Debug, Clone, Serialize)]
pub struct CommEvalRow {
    pub collective: String,
    pub dtype: String,
    pub world: usize,
    pub bytes: usize,
    /// Whether the size was kept out of training.
    pub unseen: bool,
    pub selected: String,
    pub selected_s: f64,
    pub oracle: String,
    pub oracle_s: f64,
    pub nccl_s: Option<f64>,
    /// The fixed-cutoff rule's pattern and time.
    pub rule: String,
    pub rule_s: Option<f64>,
    /// Bus bandwidth (GB/s, nccl-tests) of every pattern measured, in the runs' order.
    pub busbw: Vec<(String, Option<f64>)>,
}

/// Summary of a group of rows.
#[derive(Debug, Clone, Serialize)]
pub struct CommSummary {
    pub group: String,
    pub messages: usize,
    /// Geomean and least of oracle / selected.
    pub oracle_ratio: f64,
    pub worst: f64,
    /// Share of messages whose pick is the fastest.
    pub accuracy: f64,
    /// Geomean of NCCL / selected and rule / selected (speedups over each).
    pub vs_nccl: Option<f64>,
    pub vs_rule: Option<f64>,
    /// Messages <= 64 KiB: geomean and worst of selected / NCCL latency.
    pub small_latency_vs_nccl: Option<(f64, f64)>,
    /// Messages >= 64 MiB: least selected busbw / NCCL busbw.
    pub large_busbw_vs_nccl: Option<f64>,
}

/// The fixed cutoffs vLLM and TensorRT-LLM use for all-reduce: one-shot up to 256 KiB, two-shot
/// up to 4 MiB, NCCL above. For all-gather (they have none) the same sizes with pull as the
/// one-shot and push as the two-shot analogue.
pub fn cutoff_rule(c: Collective, bytes: usize) -> &'static str {
    match (c, bytes) {
        (Collective::AllReduce, b) if b <= 256 << 10 => "one-shot",
        (Collective::AllReduce, b) if b <= 4 << 20 => "two-shot",
        (Collective::AllGather, b) if b <= 256 << 10 => "pull",
        (Collective::AllGather, b) if b <= 4 << 20 => "push",
        _ => "nccl",
    }
}

/// Evaluate a comm model on runs (every complete message, see [`complete_messages`]; `unseen`
/// marks sizes kept out of training).
pub fn evaluate(model: &CommModel, runs: &CommRuns) -> Result<Vec<CommEvalRow>, ModelError> {
    let holdout = model.training.holdout == "between";
    let mut rows = Vec::new();
    let (msgs, _) = complete_messages(runs.messages());
    for m in msgs {
        let Some((oracle, oracle_s)) = m.oracle() else {
            continue;
        };
        let Some(selected) = model.choose(&m.shape) else {
            continue;
        };
        let worst = m.runs.iter().filter_map(|r| r.1).fold(f64::NAN, f64::max);
        // A pick that failed or was not measured costs twice the slowest, as in training.
        let cost = |p: &str| m.time(p).unwrap_or(2.0 * worst);
        let rule = cutoff_rule(m.shape.collective, m.shape.bytes);
        let bus = |t: f64| {
            m.shape.bytes as f64 / t / 1e9 * m.shape.collective.bus_factor(m.shape.world_size)
        };
        rows.push(CommEvalRow {
            collective: collective_name(m.shape.collective).into(),
            dtype: dtype_name(m.shape.dtype).into(),
            world: m.shape.world_size,
            bytes: m.shape.bytes,
            unseen: held_out(m.shape.bytes, holdout),
            selected: selected.to_string(),
            selected_s: cost(selected),
            oracle: oracle.to_string(),
            oracle_s,
            nccl_s: m.time("nccl"),
            rule: rule.into(),
            rule_s: m.time(rule),
            busbw: m
                .runs
                .iter()
                .map(|(p, t)| (p.clone(), t.map(bus)))
                .collect(),
        });
    }
    if rows.is_empty() {
        return Err(ModelError::Eval(
            "no message of the runs has a tree in the model and a measured pattern".into(),
        ));
    }
    Ok(rows)
}

/// Summaries: per (collective, world), and over everything, for all / unseen sizes.
pub fn summarize(rows: &[CommEvalRow]) -> Vec<CommSummary> {
    let mut groups: Vec<(String, Vec<&CommEvalRow>)> = Vec::new();
    let mut keys: Vec<(String, usize)> = rows
        .iter()
        .map(|r| (r.collective.clone(), r.world))
        .collect();
    keys.sort();
    keys.dedup();
    for (c, w) in &keys {
        groups.push((
            format!("{c}, {w} GPUs"),
            rows.iter()
                .filter(|r| &r.collective == c && r.world == *w)
                .collect(),
        ));
    }
    groups.push(("all".into(), rows.iter().collect()));
    groups.push((
        "all, unseen sizes".into(),
        rows.iter().filter(|r| r.unseen).collect(),
    ));
    groups
        .into_iter()
        .filter(|(_, g)| !g.is_empty())
        .map(|(group, g)| {
            let gm = |v: Vec<f64>| (!v.is_empty()).then(|| crate::train::geomean(v.into_iter()));
            let small: Vec<f64> = g
                .iter()
                .filter(|r| r.bytes <= 64 << 10)
                .filter_map(|r| r.nccl_s.map(|n| r.selected_s / n))
                .collect();
            let large: Vec<f64> = g
                .iter()
                .filter(|r| r.bytes >= 64 << 20)
                .filter_map(|r| r.nccl_s.map(|n| n / r.selected_s))
                .collect();
            CommSummary {
                messages: g.len(),
                oracle_ratio: crate::train::geomean(g.iter().map(|r| r.oracle_s / r.selected_s)),
                worst: g
                    .iter()
                    .map(|r| r.oracle_s / r.selected_s)
                    .fold(f64::INFINITY, f64::min),
                accuracy: g.iter().filter(|r| r.selected_s <= r.oracle_s).count() as f64
                    / g.len() as f64,
                vs_nccl: gm(g
                    .iter()
                    .filter_map(|r| r.nccl_s.map(|n| n / r.selected_s))
                    .collect()),
                vs_rule: gm(g
                    .iter()
                    .filter_map(|r| r.rule_s.map(|n| n / r.selected_s))
                    .collect()),
                small_latency_vs_nccl: gm(small.clone())
                    .map(|m| (m, small.iter().copied().fold(f64::NEG_INFINITY, f64::max))),
                large_busbw_vs_nccl: (!large.is_empty())
                    .then(|| large.iter().copied().fold(f64::INFINITY, f64::min)),
                group,
            }
        })
        .collect()
}

/// The summary table as text.
pub fn summary_table(model: &CommModel, s: &[CommSummary]) -> String {
    let mut out = format!(
        "comm model for {}: selected vs per-size oracle, NCCL alone, fixed cutoffs (one-shot <= 256 KiB, two-shot <= 4 MiB, else NCCL)\n",
        model.device
    );
    let _ = writeln!(
        out,
        "{:<26} {:>5} {:>8} {:>7} {:>6} {:>9} {:>9} {:>16} {:>13}",
        "group",
        "msgs",
        "oracle",
        "worst",
        "acc",
        "x NCCL",
        "x rule",
        "<=64K lat/NCCL",
        ">=64M bus/NCCL"
    );
    let o = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    for g in s {
        let _ = writeln!(
            out,
            "{:<26} {:>5} {:>8.4} {:>7.3} {:>5.0}% {:>9} {:>9} {:>16} {:>13}",
            g.group,
            g.messages,
            g.oracle_ratio,
            g.worst,
            g.accuracy * 100.0,
            o(g.vs_nccl),
            o(g.vs_rule),
            g.small_latency_vs_nccl
                .map_or("-".into(), |(m, w)| format!("{m:.2} (max {w:.2})")),
            o(g.large_busbw_vs_nccl)
        );
    }
    out
}

/// Every evaluated message as CSV: bus bandwidth per pattern, the pick, the oracle, the rule.
pub fn rows_csv(rows: &[CommEvalRow]) -> String {
    let mut patterns: Vec<String> = Vec::new();
    for r in rows {
        for (p, _) in &r.busbw {
            if !patterns.contains(p) {
                patterns.push(p.clone());
            }
        }
    }
    let mut out = String::from("collective,dtype,world,bytes,unseen,selected,oracle,rule,selected_us,oracle_us,nccl_us,rule_us");
    for p in &patterns {
        let _ = write!(out, ",busbw_{p}");
    }
    out.push('\n');
    let us = |v: Option<f64>| v.map_or(String::new(), |v| format!("{:.3}", v * 1e6));
    for r in rows {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            r.collective,
            r.dtype,
            r.world,
            r.bytes,
            r.unseen,
            r.selected,
            r.oracle,
            r.rule,
            us(Some(r.selected_s)),
            us(Some(r.oracle_s)),
            us(r.nccl_s),
            us(r.rule_s)
        );
        for p in &patterns {
            let v = r.busbw.iter().find(|(q, _)| q == p).and_then(|(_, b)| *b);
            let _ = write!(out, ",{}", v.map_or(String::new(), |v| format!("{v:.2}")));
        }
        out.push('\n');
    }
    out
}

/// Bus bandwidth against message size, one panel per (collective, GPUs) for `dtype`, a line per
/// pattern, the selected pattern's points ringed.
pub fn plot_busbw(
    rows: &[CommEvalRow],
    dtype: &str,
    title: &str,
    path: &Path,
) -> Result<(), ModelError> {
    use plotters::prelude::*;
    let err = |e: String| ModelError::Io {
        path: path.to_path_buf(),
        msg: e,
    };
    let rows: Vec<&CommEvalRow> = rows.iter().filter(|r| r.dtype == dtype).collect();
    let mut panels: Vec<(String, usize)> = rows
        .iter()
        .map(|r| (r.collective.clone(), r.world))
        .collect();
    panels.sort();
    panels.dedup();
    if panels.is_empty() {
        return Err(ModelError::Eval(format!("no {dtype} messages to plot")));
    }
    let tmp = path.with_extension("svg.tmp");
    {
        let cols = 2usize;
        let nrows = panels.len().div_ceil(cols);
        let root = SVGBackend::new(&tmp, (1100, 420 * nrows as u32 + 40)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let root = root
            .titled(title, ("sans-serif", 20))
            .map_err(|e| err(e.to_string()))?;
        let areas = root.split_evenly((nrows, cols));
        let colours = [
            BLACK,
            RED,
            BLUE,
            GREEN,
            MAGENTA,
            CYAN,
            RGBColor(255, 140, 0),
        ];
        for ((c, w), area) in panels.iter().zip(areas) {
            let mine: Vec<&&CommEvalRow> = rows
                .iter()
                .filter(|r| &r.collective == c && r.world == *w)
                .collect();
            let mut patterns: Vec<String> = Vec::new();
            for r in &mine {
                for (p, _) in &r.busbw {
                    if !patterns.contains(p) {
                        patterns.push(p.clone());
                    }
                }
            }
            let xmin = mine.iter().map(|r| r.bytes).min().unwrap_or(1).max(1) as f64;
            let xmax = mine.iter().map(|r| r.bytes).max().unwrap_or(2) as f64;
            let ymax = mine
                .iter()
                .flat_map(|r| r.busbw.iter().filter_map(|b| b.1))
                .fold(1.0f64, f64::max)
                * 1.1;
            let mut chart = ChartBuilder::on(&area)
                .caption(
                    format!("{c}, {w} GPUs, {dtype}: bus bandwidth"),
                    ("sans-serif", 16),
                )
                .margin(10)
                .x_label_area_size(35)
                .y_label_area_size(50)
                .build_cartesian_2d((xmin..xmax * 1.2).log_scale(), 0f64..ymax)
                .map_err(|e| err(e.to_string()))?;
            chart
                .configure_mesh()
                .x_desc("bytes")
                .y_desc("busbw GB/s")
                .x_label_formatter(&|v| crate::export::readable(*v, "bytes"))
                .draw()
                .map_err(|e| err(e.to_string()))?;
            for (i, p) in patterns.iter().enumerate() {
                let col = colours[i % colours.len()];
                let pts: Vec<(f64, f64)> = mine
                    .iter()
                    .filter_map(|r| {
                        r.busbw
                            .iter()
                            .find(|(q, _)| q == p)
                            .and_then(|(_, b)| *b)
                            .map(|b| (r.bytes as f64, b))
                    })
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts, col.stroke_width(2)))
                    .map_err(|e| err(e.to_string()))?
                    .label(p.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 15, y)], col.stroke_width(2))
                    });
            }
            let sel: Vec<(f64, f64)> = mine
                .iter()
                .filter_map(|r| {
                    r.busbw
                        .iter()
                        .find(|(q, _)| *q == r.selected)
                        .and_then(|(_, b)| *b)
                        .map(|b| (r.bytes as f64, b))
                })
                .collect();
            chart
                .draw_series(
                    sel.into_iter()
                        .map(|(x, y)| Circle::new((x, y), 5, BLACK.stroke_width(1))),
                )
                .map_err(|e| err(e.to_string()))?
                .label("selected")
                .legend(|(x, y)| Circle::new((x + 7, y), 5, BLACK.stroke_width(1)));
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.8))
                .draw()
                .map_err(|e| err(e.to_string()))?;
        }
        root.present().map_err(|e| err(e.to_string()))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic runs: pattern `fast-small` wins below 64 KiB, `fast-large` above, `nccl` never
    /// (by 20%), on 2 and 4 GPUs, f32 and bf16; `drop` leaves one pattern out of one message.
    fn synthetic(drop: Option<(usize, &str)>) -> CommRuns {
        let mut runs = Vec::new();
        for world in [2usize, 4] {
            for dtype in ["f32", "bf16"] {
                let mut b = 1024usize;
                while b <= 64 << 20 {
                    for (bytes, between) in [(b, false), (b + b / 2, true)] {
                        let _ = between;
                        let shape = MessageShape::parse(&format!(
                            "message:collective=all-reduce,dtype={dtype},bytes={bytes},world={world}"
                        ))
                        .unwrap();
                        let base = 5e-6 + bytes as f64 / 100e9;
                        let small = if bytes < 64 << 10 { base } else { base * 1.5 };
                        let large = if bytes < 64 << 10 { base * 1.5 } else { base };
                        for (p, t) in [
                            ("nccl", base * 1.8),
                            ("fast-small", small),
                            ("fast-large", large),
                        ] {
                            if drop == Some((bytes, p)) && world == 2 && dtype == "f32" {
                                continue;
                            }
                            runs.push(CommRun {
                                shape: shape.clone(),
                                gpus: "0;1".into(),
                                device: "Test GPU".into(),
                                driver: "13.0".into(),
                                augur_version: "test".into(),
                                pattern: p.into(),
                                median_s: Some(t),
                                error: String::new(),
                                reps: 9,
                                batch: 10,
                                check: "exact".into(),
                            });
                        }
                    }
                    b *= 2;
                }
            }
        }
        CommRuns { runs }
    }

    #[test]
    fn runs_round_trip_through_csv() {
        let runs = synthetic(None);
        let dir = std::env::temp_dir().join(format!("augur-comm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("runs.csv");
        runs.write(std::fs::File::create(&p).unwrap()).unwrap();
        let back = CommRuns::read(std::slice::from_ref(&p)).unwrap();
        assert_eq!(back.runs.len(), runs.runs.len());
        assert_eq!(back.runs[5].shape, runs.runs[5].shape);
        assert!(
            (back.runs[5].median_s.unwrap() / runs.runs[5].median_s.unwrap() - 1.0).abs() < 1e-9
        );
        // A damaged value names the file and line.
        let text = std::fs::read_to_string(&p).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        lines[3] = lines[3].replacen(",ok,,", ",ok,,not-a-number", 1);
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let e = CommRuns::read(std::slice::from_ref(&p))
            .unwrap_err()
            .to_string();
        assert!(e.contains("runs.csv:4") && e.contains("median_s"), "{e}");
        // An SpMV runs header is refused with the column.
        std::fs::write(&p, "matrix,family\nx,y\n").unwrap();
        let e = CommRuns::read(std::slice::from_ref(&p))
            .unwrap_err()
            .to_string();
        assert!(e.contains(":1:") && e.contains("collective"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn training_finds_the_size_cutoff_and_eval_scores_it() {
        let runs = synthetic(None);
        let m = CommTrainParams::default()
            .check()
            .unwrap()
            .fit(&runs, "test")
            .unwrap();
        assert_eq!(m.training.holdout, "between");
        let pick = |bytes: &str, world: usize| {
            let s = MessageShape::parse(&format!(
                "message:collective=all-reduce,bytes={bytes},world={world}"
            ))
            .unwrap();
            m.choose(&s).unwrap().to_string()
        };
        assert_eq!(pick("4KiB", 2), "fast-small");
        assert_eq!(pick("40KiB", 4), "fast-small");
        assert_eq!(pick("1MiB", 2), "fast-large");
        assert_eq!(pick("32MiB", 4), "fast-large");
        // No all-gather tree: no choice.
        let ag = MessageShape::parse("message:collective=all-gather,bytes=4KiB,world=2").unwrap();
        assert!(m.choose(&ag).is_none());
        // The path's steps hold for the input.
        let s = MessageShape::parse("message:collective=all-reduce,bytes=4KiB,world=2").unwrap();
        for (_, v, t, left) in m.path(&s) {
            assert_eq!(v < t, left);
        }
        let rows = evaluate(&m, &runs).unwrap();
        let sums = summarize(&rows);
        let all = sums.iter().find(|g| g.group == "all").unwrap();
        // Training sizes are powers of two: every one is picked right; an unseen size between
        // 32 and 64 KiB can fall on either side of the learnt cutoff (48 KiB).
        let trained: Vec<&CommEvalRow> = rows.iter().filter(|r| !r.unseen).collect();
        assert!(trained.iter().all(|r| r.selected == r.oracle));
        assert!(all.oracle_ratio > 0.98, "{all:?}");
        let unseen = sums
            .iter()
            .find(|g| g.group == "all, unseen sizes")
            .unwrap();
        assert!(
            unseen.messages > 0 && unseen.oracle_ratio > 0.97,
            "{unseen:?}"
        );
        assert!(all.vs_nccl.unwrap() > 1.5);
        // The model file round-trips and is refused when damaged.
        let back = CommModel::from_json(&m.to_json(), "test").unwrap();
        assert_eq!(back, m);
        assert!(matches!(
            crate::AnyModel::from_json(&m.to_json(), "test").unwrap(),
            crate::AnyModel::Comm(_)
        ));
        let bad = m
            .to_json()
            .replace("\"augur-comm-model\"", "\"augur-model\"");
        assert!(CommModel::from_json(&bad, "x").is_err());
        // Exports read like rules, a graph and code.
        let t = export_text(&m);
        assert!(
            t.contains("if bytes < ") && t.contains("KiB") && t.contains("fast-small"),
            "{t}"
        );
        assert!(export_dot(&m).starts_with("digraph"));
        let r = export_rust(&m);
        assert!(r.contains("pub fn select(f: &MessageFeatures) -> Option<CommPattern>"));
        assert!(r.contains("CommPattern::FastSmall"));
        assert!(rows_csv(&rows)
            .lines()
            .next()
            .unwrap()
            .contains("busbw_fast-small"));
    }

    #[test]
    fn incomplete_messages_are_left_out() {
        let runs = synthetic(Some((4096, "fast-small")));
        let (kept, dropped) = complete_messages(runs.messages());
        assert_eq!(dropped, 1);
        assert!(kept.iter().all(|m| m.runs.len() == 3));
        let m = CommTrainParams::default()
            .check()
            .unwrap()
            .fit(&runs, "test")
            .unwrap();
        assert_eq!(m.training.incomplete, 1);
    }

    #[test]
    fn cutoffs_and_params() {
        assert_eq!(cutoff_rule(Collective::AllReduce, 256 << 10), "one-shot");
        assert_eq!(
            cutoff_rule(Collective::AllReduce, (256 << 10) + 4),
            "two-shot"
        );
        assert_eq!(cutoff_rule(Collective::AllReduce, 4 << 20), "two-shot");
        assert_eq!(cutoff_rule(Collective::AllReduce, 8 << 20), "nccl");
        assert_eq!(cutoff_rule(Collective::AllGather, 1024), "pull");
        assert!(CommTrainParams {
            folds: 1,
            ..Default::default()
        }
        .check()
        .is_err());
        assert!(CommTrainParams {
            max_depth: 0,
            ..Default::default()
        }
        .check()
        .is_err());
        assert!(held_out(3 << 10, true) && !held_out(4 << 10, true) && !held_out(3 << 10, false));
    }
}
