//! A deterministic CART grower with linfa-trees' semantics.
//!
//! linfa-trees 0.8 keeps class weights in a `HashMap` and sums Gini terms in its iteration
//! order, which the process's random hash seed sets: two candidate splits whose scores are equal
//! (or within f32 rounding) win in a different order from run to run, and one training set gave
//! two different models (seen on the issue-18 runs). This grower makes the same choices as
//! linfa-trees (features in order, candidate thresholds at midpoints between sorted values, the
//! weighted Gini score, the strict `<` comparison, `min_weight_leaf`, a split needing at least
//! `min_samples_split` samples, `min_impurity_decrease` 1e-5, `<=` to the left, modal-class
//! pruning, f32 arithmetic) with per-class sums in class order: one training set, one tree. The
//! tests check it against linfa-trees on data without ties.

use crate::tree::{Node, Tree};

/// Hyper-parameters, in linfa-trees' terms.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CartParams {
    pub max_depth: usize,
    /// Least summed weight in each child of a split.
    pub min_weight_leaf: f64,
    /// Least number of samples (not weight: linfa-trees counts samples) a node needs to split.
    pub min_samples_split: f64,
    pub min_impurity_decrease: f64,
}

struct Grower<'a> {
    x: &'a [Vec<f64>],
    y: &'a [usize],
    w: &'a [f64],
    classes: usize,
    p: CartParams,
    /// Per feature: sample indices sorted by value (ties by index).
    sorted: Vec<Vec<usize>>,
}

/// A grown node before flattening.
enum Grown {
    Leaf(usize),
    Split {
        feature: usize,
        threshold: f64,
        left: Box<Grown>,
        right: Box<Grown>,
    },
}

/// Gini impurity in f32, as linfa-trees computes it (its total re-summed from the classes).
fn gini(freq: &[f32]) -> f32 {
    let total: f32 = freq.iter().sum();
    1.0 - freq.iter().map(|f| (f / total) * (f / total)).sum::<f32>()
}

/// The class with the most weight (the lowest index among equals).
fn modal(freq: &[f32]) -> usize {
    let mut best = 0;
    for (c, &f) in freq.iter().enumerate() {
        if f > freq[best] {
            best = c;
        }
    }
    best
}

impl Grower<'_> {
    fn freq(&self, members: &[bool]) -> Vec<f32> {
        let mut f = vec![0.0f32; self.classes];
        for (i, _) in members.iter().enumerate().filter(|(_, m)| **m) {
            f[self.y[i]] += self.w[i] as f32;
        }
        f
    }

    fn fit(&self, members: &[bool], depth: usize) -> Grown {
        let parent = self.freq(members);
        let prediction = modal(&parent);
        let count = members.iter().filter(|m| **m).count();
        if (count as f64) < self.p.min_samples_split || depth >= self.p.max_depth {
            return Grown::Leaf(prediction);
        }
        let total: f32 = parent.iter().sum();
        let mut best: Option<(usize, f64, f32)> = None;
        for (feature, order) in self.sorted.iter().enumerate() {
            let mut right = parent.clone();
            let mut left = vec![0.0f32; self.classes];
            let (mut w_right, mut w_left) = (total, 0.0f32);
            for i in 0..order.len() - 1 {
                let s = order[i];
                if !members[s] {
                    continue;
                }
                let ws = self.w[s] as f32;
                right[self.y[s]] -= ws;
                left[self.y[s]] += ws;
                w_right -= ws;
                w_left += ws;
                let (v, next) = (self.x[s][feature], self.x[order[i + 1]][feature]);
                if (v - next).abs() < 1e-5 {
                    continue;
                }
                let min_leaf = self.p.min_weight_leaf as f32;
                if w_right < min_leaf || w_left < min_leaf {
                    continue;
                }
                let wr = w_right / total;
                let score = wr * gini(&right) + (1.0 - wr) * gini(&left);
                if best.is_none_or(|b| score < b.2) {
                    best = Some((feature, (v + next) / 2.0, score));
                }
            }
        }
        let Some((feature, threshold, score)) = best else {
            return Grown::Leaf(prediction);
        };
        if ((gini(&parent) - score) as f64) < self.p.min_impurity_decrease {
            return Grown::Leaf(prediction);
        }
        let (l, r) = split_members(self.x, members, feature, threshold);
        if !l.contains(&true) || !r.contains(&true) {
            return Grown::Leaf(prediction);
        }
        Grown::Split {
            feature,
            threshold,
            left: Box::new(self.fit(&l, depth + 1)),
            right: Box::new(self.fit(&r, depth + 1)),
        }
    }
}

