//! The cost-labelled selectors' training (comm patterns, attention schedules, overlap patterns):
//! samples whose classes all ran on every input, labelled by the cheapest, trees grown on them
//! and their depth chosen by cross-validation over groups. The SpMV trainer is [`crate::train`].

use crate::model::{Criterion, Hyper};
use crate::train::{fit_tree, geomean, Leaves};
use crate::tree::Tree;
use crate::ModelError;

/// The schema indices of every feature but those named in `skip`, and their names: a selector's
/// inputs (the attention and comm trainers leave out features constant over their inputs).
pub(crate) fn inputs_except(
    schema: &augur_features::FeatureSchema,
    skip: &[&str],
) -> (Vec<usize>, Vec<String>) {
    let features: Vec<usize> = schema
        .features
        .iter()
        .enumerate()
        .filter(|(_, f)| !skip.contains(&f.name.as_str()))
        .map(|(i, _)| i)
        .collect();
    let inputs = features
        .iter()
        .map(|&i| schema.features[i].name.clone())
        .collect();
    (features, inputs)
}

/// One training sample of a selector whose classes all ran on every input: the features, every
/// class's cost (seconds), the cheapest class, and the group that decides its
/// cross-validation fold (samples of one group never span two folds).
pub(crate) struct CostSample {
    pub x: Vec<f64>,
    pub costs: Vec<f64>,
    pub best: usize,
    pub group: u64,
}

impl CostSample {
    /// A sample from per-class times; a class that failed or was not run costs twice the
    /// slowest that ran. None when no class ran.
    pub fn new(x: Vec<f64>, times: &[Option<f64>], group: u64) -> Option<CostSample> {
        let worst = times.iter().flatten().copied().fold(f64::NAN, f64::max);
        if worst.is_nan() {
            return None;
        }
        let costs: Vec<f64> = times.iter().map(|t| t.unwrap_or(2.0 * worst)).collect();
        let best = (0..costs.len())
            .min_by(|&a, &b| costs[a].total_cmp(&costs[b]))
            .expect("classes");
        Some(CostSample {
            x,
            costs,
            best,
            group,
        })
    }
}

/// A tree over cost samples: label the cheapest class, weight a sample by the mean
/// log-slowdown of the other classes (what a wrong pick costs), leaves annotated with regrets.
pub(crate) fn fit_costs(
    samples: &[&CostSample],
    depth: usize,
    leaf: f32,
    criterion: Criterion,
) -> Result<Tree, ModelError> {
    let rows: Vec<Vec<f64>> = samples.iter().map(|s| s.x.clone()).collect();
    let labels: Vec<usize> = samples.iter().map(|s| s.best).collect();
    let slow: Vec<Vec<f64>> = samples
        .iter()
        .map(|s| s.costs.iter().map(|c| c / s.costs[s.best]).collect())
        .collect();
    let weights: Vec<f64> = slow
        .iter()
        .map(|r| {
            let n = (r.len().max(2) - 1) as f64;
            (r.iter().map(|v| v.ln()).sum::<f64>() / n).max(0.01)
        })
        .collect();
    let mut t = fit_tree(
        &rows,
        &labels,
        &weights,
        &slow,
        Hyper {
            max_depth: depth,
            min_weight_leaf: leaf,
            criterion,
        },
        Leaves::MeanSlowdown,
    )?;
    t.annotate(
        rows.iter()
            .zip(&slow)
            .map(|(x, r)| (x.as_slice(), r.iter().map(|v| v - 1.0).collect())),
    );
    Ok(t)
}

/// The depth (1..=max_depth) and split criterion (of `criteria`, in order of preference) with
/// the best geomean oracle / selected over `folds` folds ([`cv_picks`]); a deeper tree, or a
/// later criterion, must beat the best before it by 0.1%. Returns (depth, criterion, its
/// cross-validated oracle ratio).
pub(crate) fn cv_depth(
    train: &[&CostSample],
    max_depth: usize,
    folds: usize,
    leaf: f32,
    criteria: &[Criterion],
) -> Result<(usize, Criterion, f64), ModelError> {
    let mut best = (
        1usize,
        criteria.first().copied().unwrap_or_default(),
        f64::NEG_INFINITY,
    );
    for &criterion in criteria {
        for depth in 1..=max_depth {
            let picks = cv_picks(train, depth, folds, leaf, criterion)?;
            let score = geomean(
                picks
                    .iter()
                    .map(|&(i, c)| train[i].costs[train[i].best] / train[i].costs[c]),
            );
            if score > best.2 + 1e-3 {
                best = (depth, criterion, score);
            }
        }
    }
    Ok(best)
}

/// Each sample's pick by a tree (`depth`, `criterion`) grown without its fold: `folds` folds of
/// the groups, sorted and dealt round-robin (a group's samples never span two folds). Returns
/// (index into `train`, class) for every sample in a fold that had training samples besides.
pub(crate) fn cv_picks(
    train: &[&CostSample],
    depth: usize,
    folds: usize,
    leaf: f32,
    criterion: Criterion,
) -> Result<Vec<(usize, usize)>, ModelError> {
    let mut groups: Vec<u64> = train.iter().map(|s| s.group).collect();
    groups.sort_unstable();
    groups.dedup();
    let fold_of = |g: u64| groups.binary_search(&g).unwrap_or(0) % folds;
    let mut picks = Vec::new();
    for f in 0..folds {
        let tr: Vec<&CostSample> = train
            .iter()
            .copied()
            .filter(|s| fold_of(s.group) != f)
            .collect();
        let te: Vec<usize> = (0..train.len())
            .filter(|&i| fold_of(train[i].group) == f)
            .collect();
        if tr.is_empty() || te.is_empty() {
            continue;
        }
        let t = fit_costs(&tr, depth, leaf, criterion)?;
        picks.extend(te.into_iter().map(|i| (i, t.predict(&train[i].x))));
    }
    Ok(picks)
}

/// The checks shared by the cost-sample trainers' parameters (comm, attention, overlap).
pub(crate) fn check_cost_params(
    max_depth: usize,
    folds: usize,
    leaf: f32,
    criteria: &[Criterion],
) -> Result<(), ModelError> {
    if criteria.is_empty() {
        return Err(ModelError::Params(
            "no split criterion to try (give gini, regret or both)".into(),
        ));
    }
    if !(1..=12).contains(&max_depth) {
        return Err(ModelError::Params(format!(
            "max depth {max_depth} outside 1..=12"
        )));
    }
    if folds < 2 {
        return Err(ModelError::Params(format!("{folds} folds: need >= 2")));
    }
    if leaf.is_nan() || leaf <= 0.0 {
        return Err(ModelError::Params("min leaf weight must be > 0".into()));
    }
    Ok(())
}

/// The one device that runs of a training set come from, or an error listing them: a model is
/// trained per `per` (GPU, machine).
pub(crate) fn one_device<'a>(
    devices: impl Iterator<Item = &'a str>,
    per: &str,
) -> Result<(), ModelError> {
    let devices: std::collections::BTreeSet<&str> = devices.collect();
    if devices.len() > 1 {
        return Err(ModelError::Train(format!(
            "runs from several devices ({}): train one model per {per}",
            devices.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(())
}
