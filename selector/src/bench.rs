//! The SpMV benchmark harness behind `augur bench spmv` / `augur spmv` (issue 21: in the library,
//! through the device seam): every kernel of a device on one matrix, each checked against the f64
//! reference (output poisoned first), then timed; with the copy-bandwidth floor, the x-gather
//! ceiling, the feature gatherer's cost and the speedup over cuSPARSE ALG1 where the backend has
//! them. On CUDA a buffer twice the L2 size is written before each timed launch (latency) or
//! sample when the data could sit in L2.
//!
//! ```
//! use augur::bench::{BenchOptions, SpmvBench};
//! let a = augur::datasets::generate::Generator::parse("stencil2d:nx=50")
//!     .unwrap()
//!     .generate::<f64>()
//!     .unwrap();
//! let mut b = SpmvBench::cpu(&[]).unwrap(); // SpmvBench::cuda(0, &[]) on a GPU
//! let rows = b.run("stencil2d", &a, &BenchOptions::default().iterations(3), None).unwrap();
//! assert!(rows.iter().all(|r| r.check.passed && r.median_s > 0.0 && r.timing == "wall"));
//! ```

use std::time::Instant;

use augur_datasets::Csr;
use augur_kernels::check::{self, CheckReport};
use augur_kernels::cuda::{GpuScalar, TimingMode, TimingPlan};
use augur_kernels::device::{BackendKind, Device, SpmvDevice};
use augur_kernels::{median, spmv_bytes, KernelError};
use cudarc::driver::CudaSlice;
use serde::Serialize;

use crate::collect::Measurer;
use crate::AugurError;

/// How kernels are timed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BenchOptions {
    /// Untimed runs before timing.
    pub warmup: usize,
    /// Timed runs (latency) or samples (throughput, graph) per kernel; the median is reported.
    pub iterations: usize,
    /// GPU timing mode (the CPU times each call by the wall clock).
    pub timing: TimingMode,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            warmup: 3,
            iterations: 20,
            timing: TimingMode::Latency,
        }
    }
}

impl BenchOptions {
    /// Sets [`BenchOptions::warmup`].
    pub fn warmup(mut self, v: usize) -> Self {
        self.warmup = v;
        self
    }
    /// Sets [`BenchOptions::iterations`].
    pub fn iterations(mut self, v: usize) -> Self {
        self.iterations = v;
        self
    }
    /// Sets [`BenchOptions::timing`].
    pub fn timing(mut self, v: TimingMode) -> Self {
        self.timing = v;
        self
    }
}

/// One kernel on one matrix.
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    pub matrix: String,
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// `cpu` or the GPU's name.
    pub device: String,
    /// CPU threads (0 on a GPU).
    pub threads: usize,
    pub kernel: &'static str,
    /// The kernel's own setup (CPU: its partition; GPU: merge-path's partition search...).
    pub setup_s: f64,
    pub median_s: f64,
    pub gb_per_s: f64,
    /// CUDA: a buffer twice the L2 size was written before each timed launch (latency) or
    /// sample.
    pub l2_flushed: bool,
    /// How median_s was timed: `wall` (CPU), `latency`, `throughput` or `graph`.
    pub timing: &'static str,
    /// cuSPARSE CSR_ALG1's median over this kernel's (above 1: faster than ALG1).
    pub speedup_vs_alg1: Option<f64>,
    /// GPU: seconds to gather all SpMV features on the device (median of 5).
    pub gather_s: Option<f64>,
    /// GPU: gather_s over the fastest kernel's median: the cost of features in SpMVs.
    pub gather_per_spmv: Option<f64>,
    /// Measured copy bandwidth (read + write), GB/s, when given.
    pub copy_gb_per_s: Option<f64>,
    /// Bytes moved / copy bandwidth: the fastest this product could run.
    pub floor_s: Option<f64>,
    /// CUDA: the x-gather ceiling (values and indices streamed, x gathered in column order, no
    /// rows) plus row pointers and y at copy bandwidth: a floor that charges random columns.
    pub gather_floor_s: Option<f64>,
    pub check: CheckReport,
}

