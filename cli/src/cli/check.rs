//! `augur check`: every kernel of a backend against the f64 reference, on the edge cases and the
//! shared matrices (or the matrices given), in f32 and f64. Exits non-zero on any failure.

use std::collections::BTreeMap;
use std::process::ExitCode;

use augur_datasets::manifest::{find_shared_matrices, read_manifest};
use augur_datasets::{Csr, MatrixSource};
use augur_kernels::cuda::gather::GatherCheck;
use augur_kernels::device::Device;
use augur_kernels::suite::{self, SpmvBackend, SuiteResult};
use clap::Args;

use super::parse_sources;
use super::spmv::Backend;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Matrices to check besides the built-in edge cases (default: the shared SuiteSparse
    /// matrices, when found).
    #[arg(value_name = "MATRIX")]
    matrices: Vec<String>,
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// GPU ordinal (with --backend cuda).
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Every result as one JSON array instead of the summary table.
    #[arg(long)]
    json: bool,
    /// With --backend cuda: also the halo mode of MultiGpuSpmv on every square matrix, cut
    /// into each of these shard counts, all shards on the one GPU (local and remote blocks
    /// planned apart, pack, exchange by device copies, scatter-add; all but NCCL), in f32 and
    /// f64 against the f64 reference.
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    halo_shards: Vec<usize>,
}

/// What the halo checks found.
#[derive(Default)]
struct HaloTally {
    checks: usize,
    worst: f64,
    remote_kernels: BTreeMap<String, usize>,
    failures: Vec<String>,
}

fn halo_one<T: augur_kernels::cuda::GpuScalar>(
    backend: &augur::Backend,
    name: &str,
    m: &Csr<f64>,
    shards: usize,
    t: &mut HaloTally,
) {
    let a: Csr<T> = m.map(|&v| <T as augur_datasets::Scalar>::from_f64(v));
    let x = augur_kernels::check::test_vector::<T>(a.cols(), 7);
    t.checks += 1;
    let what = format!("halo {shards} shards {} {name}", T::SUFFIX);
    match augur::multi::halo_check(&a, shards, &x, backend, augur::PlanOptions::default()) {
        Ok(h) => {
            let r = augur_kernels::check::check(&a, &x, &h.y);
            t.worst = t.worst.max(r.max_bound_ratio);
            for k in h.kernels.iter().filter_map(|k| k.1.as_ref()) {
                *t.remote_kernels.entry(k.clone()).or_default() += 1;
            }
            if !r.passed {
                t.failures.push(format!("{what}: {r:?}"));
            }
        }
        Err(e) => t.failures.push(format!("{what}: {e}")),
    }
}

pub fn run(a: CheckArgs) -> anyhow::Result<ExitCode> {
    if !a.halo_shards.is_empty() && a.backend != Backend::Cuda {
        anyhow::bail!("--halo-shards checks the halo mode on a CUDA GPU: add --backend cuda");
    }
    if let Some(&n) = a.halo_shards.iter().find(|&&n| n == 0 || n > 64) {
        anyhow::bail!("--halo-shards {n}: from 1 to 64 shards");
    }
    let mut halo = HaloTally::default();
    let code = match a.backend {
        Backend::Cpu => check(Device::cpu(), &a, |_, _| Ok(None)),
        Backend::Cuda => {
            let b = Device::cuda(a.device)?;
            // The GPU feature gatherer against the CPU one (GatherCheck, beside the suite).
            let gather_check = GatherCheck::new(a.device)?;
            let plans = augur::Backend::cuda(a.device)?;
            let compare = |name: &str, m: &Csr<f64>| -> anyhow::Result<Option<String>> {
                for &n in &a.halo_shards {
                    if m.rows() == m.cols() && m.rows() >= n {
                        halo_one::<f32>(&plans, name, m, n, &mut halo);
                        halo_one::<f64>(&plans, name, m, n, &mut halo);
                    }
                }
                let diff = gather_check.compare(m)?;
                Ok((!diff.is_empty()).then(|| format!("{name}: {}", diff.join(", "))))
            };
            check(b, &a, compare)
        }
        // The same suite on an AMD GPU, and its device gatherer against the CPU one.
        Backend::Hip => {
            let b = Device::hip(a.device)?;
            let gather_check = augur_kernels::hip::HipGatherCheck::new(a.device)?;
            let compare = move |name: &str, m: &Csr<f64>| -> anyhow::Result<Option<String>> {
                let diff = gather_check.compare(m)?;
                Ok((!diff.is_empty()).then(|| format!("{name}: {}", diff.join(", "))))
            };
            check(b, &a, compare)
        }
    }?;
    if a.halo_shards.is_empty() {
        return Ok(code);
    }
    let remote: Vec<String> = halo
        .remote_kernels
        .iter()
        .map(|(k, n)| format!("{k} x{n}"))
        .collect();
    println!(
        "halo mode on one GPU ({:?} shards): {} checks, {} failed, worst error/bound {:.3e}; \
         remote blocks' kernels: {}",
        a.halo_shards,
        halo.checks,
        halo.failures.len(),
        halo.worst,
        remote.join(", ")
    );
    for f in &halo.failures {
        println!("FAILED {f}");
    }
    Ok(if halo.failures.is_empty() {
        code
    } else {
        ExitCode::FAILURE
    })
}

