//! Evaluation on held-out rows: the selector against the oracle, the best single kernel,
//! cuSPARSE ALG1 and a Ginkgo-style hand rule, overall and per nnz bucket, with feature gathering
//! and tree inference charged.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::model::{Model, Tier, MAX_INPUTS};
use crate::runs::Runs;
use crate::train::{geomean, samples, GatherCost, Sample};
use crate::ModelError;

/// Which rows of a runs table to evaluate on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowSelect {
    /// Matrices whose family the model never trained on (its held-out families, and families of
    /// other runs it has not seen at all).
    Unseen,
    /// Every row (includes training rows: optimistic).
    All,
}

/// One (matrix, iterations) evaluated.
#[derive(Debug, Clone, Serialize)]
pub struct EvalSample {
    pub matrix: String,
    pub family: String,
    pub nnz: usize,
    pub iterations: f64,
    pub oracle_kernel: String,
    pub oracle_s: f64,
    pub selected_kernel: String,
    /// The feature tier the policy chose (its cost is in selected_s).
    pub tier: Tier,
    /// What that tier's features cost (seconds; 0 for the known tier).
    pub features_s: f64,
    /// The tier's features + inference + k iterations of the selected kernel.
    pub selected_s: f64,
    pub single_s: f64,
    pub alg1_s: Option<f64>,
    pub hand_kernel: String,
    pub hand_s: f64,
    /// The selected kernel failed on this matrix (charged as the slowest kernel that ran).
    pub selected_failed: bool,
    /// The tree's pick where the long-row guard overruled it (`selected_kernel` is then its
    /// fallback), with what that pick would have cost, counted as `selected_s` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vetoed: Option<(String, f64)>,
    /// What each tier (known, sampled, gathered) would have picked here, guard included, and
    /// cost, counted as `selected_s` is: the policy's choice against the other two.
    pub per_tier: [(String, f64); 3],
}

/// Summary over a set of samples.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub bucket: String,
    pub samples: usize,
    /// Geomean of oracle / selected (1 = always the oracle).
    pub oracle_ratio: f64,
    /// Lowest oracle / selected.
    pub worst: f64,
    pub worst_matrix: String,
    /// Geomean of single-kernel time / selected.
    pub vs_single: f64,
    pub vs_alg1: Option<f64>,
    pub vs_hand: f64,
    /// Share of samples where the selected kernel is the oracle's.
    pub accuracy: f64,
    /// Share within 5% of the oracle (gathering charged).
    pub within_5pct: f64,
    /// Share where the policy chose the sampled tier.
    pub sampled: f64,
    /// Share where the policy gathered the exact features.
    pub gathered: f64,
    /// Seconds spent on features / seconds selected (features, inference and the k SpMVs), summed
    /// over the samples: the share of the time the choice itself cost.
    pub features_share: f64,
    /// The oracle's geomean over ALG1 (what a perfect pick gains over cuSPARSE), next to vs_alg1.
    pub oracle_vs_alg1: Option<f64>,
}

/// The policy against each tier alone over a set of samples: geomeans of oracle / selected,
/// every tier charged its own features' cost (`EvalSample::per_tier`).
#[derive(Debug, Clone, Serialize)]
pub struct TierSummary {
    pub bucket: String,
    pub samples: usize,
    /// The tier the policy chose (what `Summary::oracle_ratio` reports).
    pub policy: f64,
    /// Known, sampled and gathered tiers alone.
    pub alone: [f64; 3],
    /// The cheapest of the three per sample, chosen with hindsight: what a perfect tier policy
    /// with these trees would reach (a bound, not a target: part of it is luck, a tier whose
    /// tree happened to pick right).
    pub hindsight: f64,
}

