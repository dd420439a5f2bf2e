//! The attention model file: one tree over the attention-shape features.

use super::*;

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
    /// How the tree's splits were chosen (by cross-validation; files before it: Gini).
    #[serde(default)]
    pub criterion: crate::model::Criterion,
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

    /// How sure the pick for a shape is: the training shapes at its leaf and the pick's mean
    /// regret on them (its time over their fastest schedule's, less 1); None for an invalid
    /// shape or a leaf without that record.
    pub fn leaf_evidence(&self, shape: &AttentionShape) -> Option<(usize, f64)> {
        self.tree.leaf_evidence(&self.inputs_of(shape)?)
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
        crate::check_tree(
            None,
            &self.tree,
            (&self.features, &self.inputs),
            (self.schedules.len(), "schedules"),
            self.schema.features.len(),
        )
    }

    pub(super) fn class_tree(&self) -> crate::export::ClassTree<'_> {
        crate::export::ClassTree {
            tree: &self.tree,
            inputs: &self.inputs,
            classes: &self.schedules,
            schema: &self.schema,
            noun: "shapes",
        }
    }
}
