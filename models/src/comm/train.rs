//! Training: params -> checked params -> fit, depth by cross-validation over message groups.

use super::*;

/// Hyper-parameters of comm training (linfa style: params -> check -> fit).
#[derive(Debug, Clone)]
pub struct CommTrainParams {
    /// Depths tried by cross-validation (1..=this).
    pub max_depth: usize,
    pub min_weight_leaf: f32,
    pub folds: usize,
    /// Keep sizes that are not a power of two out of training (for `augur eval`).
    pub holdout_between: bool,
    /// Split criteria tried by cross-validation with the depth, in order of preference (a later
    /// one must beat the earlier by 0.1%): `Gini` (the fastest class's impurity) and `Regret`
    /// (the summed log slowdown of each child's best class).
    pub criteria: Vec<crate::model::Criterion>,
}

impl Default for CommTrainParams {
    fn default() -> Self {
        CommTrainParams {
            max_depth: 6,
            min_weight_leaf: 1.0,
            folds: 4,
            holdout_between: true,
            criteria: vec![
                crate::model::Criterion::Gini,
                crate::model::Criterion::Regret,
            ],
        }
    }
}

/// Checked parameters.
#[derive(Debug, Clone)]
pub struct CheckedCommTrainParams(CommTrainParams);

impl CommTrainParams {
    pub fn check(self) -> Result<CheckedCommTrainParams, ModelError> {
        crate::costs::check_cost_params(
            self.max_depth,
            self.folds,
            self.min_weight_leaf,
            &self.criteria,
        )?;
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
        crate::costs::one_device(msgs.iter().map(|m| m.device.as_str()), "machine")?;
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
        let (features, inputs) = crate::costs::inputs_except(&schema, &skip);
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
            let (depth, criterion, cv) =
                cv_depth(&train, p.max_depth, p.folds, p.min_weight_leaf, &p.criteria)?;
            let tree = fit_costs(&train, depth, p.min_weight_leaf, criterion)?;
            trees.push(CollectiveTree {
                collective: collective_name(c).into(),
                patterns,
                inputs: inputs.clone(),
                features: features.clone(),
                tree,
                max_depth: depth,
                criterion,
                cv_oracle_ratio: cv,
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