/// A device with the kernels to benchmark (and, on CUDA, the L2 flush buffer).
pub struct SpmvBench {
    measurer: Measurer,
    flush: Option<CudaSlice<u8>>,
}

impl SpmvBench {
    /// The rayon CPU kernels named (all when none are).
    pub fn cpu(kernels: &[String]) -> Result<SpmvBench, AugurError> {
        SpmvBench::on(Measurer::cpu(kernels)?)
    }

    /// GPU `ordinal` (cuSPARSE kernels left out where libcusparse does not load: the note).
    pub fn cuda(
        ordinal: usize,
        kernels: &[String],
    ) -> Result<(SpmvBench, Option<String>), AugurError> {
        let (m, note) = Measurer::cuda(ordinal, kernels)?;
        Ok((SpmvBench::on(m)?, note))
    }

    /// AMD GPU `ordinal` (feature `hip`; not yet run on AMD hardware).
    pub fn hip(ordinal: usize, kernels: &[String]) -> Result<SpmvBench, AugurError> {
        SpmvBench::on(Measurer::hip(ordinal, kernels)?)
    }

    fn on(measurer: Measurer) -> Result<SpmvBench, AugurError> {
        let flush = match measurer.device_handle().as_cuda() {
            Some(g) => Some(g.flush_buffer()?),
            None => None,
        };
        Ok(SpmvBench { measurer, flush })
    }

    pub fn device(&self) -> &Device {
        self.measurer.device_handle()
    }

    /// Read + write bandwidth of a large device-to-device copy (the CPU: a parallel host copy
    /// of 256 MiB), GB/s: what [`BenchRow::floor_s`] divides by.
    pub fn copy_bandwidth(&self) -> Result<f64, AugurError> {
        let dev = self.device();
        match (dev.kind(), dev.as_cuda()) {
            (_, Some(g)) => Ok(g.copy_bandwidth()?),
            (BackendKind::Cpu, None) => Ok(host_copy_bandwidth()),
            (k, None) => {
                Err(augur_kernels::device::unsupported(k, "the copy-bandwidth floor").into())
            }
        }
    }

