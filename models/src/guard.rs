//! The long-row guard: a floor under the kernels whose time grows with the longest row, learned
//! from the runs, that vetoes a tree's pick when the features read prove it slow.
//!
//! A kernel that gives a row to one thread, warp or block (scalar, vectorN, block; adaptive's
//! block phase) takes at least as long as that group needs for the longest row: the runs show a
//! floor of about 33 ns per entry of the longest row for scalar, 50 ns per step of L entries for
//! vectorL, on every matrix. A tree never sees that rule; it learns which kernel was fastest on
//! the training matrices, and on a held-out matrix with rows far longer than any it was trained
//! on it can pick vector16 for a row of 10^6 entries (50x slower than the oracle, H200, split
//! seed 0). The guard reads the longest row the tier knows (the exact maximum when gathered; the
//! longest sampled row, a lower bound, when sampled; the mean, when only the shape is known),
//! and where `k x floor(kernel) x longest` exceeds `margin` times the estimated cost of a
//! balanced fallback kernel, the fallback is taken instead and the choice says so.
//!
//! Everything is measured, not assumed: the floor is the least `per_iter_s / row_len_max` over
//! the training matrices whose longest row has at least [`LONG_ROW`] entries (none: no floor, the
//! kernel is never vetoed); the fallback per iteration count is the kernel of least summed log
//! slowdown on those matrices; its cost is `first + (k - 1) x per_iter`, each
//! `floor + per_entry x (nnz + rows)`, with `per_entry` the 90th percentile over the training
//! matrices of 10^6 nonzeros or more (a pessimistic estimate, so the guard errs towards keeping
//! the tree's pick).

use serde::{Deserialize, Serialize};

use crate::model::Tier;
use crate::runs::Runs;
use crate::train::Sample;

/// Longest row (entries) from which a training matrix sets a kernel's floor: there the row's
/// chain outweighs the launch on every kernel (a vector32 step of ~50 ns x 10^4 / 32 = 16 us).
pub const LONG_ROW: f64 = 1e4;

/// A kernel's floor counts only when it is at least this many times the fallback's cost per
/// entry (nnz + rows): on the H100 and H200 runs the row-bound kernels' floors are 32-2,600
/// times it (adaptive 0.4 ns, vector32 1.6 ns, block 1.24 ns, scalar 33 ns per entry of the
/// longest row, against ~12.5 ps), the balanced ones' at most 2.4 times (nnz_split, merge,
/// binned, cuSPARSE: 15-30 ps).
pub const CHAINED: f64 = 10.0;

/// Default margin: the proven floor must exceed twice the fallback's estimate.
pub const MARGIN: f64 = 2.0;

/// `floor_s + per_entry_s x (nnz + rows)` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Linear {
    pub floor_s: f64,
    pub per_entry_s: f64,
}

impl Linear {
    pub fn at(&self, entries: f64) -> f64 {
        self.floor_s + self.per_entry_s * entries
    }

    /// Least value as the floor, 90th percentile of value / entries (over the points with
    /// `entries >= 1e6`, all of them if none) as the slope; None without points.
    fn fit(points: &[(f64, f64)]) -> Option<Linear> {
        let floor_s = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        if !floor_s.is_finite() {
            return None;
        }
        let big: Vec<&(f64, f64)> = points.iter().filter(|p| p.0 >= 1e6).collect();
        let use_: Vec<&(f64, f64)> = if big.is_empty() {
            points.iter().collect()
        } else {
            big
        };
        let mut q: Vec<f64> = use_.iter().map(|p| p.1 / p.0.max(1.0)).collect();
        q.sort_by(f64::total_cmp);
        let per_entry_s = q[(q.len() * 9 / 10).min(q.len() - 1)];
        Some(Linear {
            floor_s,
            per_entry_s,
        })
    }
}

/// The kernel taken where the guard vetoes a pick, for inputs of `iterations` near this count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fallback {
    /// The trained iteration count; inputs take the fallback of the nearest on a log scale.
    pub iterations: u32,
    /// Index into the model's kernels.
    pub kernel: usize,
    /// Estimated seconds of the set-up and the first call (at its latency).
    pub first: Linear,
    /// Estimated seconds of each further call.
    pub per_iter: Linear,
}

/// Schema indices of the features the guard reads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GuardInputs {
    pub rows: usize,
    pub nnz: usize,
    pub mean_row_len: usize,
    pub sampled_max_mean_ratio: usize,
    pub row_len_max: usize,
}

