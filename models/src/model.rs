//! The model file: three selectors, one per feature tier (known features only; known and
//! sampled; known and exact), the policy that decides per input which tier pays for its cost, and
//! what they were trained on.

use augur_features::spmv::SpmvFeatures;
use augur_features::{FeatureKind, FeatureSchema};
use serde::{Deserialize, Serialize};

use crate::guard::{RowGuard, Veto};
use crate::tree::{clean, Tree};

/// Format name and version of model files.
pub const FORMAT: &str = "augur-model";
/// Version 2 (issue 18): a third selector over the sampled tier, and a three-way policy.
/// Version 3: the gathered selector reads the known and exact features only (a GPU gather no
/// longer samples on the host as well), and trees may be grown with the regret criterion.
pub const FORMAT_VERSION: u32 = 3;
/// Most inputs a selector can take (features + iterations).
pub const MAX_INPUTS: usize = 48;

/// How the iteration count enters a selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IterationMode {
    /// One tree; `iterations` is its last input.
    Joint,
    /// One tree per trained iteration count; an input uses the tree of the nearest count (on a log
    /// scale).
    PerK,
}

/// One tree of a selector and the iteration counts it serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KTree {
    /// The iteration count it was trained for (per-k mode), None in joint mode.
    pub iterations: Option<u32>,
    /// Serves inputs with iterations < this bound (None: no bound).
    pub below: Option<f64>,
    pub tree: Tree,
}

/// Hyper-parameters a tree was grown with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Hyper {
    pub max_depth: usize,
    /// Least total sample weight in a leaf (weights average 1 over the training set; with the
    /// regret criterion, the least number of samples).
    pub min_weight_leaf: f32,
    /// How splits are chosen (models before it grew every tree with Gini).
    #[serde(default)]
    pub criterion: Criterion,
}

/// How a tree's splits are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Criterion {
    /// The weighted Gini impurity of the labels "which kernel was fastest" (linfa-trees' rule);
    /// leaves then take the class of least summed slowdown.
    #[default]
    Gini,
    /// The summed log slowdown of each child's best class: the regret of the picks, directly.
    Regret,
}

impl Criterion {
    pub fn name(self) -> &'static str {
        match self {
            Criterion::Gini => "gini",
            Criterion::Regret => "regret",
        }
    }
}

/// Kernel choice from a set of inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Selector {
    /// Input names, in order: features, then `iterations` in joint mode.
    pub inputs: Vec<String>,
    /// Schema index of each feature input.
    pub features: Vec<usize>,
    pub mode: IterationMode,
    pub trees: Vec<KTree>,
    pub hyper: Hyper,
}

impl Selector {
    /// Fill `buf` with this selector's inputs; returns how many.
    #[inline]
    pub fn inputs_into(&self, values: &[f64], k: f64, buf: &mut [f64; MAX_INPUTS]) -> usize {
        for (b, &i) in buf.iter_mut().zip(&self.features) {
            *b = clean(values[i]);
        }
        let mut n = self.features.len();
        if self.mode == IterationMode::Joint {
            buf[n] = k;
            n += 1;
        }
        n
    }

    /// The tree serving `k` iterations, with the count it was trained for.
    #[inline]
    pub fn ktree_for(&self, k: f64) -> &KTree {
        for t in &self.trees {
            match t.below {
                Some(b) if k >= b => continue,
                _ => return t,
            }
        }
        self.trees.last().expect("a selector has a tree")
    }

    /// The tree serving `k` iterations.
    #[inline]
    pub fn tree_for(&self, k: f64) -> &Tree {
        &self.ktree_for(k).tree
    }

    /// Class for schema-order feature values and `k` iterations.
    #[inline]
    pub fn predict(&self, values: &[f64], k: f64) -> usize {
        let mut buf = [0.0; MAX_INPUTS];
        let n = self.inputs_into(values, k, &mut buf);
        self.tree_for(k).predict(&buf[..n])
    }

    fn validate(&self, schema_len: usize, classes: usize) -> Result<(), String> {
        let n = self.features.len() + usize::from(self.mode == IterationMode::Joint);
        if n != self.inputs.len() || n > MAX_INPUTS {
            return Err(format!(
                "{} inputs named, {} expected (at most {MAX_INPUTS})",
                self.inputs.len(),
                n
            ));
        }
        if let Some(f) = self.features.iter().find(|&&f| f >= schema_len) {
            return Err(format!(
                "feature index {f} beyond the schema's {schema_len}"
            ));
        }
        if self.trees.is_empty() {
            return Err("no trees".into());
        }
        for t in &self.trees {
            t.tree.validate(n, classes)?;
        }
        Ok(())
    }
}