    /// Every kernel on `m` (named `name`): checked, then timed. `copy_gb_per_s`: the floor's
    /// bandwidth ([`SpmvBench::copy_bandwidth`]), None for no floor.
    pub fn run<T: GpuScalar>(
        &mut self,
        name: &str,
        m: &Csr<T>,
        opts: &BenchOptions,
        copy_gb_per_s: Option<f64>,
    ) -> Result<Vec<BenchRow>, AugurError> {
        let dev = self.measurer.device_handle().clone();
        let kind = dev.kind();
        // Start the thread pool before any timing.
        rayon::current_num_threads();
        let x = check::test_vector::<T>(m.cols(), 42);
        let (reference, scale) = check::reference_product(m, &x);
        let bytes = spmv_bytes(m.rows(), m.cols(), m.nnz(), std::mem::size_of::<T>());
        let dm = dev.upload(m)?;
        let dx = dev.vector(&x)?;
        let gpu = dev.as_cuda().cloned();
        let l2_flushed = gpu
            .as_ref()
            .is_some_and(|g| bytes < 4 * g.device.l2_bytes.max(0) as u64);
        let poison = vec![T::nan(); m.rows()];
        let mut y = vec![T::zero(); m.rows()];
        let plan = TimingPlan {
            warmup: opts.warmup,
            iterations: opts.iterations,
        };
        let mut out = Vec::new();
        let kernels = self.measurer.kernels().to_vec();
        for kernel in kernels {
            let mut dy = dev.vector(&poison)?;
            let t = Instant::now();
            let mut p = dev.prepare(kernel, &dm, &dx, &mut dy)?;
            let host_setup_s = t.elapsed().as_secs_f64();
            dev.launch(&mut p, &dm, &dx, &mut dy)?;
            dev.read(&dy, &mut y)?;
            let report = check::compare(m, &reference, &scale, &y);
            let flush = if l2_flushed {
                self.flush.as_mut()
            } else {
                None
            };
            let mut launch = || dev.launch(&mut p, &dm, &dx, &mut dy);
            let (times, timing) = match (kind, opts.timing) {
                (BackendKind::Cpu, _) => (dev.time(plan, &mut launch)?, "wall"),
                (_, TimingMode::Latency) => (
                    match &gpu {
                        Some(g) => g.time_events(plan, flush, &mut launch)?,
                        None => dev.time(plan, &mut launch)?,
                    },
                    "latency",
                ),
                (_, mode) => {
                    let t = match &gpu {
                        Some(g) => {
                            augur_kernels::cuda::time_modes(g.stream(), plan, flush, &mut launch)?
                        }
                        None => dev.time_modes(plan, &mut launch)?,
                    };
                    match (mode, &t.graph_s) {
                        (TimingMode::Graph, Err(e)) => {
                            return Err(AugurError::Invalid(format!("{name}: {kernel}: {e}")))
                        }
                        _ => (
                            vec![t
                                .get(mode)
                                .expect("latency and throughput are always measured")],
                            mode.name(),
                        ),
                    }
                }
            };
            let setup_s = if kind == BackendKind::Cpu {
                host_setup_s
            } else {
                dev.setup_s(&p)
            };
            let median_s = median(times);
            out.push(BenchRow {
                matrix: name.to_string(),
                rows: m.rows(),
                cols: m.cols(),
                nnz: m.nnz(),
                precision: T::NAME,
                device: if kind == BackendKind::Cpu {
                    "cpu".into()
                } else {
                    dev.name()
                },
                threads: if kind == BackendKind::Cpu {
                    rayon::current_num_threads()
                } else {
                    0
                },
                kernel,
                setup_s,
                median_s,
                gb_per_s: bytes as f64 / median_s.max(1e-12) / 1e9,
                l2_flushed,
                timing,
                speedup_vs_alg1: None,
                gather_s: None,
                gather_per_spmv: None,
                copy_gb_per_s,
                floor_s: copy_gb_per_s.map(|c| bytes as f64 / (c * 1e9)),
                gather_floor_s: None,
                check: report,
            });
        }
        if kind == BackendKind::Cpu {
            return Ok(out);
        }
        let gather_s = match dev.time_gather(&dm, 5) {
            Ok(s) => Some(s),
            Err(KernelError::Unsupported { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        let fastest = out.iter().map(|r| r.median_s).fold(f64::INFINITY, f64::min);
        let gather_floor_s = match (&gpu, dm.as_cuda(), dx.as_cuda()) {
            (Some(g), Some(cm), Some(cx)) => {
                let flush = if l2_flushed {
                    self.flush.as_mut()
                } else {
                    None
                };
                let ceiling = g.gather_ceiling(cm, cx, plan, flush)?;
                let index = std::mem::size_of::<i32>() as f64;
                let rest =
                    (m.rows() + 1) as f64 * index + (m.rows() * std::mem::size_of::<T>()) as f64;
                copy_gb_per_s.map(|c| ceiling + rest / (c * 1e9))
            }
            _ => None,
        };
        for r in &mut out {
            r.gather_floor_s = gather_floor_s;
            r.gather_s = gather_s;
            r.gather_per_spmv = gather_s.map(|g| g / fastest.max(1e-12));
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
}

/// Parallel copy of 256 MiB into another 256 MiB buffer on the rayon pool, median of 7 after a
/// warm-up; bytes read + written per second, GB/s.
fn host_copy_bandwidth() -> f64 {
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
    2.0 * (n * 8) as f64 / median(times) / 1e9
}