impl GuardInputs {
    fn of_schema() -> Option<GuardInputs> {
        let s = augur_features::spmv::SpmvFeatures::schema();
        Some(GuardInputs {
            rows: s.index("rows")?,
            nnz: s.index("nnz")?,
            mean_row_len: s.index("mean_row_len")?,
            sampled_max_mean_ratio: s.index("sampled_max_mean_ratio")?,
            row_len_max: s.index("row_len_max")?,
        })
    }

    fn max(&self) -> usize {
        [
            self.rows,
            self.nnz,
            self.mean_row_len,
            self.sampled_max_mean_ratio,
            self.row_len_max,
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }
}

/// The guard of a model (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowGuard {
    /// Per model kernel: least seconds per entry of the longest row seen in training (0: none
    /// proven; such a kernel is never vetoed).
    pub floor_per_longest_entry_s: Vec<f64>,
    /// One per trained iteration count, ascending.
    pub fallbacks: Vec<Fallback>,
    /// A pick is vetoed where its floor exceeds `margin` x the fallback's estimate.
    pub margin: f64,
    pub inputs: GuardInputs,
    /// Training matrices with a row of at least [`LONG_ROW`] entries (what the floors rest on).
    pub long_row_matrices: usize,
}

/// A pick the guard overruled, and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Veto {
    /// The tree's pick (index into the model's kernels).
    pub vetoed: usize,
    /// The longest row the tier knew (entries; a lower bound unless gathered).
    pub longest: f64,
    /// Seconds the vetoed kernel needs at least for the iterations.
    pub floor_s: f64,
    /// Seconds the fallback is estimated to take.
    pub fallback_s: f64,
}

