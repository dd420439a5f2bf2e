//! Training: runs -> (matrix, iterations) samples labelled by the cheapest kernel and weighted by
//! what a wrong pick costs -> trees grown by a CART with linfa-trees' rules ([`crate::cart`],
//! deterministic), hyper-parameters chosen by
//! cross-validation grouped by matrix family -> a [`Model`].
//!
//! linfa style: [`TrainParams`] (hyper-parameters) -> [`TrainParams::check`] ->
//! [`CheckedTrainParams::fit`] -> [`Model`].

use std::collections::BTreeMap;

use augur_features::spmv::SpmvFeatures;
use sha2::{Digest, Sha256};

use crate::guard::RowGuard;
use crate::model::{
    Criterion, CvScore, Hyper, IterationMode, KTree, Model, Selector, Tier, Training, FORMAT,
    FORMAT_VERSION,
};
use crate::runs::{MatrixRuns, Runs};
use crate::tree::{clean, Node, Tree};
use crate::ModelError;

pub use crate::tier_cost::{GatherCost, GatherCosts};

/// One (matrix, iteration count) with every kernel's total cost.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Index into `Runs::matrices`.
    pub matrix: usize,
    pub k: f64,
    /// Seconds for k iterations (setup + k x per-iteration) per model kernel; a kernel that failed
    /// or was not measured costs as much as the slowest one that ran (`failed` says which).
    pub costs: Vec<f64>,
    pub failed: Vec<bool>,
    /// The cheapest kernel and its cost.
    pub best: usize,
    pub oracle: f64,
    /// Seconds to gather the exact features (the gathered tier), as [`GatherCost`] says.
    pub gather_s: f64,
    /// Seconds to compute the sampled tier.
    pub sample_s: f64,
}

impl Sample {
    /// cost / oracle - 1 per kernel.
    pub fn regrets(&self) -> Vec<f64> {
        self.costs.iter().map(|c| c / self.oracle - 1.0).collect()
    }
}

/// The samples of `runs` for `kernels` and iteration counts `ks`, for the matrices `keep` admits.
/// Matrices on which no kernel ran are left out.
pub fn samples(
    runs: &Runs,
    kernels: &[String],
    ks: &[u32],
    gather_cost: GatherCost,
    keep: impl Fn(&MatrixRuns) -> bool,
) -> Vec<Sample> {
    let gather = GatherCosts::new(gather_cost, runs, &keep);
    let mut out = Vec::new();
    for (mi, m) in runs.matrices.iter().enumerate() {
        if !keep(m) {
            continue;
        }
        for &k in ks {
            let k = k as f64;
            let raw: Vec<Option<f64>> = kernels
                .iter()
                .map(|name| {
                    m.kernels
                        .iter()
                        .find(|r| &r.kernel == name)
                        .and_then(|r| r.cost(k))
                })
                .collect();
            let worst = raw.iter().flatten().copied().fold(f64::NAN, f64::max);
            if worst.is_nan() {
                continue;
            }
            let costs: Vec<f64> = raw.iter().map(|c| c.unwrap_or(worst)).collect();
            let (best, oracle) = raw
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.map(|c| (i, c)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("at least one kernel ran");
            out.push(Sample {
                matrix: mi,
                k,
                costs,
                failed: raw.iter().map(Option::is_none).collect(),
                best,
                oracle,
                gather_s: gather.of(&m.info),
                sample_s: gather.sample_of(&m.info),
            });
        }
    }
    out
}

/// Hyper-parameters of training.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainParams {
    /// Iteration counts to train for (default: those the runs were collected for).
    pub iterations: Option<Vec<u32>>,
    /// Depths tried: 1..=max_depth.
    pub max_depth: usize,
    /// Least leaf weights tried (sample weights average 1).
    pub min_weight_leaf: Vec<f32>,
    /// Cross-validation folds (families are never split across folds).
    pub folds: usize,
    /// Share of families held out of training for `augur eval`.
    pub holdout: f64,
    /// Force the iteration mode (default: chosen by cross-validation).
    pub mode: Option<IterationMode>,
    /// A shallower tree is taken if its CV score is within this factor of the best (readability).
    pub slack: f64,
    /// Depth of the gathering policy tree (of each per-k tree with `policy_per_k`).
    pub policy_depth: usize,
    /// One policy tree per iteration count, joined under splits on k (the model's format is
    /// unchanged: one tree over the known features and k), instead of one tree over all.
    pub policy_per_k: bool,
    /// Seed of the family order behind the holdout and the folds (another seed, another split).
    pub split_seed: u64,
    /// Split criteria tried by cross-validation.
    pub criteria: Vec<Criterion>,
    /// What gathering costs in the policy's training. Default [`GatherCost::Device`]: the
    /// device pass, at most a few tens of microseconds more than what a plan pays during its
    /// upload, and steadier (the upload's own jitter is in every `upload_gather_s`); trained on
    /// the upload's figures the policy did no better on held-out families
    /// (bench/results/upload-overlap-2026-11-24/splits-*.csv).
    pub gather_cost: GatherCost,
    /// Learn the long-row guard ([`crate::guard`]) and let it overrule picks (the default).
    pub row_guard: bool,
}

