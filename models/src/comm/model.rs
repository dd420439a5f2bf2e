//! The comm model file: one tree per collective.

use super::*;

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
    /// How the tree's splits were chosen (by cross-validation; files before it: Gini).
    #[serde(default)]
    pub criterion: crate::model::Criterion,
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
    pub(super) fn class_tree<'a>(&'a self, model: &'a CommModel) -> crate::export::ClassTree<'a> {
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

    /// A message's tree and its inputs (None: no tree for its collective, or no features).
    fn tree_and_inputs(&self, shape: &MessageShape) -> Option<(&CollectiveTree, Vec<f64>)> {
        let t = self.tree_for(shape.collective)?;
        let f = shape.features().ok()?;
        let v = f.values();
        Some((t, t.features.iter().map(|&i| clean(v[i])).collect()))
    }

    /// The pattern for a message (None: the model has no tree for its collective).
    pub fn choose(&self, shape: &MessageShape) -> Option<&str> {
        let (t, x) = self.tree_and_inputs(shape)?;
        Some(&t.patterns[t.tree.predict(&x)])
    }

    /// How sure the pick for a message is: the training messages at its leaf and the pick's
    /// mean regret on them (its time over their fastest pattern's, less 1); None without a
    /// tree for its collective or a leaf without that record.
    pub fn leaf_evidence(&self, shape: &MessageShape) -> Option<(usize, f64)> {
        let (t, x) = self.tree_and_inputs(shape)?;
        t.tree.leaf_evidence(&x)
    }

    /// The leaf path of a message: (input name, value, threshold, went left) per split.
    pub fn path(&self, shape: &MessageShape) -> Vec<(String, f64, f64, bool)> {
        self.tree_and_inputs(shape)
            .map(|(t, x)| t.tree.named_path(&x, &t.inputs))
            .unwrap_or_default()
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
            crate::check_tree(
                Some(&t.collective),
                &t.tree,
                (&t.features, &t.inputs),
                (t.patterns.len(), "patterns"),
                n,
            )?;
        }
        Ok(())
    }
}
