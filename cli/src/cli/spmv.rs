//! `augur spmv ...`: run, check and time SpMV kernels.

use std::process::ExitCode;
use std::time::Instant;

use augur_datasets::{Csr, MatrixSource, Scalar};
use augur_kernels::check::{self, CheckReport};
use augur_kernels::cpu::CpuKernel;
use augur_kernels::cuda::gather::GpuGatherer;
use augur_kernels::cuda::{CudaSpmv, GpuKernel, GpuScalar, TimingMode, TimingPlan};
use augur_kernels::{spmv_bytes, KernelError};
use clap::{Args, ValueEnum};
use cudarc::driver::CudaSlice;

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
    precision: Precision,
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

#[derive(serde::Serialize)]
struct Row {
    matrix: String,
    rows: usize,
    cols: usize,
    nnz: usize,
    precision: Precision,
    /// `cpu` or the GPU's name.
    device: String,
    /// CPU threads (0 on a GPU).
    threads: usize,
    kernel: &'static str,
    /// The kernel's own setup (CPU: its partition; GPU: merge-path's partition search).
    setup_s: f64,
    median_s: f64,
    gb_per_s: f64,
    /// GPU: a buffer twice the L2 size was written before each timed launch (latency) or sample.
    l2_flushed: bool,
    /// How median_s was timed: `wall` (CPU), `latency`, `throughput` or `graph`.
    timing: &'static str,
    /// GPU: cuSPARSE CSR_ALG1's median over this kernel's (above 1: faster than ALG1).
    speedup_vs_alg1: Option<f64>,
    /// GPU: seconds to gather all SpMV features on the device (median of 5).
    gather_s: Option<f64>,
    /// GPU: gather_s over the fastest kernel's median: the cost of features in SpMVs.
    gather_per_spmv: Option<f64>,
    /// Measured copy bandwidth (read + write), GB/s, with `--floor`.
    copy_gb_per_s: Option<f64>,
    /// Bytes moved / copy bandwidth: the fastest this product could run.
    floor_s: Option<f64>,
    /// GPU: the x-gather ceiling (values and indices streamed, x gathered in column order, no
    /// rows) plus row pointers and y at copy bandwidth: a floor that charges random columns.
    gather_floor_s: Option<f64>,
    check: CheckReport,
}

impl Row {
    /// A CPU row from the timed runs (GPU callers override device, threads and l2_flushed).
    fn new<T: Scalar>(
        src: &MatrixSource,
        m: &Csr<T>,
        kernel: &'static str,
        setup_s: f64,
        times: Vec<f64>,
        copy_gb_per_s: Option<f64>,
        check: CheckReport,
    ) -> Row {
        let median_s = augur_kernels::median(times);
        let bytes = spmv_bytes(m.rows(), m.cols(), m.nnz(), std::mem::size_of::<T>()) as f64;
        Row {
            matrix: src.name(),
            rows: m.rows(),
            cols: m.cols(),
            nnz: m.nnz(),
            precision: if T::NAME == "f32" {
                Precision::F32
            } else {
                Precision::F64
            },
            device: "cpu".into(),
            threads: rayon::current_num_threads(),
            kernel,
            setup_s,
            median_s,
            gb_per_s: bytes / median_s.max(1e-12) / 1e9,
            l2_flushed: false,
            timing: "wall",
            speedup_vs_alg1: None,
            gather_s: None,
            gather_per_spmv: None,
            copy_gb_per_s,
            floor_s: copy_gb_per_s.map(|c| bytes / (c * 1e9)),
            gather_floor_s: None,
            check,
        }
    }
}

/// Why `bench spmv` refuses `--backend hip`.
pub const HIP_NO_HARNESS: &str = "`augur bench spmv` (L2 flush, copy floor, cuSPARSE baseline) \
    is written for CUDA and not ported to HIP yet; `augur check`, `augur run` and \
    `augur collect` take --backend hip";

/// `augur bench spmv`: the same runs with the copy-bandwidth floor measured and CSV out (unless
/// --json), one row per matrix and kernel, with the speedup over cuSPARSE ALG1 on a GPU.
pub fn run_bench(mut a: SpmvArgs) -> anyhow::Result<ExitCode> {
    a.floor = true;
    a.csv = !a.json;
    run(a)
}

