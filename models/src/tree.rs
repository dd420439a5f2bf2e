//! augur's own decision-tree form: a flat node list that serialises to JSON, predicts in a few
//! nanoseconds and exports to text, DOT and Rust. [`crate::cart`] grows the trees.

use serde::{Deserialize, Serialize};

/// One node. A split sends an input to `left` when `x[feature] < threshold`, else to `right`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "node", rename_all = "lowercase")]
pub enum Node {
    Split {
        feature: usize,
        threshold: f64,
        left: usize,
        right: usize,
    },
    Leaf {
        /// Index of the chosen class (a kernel, or for the gathering policy 0 = no, 1 = gather).
        class: usize,
        /// Training samples that reach this leaf.
        samples: usize,
        /// Mean regret of the leaf's choice on them: mean of cost(choice) / cost(best) - 1.
        mean_regret: f64,
    },
}

/// A decision tree over a named input vector; node 0 is the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

/// The deepest tree a model file may hold: far above the deepest augur trains (20), low enough
/// that export and inference (which walk a path per level) stay cheap.
pub const MAX_TREE_DEPTH: usize = 64;

/// Inputs are cleaned the same way in training and prediction: NaN (a feature undefined for
/// this input, e.g. a ratio over zero rows) becomes -1, below every real value.
#[inline]
pub fn clean(v: f64) -> f64 {
    if v.is_nan() {
        -1.0
    } else {
        v
    }
}

impl Tree {
    /// A single leaf.
    pub fn constant(class: usize) -> Tree {
        Tree {
            nodes: vec![Node::Leaf {
                class,
                samples: 0,
                mean_regret: 0.0,
            }],
        }
    }

    /// The child `x` goes to from node `i`, or None when `i` is a leaf.
    #[inline]
    fn step(&self, i: usize, x: &[f64]) -> Option<usize> {
        match &self.nodes[i] {
            Node::Split {
                feature,
                threshold,
                left,
                right,
            } => Some(if clean(x[*feature]) < *threshold {
                *left
            } else {
                *right
            }),
            Node::Leaf { .. } => None,
        }
    }

    /// The nodes `x` visits from the root to its leaf (the leaf last): what an explanation of a
    /// prediction walks.
    pub fn path(&self, x: &[f64]) -> Vec<usize> {
        let mut out = vec![0];
        while let Some(next) = self.step(out[out.len() - 1], x) {
            out.push(next);
        }
        out
    }

    /// The splits `x` passes, named: (input name from `inputs`, its value, the threshold,
    /// whether it went left, i.e. value < threshold).
    pub fn named_path(&self, x: &[f64], inputs: &[String]) -> Vec<(String, f64, f64, bool)> {
        let path = self.path(x);
        let mut out = Vec::new();
        for w in path.windows(2) {
            if let Node::Split {
                feature,
                threshold,
                left,
                ..
            } = &self.nodes[w[0]]
            {
                out.push((
                    inputs[*feature].clone(),
                    x[*feature],
                    *threshold,
                    w[1] == *left,
                ));
            }
        }
        out
    }

    /// Index of the leaf `x` reaches.
    #[inline]
    pub fn leaf(&self, x: &[f64]) -> usize {
        let mut i = 0;
        while let Some(next) = self.step(i, x) {
            i = next;
        }
        i
    }

    /// The class `x` is given.
    #[inline]
    pub fn predict(&self, x: &[f64]) -> usize {
        match &self.nodes[self.leaf(x)] {
            Node::Leaf { class, .. } => *class,
            Node::Split { .. } => unreachable!("leaf() returns leaves"),
        }
    }

    /// How sure the pick for `x` is: the training samples at its leaf and the leaf's mean regret
    /// on them; None for a leaf without that record (older files, or no sample reached it).
    pub fn leaf_evidence(&self, x: &[f64]) -> Option<(usize, f64)> {
        match self.nodes[self.leaf(x)] {
            Node::Leaf {
                samples,
                mean_regret,
                ..
            } if samples > 0 => Some((samples, mean_regret)),
            _ => None,
        }
    }