/// Cross-validation result of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CvScore {
    /// `known`, `sampled` or `gathered`.
    pub features: String,
    pub mode: IterationMode,
    pub max_depth: usize,
    pub min_weight_leaf: f32,
    #[serde(default)]
    pub criterion: Criterion,
    /// Geomean over held-out-fold samples of oracle / selected cost (gathering not charged).
    pub oracle_ratio: f64,
    /// Mean of selected / oracle cost (weighs a catastrophic pick in full).
    pub mean_slowdown: f64,
    /// Lowest oracle / selected.
    pub worst: f64,
    /// Share of samples whose pick is the fastest kernel.
    pub accuracy: f64,
}

/// What a model was trained on and how it was chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Training {
    /// SHA-256 over the training samples (matrix, kernel, setup, per-iteration, gather cost).
    pub digest: String,
    pub matrices: usize,
    pub families: usize,
    /// Families kept out of training for `augur eval` (and never seen by the trees).
    pub held_out_families: Vec<String>,
    /// The families trained on, sorted: `augur eval --rows unseen` takes every other family.
    pub trained_families: Vec<String>,
    /// Seed of the family split (holdout and folds).
    pub split_seed: u64,
    pub folds: usize,
    /// Every configuration tried, cross-validated by family.
    pub cv: Vec<CvScore>,
    /// Chosen per feature set.
    pub chosen: Vec<CvScore>,
    /// Policy training: share of (matrix, k) samples on which gathering the exact features paid
    /// best.
    pub gather_paid_share: f64,
    /// Policy training: share of (matrix, k) samples on which the sampled tier paid best.
    pub sample_paid_share: f64,
    /// What gathering cost in the policy's training (models without the field: the device pass).
    #[serde(default = "device_gather_cost")]
    pub gather_cost: crate::train::GatherCost,
}

fn device_gather_cost() -> crate::train::GatherCost {
    crate::train::GatherCost::Device
}

/// A trained SpMV kernel selector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub format: String,
    pub format_version: u32,
    pub task: String,
    pub schema: FeatureSchema,
    /// `cpu` or `cuda`.
    pub backend: String,
    pub device: String,
    pub precision: String,
    pub augur_version: String,
    /// Kernel names; classes are indices into this list.
    pub kernels: Vec<String>,
    /// The iteration counts trained on.
    pub iterations: Vec<u32>,
    /// Picks from the known features alone.
    pub known: Selector,
    /// Picks from the known and sampled features.
    pub sampled: Selector,
    /// Picks from the known and exact features.
    pub gathered: Selector,
    /// Over the known features and `iterations`: the tier whose features pay for their cost
    /// (classes: 0 known, 1 sampled, 2 gathered; see [`Tier`]).
    pub policy: Tree,
    /// Inputs of the policy tree.
    pub policy_inputs: Vec<String>,
    /// Overrules a pick whose longest row alone makes it slower than a balanced fallback
    /// ([`crate::guard`]); models trained before it have none, and choose as their trees say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_guard: Option<RowGuard>,
    pub training: Training,
}

impl Model {
    /// Whether the gathered tier's trees read a column statistic
    /// ([`augur_features::spmv::COLUMN_FEATURES`]); without one, the row pointers alone give
    /// every feature they read.
    pub fn gathered_reads_columns(&self) -> bool {
        self.gathered
            .inputs
            .iter()
            .any(|i| augur_features::spmv::COLUMN_FEATURES.contains(&i.as_str()))
    }
}

/// The feature tiers, cheapest first: what a selection read, and paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// The shape and nnz: free.
    Known,
    /// Estimates from a fixed-size sample of rows: a bounded cost.
    Sampled,
    /// An exact pass over the pattern: the known and exact features (not the sampled ones).
    Gathered,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Known, Tier::Sampled, Tier::Gathered];

    pub fn name(self) -> &'static str {
        match self {
            Tier::Known => "known",
            Tier::Sampled => "sampled",
            Tier::Gathered => "gathered",
        }
    }

    /// Whether a selector of this tier reads features of `kind`: the known ones always, the
    /// sampled and the exact (gathered) ones only in their own tier (what the tier computes).
    pub fn reads(self, kind: FeatureKind) -> bool {
        match kind {
            FeatureKind::Known => true,
            FeatureKind::Sampled => self == Tier::Sampled,
            FeatureKind::Gathered => self == Tier::Gathered,
        }
    }

    /// The policy's class of this tier.
    pub fn class(self) -> usize {
        self as usize
    }

    pub fn from_class(c: usize) -> Tier {
        Tier::ALL[c.min(2)]
    }
}

/// A selection and how it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    pub kernel: usize,
    /// The features the selector read (their cost is paid).
    pub tier: Tier,
    /// The tree's pick where the long-row guard overruled it (`kernel` is then the fallback).
    pub vetoed: Option<usize>,
}