impl Default for TrainParams {
    fn default() -> Self {
        TrainParams {
            iterations: None,
            max_depth: 8,
            min_weight_leaf: vec![1.0, 3.0, 10.0],
            folds: 5,
            holdout: 0.2,
            mode: None,
            slack: 0.01,
            policy_depth: 3,
            policy_per_k: false,
            split_seed: 0,
            criteria: vec![Criterion::Gini, Criterion::Regret],
            gather_cost: GatherCost::Device,
            row_guard: true,
        }
    }
}

/// Checked [`TrainParams`].
#[derive(Debug, Clone)]
pub struct CheckedTrainParams(TrainParams);

impl TrainParams {
    pub fn check(self) -> Result<CheckedTrainParams, ModelError> {
        let p = |m: String| Err(ModelError::Params(m));
        if !(1..=20).contains(&self.max_depth) {
            return p(format!("max depth {} outside 1..=20", self.max_depth));
        }
        if self.min_weight_leaf.is_empty()
            || self.min_weight_leaf.iter().any(|w| w.is_nan() || *w <= 0.0)
        {
            return p("min leaf weights must be > 0 (at least one)".into());
        }
        if self.folds < 2 {
            return p(format!("{} folds: need at least 2", self.folds));
        }
        if !(0.0..0.9).contains(&self.holdout) {
            return p(format!("holdout {} outside [0, 0.9)", self.holdout));
        }
        if let Some(ks) = &self.iterations {
            if ks.is_empty() || ks.contains(&0) {
                return p("iteration counts must be >= 1 (at least one)".into());
            }
        }
        if !(0.0..0.5).contains(&self.slack) {
            return p(format!("slack {} outside [0, 0.5)", self.slack));
        }
        if self.criteria.is_empty() {
            return p("at least one split criterion".into());
        }
        if !(1..=6).contains(&self.policy_depth) {
            return p(format!("policy depth {} outside 1..=6", self.policy_depth));
        }
        Ok(CheckedTrainParams(self))
    }
}

/// Parse `1;10;100` (or commas).
pub fn parse_iterations(s: &str) -> Option<Vec<u32>> {
    let v: Option<Vec<u32>> = s
        .split([';', ','])
        .filter(|t| !t.trim().is_empty())
        .map(|t| t.trim().parse().ok().filter(|&k| k > 0))
        .collect();
    v.filter(|v| !v.is_empty())
}

/// Lower-case hex of a digest.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_hash(s: &str) -> String {
    hex(&Sha256::digest(s.as_bytes()))
}

/// Families in a fixed pseudo-random order: by the SHA-256 of the split seed and their name.
pub fn family_order(runs: &Runs, seed: u64) -> Vec<String> {
    let mut f: Vec<String> = runs
        .matrices
        .iter()
        .map(|m| m.info.family.clone())
        .collect();
    f.sort();
    f.dedup();
    f.sort_by_cached_key(|x| hex_hash(&format!("{seed}/{x}")));
    f
}

/// The held-out families of a run table for a holdout share.
pub fn held_out_families(runs: &Runs, holdout: f64, seed: u64) -> Vec<String> {
    let order = family_order(runs, seed);
    let n = if holdout > 0.0 && order.len() >= 2 {
        ((holdout * order.len() as f64).round() as usize).clamp(1, order.len() - 1)
    } else {
        0
    };
    let mut h: Vec<String> = order[..n].to_vec();
    h.sort();
    h
}