fn tier_summary(bucket: &str, s: &[&EvalSample]) -> TierSummary {
    let alone = |t: usize| geomean(s.iter().map(|x| x.oracle_s / x.per_tier[t].1));
    TierSummary {
        bucket: bucket.into(),
        samples: s.len(),
        policy: geomean(s.iter().map(|x| x.oracle_s / x.selected_s)),
        alone: [alone(0), alone(1), alone(2)],
        hindsight: geomean(s.iter().map(|x| {
            let best = x.per_tier.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
            x.oracle_s / best
        })),
    }
}

/// The whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub backend: String,
    pub device: String,
    pub rows: RowSelect,
    pub matrices: usize,
    pub families: usize,
    pub iterations: Vec<u32>,
    /// The single kernel with the best geomean on these samples (chosen with hindsight).
    pub single_kernel: String,
    /// Nanoseconds per decision from feature values already in an array (median of 5 runs).
    pub inference_ns: f64,
    /// The inference time charged to every pick (the measured one unless a fixed charge was
    /// asked for).
    pub charged_inference_ns: f64,
    /// Nanoseconds per decision from an `SpmvFeatures` (copying the values out included).
    pub inference_from_struct_ns: f64,
    /// What gathering was charged.
    pub gather_cost: GatherCost,
    pub overall: Summary,
    pub buckets: Vec<Summary>,
    /// Per iteration count, over all samples.
    pub by_k: Vec<Summary>,
    /// Per iteration count, over the samples with nnz >= 1e6.
    pub large_by_k: Vec<Summary>,
    /// vs ALG1 over samples with nnz >= 1e5 (the target), when ALG1 was measured.
    pub vs_alg1_nnz_ge_1e5: Option<f64>,
    /// The policy against each tier alone: overall, per nnz bucket, and per iteration count at
    /// nnz >= 1e6.
    pub tiers: Vec<TierSummary>,
    pub samples: Vec<EvalSample>,
}

/// The Ginkgo-style hand rule: a load-balancing kernel if nnz > 1e6 or the longest row > 1024,
/// else a row-per-subwarp kernel with lanes for the mean row length; names mapped onto the
/// model's pool.
pub fn hand_rule(kernels: &[String], nnz: f64, max_row: f64, mean_row: f64) -> Option<usize> {
    let find = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| kernels.iter().position(|k| k == n))
    };
    if nnz > 1e6 || max_row > 1024.0 {
        find(&[
            "merge_tiled",
            "merge_path",
            "merge-path",
            "nnz_split",
            "nnz-balanced",
        ])
    } else {
        let lanes = (mean_row.max(1.0).ceil() as u32)
            .next_power_of_two()
            .min(32);
        let v = format!("vector{lanes}");
        if lanes >= 2 {
            find(&[v.as_str(), "row-split", "scalar"])
        } else {
            find(&["scalar", "row-split"])
        }
    }
    .or_else(|| find(&["row-split", "scalar"]))
}

fn summarize(bucket: &str, s: &[&EvalSample]) -> Summary {
    let worst = s
        .iter()
        .map(|x| (x.oracle_s / x.selected_s, x.matrix.clone()))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap_or((f64::NAN, String::new()));
    let has_alg1 = s.iter().all(|x| x.alg1_s.is_some()) && !s.is_empty();
    let vs_alg1 = |of: &dyn Fn(&EvalSample) -> f64| {
        has_alg1.then(|| geomean(s.iter().map(|x| x.alg1_s.unwrap_or(f64::NAN) / of(x))))
    };
    let alg1 = vs_alg1(&|x| x.selected_s);
    let oracle_vs_alg1 = vs_alg1(&|x| x.oracle_s);
    let n = s.len().max(1) as f64;
    Summary {
        bucket: bucket.into(),
        samples: s.len(),
        oracle_ratio: geomean(s.iter().map(|x| x.oracle_s / x.selected_s)),
        worst: worst.0,
        worst_matrix: worst.1,
        vs_single: geomean(s.iter().map(|x| x.single_s / x.selected_s)),
        vs_alg1: alg1,
        vs_hand: geomean(s.iter().map(|x| x.hand_s / x.selected_s)),
        accuracy: s
            .iter()
            .filter(|x| x.selected_kernel == x.oracle_kernel)
            .count() as f64
            / n,
        within_5pct: s
            .iter()
            .filter(|x| x.selected_s <= 1.05 * x.oracle_s)
            .count() as f64
            / n,
        sampled: s.iter().filter(|x| x.tier == Tier::Sampled).count() as f64 / n,
        gathered: s.iter().filter(|x| x.tier == Tier::Gathered).count() as f64 / n,
        features_share: s.iter().map(|x| x.features_s).sum::<f64>()
            / s.iter().map(|x| x.selected_s).sum::<f64>().max(1e-300),
        oracle_vs_alg1,
    }
}