/// A named matrix, or why it could not be loaded.
type Input = (String, anyhow::Result<Csr<f64>>);

fn inputs(a: &CheckArgs) -> anyhow::Result<Vec<Input>> {
    let mut out: Vec<Input> = suite::edge_cases()
        .into_iter()
        .map(|(n, m)| (n, Ok(m)))
        .collect();
    let sources: Vec<MatrixSource> = if a.matrices.is_empty() {
        match find_shared_matrices() {
            Some(dir) => read_manifest(dir.join("MANIFEST.tsv"))?
                .iter()
                .filter(|e| e.field != "complex")
                .map(|e| MatrixSource::File(e.path(&dir)))
                .collect(),
            None => {
                eprintln!("augur: note: no shared matrices found; checking the edge cases only");
                Vec::new()
            }
        }
    } else {
        parse_sources(&a.matrices)?
    };
    for s in sources {
        out.push((
            s.name(),
            s.load::<f64>().map(|m| m.0).map_err(anyhow::Error::from),
        ));
    }
    Ok(out)
}

fn check<B: SpmvBackend>(
    mut b: B,
    a: &CheckArgs,
    mut extra: impl FnMut(&str, &Csr<f64>) -> anyhow::Result<Option<String>>,
) -> anyhow::Result<ExitCode> {
    let mut results: Vec<SuiteResult> = Vec::new();
    let (mut load_errors, mut skipped) = (0, 0);
    let mut gather_mismatches = Vec::new();
    let mut gathered = 0;
    let inputs = inputs(a)?;
    let n_inputs = inputs.len();
    for (name, m) in inputs {
        match m {
            Ok(m) => {
                results.extend(suite::check_both(&mut b, &name, &m));
                if let Some(d) = extra(&name, &m)? {
                    gather_mismatches.push(d);
                }
                gathered += 1;
            }
            // Complex values and the dense format: reported and skipped, as in `spmv`.
            Err(e) if super::skipped_by_design(&e) => {
                skipped += 1;
                eprintln!("augur: skipping {name}: {e:#}");
            }
            Err(e) => {
                load_errors += 1;
                eprintln!("augur: error: {e:#}");
            }
        }
    }
    let failed: Vec<&SuiteResult> = results.iter().filter(|r| !r.passed()).collect();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        println!(
            "{}: {} matrices ({} edge cases), {} checks",
            b.name(),
            n_inputs - load_errors - skipped,
            suite::edge_cases().len(),
            results.len()
        );
        println!(
            "  {:<14} {:<4} {:>7} {:>7} {:>14} {:>12}",
            "kernel", "type", "checks", "failed", "worst/bound", "max_rel_err"
        );
        let mut by: BTreeMap<(&str, &str), Vec<&SuiteResult>> = BTreeMap::new();
        for r in &results {
            by.entry((r.kernel, r.precision)).or_default().push(r);
        }
        for ((k, p), rs) in &by {
            let worst = rs
                .iter()
                .filter_map(|r| r.report.as_ref())
                .map(|r| r.max_bound_ratio)
                .fold(0.0, f64::max);
            let rel = rs
                .iter()
                .filter_map(|r| r.report.as_ref())
                .map(|r| r.max_rel_err)
                .fold(0.0, f64::max);
            let bad = rs.iter().filter(|r| !r.passed()).count();
            println!(
                "  {k:<14} {p:<4} {:>7} {:>7} {:>14.3e} {:>12.2e}",
                rs.len(),
                bad,
                worst,
                rel
            );
        }
        for r in &failed {
            println!(
                "FAILED {} {} {}: {}",
                r.kernel,
                r.precision,
                r.matrix,
                r.error.clone().unwrap_or_else(|| format!("{:?}", r.report))
            );
        }
    }
    if a.backend == Backend::Cuda {
        println!(
            "feature gatherer: GPU vs CPU on {gathered} matrices: {} with differing values",
            gather_mismatches.len()
        );
        for d in &gather_mismatches {
            println!("FAILED gatherer {d}");
        }
    }
    Ok(
        if failed.is_empty() && load_errors == 0 && gather_mismatches.is_empty() {
            ExitCode::SUCCESS
        } else {
            eprintln!(
                "augur: {} failed check(s), {load_errors} unreadable matrices",
                failed.len()
            );
            ExitCode::FAILURE
        },
    )
}