/// Schema indices of the features a selector of tier `t` reads.
fn tier_indices(t: Tier, rows_only: bool) -> Vec<usize> {
    SpmvFeatures::schema()
        .features
        .iter()
        .enumerate()
        .filter(|(_, f)| t.reads(f.kind))
        .filter(|(_, f)| {
            !(rows_only
                && t == Tier::Gathered
                && augur_features::spmv::COLUMN_FEATURES.contains(&f.name.as_str()))
        })
        .map(|(i, _)| i)
        .collect()
}

impl Sample {
    /// What computing the features of tier `t` cost on this sample.
    pub fn tier_cost(&self, t: Tier) -> f64 {
        match t {
            Tier::Known => 0.0,
            Tier::Sampled => self.sample_s,
            Tier::Gathered => self.gather_s,
        }
    }
}

/// One (features, mode, hyper) configuration.
#[derive(Debug, Clone, Copy)]
struct Config {
    /// The tier whose features (and the cheaper ones) the selector reads.
    set: Tier,
    mode: IterationMode,
    hyper: Hyper,
}

struct Trainer<'a> {
    runs: &'a Runs,
    ks: Vec<u32>,
    /// The gathered tier's trees read no column statistics ([`GatherCost::HostRows`]).
    rows_only: bool,
}

/// How a leaf picks its class from the samples that reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leaves {
    /// The least summed slowdown (the arithmetic mean): a 100x loss on one matrix weighs more
    /// than 5% losses on twenty, so a leaf whose majority kernel is a little faster on most
    /// samples but catastrophic on a few picks a safe one.
    MeanSlowdown,
    /// The least summed log slowdown (the geometric mean the evaluation reports).
    LogSlowdown,
}

/// Grow a tree on (rows, labels, weights) with [`crate::cart`] (Gini on the labels) or on the
/// log slowdowns (the regret criterion), then give every leaf its class by `leaves`.
/// `slowdown[i][c]` = cost of class c / cost of the best, for sample i (>= 1).
pub(crate) fn fit_tree(
    rows: &[Vec<f64>],
    labels: &[usize],
    weights: &[f64],
    slowdown: &[Vec<f64>],
    hyper: Hyper,
    leaves: Leaves,
) -> Result<Tree, ModelError> {
    if rows.is_empty() {
        return Ok(Tree::constant(0));
    }
    let first = labels[0];
    if labels.iter().all(|&l| l == first) {
        return Ok(Tree::constant(first));
    }
    // A class that did not run on a sample costs as much as a 10^20-fold slowdown there.
    let log = |v: f64| if v.is_finite() { v.max(1.0).ln() } else { 46.0 };
    let x: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| r.iter().map(|&v| clean(v)).collect())
        .collect();
    let mut tree = match hyper.criterion {
        Criterion::Regret => {
            let cost: Vec<Vec<f64>> = slowdown
                .iter()
                .map(|r| r.iter().map(|&v| log(v)).collect())
                .collect();
            crate::cart::grow_cost(
                &x,
                &cost,
                crate::cart::CostParams {
                    max_depth: hyper.max_depth,
                    min_leaf: (hyper.min_weight_leaf.round() as usize).max(1),
                    min_gain: 1e-3,
                },
            )
        }
        Criterion::Gini => grow(&x, labels, weights, hyper)?,
    };
    canonicalize(&mut tree, rows);
    let classes = slowdown[0].len();
    let mut sums = vec![vec![0.0f64; classes]; tree.nodes.len()];
    for (x, r) in rows.iter().zip(slowdown) {
        let l = tree.leaf(x);
        for (s, &v) in sums[l].iter_mut().zip(r) {
            *s += match leaves {
                Leaves::MeanSlowdown => v,
                Leaves::LogSlowdown => log(v),
            };
        }
    }
    for (n, s) in tree.nodes.iter_mut().zip(&sums) {
        if let Node::Leaf { class, .. } = n {
            // Ties go to the lowest class index.
            if let Some((c, _)) = s
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .min_by(|a, b| a.1.total_cmp(b.1))
            {
                *class = c;
            }
        }
    }
    tree.simplify();
    Ok(tree)
}