/// The members of a node on each side of a split (`<=` to the left, linfa-trees' rule).
fn split_members(
    x: &[Vec<f64>],
    members: &[bool],
    feature: usize,
    threshold: f64,
) -> (Vec<bool>, Vec<bool>) {
    let (mut l, mut r) = (vec![false; members.len()], vec![false; members.len()]);
    for (i, _) in members.iter().enumerate().filter(|(_, m)| **m) {
        if x[i][feature] <= threshold {
            l[i] = true;
        } else {
            r[i] = true;
        }
    }
    (l, r)
}

/// Collapse subtrees whose leaves all predict one class (linfa-trees' pruning); returns that
/// class when the subtree collapsed to it.
fn prune(g: &mut Grown) -> Option<usize> {
    match g {
        Grown::Leaf(c) => Some(*c),
        Grown::Split { left, right, .. } => {
            let (a, b) = (prune(left), prune(right));
            match (a, b) {
                (Some(a), Some(b)) if a == b => {
                    *g = Grown::Leaf(a);
                    Some(a)
                }
                _ => None,
            }
        }
    }
}

fn flatten(g: &Grown, out: &mut Vec<Node>) -> usize {
    let at = out.len();
    match g {
        Grown::Leaf(class) => out.push(Node::Leaf {
            class: *class,
            samples: 0,
            mean_regret: 0.0,
        }),
        Grown::Split {
            feature,
            threshold,
            left,
            right,
            ..
        } => {
            out.push(Node::Leaf {
                class: 0,
                samples: 0,
                mean_regret: 0.0,
            });
            let l = flatten(left, out);
            let r = flatten(right, out);
            // augur's trees send x < threshold left; linfa-trees' rule is <=. The thresholds are
            // midpoints between distinct training values, and canonicalize() moves them again,
            // so the two agree on every training input.
            out[at] = Node::Split {
                feature: *feature,
                threshold: *threshold,
                left: l,
                right: r,
            };
        }
    }
    at
}

/// Grow a tree on rows `x` (no NaN), labels `y` (< classes) and weights `w`.
pub(crate) fn grow(x: &[Vec<f64>], y: &[usize], w: &[f64], classes: usize, p: CartParams) -> Tree {
    if x.is_empty() {
        return Tree::constant(0);
    }
    let g = Grower {
        x,
        y,
        w,
        classes,
        p,
        sorted: sorted_orders(x),
    };
    into_tree(g.fit(&vec![true; x.len()], 0))
}

/// Per feature: the sample indices sorted by value (ties by index), what both growers sweep.
fn sorted_orders(x: &[Vec<f64>]) -> Vec<Vec<usize>> {
    (0..x[0].len())
        .map(|f| {
            let mut o: Vec<usize> = (0..x.len()).collect();
            o.sort_by(|&a, &b| x[a][f].total_cmp(&x[b][f]).then(a.cmp(&b)));
            o
        })
        .collect()
}

/// A grown tree pruned (linfa-trees' rule) and flattened into augur's form.
fn into_tree(mut root: Grown) -> Tree {
    let _ = prune(&mut root);
    let mut nodes = Vec::new();
    flatten(&root, &mut nodes);
    Tree { nodes }
}

/// Hyper-parameters of the cost-sensitive grower.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CostParams {
    pub max_depth: usize,
    /// Least number of samples in each child of a split.
    pub min_leaf: usize,
    /// Least decrease of the summed cost a split must bring.
    pub min_gain: f64,
}

/// A cost-sensitive CART: `cost[i][c]` is what class c costs on sample i (augur passes the log
/// slowdown against the fastest kernel, so sums are the log of the geometric mean the evaluation
/// reports). Each leaf takes the class of least summed cost, and each split is the one whose two
/// children's least sums add up to the least (features in order, candidate thresholds at
/// midpoints between sorted values, the first of equal scores kept): the tree minimises the
/// regret of its picks directly, where the Gini grower minimises the impurity of the labels "which
/// kernel was fastest", blind to whether the runner-up was 1% or 10x slower. Sums run in one
/// fixed order (f64): one training set, one tree.
pub(crate) fn grow_cost(x: &[Vec<f64>], cost: &[Vec<f64>], p: CostParams) -> Tree {
    if x.is_empty() || cost[0].is_empty() {
        return Tree::constant(0);
    }
    let g = CostGrower {
        x,
        cost,
        p,
        sorted: sorted_orders(x),
    };
    into_tree(g.fit(&vec![true; x.len()], 0))
}