pub fn run(a: SpmvArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(a.iterations >= 1, "--iterations must be at least 1");
    let mut runner = match a.backend {
        Backend::Cpu => Runner::Cpu(names_or_all(
            &a.kernels,
            &CpuKernel::ALL,
            CpuKernel::from_name,
        )?),
        Backend::Cuda => {
            let gpu = CudaSpmv::new(a.device)?;
            let flush = gpu.flush_buffer()?;
            let mut kernels = names_or_all(&a.kernels, &GpuKernel::ALL, GpuKernel::from_name)?;
            if !augur_kernels::cuda::cusparse::available() {
                eprintln!("augur: note: libcusparse not found; cuSPARSE kernels skipped");
                kernels.retain(|k| !matches!(k, GpuKernel::Cusparse { .. }));
            }
            Runner::Cuda(Box::new((gpu, kernels, flush)))
        }
        Backend::Hip => anyhow::bail!("{HIP_NO_HARNESS}"),
    };
    let sources = parse_sources(&a.matrices)?;
    let copy = if a.floor {
        Some(match &runner {
            Runner::Cpu(_) => copy_bandwidth(),
            Runner::Cuda(g) => g.0.copy_bandwidth()?,
        })
    } else {
        None
    };
    if !(a.csv || a.json) {
        if let Runner::Cuda(g) = &runner {
            println!(
                "{} (sm_{}{}, {} SMs, L2 {} MiB); kernels {} in {:.3} s",
                g.0.device.name,
                g.0.device.compute_capability.0,
                g.0.device.compute_capability.1,
                g.0.device.multiprocessors,
                g.0.device.l2_bytes >> 20,
                if g.0.module_cached {
                    "read from the cache"
                } else {
                    "compiled by NVRTC"
                },
                g.0.module_s
            );
        }
        if let Some(c) = copy {
            println!("copy bandwidth (read + write): {c:.1} GB/s");
        }
    }
    let mut rows = Vec::new();
    let mut failed = 0usize;
    let mut csv = a.csv.then(|| csv::Writer::from_writer(std::io::stdout()));
    for src in &sources {
        let r = match (&mut runner, a.precision) {
            (Runner::Cpu(k), Precision::F32) => bench::<f32>(src, k, &a, copy),
            (Runner::Cpu(k), Precision::F64) => bench::<f64>(src, k, &a, copy),
            (Runner::Cuda(g), Precision::F32) => bench_cuda::<f32>(src, g, &a, copy),
            (Runner::Cuda(g), Precision::F64) => bench_cuda::<f64>(src, g, &a, copy),
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

/// The kernels a run uses, on their backend.
enum Runner {
    Cpu(Vec<CpuKernel>),
    /// The GPU, its kernels, and the buffer that flushes L2 between timed runs.
    Cuda(Box<(CudaSpmv, Vec<GpuKernel>, CudaSlice<u8>)>),
}

fn names_or_all<K: Copy>(
    names: &[String],
    all: &[K],
    parse: impl Fn(&str) -> Result<K, KernelError>,
) -> Result<Vec<K>, KernelError> {
    if names.is_empty() {
        Ok(all.to_vec())
    } else {
        names.iter().map(|n| parse(n)).collect()
    }
}

/// Every GPU kernel on one matrix: poisoned output, one checked launch, then event timing
/// (L2 flushed before each timed launch when the data could sit in L2).
fn bench_cuda<T: GpuScalar>(
    src: &MatrixSource,
    g: &mut (CudaSpmv, Vec<GpuKernel>, CudaSlice<u8>),
    a: &SpmvArgs,
    copy_gb_per_s: Option<f64>,
) -> anyhow::Result<Vec<Row>> {
    let (gpu, kernels, flush) = g;
    let (m, _): (Csr<T>, _) = src.load()?;
    let x = check::test_vector::<T>(m.cols(), 42);
    let (reference, scale) = check::reference_product(&m, &x);
    let bytes = spmv_bytes(m.rows(), m.cols(), m.nnz(), std::mem::size_of::<T>());
    let dm = gpu.upload(&m)?;
    let dx = gpu.htod(&x)?;
    let l2_flushed = bytes < 4 * gpu.device.l2_bytes.max(0) as u64;
    let poison = vec![T::nan(); m.rows()];
    let mut out = Vec::new();
    for &k in kernels.iter() {
        let mut dy = gpu.htod(&poison)?;
        let mut prepared = gpu.prepare(k, &dm, &dx, &mut dy)?;
        gpu.launch(&mut prepared, &dm, &dx, &mut dy)?;
        let y = gpu.dtoh(&dy)?;
        let report = check::compare(&m, &reference, &scale, &y);
        let plan = TimingPlan {
            warmup: a.warmup,
            iterations: a.iterations,
        };
        let times = match a.timing {
            TimingMode::Latency => gpu.time(
                &mut prepared,
                (&dm, &dx, &mut dy),
                plan,
                l2_flushed.then_some(&mut *flush),
            )?,
            mode => {
                let t = gpu.time_modes(
                    &mut prepared,
                    (&dm, &dx, &mut dy),
                    plan,
                    l2_flushed.then_some(&mut *flush),
                )?;
                match (mode, &t.graph_s) {
                    (TimingMode::Graph, Err(e)) => {
                        anyhow::bail!("{}: {}: {e}", src.name(), k.name())
                    }
                    _ => vec![t
                        .get(mode)
                        .expect("latency and throughput are always measured")],
                }
            }
        };
        out.push(Row {
            device: gpu.device.name.clone(),
            threads: 0,
            l2_flushed,
            timing: a.timing.name(),
            ..Row::new(
                src,
                &m,
                k.name(),
                prepared.setup_s,
                times,
                copy_gb_per_s,
                report,
            )
        });
    }
    let (ptr, idx) = dm.pattern();
    let gather_s = GpuGatherer::new(gpu)?.time(m.rows(), m.nnz(), ptr, idx, 5)?;
    let fastest = out.iter().map(|r| r.median_s).fold(f64::INFINITY, f64::min);
    let plan = TimingPlan {
        warmup: a.warmup,
        iterations: a.iterations,
    };
    let ceiling = gpu.gather_ceiling(&dm, &dx, plan, l2_flushed.then_some(&mut *flush))?;
    let index = std::mem::size_of::<i32>() as f64;
    let rest = (m.rows() + 1) as f64 * index + (m.rows() * std::mem::size_of::<T>()) as f64;
    let gather_floor_s = copy_gb_per_s.map(|c| ceiling + rest / (c * 1e9));
    for r in &mut out {
        r.gather_floor_s = gather_floor_s;
        r.gather_s = Some(gather_s);
        r.gather_per_spmv = Some(gather_s / fastest.max(1e-12));
    }
    if let Some(alg1) = out
        .iter()
        .find(|r| r.kernel == "cusparse_alg1")
        .map(|r| r.median_s)
    {
        for r in &mut out {
            r.speedup_vs_alg1 = Some(alg1 / r.median_s.max(1e-12));
        }
    }
    Ok(out)
}

fn bench<T: Scalar>(
    src: &MatrixSource,
    kernels: &[CpuKernel],
    a: &SpmvArgs,
    copy_gb_per_s: Option<f64>,
) -> anyhow::Result<Vec<Row>> {
    let (m, _): (Csr<T>, _) = src.load()?;
    // Start the thread pool before any timing.
    rayon::current_num_threads();
    let x = check::test_vector::<T>(m.cols(), 42);
    let (reference, scale) = check::reference_product(&m, &x);
    let mut y = vec![T::zero(); m.rows()];
    let mut out = Vec::new();
    for &k in kernels {
        let t = Instant::now();
        let prepared = k.prepare(&m);
        let setup_s = t.elapsed().as_secs_f64();
        check::poison(&mut y);
        prepared.run(&x, &mut y)?;
        let report = check::compare(&m, &reference, &scale, &y);
        for _ in 0..a.warmup {
            prepared.run(&x, &mut y)?;
        }
        let times: Vec<f64> = (0..a.iterations)
            .map(|_| {
                let t = Instant::now();
                prepared.run(&x, &mut y).map(|()| t.elapsed().as_secs_f64())
            })
            .collect::<Result<_, _>>()?;
        out.push(Row::new(
            src,
            &m,
            k.name(),
            setup_s,
            times,
            copy_gb_per_s,
            report,
        ));
    }
    Ok(out)
}

/// Parallel copy of 256 MiB into another 256 MiB buffer on the rayon pool, median of 7 after a
/// warm-up; bytes read + written per second, GB/s.
fn copy_bandwidth() -> f64 {
    use rayon::prelude::*;
    let n = 32 << 20;
    let src: Vec<f64> = (0..n).into_par_iter().map(|i| i as f64).collect();
    let mut dst = vec![0.0f64; n];
    let chunk = n / (4 * rayon::current_num_threads()).max(1);
    let times: Vec<f64> = (0..8)
        .map(|_| {
            let t = Instant::now();
            dst.par_chunks_mut(chunk)
                .zip(src.par_chunks(chunk))
                .for_each(|(d, s)| d.copy_from_slice(s));
            t.elapsed().as_secs_f64()
        })
        .skip(1)
        .collect();
    std::hint::black_box(&dst);
    2.0 * (n * 8) as f64 / augur_kernels::median(times) / 1e9
}

fn print_rows(rows: &[Row]) {
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
        "{}: {} x {}, nnz {}, {:?}, {on}",
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