/// Make each split the plainest of its equals: two features that cut the node's samples
/// identically (rows and cols of a square matrix, say) can win by f32 rounding in the Gini
/// scores. Each split is moved to the lowest-index input that separates the node's training
/// samples the same way, with the threshold halfway between the two sides (augur's `<` rule).
fn canonicalize(tree: &mut Tree, rows: &[Vec<f64>]) {
    fn go(tree: &mut Tree, rows: &[Vec<f64>], node: usize, members: Vec<usize>) {
        let Node::Split {
            feature,
            threshold,
            left,
            right,
        } = tree.nodes[node].clone()
        else {
            return;
        };
        let x = |i: usize, f: usize| clean(rows[i][f]);
        let (l, r): (Vec<usize>, Vec<usize>) =
            members.iter().partition(|&&i| x(i, feature) < threshold);
        if !l.is_empty() && !r.is_empty() {
            let d = rows[0].len();
            for g in 0..d {
                let lmax = l.iter().map(|&i| x(i, g)).fold(f64::NEG_INFINITY, f64::max);
                let rmin = r.iter().map(|&i| x(i, g)).fold(f64::INFINITY, f64::min);
                if lmax < rmin {
                    tree.nodes[node] = Node::Split {
                        feature: g,
                        threshold: lmax + (rmin - lmax) / 2.0,
                        left,
                        right,
                    };
                    break;
                }
            }
        }
        go(tree, rows, left, l);
        go(tree, rows, right, r);
    }
    go(tree, rows, 0, (0..rows.len()).collect());
}

/// Sample weights are rounded to integers in units of the mean weight / WEIGHT_UNITS.
const WEIGHT_UNITS: f64 = 16.0;

/// The Gini CART on inputs already cleaned (`tree::clean`).
fn grow(
    x: &[Vec<f64>],
    labels: &[usize],
    weights: &[f64],
    hyper: Hyper,
) -> Result<Tree, ModelError> {
    let n = x.len();
    let mean = weights.iter().sum::<f64>() / n as f64;
    // Integer weights (in units of 1/WEIGHT_UNITS of the mean): sums of integers are exact in any
    // order, so equal cuts stay equal.
    let w: Vec<f64> = weights
        .iter()
        .map(|w| (w / mean.max(1e-300) * WEIGHT_UNITS).round().max(1.0))
        .collect();
    let classes = labels.iter().copied().max().unwrap_or(0) + 1;
    Ok(crate::cart::grow(
        x,
        labels,
        &w,
        classes,
        crate::cart::CartParams {
            max_depth: hyper.max_depth,
            min_weight_leaf: hyper.min_weight_leaf as f64 * WEIGHT_UNITS,
            min_samples_split: 2.0 * hyper.min_weight_leaf as f64,
            min_impurity_decrease: 1e-5,
        },
    ))
}

/// Sample weight: mean log-regret of the kernels other than the best (what a wrong pick costs,
/// on a scale where 2x slow counts the same at any size), floored so that ties still count a
/// little.
fn weight(s: &Sample) -> f64 {
    let n = s.costs.len().max(2) - 1;
    let sum: f64 = s
        .costs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != s.best)
        .map(|(_, c)| (c / s.oracle).ln())
        .sum();
    (sum / n as f64).max(0.01)
}

impl Trainer<'_> {
    /// The input row of a sample for a selector of `set` in `mode`.
    fn input(&self, s: &Sample, set: Tier, mode: IterationMode) -> Vec<f64> {
        let f = &self.runs.matrices[s.matrix].info.features;
        let mut v: Vec<f64> = tier_indices(set, self.rows_only)
            .iter()
            .map(|&i| clean(f[i]))
            .collect();
        if mode == IterationMode::Joint {
            v.push(s.k);
        }
        v
    }

    fn selector(&self, train: &[&Sample], c: Config) -> Result<Selector, ModelError> {
        let schema = SpmvFeatures::schema();
        let features = tier_indices(c.set, self.rows_only);
        let mut inputs: Vec<String> = features
            .iter()
            .map(|&i| schema.features[i].name.clone())
            .collect();
        let grow = |subset: &[&Sample]| -> Result<Tree, ModelError> {
            let rows: Vec<Vec<f64>> = subset
                .iter()
                .map(|s| self.input(s, c.set, c.mode))
                .collect();
            let labels: Vec<usize> = subset.iter().map(|s| s.best).collect();
            let weights: Vec<f64> = subset.iter().map(|s| weight(s)).collect();
            let regret: Vec<Vec<f64>> = subset
                .iter()
                .map(|s| s.costs.iter().map(|c| c / s.oracle).collect())
                .collect();
            fit_tree(
                &rows,
                &labels,
                &weights,
                &regret,
                c.hyper,
                Leaves::MeanSlowdown,
            )
        };
        let trees = match c.mode {
            IterationMode::Joint => {
                inputs.push("iterations".into());
                vec![KTree {
                    iterations: None,
                    below: None,
                    tree: grow(train)?,
                }]
            }
            IterationMode::PerK => {
                let mut out = Vec::new();
                for (i, &k) in self.ks.iter().enumerate() {
                    let subset: Vec<&Sample> =
                        train.iter().copied().filter(|s| s.k == k as f64).collect();
                    let below = self
                        .ks
                        .get(i + 1)
                        .map(|&next| (k as f64 * next as f64).sqrt());
                    out.push(KTree {
                        iterations: Some(k),
                        below,
                        tree: grow(&subset)?,
                    });
                }
                out
            }
        };
        Ok(Selector {
            inputs,
            features,
            mode: c.mode,
            trees,
            hyper: c.hyper,
        })
    }

    fn predict(&self, sel: &Selector, s: &Sample) -> usize {
        sel.predict(&self.runs.matrices[s.matrix].info.features, s.k)
    }
}