/// Feature `j` of schema-order `values`, 0 where undefined (NaN, infinite or absent): no
/// evidence of a long row.
fn given(values: &[f64], j: usize) -> f64 {
    values
        .get(j)
        .copied()
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

impl RowGuard {
    /// Learn the guard from the training samples (`all`: every (matrix, k) trained on). None
    /// (no guard) where no kernel ran on every sample of an iteration count, so that no
    /// fallback is known to run, or the schema lacks a feature the guard reads.
    pub(crate) fn fit(runs: &Runs, kernels: &[String], all: &[Sample]) -> Option<RowGuard> {
        let inputs = GuardInputs::of_schema()?;
        let mut mats: Vec<usize> = all.iter().map(|s| s.matrix).collect();
        mats.sort_unstable();
        mats.dedup();
        let longest = |m: usize| runs.matrices[m].info.features[inputs.row_len_max];
        let long: Vec<usize> = mats
            .iter()
            .copied()
            .filter(|&m| longest(m) >= LONG_ROW)
            .collect();
        let timing = |m: usize, k: &str| {
            runs.matrices[m]
                .kernels
                .iter()
                .find(|r| r.kernel == k)
                .and_then(|r| r.timing)
        };
        let floor_per_longest_entry_s: Vec<f64> = kernels
            .iter()
            .map(|k| {
                long.iter()
                    .filter_map(|&m| timing(m, k).map(|t| t.per_iter_s / longest(m)))
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .fold(f64::INFINITY, f64::min)
            })
            .map(|v| if v.is_finite() { v } else { 0.0 })
            .collect();
        let mut ks: Vec<f64> = all.iter().map(|s| s.k).collect();
        ks.sort_by(f64::total_cmp);
        ks.dedup();
        let entries = |m: usize| {
            let i = &runs.matrices[m].info;
            (i.nnz + i.rows) as f64
        };
        let mut fallbacks = Vec::new();
        for k in ks {
            // The kernel of least summed log slowdown on the long-row samples at this k (every
            // sample if none has a long row).
            let at: Vec<&Sample> = all
                .iter()
                .filter(|s| s.k == k && longest(s.matrix) >= LONG_ROW)
                .collect();
            let at = if at.is_empty() {
                all.iter().filter(|s| s.k == k).collect()
            } else {
                at
            };
            let kernel = (0..kernels.len())
                .filter(|&c| at.iter().all(|s| !s.failed[c]))
                .min_by(|&a, &b| {
                    let sum = |c: usize| at.iter().map(|s| (s.costs[c] / s.oracle).ln()).sum();
                    f64::total_cmp(&sum(a), &sum(b))
                })?;
            let pts = |f: &dyn Fn(&crate::runs::Timing) -> f64| -> Vec<(f64, f64)> {
                mats.iter()
                    .filter_map(|&m| timing(m, &kernels[kernel]).map(|t| (entries(m), f(&t))))
                    .collect()
            };
            fallbacks.push(Fallback {
                iterations: k as u32,
                kernel,
                first: Linear::fit(&pts(&|t| t.setup_s + t.latency_s))?,
                per_iter: Linear::fit(&pts(&|t| t.per_iter_s))?,
            });
        }
        // Only a kernel whose floor is far above what a balanced kernel pays per entry is
        // bound by its longest row; a balanced kernel's least time per longest-row entry is its
        // time per entry on a matrix of one long row, not a floor.
        let slope = fallbacks
            .iter()
            .map(|f| f.per_iter.per_entry_s)
            .fold(0.0, f64::max);
        let floor_per_longest_entry_s = floor_per_longest_entry_s
            .into_iter()
            .map(|v: f64| if v >= CHAINED * slope { v } else { 0.0 })
            .collect();
        Some(RowGuard {
            floor_per_longest_entry_s,
            fallbacks,
            margin: MARGIN,
            inputs,
            long_row_matrices: long.len(),
        })
    }

    /// The fallback serving `k` iterations: the nearest trained count on a log scale.
    pub fn fallback_for(&self, k: f64) -> Option<&Fallback> {
        let lk = k.max(1.0).ln();
        self.fallbacks.iter().min_by(|a, b| {
            let d = |f: &Fallback| ((f.iterations.max(1) as f64).ln() - lk).abs();
            d(a).total_cmp(&d(b))
        })
    }

    /// The longest row a selector of `tier` knows from schema-order `values` (a lower bound on
    /// the true one unless gathered; NaN-free, 0 if unknown).
    pub fn longest(&self, values: &[f64], tier: Tier) -> f64 {
        let i = &self.inputs;
        let get = |j: usize| given(values, j);
        let mean = get(i.mean_row_len);
        let l = match tier {
            Tier::Gathered => get(i.row_len_max),
            Tier::Sampled => get(i.sampled_max_mean_ratio) * mean,
            Tier::Known => 0.0,
        };
        l.max(mean)
    }

    /// Whether `pick`, made by the selector of `tier` for `k` iterations, is overruled: Some
    /// with the fallback's kernel and the figures behind it.
    pub fn check(&self, values: &[f64], tier: Tier, k: f64, pick: usize) -> Option<(usize, Veto)> {
        let per = *self.floor_per_longest_entry_s.get(pick)?;
        if per <= 0.0 {
            return None;
        }
        let fb = self.fallback_for(k)?;
        if fb.kernel == pick {
            return None;
        }
        let longest = self.longest(values, tier);
        let k = k.max(1.0);
        let floor_s = k * per * longest;
        let get = |j: usize| given(values, j);
        let n = get(self.inputs.nnz) + get(self.inputs.rows);
        let fallback_s = fb.first.at(n) + (k - 1.0) * fb.per_iter.at(n);
        (floor_s > self.margin * fallback_s).then_some((
            fb.kernel,
            Veto {
                vetoed: pick,
                longest,
                floor_s,
                fallback_s,
            },
        ))
    }

    pub(crate) fn validate(&self, schema_len: usize, classes: usize) -> Result<(), String> {
        if self.floor_per_longest_entry_s.len() != classes {
            return Err(format!(
                "{} kernel floors for {classes} kernels",
                self.floor_per_longest_entry_s.len()
            ));
        }
        if self.inputs.max() >= schema_len {
            return Err(format!(
                "feature index {} beyond the schema's {schema_len}",
                self.inputs.max()
            ));
        }
        if self.fallbacks.iter().any(|f| f.kernel >= classes) {
            return Err("a fallback kernel beyond the model's kernels".into());
        }
        let finite = |l: &Linear| l.floor_s.is_finite() && l.per_entry_s.is_finite();
        if !(self.margin.is_finite() && self.margin > 0.0)
            || self
                .floor_per_longest_entry_s
                .iter()
                .any(|v| !v.is_finite() || *v < 0.0)
            || self
                .fallbacks
                .iter()
                .any(|f| !finite(&f.first) || !finite(&f.per_iter))
        {
            return Err("non-finite or negative figures".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use augur_features::spmv::SpmvFeatures;

    use super::*;
    use crate::runs::{KernelRun, MatrixInfo, MatrixRuns, Timing};
    use crate::train::{samples, GatherCost};

    /// Matrices of 4 entries per row and one row of `max` entries; `rowwise` costs 4 us + 30 ns
    /// per entry of the longest row, `balanced` 4 us + 12 ps per entry (nnz + rows).
    fn runs(maxes: &[f64]) -> Runs {
        let schema = SpmvFeatures::schema();
        let matrices = maxes
            .iter()
            .enumerate()
            .map(|(i, &max)| {
                let rows = 1e5;
                let nnz = 4.0 * rows + max;
                let mut f = vec![f64::NAN; schema.features.len()];
                for (j, d) in schema.features.iter().enumerate() {
                    f[j] = match d.name.as_str() {
                        "rows" | "cols" => rows,
                        "nnz" => nnz,
                        "mean_row_len" => nnz / rows,
                        "row_len_max" => max,
                        "sampled_max_mean_ratio" => 1.5,
                        _ => 0.5,
                    };
                }
                let run = |kernel: &str, per: f64| KernelRun {
                    kernel: kernel.into(),
                    timing: Some(Timing::wall(0.0, per, 5)),
                    error: String::new(),
                };
                MatrixRuns {
                    info: MatrixInfo::synthetic(
                        format!("m{i}"),
                        format!("f{i}"),
                        (rows as usize, nnz as usize),
                        "1;100",
                        f,
                    ),
                    kernels: vec![
                        run("rowwise", 4e-6 + 30e-9 * max),
                        run("balanced", 4e-6 + 12e-12 * (nnz + rows)),
                    ],
                }
            })
            .collect();
        Runs { matrices }
    }

    fn fit(maxes: &[f64]) -> (Runs, RowGuard) {
        let r = runs(maxes);
        let kernels = vec!["rowwise".to_string(), "balanced".to_string()];
        let all = samples(&r, &kernels, &[1, 100], GatherCost::Device, |_| true);
        let g = RowGuard::fit(&r, &kernels, &all).unwrap();
        (r, g)
    }

    #[test]
    fn floors_bound_the_row_per_group_kernels_only_and_overrule_what_they_prove_slow() {
        let (r, g) = fit(&[10.0, 100.0, 3e3, 2e4, 1e5, 1e6]);
        assert_eq!(g.long_row_matrices, 3);
        // rowwise: the least per_iter / longest row over rows >= 10^4, i.e. at 10^6 entries.
        let want = (4e-6 + 30e-9 * 1e6) / 1e6;
        assert!(
            (g.floor_per_longest_entry_s[0] - want).abs() < 1e-15,
            "{g:?}"
        );
        // balanced: ~12 ps per longest-row entry is not a floor (under CHAINED x its slope).
        assert_eq!(g.floor_per_longest_entry_s[1], 0.0);
        assert!(g.fallbacks.iter().all(|f| f.kernel == 1));
        assert_eq!(
            g.fallbacks.iter().map(|f| f.iterations).collect::<Vec<_>>(),
            [1, 100]
        );
        let f = |m: usize| r.matrices[m].info.features.clone();
        // Gathered: the exact longest row. 10^6 entries: rowwise needs >= 30 ms a call.
        let (kernel, v) = g.check(&f(5), Tier::Gathered, 1.0, 0).unwrap();
        assert_eq!((kernel, v.vetoed, v.longest), (1, 0, 1e6));
        assert!(v.floor_s > g.margin * v.fallback_s && v.floor_s > 0.03);
        // 100 entries: 3 us of chain, not overruled; the fallback itself never is.
        assert!(g.check(&f(1), Tier::Gathered, 100.0, 0).is_none());
        assert!(g.check(&f(5), Tier::Gathered, 1.0, 1).is_none());
        // Sampled: the longest sampled row (1.5 x the mean) is all it knows; known: the mean.
        assert_eq!(g.longest(&f(5), Tier::Sampled), 1.5 * (4e5 + 1e6) / 1e5);
        assert!(g.check(&f(5), Tier::Sampled, 1.0, 0).is_none());
        assert!(g.check(&f(5), Tier::Known, 100.0, 0).is_none());
        // Undefined features are no evidence; a kernel index outside the guard is no pick of it.
        let nan = vec![f64::NAN; f(5).len()];
        assert!(g.check(&nan, Tier::Gathered, 1.0, 0).is_none());
        assert!(g.check(&f(5), Tier::Gathered, 1.0, 7).is_none());
        // The nearest trained count on a log scale serves each k.
        assert_eq!(g.fallback_for(9.0).unwrap().iterations, 1);
        assert_eq!(g.fallback_for(11.0).unwrap().iterations, 100);
        assert_eq!(g.fallback_for(1e6).unwrap().iterations, 100);
        g.validate(f(0).len(), 2).unwrap();
        assert!(g.validate(f(0).len(), 3).is_err());
    }

    #[test]
    fn without_long_rows_in_training_no_kernel_has_a_floor() {
        let (r, g) = fit(&[10.0, 100.0, 3e3]);
        assert_eq!(g.long_row_matrices, 0);
        assert!(g.floor_per_longest_entry_s.iter().all(|&v| v == 0.0));
        let mut f = r.matrices[2].info.features.clone();
        f[g.inputs.row_len_max] = 1e7;
        assert!(g.check(&f, Tier::Gathered, 1.0, 0).is_none());
    }
}