struct CostGrower<'a> {
    x: &'a [Vec<f64>],
    cost: &'a [Vec<f64>],
    p: CostParams,
    sorted: Vec<Vec<usize>>,
}

/// The class of least summed cost (the lowest index among equals) and that sum.
fn least(sums: &[f64]) -> (usize, f64) {
    let mut best = 0;
    for (c, &v) in sums.iter().enumerate() {
        if v < sums[best] {
            best = c;
        }
    }
    (best, sums[best])
}

impl CostGrower<'_> {
    fn fit(&self, members: &[bool], depth: usize) -> Grown {
        let classes = self.cost[0].len();
        let mut parent = vec![0.0f64; classes];
        let mut count = 0usize;
        for (i, _) in members.iter().enumerate().filter(|(_, m)| **m) {
            for (s, v) in parent.iter_mut().zip(&self.cost[i]) {
                *s += v;
            }
            count += 1;
        }
        let (prediction, parent_cost) = least(&parent);
        let min_leaf = self.p.min_leaf.max(1);
        if count < 2 * min_leaf || depth >= self.p.max_depth {
            return Grown::Leaf(prediction);
        }
        let mut best: Option<(usize, f64, f64)> = None;
        let mut left = vec![0.0f64; classes];
        let mut right = vec![0.0f64; classes];
        for (feature, order) in self.sorted.iter().enumerate() {
            left.iter_mut().for_each(|v| *v = 0.0);
            let mut prev: Option<usize> = None;
            // n_left: the members before this one (the left side of a cut just before it).
            for (n_left, &s) in order.iter().filter(|&&s| members[s]).enumerate() {
                // A cut between the previous member and this one.
                if let Some(q) = prev {
                    let (v, next) = (self.x[q][feature], self.x[s][feature]);
                    if next - v >= 1e-5 && n_left >= min_leaf && count - n_left >= min_leaf {
                        for ((r, p), l) in right.iter_mut().zip(&parent).zip(&left) {
                            *r = p - l;
                        }
                        let score = least(&left).1 + least(&right).1;
                        if best.is_none_or(|b| score < b.2) {
                            best = Some((feature, (v + next) / 2.0, score));
                        }
                    }
                }
                for (l, v) in left.iter_mut().zip(&self.cost[s]) {
                    *l += v;
                }
                prev = Some(s);
            }
        }
        let Some((feature, threshold, score)) = best else {
            return Grown::Leaf(prediction);
        };
        if parent_cost - score < self.p.min_gain {
            return Grown::Leaf(prediction);
        }
        let (l, r) = split_members(self.x, members, feature, threshold);
        Grown::Split {
            feature,
            threshold,
            left: Box::new(self.fit(&l, depth + 1)),
            right: Box::new(self.fit(&r, depth + 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linfa::prelude::*;
    use linfa_trees::{DecisionTree, TreeNode};
    use ndarray::{Array1, Array2};

    /// Pseudo-random data without ties (distinct values, generic weights).
    fn data(
        n: usize,
        d: usize,
        classes: usize,
        seed: u64,
    ) -> (Vec<Vec<f64>>, Vec<usize>, Vec<f64>) {
        let mut s = seed;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let x: Vec<Vec<f64>> = (0..n)
            .map(|_| (0..d).map(|_| next() * 100.0).collect())
            .collect();
        // Labels depend on the features (so splits carry signal), with some noise.
        let y: Vec<usize> = x
            .iter()
            .map(|r| {
                let base = if r[0] < 50.0 {
                    0
                } else if r[1] < 30.0 {
                    1
                } else {
                    2
                };
                if next() < 0.2 {
                    (base + 1) % classes
                } else {
                    base % classes
                }
            })
            .collect();
        // Generic weights: no two sums of them are equal, so no split or modal class ties.
        let w: Vec<f64> = (0..n).map(|_| 1.0 + next() * 15.0).collect();
        (x, y, w)
    }

    /// A linfa-trees tree in augur's form, to compare with.
    fn from_linfa(t: &DecisionTree<f64, usize>) -> Tree {
        fn walk(n: &TreeNode<f64, usize>, out: &mut Vec<Node>) -> usize {
            let at = out.len();
            if let Some(class) = n.prediction() {
                out.push(Node::Leaf {
                    class,
                    samples: 0,
                    mean_regret: 0.0,
                });
                return at;
            }
            let (feature, threshold, _) = n.split();
            out.push(Node::Leaf {
                class: 0,
                samples: 0,
                mean_regret: 0.0,
            });
            let ch = n.children();
            let left = walk(ch[0].as_deref().expect("a split has two children"), out);
            let right = walk(ch[1].as_deref().expect("a split has two children"), out);
            out[at] = Node::Split {
                feature,
                threshold,
                left,
                right,
            };
            at
        }
        let mut nodes = Vec::new();
        walk(t.root_node(), &mut nodes);
        Tree { nodes }
    }

    fn params(max_depth: usize, min_weight_leaf: f64) -> CartParams {
        CartParams {
            max_depth,
            min_weight_leaf,
            min_samples_split: 2.0,
            min_impurity_decrease: 1e-5,
        }
    }

    #[test]
    fn same_partition_as_linfa_trees_on_data_without_ties() {
        for seed in 1..6 {
            let (x, y, w) = data(300, 4, 3, seed);
            let ours = grow(&x, &y, &w, 3, params(4, 16.0));
            let arr = Array2::from_shape_fn((x.len(), 4), |(i, j)| x[i][j]);
            let ds = Dataset::new(arr, Array1::from_vec(y.clone()))
                .with_weights(Array1::from_iter(w.iter().map(|&v| v as f32)));
            let theirs = from_linfa(
                &DecisionTree::params()
                    .max_depth(Some(4))
                    .min_weight_leaf(16.0)
                    .min_weight_split(2.0)
                    .fit(&ds)
                    .unwrap(),
            );
            // The same tree shape (node count), and every training row reaches a leaf of the
            // same class.
            assert_eq!(ours.nodes.len(), theirs.nodes.len(), "seed {seed}");
            for r in &x {
                assert_eq!(ours.predict(r), theirs.predict(r), "seed {seed}");
            }
        }
    }

    #[test]
    fn one_training_set_one_tree_even_with_ties() {
        // Symmetric data: features 0 and 1 cut the classes equally well.
        let x: Vec<Vec<f64>> = (0..40)
            .map(|i| vec![(i % 2) as f64, ((i / 2) % 2) as f64, i as f64])
            .collect();
        let y: Vec<usize> = (0..40).map(|i| (i % 2) + ((i / 2) % 2)).collect();
        let w = vec![1.0; 40];
        let p = params(3, 1.0);
        let first = grow(&x, &y, &w, 3, p);
        for _ in 0..20 {
            assert_eq!(grow(&x, &y, &w, 3, p), first);
        }
        // The first feature in order wins a tie.
        assert!(matches!(first.nodes[0], Node::Split { feature: 0, .. }));
    }

    fn cost_params(min_leaf: usize) -> CostParams {
        CostParams {
            max_depth: 3,
            min_leaf,
            min_gain: 1e-3,
        }
    }

    /// Two classes: class 0 is faster on most samples by 1%, class 1 on a few by 10x: the
    /// regret criterion splits the few off and gives them class 1.
    #[test]
    fn the_regret_criterion_splits_where_the_time_is() {
        let mut x = Vec::new();
        let mut cost = Vec::new();
        for i in 0..40 {
            let v = i as f64;
            x.push(vec![v]);
            if i < 36 {
                cost.push(vec![0.0, 0.01f64.ln_1p()]);
            } else {
                cost.push(vec![10f64.ln(), 0.0]);
            }
        }
        let t = grow_cost(&x, &cost, cost_params(2));
        assert_eq!(t.predict(&[10.0]), 0);
        assert_eq!(t.predict(&[38.0]), 1);
        // Deterministic, and a split that gains nothing is not made (a constant cost matrix).
        let again = grow_cost(&x, &cost, cost_params(2));
        assert_eq!(t, again);
        let flat = vec![vec![0.5, 0.7]; 40];
        let c = grow_cost(&x, &flat, cost_params(2));
        assert_eq!(c.nodes.len(), 1);
        assert_eq!(c.predict(&[3.0]), 0);
        // min_leaf: the four samples of class 1 cannot be split off into leaves of five.
        let big = grow_cost(&x, &cost, cost_params(5));
        for r in &x {
            let leaf = big.leaf(r);
            let n = x.iter().filter(|q| big.leaf(q) == leaf).count();
            assert!(n >= 5, "a leaf of {n} samples");
        }
    }
}