    /// Fill each leaf's sample count and mean regret from (input, regret of the leaf's class).
    pub fn annotate<'a>(&mut self, samples: impl Iterator<Item = (&'a [f64], Vec<f64>)>) {
        let mut acc = vec![(0usize, 0.0f64); self.nodes.len()];
        for (x, regrets) in samples {
            let l = self.leaf(x);
            if let Node::Leaf { class, .. } = self.nodes[l] {
                acc[l].0 += 1;
                acc[l].1 += regrets.get(class).copied().unwrap_or(0.0);
            }
        }
        for (n, (count, sum)) in self.nodes.iter_mut().zip(acc) {
            if let Node::Leaf {
                samples,
                mean_regret,
                ..
            } = n
            {
                *samples = count;
                *mean_regret = if count > 0 { sum / count as f64 } else { 0.0 };
            }
        }
    }

    /// Merge splits whose two sides are leaves of the same class (a CART keeps splits that lower
    /// impurity without changing the answer), bottom-up, then drop unreachable nodes.
    /// Leaf statistics are summed; call before or after [`Tree::annotate`].
    pub fn simplify(&mut self) {
        fn go(nodes: &mut Vec<Node>, i: usize) {
            if let Node::Split { left, right, .. } = nodes[i].clone() {
                go(nodes, left);
                go(nodes, right);
                if let (
                    Node::Leaf {
                        class: a,
                        samples: sa,
                        mean_regret: ra,
                    },
                    Node::Leaf {
                        class: b,
                        samples: sb,
                        mean_regret: rb,
                    },
                ) = (&nodes[left], &nodes[right])
                {
                    if a == b {
                        let n = sa + sb;
                        nodes[i] = Node::Leaf {
                            class: *a,
                            samples: n,
                            mean_regret: if n > 0 {
                                (ra * *sa as f64 + rb * *sb as f64) / n as f64
                            } else {
                                0.0
                            },
                        };
                    }
                }
            }
        }
        go(&mut self.nodes, 0);
        // Re-number the reachable nodes in depth-first order.
        let mut out = Vec::new();
        fn copy(src: &[Node], i: usize, out: &mut Vec<Node>) -> usize {
            let at = out.len();
            out.push(src[i].clone());
            if let Node::Split {
                feature,
                threshold,
                left,
                right,
            } = src[i].clone()
            {
                let l = copy(src, left, out);
                let r = copy(src, right, out);
                out[at] = Node::Split {
                    feature,
                    threshold,
                    left: l,
                    right: r,
                };
            }
            at
        }
        copy(&self.nodes, 0, &mut out);
        self.nodes = out;
    }

    /// Depth (a single leaf: 0).
    pub fn depth(&self) -> usize {
        fn d(n: &[Node], i: usize) -> usize {
            match &n[i] {
                Node::Split { left, right, .. } => 1 + d(n, *left).max(d(n, *right)),
                Node::Leaf { .. } => 0,
            }
        }
        d(&self.nodes, 0)
    }

    pub fn leaves(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| matches!(n, Node::Leaf { .. }))
            .count()
    }

    /// Check the structure: indices in range, every node reached once, no cycles; classes and
    /// features below the given bounds.
    pub fn validate(&self, inputs: usize, classes: usize) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("tree has no nodes".into());
        }
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![(0usize, 0usize)];
        while let Some((i, depth)) = stack.pop() {
            if depth > MAX_TREE_DEPTH {
                return Err(format!(
                    "tree deeper than {MAX_TREE_DEPTH} levels (node {i}); augur trains at most \
                     20: a damaged or foreign model"
                ));
            }
            if i >= self.nodes.len() {
                return Err(format!(
                    "node index {i} out of range ({} nodes)",
                    self.nodes.len()
                ));
            }
            if std::mem::replace(&mut seen[i], true) {
                return Err(format!("node {i} is reached twice"));
            }
            match &self.nodes[i] {
                Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                } => {
                    if *feature >= inputs {
                        return Err(format!("node {i} splits on input {feature} of {inputs}"));
                    }
                    if !threshold.is_finite() {
                        return Err(format!("node {i} has threshold {threshold}"));
                    }
                    stack.push((*left, depth + 1));
                    stack.push((*right, depth + 1));
                }
                Node::Leaf { class, .. } => {
                    if *class >= classes {
                        return Err(format!("leaf {i} has class {class} of {classes}"));
                    }
                }
            }
        }
        Ok(())
    }
}