/// Geometric mean (NaN for none).
pub(crate) fn geomean(v: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for x in v {
        sum += x.ln();
        n += 1;
    }
    if n == 0 {
        f64::NAN
    } else {
        (sum / n as f64).exp()
    }
}

impl CheckedTrainParams {
    /// Train on `runs`: `meta` gives the backend, device, precision and augur version recorded in
    /// the model.
    pub fn fit(&self, runs: &Runs, augur_version: &str) -> Result<Model, ModelError> {
        let p = &self.0;
        if runs.matrices.is_empty() {
            return Err(ModelError::Train("the runs table has no matrices".into()));
        }
        let first = &runs.matrices[0].info;
        for m in &runs.matrices {
            if m.info.backend != first.backend || m.info.precision != first.precision {
                return Err(ModelError::Train(format!(
                    "runs mix backends or precisions: `{}` is {} {}, `{}` is {} {}; train one model per backend and precision",
                    first.matrix, first.backend, first.precision, m.info.matrix, m.info.backend, m.info.precision
                )));
            }
        }
        let ks = match &p.iterations {
            Some(k) => k.clone(),
            None => parse_iterations(&first.iterations).ok_or_else(|| {
                ModelError::Train(format!(
                    "runs record iterations `{}`; pass --iterations",
                    first.iterations
                ))
            })?,
        };
        let mut ks = ks;
        ks.sort_unstable();
        ks.dedup();
        let kernels = runs.kernel_names();
        let held = held_out_families(runs, p.holdout, p.split_seed);
        let all = samples(runs, &kernels, &ks, p.gather_cost, |m| {
            !held.contains(&m.info.family)
        });
        if all.is_empty() {
            return Err(ModelError::Train(
                "no training samples (every kernel failed, or every family is held out)".into(),
            ));
        }
        let trainer = Trainer {
            runs,
            ks: ks.clone(),
            rows_only: p.gather_cost == GatherCost::HostRows,
        };
        // Families of the training samples, in hash order, dealt to folds.
        let order = family_order(runs, p.split_seed);
        let fam_of = |s: &Sample| &runs.matrices[s.matrix].info.family;
        let train_fams: Vec<&String> = order.iter().filter(|f| !held.contains(f)).collect();
        let folds = p.folds.min(train_fams.len()).max(1);
        let fold_of: BTreeMap<&String, usize> = train_fams
            .iter()
            .enumerate()
            .map(|(i, f)| (*f, i % folds))
            .collect();
        let sample_fold: Vec<usize> = all.iter().map(|s| fold_of[fam_of(s)]).collect();

        let modes = match p.mode {
            Some(m) => vec![m],
            None => vec![IterationMode::Joint, IterationMode::PerK],
        };
        let mut cv = Vec::new();
        // Out-of-fold predictions per configuration, kept for the policy.
        let mut oof: Vec<(Config, Vec<usize>)> = Vec::new();
        for set in Tier::ALL {
            for &mode in &modes {
                for (depth, &criterion, &mwl) in (1..=p.max_depth).flat_map(|d| {
                    p.criteria
                        .iter()
                        .flat_map(move |c| p.min_weight_leaf.iter().map(move |w| (d, c, w)))
                }) {
                    {
                        let c = Config {
                            set,
                            mode,
                            hyper: Hyper {
                                max_depth: depth,
                                min_weight_leaf: mwl,
                                criterion,
                            },
                        };
                        let mut pred = vec![0usize; all.len()];
                        if folds >= 2 {
                            for f in 0..folds {
                                let train: Vec<&Sample> = all
                                    .iter()
                                    .zip(&sample_fold)
                                    .filter(|(_, &sf)| sf != f)
                                    .map(|(s, _)| s)
                                    .collect();
                                let sel = trainer.selector(&train, c)?;
                                for (i, s) in all.iter().enumerate() {
                                    if sample_fold[i] == f {
                                        pred[i] = trainer.predict(&sel, s);
                                    }
                                }
                            }
                        } else {
                            let train: Vec<&Sample> = all.iter().collect();
                            let sel = trainer.selector(&train, c)?;
                            for (i, s) in all.iter().enumerate() {
                                pred[i] = trainer.predict(&sel, s);
                            }
                        }
                        cv.push(CvScore {
                            features: set.name().into(),
                            mode,
                            max_depth: depth,
                            min_weight_leaf: mwl,
                            criterion,
                            oracle_ratio: geomean(
                                all.iter().zip(&pred).map(|(s, &k)| s.oracle / s.costs[k]),
                            ),
                            mean_slowdown: all
                                .iter()
                                .zip(&pred)
                                .map(|(s, &k)| s.costs[k] / s.oracle)
                                .sum::<f64>()
                                / all.len() as f64,
                            worst: all
                                .iter()
                                .zip(&pred)
                                .map(|(s, &k)| s.oracle / s.costs[k])
                                .fold(f64::INFINITY, f64::min),
                            accuracy: all.iter().zip(&pred).filter(|(s, &k)| s.best == k).count()
                                as f64
                                / all.len() as f64,
                        });
                        oof.push((c, pred));
                    }
                }
            }
        }
        // Per feature set: the best score, then the shallowest configuration within the slack.
        let choose = |set: Tier| -> Result<(Config, CvScore, Vec<usize>), ModelError> {
            let best = cv
                .iter()
                .filter(|s| s.features == set.name())
                .map(|s| s.oracle_ratio)
                .fold(f64::NEG_INFINITY, f64::max);
            let (i, s) = cv
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    s.features == set.name() && s.oracle_ratio >= best * (1.0 - p.slack)
                })
                .min_by(|a, b| {
                    a.1.max_depth
                        .cmp(&b.1.max_depth)
                        .then(b.1.oracle_ratio.total_cmp(&a.1.oracle_ratio))
                })
                .ok_or_else(|| {
                    ModelError::Train(format!(
                        "no {} configuration scored a finite oracle ratio in cross-validation \
                         (non-finite or zero costs in the runs?)",
                        set.name()
                    ))
                })?;
            Ok((oof[i].0, s.clone(), oof[i].1.clone()))
        };
        let (ck, sk, pk) = choose(Tier::Known)?;
        let (cs, ss, ps) = choose(Tier::Sampled)?;
        let (cg, sg, pg) = choose(Tier::Gathered)?;
        // The long-row guard, from the training samples. The policy learns from the trees'
        // out-of-fold picks as they are: taught the guarded picks, it leant on the sampled tier
        // where the guard rescued the training samples' long rows, and on held-out matrices
        // whose sample missed the long rows lost more than the guard saved (H100 runs, split
        // seed 5: 0.872 -> 0.853).
        let row_guard = if p.row_guard {
            RowGuard::fit(runs, &kernels, &all)
        } else {
            None
        };
        let train: Vec<&Sample> = all.iter().collect();
        let mut known = trainer.selector(&train, ck)?;
        let mut sampled = trainer.selector(&train, cs)?;
        let mut gathered = trainer.selector(&train, cg)?;
        // Policy: from out-of-fold picks, what each tier cost on this sample, its features'
        // cost included; the tree is grown on those costs directly (the regret criterion: on the
        // split seeds 0-4 it did as well as or better than Gini on the label "which tier paid"),
        // and leaves take the tier with the least summed log-slowdown (the geometric mean the
        // evaluation reports).
        let tier_costs = |i: usize, s: &Sample| -> [f64; 3] {
            [
                s.costs[pk[i]],
                s.tier_cost(Tier::Sampled) + s.costs[ps[i]],
                s.tier_cost(Tier::Gathered) + s.costs[pg[i]],
            ]
        };
        let mut prow = Vec::new();
        let (mut plabel, mut pweight, mut pslow) = (Vec::new(), Vec::new(), Vec::new());
        let mut prows: Vec<(Vec<f64>, Vec<f64>)> = Vec::new();
        for (i, s) in all.iter().enumerate() {
            let c = tier_costs(i, s);
            let best = c.iter().copied().fold(f64::INFINITY, f64::min);
            let label = (0..3).find(|&t| c[t] == best).unwrap_or(0);
            let mut row = trainer.input(s, Tier::Known, IterationMode::PerK);
            row.push(s.k);
            let logs: Vec<f64> = c.iter().map(|x| (x / best).ln()).collect();
            pweight.push((logs.iter().sum::<f64>() / 2.0).max(1e-3));
            prows.push((row.clone(), c.iter().map(|x| x / best - 1.0).collect()));
            prow.push(row);
            plabel.push(label);
            pslow.push(c.iter().map(|x| x / best).collect::<Vec<f64>>());
        }
        let share = |t: Tier| {
            plabel.iter().filter(|&&l| l == t.class()).count() as f64 / plabel.len() as f64
        };
        let (gather_paid_share, sample_paid_share) = (share(Tier::Gathered), share(Tier::Sampled));
        let hyper = Hyper {
            max_depth: p.policy_depth,
            min_weight_leaf: 1.0,
            criterion: Criterion::Regret,
        };
        let mut policy = if p.policy_per_k {
            // One tree per iteration count, under splits on k: what looking costs against what it
            // saves differs by k far more than any split on the known features could learn.
            let mut ks: Vec<f64> = all.iter().map(|s| s.k).collect();
            ks.sort_by(f64::total_cmp);
            ks.dedup();
            let trees = ks
                .iter()
                .map(|&k| {
                    let at: Vec<usize> = (0..all.len()).filter(|&i| all[i].k == k).collect();
                    fn pick<V: Clone>(v: &[V], at: &[usize]) -> Vec<V> {
                        at.iter().map(|&i| v[i].clone()).collect()
                    }
                    fit_tree(
                        &pick(&prow, &at),
                        &pick(&plabel, &at),
                        &pick(&pweight, &at),
                        &pick(&pslow, &at),
                        hyper,
                        Leaves::LogSlowdown,
                    )
                })
                .collect::<Result<Vec<_>, _>>()?;
            let k_input = prow.first().map_or(0, |r| r.len() - 1);
            stitch_on(k_input, &ks, &trees)
        } else {
            fit_tree(&prow, &plabel, &pweight, &pslow, hyper, Leaves::LogSlowdown)?
        };
        // Leaf statistics on the training samples.
        for (sel, set) in [
            (&mut known, ck.set),
            (&mut sampled, cs.set),
            (&mut gathered, cg.set),
        ] {
            let mode = sel.mode;
            for kt in &mut sel.trees {
                let rows: Vec<(Vec<f64>, Vec<f64>)> = all
                    .iter()
                    .filter(|s| kt.iterations.is_none_or(|k| s.k == k as f64))
                    .map(|s| (trainer.input(s, set, mode), s.regrets()))
                    .collect();
                kt.tree
                    .annotate(rows.iter().map(|(x, r)| (x.as_slice(), r.clone())));
            }
        }
        policy.annotate(prows.iter().map(|(x, r)| (x.as_slice(), r.clone())));
        let mut h = Sha256::new();
        for s in &all {
            let m = &runs.matrices[s.matrix];
            h.update(m.info.matrix.as_bytes());
            for r in &m.kernels {
                h.update(r.kernel.as_bytes());
                if let Some(t) = r.timing {
                    h.update(t.setup_s.to_le_bytes());
                    h.update(t.per_iter_s.to_le_bytes());
                    h.update(t.latency_s.to_le_bytes());
                }
            }
            h.update(m.info.gather_s.to_le_bytes());
            h.update(m.info.sample_s.to_le_bytes());
            if p.gather_cost != GatherCost::Device {
                for v in [
                    m.info.upload_s,
                    m.info.upload_gather_s,
                    m.info.sample_upload_s,
                    m.info.gather_upload_s,
                ]
                .into_iter()
                .flatten()
                {
                    h.update(v.to_le_bytes());
                }
            }
        }
        let digest = hex(&h.finalize());
        let schema = SpmvFeatures::schema();
        let mut policy_inputs: Vec<String> = known
            .features
            .iter()
            .map(|&i| schema.features[i].name.clone())
            .collect();
        policy_inputs.push("iterations".into());
        let n_matrices = {
            let mut m: Vec<usize> = all.iter().map(|s| s.matrix).collect();
            m.dedup();
            m.len()
        };
        Ok(Model {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            task: "spmv".into(),
            schema,
            backend: first.backend.clone(),
            device: first.device.clone(),
            precision: first.precision.clone(),
            augur_version: augur_version.into(),
            kernels,
            iterations: ks,
            known,
            sampled,
            gathered,
            policy,
            policy_inputs,
            row_guard,
            training: Training {
                digest,
                matrices: n_matrices,
                families: train_fams.len(),
                held_out_families: held,
                trained_families: {
                    let mut f: Vec<String> = train_fams.iter().map(|f| f.to_string()).collect();
                    f.sort();
                    f
                },
                split_seed: p.split_seed,
                folds,
                cv,
                chosen: vec![sk, ss, sg],
                gather_paid_share,
                sample_paid_share,
                gather_cost: p.gather_cost,
            },
        })
    }
}

