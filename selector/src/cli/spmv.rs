//! `augur spmv ...`: run, check and time SpMV kernels.

use std::process::ExitCode;
use std::time::Instant;

use augur_datasets::{Csr, MatrixSource, Scalar};
use augur_kernels::check::{self, CheckReport};
use augur_kernels::cpu::CpuKernel;
use augur_kernels::{spmv_bytes, KernelError};
use clap::{Args, ValueEnum};

use super::{parse_sources, Precision};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    Cpu,
    Cuda,
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
    threads: usize,
    kernel: &'a str,
    setup_s: f64,
    median_s: f64,
    gb_per_s: f64,
    max_rel_err: f64,
    passed: bool,
    copy_gb_per_s: Option<f64>,
    floor_s: Option<f64>,
    fraction_of_copy: Option<f64>,
}

#[derive(serde::Serialize)]
struct Row {
    matrix: String,
    rows: usize,
    cols: usize,
    nnz: usize,
    precision: Precision,
    threads: usize,
    kernel: &'static str,
    setup_s: f64,
    median_s: f64,
    gb_per_s: f64,
    /// Measured copy bandwidth (read + write), GB/s, with `--floor`.
    copy_gb_per_s: Option<f64>,
    /// Bytes moved / copy bandwidth: the fastest this product could run.
    floor_s: Option<f64>,
    check: CheckReport,
}

pub fn run(a: SpmvArgs) -> anyhow::Result<ExitCode> {
    if a.backend == Backend::Cuda {
        // No device (or driver) is the first thing to say; the SpMV kernels come next.
        augur_kernels::cuda::available()?;
        return Err(KernelError::NotAvailable {
            backend: "cuda".into(),
            why: "the CUDA SpMV kernels are not built yet; use --backend cpu".into(),
        }
        .into());
    }
    anyhow::ensure!(a.iterations >= 1, "--iterations must be at least 1");
    let kernels: Vec<CpuKernel> = if a.kernels.is_empty() {
        CpuKernel::ALL.to_vec()
    } else {
        a.kernels
            .iter()
            .map(|k| CpuKernel::from_name(k))
            .collect::<Result<_, _>>()?
    };
    let sources = parse_sources(&a.matrices)?;
    let copy = a.floor.then(copy_bandwidth);
    if let (Some(c), false) = (copy, a.csv || a.json) {
        println!(
            "copy bandwidth (read + write): {c:.1} GB/s on {} threads",
            rayon::current_num_threads()
        );
    }
    let mut rows = Vec::new();
    let mut failed = 0usize;
    let mut csv = a.csv.then(|| csv::Writer::from_writer(std::io::stdout()));
    for src in &sources {
        let r = match a.precision {
            Precision::F32 => bench::<f32>(src, &kernels, &a, copy),
            Precision::F64 => bench::<f64>(src, &kernels, &a, copy),
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
                            threads: x.threads,
                            kernel: x.kernel,
                            setup_s: x.setup_s,
                            median_s: x.median_s,
                            gb_per_s: x.gb_per_s,
                            max_rel_err: x.check.max_rel_err,
                            passed: x.check.passed,
                            copy_gb_per_s: x.copy_gb_per_s,
                            floor_s: x.floor_s,
                            fraction_of_copy: x.copy_gb_per_s.map(|c| x.gb_per_s / c),
                        })?;
                    }
                    w.flush()?;
                } else if !a.json {
                    print_rows(&r);
                }
                rows.append(&mut r);
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
    let bytes = spmv_bytes(m.rows(), m.cols(), m.nnz(), std::mem::size_of::<T>());
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
        let mut times: Vec<f64> = (0..a.iterations)
            .map(|_| {
                let t = Instant::now();
                prepared.run(&x, &mut y).map(|()| t.elapsed().as_secs_f64())
            })
            .collect::<Result<_, _>>()?;
        times.sort_by(f64::total_cmp);
        let median_s = times[times.len() / 2];
        out.push(Row {
            matrix: src.name(),
            rows: m.rows(),
            cols: m.cols(),
            nnz: m.nnz(),
            precision: if T::NAME == "f32" {
                Precision::F32
            } else {
                Precision::F64
            },
            threads: rayon::current_num_threads(),
            kernel: k.name(),
            setup_s,
            median_s,
            gb_per_s: bytes as f64 / median_s.max(1e-12) / 1e9,
            copy_gb_per_s,
            floor_s: copy_gb_per_s.map(|c| bytes as f64 / (c * 1e9)),
            check: report,
        });
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
    let mut times: Vec<f64> = (0..8)
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
    times.sort_by(f64::total_cmp);
    2.0 * (n * 8) as f64 / times[times.len() / 2] / 1e9
}

fn print_rows(rows: &[Row]) {
    let Some(r0) = rows.first() else { return };
    println!(
        "{}: {} x {}, nnz {}, {:?}, {} threads",
        r0.matrix, r0.rows, r0.cols, r0.nnz, r0.precision, r0.threads
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
