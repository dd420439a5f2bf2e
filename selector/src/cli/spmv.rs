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
    #[arg(long)]
    json: bool,
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
    check: CheckReport,
}

pub fn run(a: SpmvArgs) -> anyhow::Result<ExitCode> {
    if a.backend == Backend::Cuda {
        return Err(KernelError::NotAvailable {
            backend: "cuda".into(),
            why: "this build has no CUDA backend yet; use --backend cpu".into(),
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
    let mut rows = Vec::new();
    let mut failed = 0usize;
    for src in &sources {
        let r = match a.precision {
            Precision::F32 => bench::<f32>(src, &kernels, &a),
            Precision::F64 => bench::<f64>(src, &kernels, &a),
        };
        match r {
            Ok(mut r) => {
                failed += r.iter().filter(|r| !r.check.passed).count();
                if !a.json {
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
) -> anyhow::Result<Vec<Row>> {
    let (m, _): (Csr<T>, _) = src.load()?;
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
            precision: if T::NAME == "f32" { Precision::F32 } else { Precision::F64 },
            threads: rayon::current_num_threads(),
            kernel: k.name(),
            setup_s,
            median_s,
            gb_per_s: bytes as f64 / median_s.max(1e-12) / 1e9,
            check: report,
        });
    }
    Ok(out)
}

fn print_rows(rows: &[Row]) {
    let Some(r0) = rows.first() else { return };
    println!(
        "{}: {} x {}, nnz {}, {:?}, {} threads",
        r0.matrix, r0.rows, r0.cols, r0.nnz, r0.precision, r0.threads
    );
    println!(
        "  {:<14} {:>10} {:>12} {:>8} {:>12}  check",
        "kernel", "setup_us", "median_us", "GB/s", "max_rel_err"
    );
    for r in rows {
        println!(
            "  {:<14} {:>10.1} {:>12.1} {:>8.2} {:>12.2e}  {}",
            r.kernel,
            r.setup_s * 1e6,
            r.median_s * 1e6,
            r.gb_per_s,
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