impl Model {
    /// Fill `buf` with the policy's inputs (the known selector's features, then `k`) from
    /// schema-order feature values; returns how many.
    #[inline]
    pub fn policy_inputs_into(&self, values: &[f64], k: f64, buf: &mut [f64; MAX_INPUTS]) -> usize {
        for (b, &i) in buf.iter_mut().zip(&self.known.features) {
            *b = clean(values[i]);
        }
        let n = self.known.features.len();
        buf[n] = k;
        n + 1
    }

    /// The tier whose features pay for this input, from known features (schema order) and `k`.
    #[inline]
    pub fn tier_for(&self, values: &[f64], k: f64) -> Tier {
        let mut buf = [0.0; MAX_INPUTS];
        let n = self.policy_inputs_into(values, k, &mut buf);
        Tier::from_class(self.policy.predict(&buf[..n]))
    }

    /// The selector of a tier.
    pub fn selector(&self, t: Tier) -> &Selector {
        match t {
            Tier::Known => &self.known,
            Tier::Sampled => &self.sampled,
            Tier::Gathered => &self.gathered,
        }
    }

    /// The choice for schema-order feature values (the tiers above the policy's may be NaN)
    /// and `k` iterations, without allocating.
    #[inline]
    pub fn choose_values(&self, values: &[f64], k: f64) -> Choice {
        self.choose_in(self.tier_for(values, k), values, k)
    }

    /// The choice of `tier`'s selector, whatever the policy says, for schema-order feature values
    /// (those of the tiers above `tier` may be NaN) and `k` iterations, the long-row guard
    /// applied: what that tier alone would pick (`augur eval` compares the tiers with it).
    #[inline]
    pub fn choose_in(&self, tier: Tier, values: &[f64], k: f64) -> Choice {
        let pick = self.selector(tier).predict(values, k);
        match self.guard(values, tier, k, pick) {
            Some((kernel, v)) => Choice {
                kernel,
                tier,
                vetoed: Some(v.vetoed),
            },
            None => Choice {
                kernel: pick,
                tier,
                vetoed: None,
            },
        }
    }

    /// The long-row guard's verdict on `pick`, made by the `tier` selector for `k` iterations
    /// from schema-order `values`: Some(fallback kernel, why) where it is overruled.
    #[inline]
    pub fn guard(&self, values: &[f64], tier: Tier, k: f64, pick: usize) -> Option<(usize, Veto)> {
        self.row_guard.as_ref()?.check(values, tier, k, pick)
    }

    /// The choice for features and `k` iterations (all features given; the policy decides which
    /// tree reads them).
    #[inline]
    pub fn choose(&self, f: &SpmvFeatures, k: u32) -> Choice {
        let mut v = [0.0; MAX_INPUTS];
        f.write_values(&mut v);
        self.choose_values(&v, k as f64)
    }

    /// Kernel name of a choice.
    pub fn kernel_name(&self, c: Choice) -> &str {
        &self.kernels[c.kernel]
    }

    /// Structure and schema checks: a model for another schema or a damaged file is refused.
    pub fn validate(&self) -> Result<(), String> {
        crate::check_header(
            (&self.format, self.format_version),
            (FORMAT, FORMAT_VERSION),
            &self.schema,
            &SpmvFeatures::schema(),
        )?;
        if self.kernels.is_empty() {
            return Err("no kernels".into());
        }
        let n = self.schema.features.len();
        self.known
            .validate(n, self.kernels.len())
            .map_err(|e| format!("known selector: {e}"))?;
        self.sampled
            .validate(n, self.kernels.len())
            .map_err(|e| format!("sampled selector: {e}"))?;
        self.gathered
            .validate(n, self.kernels.len())
            .map_err(|e| format!("gathered selector: {e}"))?;
        // Each selector reads only what its tier computes.
        for t in Tier::ALL {
            let sel = self.selector(t);
            if let Some(&i) = sel
                .features
                .iter()
                .find(|&&i| !t.reads(self.schema.features[i].kind))
            {
                return Err(format!(
                    "the {} selector reads `{}`, which its tier does not compute",
                    t.name(),
                    self.schema.features[i].name
                ));
            }
        }
        if self.policy_inputs.len() != self.known.features.len() + 1 {
            return Err("policy inputs do not match the known selector".into());
        }
        self.policy
            .validate(self.policy_inputs.len(), 3)
            .map_err(|e| format!("policy: {e}"))?;
        if let Some(g) = &self.row_guard {
            g.validate(n, self.kernels.len())
                .map_err(|e| format!("long-row guard: {e}"))?;
        }
        Ok(())
    }
}