/// One tree that sends an input to `trees[i]` when its `feature` (the iteration count) is nearest
/// `ks[i]` on a log scale: splits at the geometric midpoints, the subtrees' nodes appended.
fn stitch_on(feature: usize, ks: &[f64], trees: &[Tree]) -> Tree {
    fn build(out: &mut Vec<Node>, feature: usize, ks: &[f64], trees: &[Tree]) -> usize {
        let at = out.len();
        if trees.len() == 1 {
            out.extend(trees[0].nodes.iter().map(|n| match n {
                Node::Split {
                    feature: f,
                    threshold,
                    left,
                    right,
                } => Node::Split {
                    feature: *f,
                    threshold: *threshold,
                    left: left + at,
                    right: right + at,
                },
                leaf => leaf.clone(),
            }));
            return at;
        }
        let mid = trees.len() / 2;
        out.push(Node::Leaf {
            class: 0,
            samples: 0,
            mean_regret: 0.0,
        });
        let left = build(out, feature, &ks[..mid], &trees[..mid]);
        let right = build(out, feature, &ks[mid..], &trees[mid..]);
        out[at] = Node::Split {
            feature,
            threshold: (ks[mid - 1] * ks[mid]).sqrt(),
            left,
            right,
        };
        at
    }
    let mut nodes = Vec::new();
    if !trees.is_empty() {
        build(&mut nodes, feature, ks, trees);
    }
    Tree { nodes }
}

