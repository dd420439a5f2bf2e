//! `augur spmv ...`: run, check and time SpMV kernels.

use std::process::ExitCode;

use augur::bench::{BenchOptions, BenchRow, SpmvBench};
use augur_datasets::{Csr, MatrixSource};
use augur_kernels::cuda::{GpuScalar, TimingMode};
use clap::{Args, ValueEnum};

use super::{parse_sources, Precision};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    Cpu,
    Cuda,
    /// AMD GPUs through HIP (compiled, not yet run on AMD hardware).
    Hip,
}

#[derive(Args, Debug)]
pub struct SpmvArgs {
    /// Matrix Market files or generator specs.
    #[arg(required = true, value_name = "MATRIX")]
    matrices: Vec<String>,
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// Run only these kernels (repeatable; default: all of the backend's).
    #[arg(long = "kernel", value_name = "NAME")]
    kernels: Vec<String>,
    #[arg(long, value_enum, default_value = "f64")]
    precision: Precision,
    /// Timed runs per kernel; the median is reported.
    #[arg(long, default_value_t = 20)]
    iterations: usize,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// GPU ordinal (with --backend cuda).
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// GPU timing: `latency` (each call from an idle stream, launch cost included; L2 flushed
    /// before each call when the data could sit in it), `throughput` (calls back to back, ~0.5 ms
    /// per sample; L2 flushed once before each sample) or `graph` (the same calls replayed from a
    /// CUDA graph).
    #[arg(long, default_value = "latency", value_parser = parse_timing)]
    timing: TimingMode,
    /// One JSON array on stdout instead of text.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// CSV on stdout (one row per matrix and kernel) instead of text.
    #[arg(long)]
    csv: bool,
    /// Measure this machine's copy bandwidth first (a 2 x 256 MiB parallel copy) and report each
    /// kernel against it: the floor is the bytes one SpMV must move over that bandwidth.
    #[arg(long)]
    floor: bool,
}

/// Flat record of `spmv --csv`.
#[derive(serde::Serialize)]
struct CsvRow<'a> {
    matrix: &'a str,
    rows: usize,
    cols: usize,
    nnz: usize,
    precision: &'a str,
    device: &'a str,
    threads: usize,
    kernel: &'a str,
    setup_s: f64,
    median_s: f64,
    gb_per_s: f64,
    max_rel_err: f64,
    passed: bool,
    l2_flushed: bool,
    timing: &'a str,
    speedup_vs_alg1: Option<f64>,
    gather_s: Option<f64>,
    gather_per_spmv: Option<f64>,
    copy_gb_per_s: Option<f64>,
    floor_s: Option<f64>,
    fraction_of_copy: Option<f64>,
    gather_floor_s: Option<f64>,
    fraction_of_gather_floor: Option<f64>,
}

/// `augur bench spmv`: the same runs with the copy-bandwidth floor measured and CSV out (unless
/// --json), one row per matrix and kernel, with the speedup over cuSPARSE ALG1 on a GPU.
pub fn run_bench(mut a: SpmvArgs) -> anyhow::Result<ExitCode> {
    a.floor = true;
    a.csv = !a.json;
    run(a)
}

