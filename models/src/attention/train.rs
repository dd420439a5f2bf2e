//! Training: params -> checked params -> fit, depth by cross-validation over shape groups.

use super::*;

/// Hyper-parameters of attention training (linfa style: params -> check -> fit).
#[derive(Debug, Clone)]
pub struct AttentionTrainParams {
    /// Depths tried by cross-validation (1..=this).
    pub max_depth: usize,
    pub min_weight_leaf: f32,
    pub folds: usize,
    /// Every n-th shape group (sorted) is held out of training for `augur eval` (0: none).
    pub holdout_every: usize,
    /// Split criteria tried by cross-validation with the depth, in order of preference (a later
    /// one must beat the earlier by 0.1%): `Gini` (the fastest class's impurity) and `Regret`
    /// (the summed log slowdown of each child's best class).
    pub criteria: Vec<crate::model::Criterion>,
}

impl Default for AttentionTrainParams {
    fn default() -> Self {
        AttentionTrainParams {
            max_depth: 6,
            min_weight_leaf: 1.0,
            folds: 5,
            holdout_every: 5,
            criteria: vec![
                crate::model::Criterion::Gini,
                crate::model::Criterion::Regret,
            ],
        }
    }
}

/// Checked parameters.
#[derive(Debug, Clone)]
pub struct CheckedAttentionTrainParams(AttentionTrainParams);

impl AttentionTrainParams {
    pub fn check(self) -> Result<CheckedAttentionTrainParams, ModelError> {
        crate::costs::check_cost_params(
            self.max_depth,
            self.folds,
            self.min_weight_leaf,
            &self.criteria,
        )?;
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
        crate::costs::one_device(cases.iter().map(|c| c.device.as_str()), "GPU")?;
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
        let (features, inputs) = crate::costs::inputs_except(&schema, &["query_len"]);
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
        let (depth, criterion, cv) =
            cv_depth(&train, p.max_depth, p.folds, p.min_weight_leaf, &p.criteria)?;
        let tree = fit_costs(&train, depth, p.min_weight_leaf, criterion)?;
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
            criterion,
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