#[cfg(test)]
mod stitch_tests {
    use super::*;

    /// Each iteration count reaches its own tree (nearest on a log scale), and the subtrees keep
    /// their own splits.
    #[test]
    fn per_k_trees_are_reached_by_their_iteration_count() {
        let split = Tree {
            nodes: vec![
                Node::Split {
                    feature: 0,
                    threshold: 5.0,
                    left: 1,
                    right: 2,
                },
                Node::Leaf {
                    class: 1,
                    samples: 1,
                    mean_regret: 0.0,
                },
                Node::Leaf {
                    class: 2,
                    samples: 1,
                    mean_regret: 0.0,
                },
            ],
        };
        let t = stitch_on(
            1,
            &[1.0, 10.0, 100.0],
            &[Tree::constant(0), split, Tree::constant(2)],
        );
        t.validate(2, 3).unwrap();
        for (x, k, want) in [
            (0.0, 1.0, 0),
            (9.0, 1.0, 0),
            (0.0, 10.0, 1),
            (9.0, 10.0, 2),
            (0.0, 100.0, 2),
            (0.0, 3.0, 0),
            (0.0, 4.0, 1),
        ] {
            assert_eq!(t.predict(&[x, k]), want, "x {x} k {k}");
        }
        assert_eq!(
            stitch_on(1, &[7.0], &[Tree::constant(1)]).predict(&[0.0, 7.0]),
            1
        );
    }
}