pub fn run(a: SpmvArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(a.iterations >= 1, "--iterations must be at least 1");
    let mut bench = match a.backend {
        Backend::Cpu => SpmvBench::cpu(&a.kernels)?,
        Backend::Cuda => {
            let (b, note) = SpmvBench::cuda(a.device, &a.kernels)?;
            if let Some(n) = note {
                eprintln!("augur: note: {n}");
            }
            b
        }
        Backend::Hip => SpmvBench::hip(a.device, &a.kernels)?,
    };
    let sources = parse_sources(&a.matrices)?;
    let copy = if a.floor {
        Some(bench.copy_bandwidth()?)
    } else {
        None
    };
    if !(a.csv || a.json) {
        if let Some(g) = bench.device().as_cuda() {
            println!(
                "{} (sm_{}{}, {} SMs, L2 {} MiB); kernels {} in {:.3} s",
                g.device.name,
                g.device.compute_capability.0,
                g.device.compute_capability.1,
                g.device.multiprocessors,
                g.device.l2_bytes >> 20,
                if g.module_cached {
                    "read from the cache"
                } else {
                    "compiled by NVRTC"
                },
                g.module_s
            );
        }
        if let Some(c) = copy {
            println!("copy bandwidth (read + write): {c:.1} GB/s");
        }
    }
    let opts = BenchOptions::default()
        .warmup(a.warmup)
        .iterations(a.iterations)
        .timing(a.timing);
    let mut rows = Vec::new();
    let mut failed = 0usize;
    let mut csv = a.csv.then(|| csv::Writer::from_writer(std::io::stdout()));
    for src in &sources {
        let r = match a.precision {
            Precision::F32 => one::<f32>(src, &mut bench, &opts, copy),
            Precision::F64 => one::<f64>(src, &mut bench, &opts, copy),
        };
        match r {
            Ok(mut r) => {
                failed += r.iter().filter(|r| !r.check.passed).count();
                if let Some(w) = csv.as_mut() {
                    for x in &r {
                        w.serialize(CsvRow {
                            matrix: &x.matrix,
                            rows: x.rows,
                            cols: x.cols,
                            nnz: x.nnz,
                            precision: x.precision,
                            device: &x.device,
                            threads: x.threads,
                            kernel: x.kernel,
                            setup_s: x.setup_s,
                            median_s: x.median_s,
                            gb_per_s: x.gb_per_s,
                            max_rel_err: x.check.max_rel_err,
                            passed: x.check.passed,
                            l2_flushed: x.l2_flushed,
                            timing: x.timing,
                            speedup_vs_alg1: x.speedup_vs_alg1,
                            gather_s: x.gather_s,
                            gather_per_spmv: x.gather_per_spmv,
                            copy_gb_per_s: x.copy_gb_per_s,
                            floor_s: x.floor_s,
                            fraction_of_copy: x.copy_gb_per_s.map(|c| x.gb_per_s / c),
                            gather_floor_s: x.gather_floor_s,
                            fraction_of_gather_floor: x
                                .gather_floor_s
                                .map(|f| f / x.median_s.max(1e-12)),
                        })?;
                    }
                    w.flush()?;
                } else if !a.json {
                    print_rows(&r);
                }
                rows.append(&mut r);
            }
            Err(e) if super::skipped_by_design(&e) => {
                eprintln!("augur: skipping {}: {e:#}", src.name());
            }
            Err(e) => {
                failed += 1;
                eprintln!("augur: error: {e:#}");
            }
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    }
    if failed > 0 {
        eprintln!("augur: {failed} failure(s)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Load `src` and benchmark every kernel on it.
fn one<T: GpuScalar>(
    src: &MatrixSource,
    bench: &mut SpmvBench,
    opts: &BenchOptions,
    copy: Option<f64>,
) -> anyhow::Result<Vec<BenchRow>> {
    let (m, _): (Csr<T>, _) = src.load()?;
    Ok(bench.run(&src.name(), &m, opts, copy)?)
}

fn print_rows(rows: &[BenchRow]) {
    let Some(r0) = rows.first() else { return };
    let on = if r0.device == "cpu" {
        format!("{} threads", r0.threads)
    } else {
        format!(
            "{}{}",
            r0.device,
            if r0.l2_flushed { ", L2 flushed" } else { "" }
        )
    };
    println!(
        "{}: {} x {}, nnz {}, {}, {on}",
        r0.matrix, r0.rows, r0.cols, r0.nnz, r0.precision
    );
    println!(
        "  {:<14} {:>10} {:>12} {:>8} {:>7} {:>12}  check",
        "kernel", "setup_us", "median_us", "GB/s", "%copy", "max_rel_err"
    );
    for r in rows {
        let pct = r.copy_gb_per_s.map_or("-".to_string(), |c| {
            format!("{:.0}%", 100.0 * r.gb_per_s / c)
        });
        println!(
            "  {:<14} {:>10.1} {:>12.1} {:>8.2} {:>7} {:>12.2e}  {}",
            r.kernel,
            r.setup_s * 1e6,
            r.median_s * 1e6,
            r.gb_per_s,
            pct,
            r.check.max_rel_err,
            if r.check.passed {
                "ok".to_string()
            } else {
                format!(
                    "FAILED (bound ratio {:.3e}, {} bad rows, worst row {:?})",
                    r.check.max_bound_ratio, r.check.bad_rows, r.check.worst_row
                )
            }
        );
    }
}

/// `--timing`: a GPU timing mode by name.
fn parse_timing(s: &str) -> Result<TimingMode, String> {
    TimingMode::parse(s).ok_or_else(|| format!("`{s}`: expected latency, throughput or graph"))
}