/// Nanoseconds per call of `f` over `inputs`, median of 5 runs of at least 100k calls each.
fn time_ns<I>(inputs: &[I], mut f: impl FnMut(&I) -> usize) -> f64 {
    if inputs.is_empty() {
        return f64::NAN;
    }
    let reps = (100_000 / inputs.len()).max(1);
    let mut t: Vec<f64> = (0..5)
        .map(|_| {
            let s = Instant::now();
            let mut acc = 0usize;
            for _ in 0..reps {
                for x in inputs {
                    acc = acc.wrapping_add(f(std::hint::black_box(x)));
                }
            }
            std::hint::black_box(acc);
            s.elapsed().as_secs_f64() * 1e9 / (reps * inputs.len()) as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[2]
}

/// Evaluate `model` on `runs`. Each pick is charged its inference: the time measured here on
/// these inputs, or `charge_inference_ns` where given (a fixed charge makes the figures
/// reproducible across machines; the measured time is still reported).
pub fn evaluate(
    model: &Model,
    runs: &Runs,
    rows: RowSelect,
    iterations: Option<Vec<u32>>,
    charge_inference_ns: Option<f64>,
    gather_cost: Option<GatherCost>,
) -> Result<EvalReport, ModelError> {
    // By default gathering costs what it costs `SpmvPlan::new` (a plan from a host matrix),
    // whatever the policy was trained on: during the upload on the device, or, for a model whose
    // gathered trees read no column statistics, the row pointers on the host beside the upload.
    let gather_cost = gather_cost.unwrap_or(if model.gathered_reads_columns() {
        GatherCost::Upload
    } else {
        GatherCost::HostRows
    });
    let ks = iterations.unwrap_or_else(|| model.iterations.clone());
    // Runs of another backend or kernel pool would score every pick as a failed kernel.
    if let Some(m) = runs
        .matrices
        .iter()
        .find(|m| m.info.backend != model.backend)
    {
        return Err(ModelError::Eval(format!(
            "the model is for the {} backend but `{}` was collected on {}: evaluate it on runs of its own backend",
            model.backend, m.info.matrix, m.info.backend
        )));
    }
    let have = runs.kernel_names();
    let missing: Vec<&String> = model.kernels.iter().filter(|k| !have.contains(k)).collect();
    if !missing.is_empty() {
        return Err(ModelError::Eval(format!(
            "the runs have no timings of the model's kernel(s) {}: collect them first",
            missing
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    // "Unseen" rows are those of families the model did not train on: its held-out families,
    // and any family of runs it never saw (another collection, another machine's runs).
    let trained = &model.training.trained_families;
    let keep = |m: &crate::runs::MatrixRuns| match rows {
        RowSelect::All => true,
        RowSelect::Unseen => trained.binary_search(&m.info.family).is_err(),
    };
    let all: Vec<Sample> = samples(runs, &model.kernels, &ks, gather_cost, keep);
    if all.is_empty() {
        return Err(ModelError::Eval(match rows {
            RowSelect::Unseen => format!(
                "every family in these runs was used in training ({} families); use --rows all to evaluate on them anyway",
                trained.len()
            ),
            RowSelect::All => "no rows with a kernel that ran".into(),
        }));
    }
    let nk = model.kernels.len();
    // Best single kernel with hindsight.
    let single = (0..nk)
        .min_by(|&a, &b| {
            let ga = geomean(all.iter().map(|s| s.costs[a] / s.oracle));
            let gb = geomean(all.iter().map(|s| s.costs[b] / s.oracle));
            ga.total_cmp(&gb)
        })
        .expect("a model has kernels");
    let alg1 = model.kernels.iter().position(|k| k == "cusparse_alg1");
    let schema = &model.schema;
    let idx = |name: &str| schema.index(name).expect("schema checked");
    let (i_nnz, i_max, i_mean) = (idx("nnz"), idx("row_len_max"), idx("mean_row_len"));
    // Inference cost, measured on these inputs.
    let inputs: Vec<(Vec<f64>, f64)> = all
        .iter()
        .map(|s| (runs.matrices[s.matrix].info.features.clone(), s.k))
        .collect();
    let inference_ns = time_ns(&inputs, |(v, k)| model.choose_values(v, *k).kernel);
    let structs: Vec<(augur_features::spmv::SpmvFeatures, u32)> = all
        .iter()
        .map(|s| (runs.matrices[s.matrix].features(), s.k as u32))
        .collect();
    let inference_from_struct_ns = time_ns(&structs, |(f, k)| model.choose(f, *k).kernel);
    let charged_ns = charge_inference_ns.unwrap_or(inference_ns);
    let mut out = Vec::with_capacity(all.len());
    let mut buf = [0.0; MAX_INPUTS];
    for s in &all {
        let m = &runs.matrices[s.matrix];
        let f = &m.info.features;
        buf[..f.len()].copy_from_slice(f);
        let c = model.choose_values(&buf[..f.len()], s.k);
        let features_s = s.tier_cost(c.tier);
        let selected_s = s.costs[c.kernel] + features_s + charged_ns * 1e-9;
        let hand = hand_rule(&model.kernels, f[i_nnz], f[i_max], f[i_mean]).unwrap_or(single);
        out.push(EvalSample {
            matrix: m.info.matrix.clone(),
            family: m.info.family.clone(),
            nnz: m.info.nnz,
            iterations: s.k,
            oracle_kernel: model.kernels[s.best].clone(),
            oracle_s: s.oracle,
            selected_kernel: model.kernels[c.kernel].clone(),
            tier: c.tier,
            features_s,
            selected_s,
            single_s: s.costs[single],
            alg1_s: alg1.map(|a| s.costs[a]),
            hand_kernel: model.kernels[hand].clone(),
            hand_s: s.costs[hand],
            selected_failed: s.failed[c.kernel],
            vetoed: c.vetoed.map(|v| {
                let tree_s = s.costs[v] + features_s + charged_ns * 1e-9;
                (model.kernels[v].clone(), tree_s)
            }),
            per_tier: Tier::ALL.map(|t| {
                let kernel = model.choose_in(t, &buf[..f.len()], s.k).kernel;
                let cost = s.costs[kernel] + s.tier_cost(t) + charged_ns * 1e-9;
                (model.kernels[kernel].clone(), cost)
            }),
        });
    }
    let refs: Vec<&EvalSample> = out.iter().collect();
    let overall = summarize("all", &refs);
    let in_bucket: Vec<(&str, Vec<&EvalSample>)> = [
        ("nnz < 1e4", 0.0, 1e4),
        ("1e4 <= nnz < 1e5", 1e4, 1e5),
        ("1e5 <= nnz < 1e6", 1e5, 1e6),
        ("nnz >= 1e6", 1e6, f64::INFINITY),
    ]
    .iter()
    .map(|&(name, lo, hi)| {
        let v = out
            .iter()
            .filter(|x| (x.nnz as f64) >= lo && (x.nnz as f64) < hi)
            .collect();
        (name, v)
    })
    .collect();
    let buckets = in_bucket.iter().map(|(n, v)| summarize(n, v)).collect();
    let per_k = |min_nnz: usize| -> Vec<(String, Vec<&EvalSample>)> {
        ks.iter()
            .map(|&k| {
                let v = out
                    .iter()
                    .filter(|x| x.iterations == k as f64 && x.nnz >= min_nnz)
                    .collect();
                (format!("k = {k}"), v)
            })
            .collect()
    };
    let (all_k, big_k) = (per_k(0), per_k(1_000_000));
    let by_k = all_k.iter().map(|(n, v)| summarize(n, v)).collect();
    let large_by_k = big_k.iter().map(|(n, v)| summarize(n, v)).collect();
    let tiers = std::iter::once(tier_summary("all", &refs))
        .chain(in_bucket.iter().map(|(n, v)| tier_summary(n, v)))
        .chain(
            big_k
                .iter()
                .map(|(n, v)| tier_summary(&format!("nnz >= 1e6, {n}"), v)),
        )
        .collect();
    let big: Vec<&EvalSample> = out.iter().filter(|x| x.nnz >= 100_000).collect();
    let vs_alg1_nnz_ge_1e5 = if alg1.is_some() && !big.is_empty() {
        summarize("nnz >= 1e5", &big).vs_alg1
    } else {
        None
    };
    let mut fams: Vec<&str> = out.iter().map(|x| x.family.as_str()).collect();
    fams.sort();
    fams.dedup();
    let mut mats: Vec<&str> = out.iter().map(|x| x.matrix.as_str()).collect();
    mats.sort();
    mats.dedup();
    Ok(EvalReport {
        backend: model.backend.clone(),
        device: model.device.clone(),
        rows,
        matrices: mats.len(),
        families: fams.len(),
        iterations: ks,
        single_kernel: model.kernels[single].clone(),
        inference_ns,
        inference_from_struct_ns,
        gather_cost,
        charged_inference_ns: charged_ns,
        overall,
        buckets,
        by_k,
        large_by_k,
        vs_alg1_nnz_ge_1e5,
        tiers,
        samples: out,
    })
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.3}"))
}

/// The report as a text table.
pub fn table(r: &EvalReport) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "eval ({} backend, {}): {} matrices in {} families ({}), iterations {:?}, {} samples",
        r.backend,
        r.device,
        r.matrices,
        r.families,
        match r.rows {
            RowSelect::Unseen => "families not seen in training",
            RowSelect::All => "all rows, training rows included",
        },
        r.iterations,
        r.overall.samples
    );
    let _ = writeln!(
        o,
        "inference: {:.1} ns per decision ({:.1} ns from SpmvFeatures; {:.1} ns charged per pick); best single kernel here: {}",
        r.inference_ns, r.inference_from_struct_ns, r.charged_inference_ns, r.single_kernel
    );
    let _ = writeln!(
        o,
        "gathering charged as {}",
        match r.gather_cost {
            GatherCost::Upload => "a plan from a host matrix pays it (what the gather adds to the upload, the median per decade of nonzeros where the runs timed it; sampling: what the plan's thread pays with the sample beside the upload, where timed; --gather-cost device: a matrix already on the device; upload-raw: each matrix's own noisy figure)",
            GatherCost::UploadRaw => "a plan from a host matrix pays it, each matrix's own measured difference of two uploads (noisy); sampling: beside the upload, where timed",
            GatherCost::Device => "a matrix already on the device pays it (the device pass and the copy back)",
            GatherCost::HostRows => "a plan from a host matrix pays it: its gathered trees read the row lengths only, which the host computes from the row pointers beside the upload (gather_upload_s where the runs timed it, else what the device gather adds to the upload); sampling: beside the upload",
        }
    );
    let _ = writeln!(
        o,
        "(a sample is one matrix at one iteration count; every time is k products plus setup, and the \
         selection's also pays its features and inference; the columns are explained below the tables)\n"
    );
    let head = |o: &mut String, title: &str| {
        let _ = writeln!(
            o,
            "{:<18} {:>7} {:>10} {:>7} {:>9} {:>8} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}  worst matrix",
            title,
            "samples",
            "sel/oracle",
            "worst",
            "vs single",
            "vs ALG1",
            "oracle/ALG1",
            "vs hand",
            "accuracy",
            "within5%",
            "sampled",
            "gathered",
            "features"
        );
    };
    let line = |o: &mut String, s: &Summary| {
        if s.samples == 0 {
            let _ = writeln!(o, "{:<18} {:>7}", s.bucket, 0);
            return;
        }
        let _ = writeln!(
            o,
            "{:<18} {:>7} {:>10.3} {:>7.3} {:>9.3} {:>8} {:>10} {:>9.3} {:>7.0}% {:>7.0}% {:>7.0}% {:>7.0}% {:>7.1}%  {}",
            s.bucket,
            s.samples,
            s.oracle_ratio,
            s.worst,
            s.vs_single,
            opt(s.vs_alg1),
            opt(s.oracle_vs_alg1),
            s.vs_hand,
            s.accuracy * 100.0,
            s.within_5pct * 100.0,
            s.sampled * 100.0,
            s.gathered * 100.0,
            s.features_share * 100.0,
            s.worst_matrix
        );
    };
    head(&mut o, "bucket");
    for s in std::iter::once(&r.overall).chain(&r.buckets) {
        line(&mut o, s);
    }
    let _ = writeln!(o);
    head(&mut o, "iterations");
    for s in &r.by_k {
        line(&mut o, s);
    }
    let _ = writeln!(o);
    head(&mut o, "nnz >= 1e6, iter.");
    for s in &r.large_by_k {
        line(&mut o, s);
    }
    if let Some(a) = r.vs_alg1_nnz_ge_1e5 {
        let _ = writeln!(o, "\nvs cuSPARSE ALG1 over nnz >= 1e5: {a:.3}x");
    }
    let _ = writeln!(
        o,
        "\nthe policy against each tier alone (sel/oracle, each tier charged its features; \
         hindsight: the cheapest tier per sample, a bound)"
    );
    let _ = writeln!(
        o,
        "{:<22} {:>7} {:>7} {:>7} {:>8} {:>9} {:>10}",
        "", "samples", "policy", "known", "sampled", "gathered", "hindsight"
    );
    for t in r.tiers.iter().filter(|t| t.samples > 0) {
        let _ = writeln!(
            o,
            "{:<22} {:>7} {:>7.3} {:>7.3} {:>8.3} {:>9.3} {:>10.3}",
            t.bucket, t.samples, t.policy, t.alone[0], t.alone[1], t.alone[2], t.hindsight
        );
    }
    let vetoes: Vec<&EvalSample> = r.samples.iter().filter(|s| s.vetoed.is_some()).collect();
    if !vetoes.is_empty() {
        // The guard's effect on these samples: the tree's picks against the fallbacks taken.
        let gain = crate::train::geomean(
            vetoes
                .iter()
                .map(|s| s.vetoed.as_ref().expect("filtered").1 / s.selected_s),
        );
        let _ = writeln!(
            o,
            "\nlong-row guard: overruled {} of {} picks ({:.3}x faster on them, geomean); {}",
            vetoes.len(),
            r.samples.len(),
            gain,
            vetoes
                .iter()
                .take(6)
                .map(|s| format!(
                    "{} k = {} {} -> {}",
                    s.matrix,
                    s.iterations,
                    s.vetoed.as_ref().expect("filtered").0,
                    s.selected_kernel
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let _ = write!(o, "{}", legend(&r.single_kernel));
    o
}

/// What the table's columns mean (ratios above 1 favour the selection, except oracle/ALG1).
fn legend(single: &str) -> String {
    let rows: [(&str, String); 13] = [
        (
            "samples",
            "(matrix, iteration count) pairs in the row".into(),
        ),
        (
            "sel/oracle",
            "geometric mean of oracle time / selected time: 1 = always the fastest kernel".into(),
        ),
        (
            "worst",
            "the least oracle time / selected time of the row".into(),
        ),
        (
            "vs single",
            format!(
                "always-{single} time / selected time (the best single kernel over all samples, \
                 chosen with hindsight); > 1: selecting beats it"
            ),
        ),
        (
            "vs ALG1",
            "cuSPARSE CSR ALG1 time / selected time (GPU only)".into(),
        ),
        (
            "oracle/ALG1",
            "ALG1 time / oracle time: what a perfect pick would gain over ALG1".into(),
        ),
        (
            "vs hand",
            "hand-rule time / selected time; the rule (Ginkgo style): a load-balancing kernel \
             above 1e6 nonzeros or rows over 1024, else a vector kernel with lanes for the mean \
             row length"
                .into(),
        ),
        (
            "accuracy",
            "share of picks that are the fastest kernel".into(),
        ),
        ("within5%", "share of picks within 5% of the fastest".into()),
        (
            "sampled",
            "share of picks made from the sampled features".into(),
        ),
        (
            "gathered",
            "share of picks made from the exact (gathered) features".into(),
        ),
        (
            "features",
            "time spent computing features / total selected time".into(),
        ),
        ("worst matrix", "the matrix of the worst sample".into()),
    ];
    let mut o = String::from("\ncolumns:\n");
    for (k, v) in rows {
        o.push_str(&format!("  {k:<12} {v}\n"));
    }
    o
}

/// An SVG plot: oracle / selected per sample, sorted, one colour per nnz bucket.
pub fn plot_svg(r: &EvalReport, path: &Path) -> Result<(), ModelError> {
    use plotters::prelude::*;
    let err = |e: String| ModelError::Io {
        path: path.to_path_buf(),
        msg: e,
    };
    let mut pts: Vec<(f64, usize)> = r
        .samples
        .iter()
        .map(|s| {
            let b = match s.nnz {
                n if n < 10_000 => 0,
                n if n < 100_000 => 1,
                n if n < 1_000_000 => 2,
                _ => 3,
            };
            (s.oracle_s / s.selected_s, b)
        })
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let lo = pts.first().map_or(0.0, |p| p.0).min(0.5);
    let tmp = path.with_extension("svg.tmp");
    {
        let root = SVGBackend::new(&tmp, (900, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "augur selector on {} ({} samples): oracle / selected, sorted",
                    r.device, r.overall.samples
                ),
                ("sans-serif", 18),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..pts.len().max(1) as f64, lo..1.02f64)
            .map_err(|e| err(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("samples (matrix x iterations), sorted")
            .y_desc("oracle / selected")
            .draw()
            .map_err(|e| err(e.to_string()))?;
        let colours = [RED, BLUE, GREEN, BLACK];
        let names = ["nnz < 1e4", "1e4..1e5", "1e5..1e6", ">= 1e6"];
        for b in 0..4 {
            let series: Vec<(f64, f64)> = pts
                .iter()
                .enumerate()
                .filter(|(_, p)| p.1 == b)
                .map(|(i, p)| (i as f64, p.0))
                .collect();
            let c = colours[b];
            chart
                .draw_series(
                    series
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, c.filled())),
                )
                .map_err(|e| err(e.to_string()))?
                .label(names[b])
                .legend(move |(x, y)| Circle::new((x, y), 3, c.filled()));
        }
        chart
            .draw_series(LineSeries::new(
                [(0.0, 0.95), (pts.len() as f64, 0.95)],
                BLACK.mix(0.3),
            ))
            .map_err(|e| err(e.to_string()))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))
}
