//! The SpMV measuring harness behind `augur collect` (issue 21: in the library, so that programs
//! can measure without the CLI): for one matrix, its features and what computing each tier costs,
//! the upload (alone and with the gather inside, on a GPU), and every kernel's setup and per-call
//! time after a check against the f64 reference, as the rows of a runs file
//! ([`augur_models::runs`]). The CLI adds the files, resuming and the progress bar.
//!
//! ```
//! use augur::collect::{CollectOptions, MatrixMeta, Measurer};
//! let a = augur::datasets::generate::Generator::parse("stencil2d:nx=60")
//!     .unwrap()
//!     .generate::<f32>()
//!     .unwrap();
//! let mut m = Measurer::cpu(&[]).unwrap(); // Measurer::cuda(0, &[]) on a GPU
//! let meta = MatrixMeta::new("stencil2d", "generated", &m);
//! let opts = CollectOptions::default().reps(3).warmup(1);
//! let (info, runs) = m.measure("stencil2d:nx=60", &a, &meta, &opts).unwrap();
//! assert_eq!((info.nnz, info.backend.as_str()), (a.nnz(), "cpu"));
//! assert_eq!(runs.len(), 4); // every CPU kernel, each checked, then timed
//! assert!(runs.iter().all(|r| r.timing.is_some_and(|t| t.per_iter_s > 0.0)));
//! ```

use std::time::Instant;

use augur_datasets::Csr;
use augur_features::spmv::{self, CpuGatherer, CsrPattern, SpmvGatherer, SPMV_SCHEMA_VERSION};
use augur_kernels::cpu::CpuKernel;
use augur_kernels::cuda::gather::GpuGatherer;
use augur_kernels::cuda::{CudaSpmv, GpuKernel, GpuScalar, TimingPlan};
use augur_kernels::{check, median, KernelError};
use augur_models::runs::{KernelRun, LabelTiming, MatrixInfo, Timing};

use crate::AugurError;

/// How each kernel is timed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CollectOptions {
    /// Untimed calls before the timed ones.
    pub warmup: usize,
    /// Timed samples per round.
    pub reps: usize,
    /// Rounds over all kernels (each kernel's fastest round is kept; rounds interleave kernels,
    /// so a slow spell of the machine does not hit one kernel only).
    pub rounds: usize,
}

impl Default for CollectOptions {
    fn default() -> Self {
        CollectOptions {
            warmup: 10,
            reps: 30,
            rounds: 1,
        }
    }
}

impl CollectOptions {
    /// Sets [`CollectOptions::warmup`].
    pub fn warmup(mut self, v: usize) -> Self {
        self.warmup = v;
        self
    }
    /// Sets [`CollectOptions::reps`].
    pub fn reps(mut self, v: usize) -> Self {
        self.reps = v;
        self
    }
    /// Sets [`CollectOptions::rounds`].
    pub fn rounds(mut self, v: usize) -> Self {
        self.rounds = v;
        self
    }
}

/// What a runs row says about where a matrix came from and what measured it.
#[derive(Debug, Clone)]
pub struct MatrixMeta {
    pub family: String,
    pub source: String,
    pub device: String,
    pub driver: String,
    /// The iteration counts the labels are for (`1;10;100`...).
    pub iterations: String,
}

impl MatrixMeta {
    /// `family` and `source` for a matrix measured by `m` (device and driver from it), labels
    /// for 1, 10, 100 and 1000 iterations.
    pub fn new(family: impl Into<String>, source: impl Into<String>, m: &Measurer) -> Self {
        MatrixMeta {
            family: family.into(),
            source: source.into(),
            device: m.device(),
            driver: m.driver().to_string(),
            iterations: "1;10;100;1000".into(),
        }
    }
}

/// What measures: a backend with its kernels.
pub enum Measurer {
    Cpu(Vec<CpuKernel>),
    /// The GPU, its kernels, and the feature gatherer (its module loaded once), and the driver.
    Cuda(Box<CudaMeasurer>),
}

/// The CUDA side of a [`Measurer`].
pub struct CudaMeasurer {
    gpu: CudaSpmv,
    kernels: Vec<GpuKernel>,
    gatherer: GpuGatherer,
    driver: String,
}

impl Measurer {
    /// The rayon CPU kernels named (all when none are).
    pub fn cpu(kernels: &[String]) -> Result<Measurer, AugurError> {
        Ok(Measurer::Cpu(if kernels.is_empty() {
            CpuKernel::ALL.to_vec()
        } else {
            kernels
                .iter()
                .map(|n| CpuKernel::from_name(n))
                .collect::<Result<_, _>>()?
        }))
    }

    /// GPU `ordinal` with the kernels named (all when none are); the cuSPARSE ones are left out
    /// where libcusparse does not load (the note says so).
    pub fn cuda(
        ordinal: usize,
        kernels: &[String],
    ) -> Result<(Measurer, Option<String>), AugurError> {
        let gpu = CudaSpmv::new(ordinal)?;
        let mut k: Vec<GpuKernel> = if kernels.is_empty() {
            GpuKernel::ALL.to_vec()
        } else {
            kernels
                .iter()
                .map(|n| GpuKernel::from_name(n))
                .collect::<Result<_, _>>()?
        };
        let mut note = None;
        if !augur_kernels::cuda::cusparse::available() {
            note = Some("libcusparse not found; cuSPARSE kernels skipped".to_string());
            k.retain(|k| !matches!(k, GpuKernel::Cusparse { .. }));
        }
        let driver = augur_kernels::cuda::driver_version()?;
        let gatherer = GpuGatherer::new(&gpu)?;
        Ok((
            Measurer::Cuda(Box::new(CudaMeasurer {
                gpu,
                kernels: k,
                gatherer,
                driver,
            })),
            note,
        ))
    }

    pub fn kernel_names(&self) -> Vec<String> {
        match self {
            Measurer::Cpu(k) => k.iter().map(|k| k.name().to_string()).collect(),
            Measurer::Cuda(g) => g.kernels.iter().map(|k| k.name().to_string()).collect(),
        }
    }

    /// `cpu` or `cuda`, as runs files name backends.
    pub fn backend(&self) -> &'static str {
        match self {
            Measurer::Cpu(_) => "cpu",
            Measurer::Cuda(_) => "cuda",
        }
    }

    /// The GPU's name, or `cpu (N threads)`.
    pub fn device(&self) -> String {
        match self {
            Measurer::Cpu(_) => format!("cpu ({} threads)", rayon::current_num_threads()),
            Measurer::Cuda(g) => g.gpu.device.name.clone(),
        }
    }

    /// The CUDA driver's version (empty on the CPU).
    pub fn driver(&self) -> &str {
        match self {
            Measurer::Cpu(_) => "",
            Measurer::Cuda(g) => &g.driver,
        }
    }

    /// Measure `m` (named `name`): its runs rows. A kernel that fails or computes a wrong
    /// product is recorded with its error, not measured; the matrix's own trouble (features, an
    /// upload) is the error.
    pub fn measure<T: GpuScalar>(
        &mut self,
        name: impl Into<String>,
        m: &Csr<T>,
        meta: &MatrixMeta,
        a: &CollectOptions,
    ) -> Result<(MatrixInfo, Vec<KernelRun>), AugurError> {
        let measurer = self;
        let pat = CsrPattern::of(m);
        let t = Instant::now();
        let _ = spmv::known(pat);
        let known_s = t.elapsed().as_secs_f64();
        // The features (every gatherer gives the same values).
        let features = CpuGatherer.gather(pat)?;
        // The sampled tier alone: the median of five after one to warm the caches it reads.
        let _ = spmv::extract_sampled(pat);
        let sample_s = median_wall(5, || spmv::extract_sampled(pat));
        let x = check::test_vector::<T>(m.cols(), 42);
        let (reference, scale) = check::reference_product(m, &x);
        let mut runs = Vec::new();
        let gather_s;
        let (mut upload_s, mut upload_gather_s) = (None, None);
        match measurer {
            Measurer::Cpu(kernels) => {
                // The gathered tier as a CPU plan computes it (the known and exact features), the
                // median of three.
                gather_s = median_wall(3, || CpuGatherer.exact(pat));
                let mut y = vec![T::zero(); m.rows()];
                let mut per: Vec<Vec<Result<Timing, String>>> = vec![Vec::new(); kernels.len()];
                for _ in 0..a.rounds.max(1) {
                    for (ki, &k) in kernels.iter().enumerate() {
                        let r = (|| -> Result<Timing, String> {
                            let t = Instant::now();
                            let p = k.prepare(m);
                            let setup_s = t.elapsed().as_secs_f64();
                            check::poison(&mut y);
                            p.run(&x, &mut y).map_err(|e| e.to_string())?;
                            let rep = check::compare(m, &reference, &scale, &y);
                            if !rep.passed {
                                return Err(wrong(&rep));
                            }
                            for _ in 0..a.warmup {
                                p.run(&x, &mut y).map_err(|e| e.to_string())?;
                            }
                            let mut times = Vec::with_capacity(a.reps);
                            for _ in 0..a.reps {
                                let t = Instant::now();
                                p.run(&x, &mut y).map_err(|e| e.to_string())?;
                                times.push(t.elapsed().as_secs_f64());
                            }
                            Ok(Timing::wall(setup_s, median(times).max(1e-9), a.reps))
                        })();
                        per[ki].push(r);
                    }
                }
                for (&k, rs) in kernels.iter().zip(per) {
                    runs.push(kernel_run(k.name(), fastest_round(rs)));
                }
            }
            Measurer::Cuda(g) => {
                let CudaMeasurer {
                    gpu,
                    kernels,
                    gatherer,
                    ..
                } = &mut **g;
                // The upload a plan makes (copy and synchronise), alone and with the gathered tier
                // computed during it as a plan that gathers makes it (alternated pairs after one
                // of each to warm up; the device copy is freed after the clock stops).
                let upload = || timed_synced(gpu, || gpu.upload(m));
                let beside = || timed_synced(gpu, || gpu.upload_gathering(m, gatherer));
                upload()?;
                beside()?;
                // Pairs, alternated: the extra is the median of the pairs' differences (the upload
                // itself varies by more than the gather adds to it); five pairs below 2 ms.
                let first = upload()?;
                let (mut alone, mut diff) = (vec![first], vec![beside()? - first]);
                let pairs = if first < 2e-3 { 5 } else { 3 };
                for _ in 1..pairs {
                    let a = upload()?;
                    alone.push(a);
                    diff.push(beside()? - a);
                }
                let up = median(alone);
                upload_s = Some(up);
                upload_gather_s = Some(up + median(diff).max(0.0));
                let dm = gpu.upload(m)?;
                let dx = gpu.htod(&x)?;
                let (ptr, idx) = dm.pattern();
                // The device pass alone: the gathered tier reads the known and exact features.
                gather_s = gatherer.time(m.rows(), m.nnz(), ptr, idx, 5)?;
                let poison = vec![T::nan(); m.rows()];
                let mut per: Vec<Vec<Result<Timing, String>>> = vec![Vec::new(); kernels.len()];
                for _ in 0..a.rounds.max(1) {
                    for (ki, &k) in kernels.iter().enumerate() {
                        let r = (|| -> Result<Timing, String> {
                            let mut dy = gpu.htod(&poison).map_err(|e| e.to_string())?;
                            let mut p = gpu
                                .prepare(k, &dm, &dx, &mut dy)
                                .map_err(|e| e.to_string())?;
                            gpu.launch(&mut p, &dm, &dx, &mut dy)
                                .map_err(|e| e.to_string())?;
                            let y = gpu.dtoh(&dy).map_err(|e| e.to_string())?;
                            let rep = check::compare(m, &reference, &scale, &y);
                            if !rep.passed {
                                return Err(wrong(&rep));
                            }
                            let m = gpu
                                .time_modes(
                                    &mut p,
                                    (&dm, &dx, &mut dy),
                                    TimingPlan {
                                        warmup: a.warmup,
                                        iterations: a.reps,
                                    },
                                    None,
                                )
                                .map_err(|e| e.to_string())?;
                            if let Err(e) = &m.graph_s {
                                eprintln!("augur: note: {}: no graph figure: {e}", k.name());
                            }
                            // Throughput labels (what a loop of plan.launch sees); latency and the
                            // graph figure apart.
                            let throughput_s = m.throughput_s.max(1e-9);
                            Ok(Timing {
                                setup_s: p.setup_s,
                                per_iter_s: throughput_s,
                                timing: LabelTiming::Throughput,
                                latency_s: m.latency_s.max(1e-9),
                                throughput_s: Some(throughput_s),
                                graph_s: m.graph_s.ok().map(|g| g.max(1e-9)),
                                batch: m.batch,
                                reps: m.samples,
                            })
                        })();
                        per[ki].push(r);
                    }
                }
                for (&k, rs) in kernels.iter().zip(per) {
                    runs.push(kernel_run(k.name(), fastest_round(rs)));
                }
            }
        }
        let info = MatrixInfo {
            matrix: name.into(),
            family: meta.family.clone(),
            source: meta.source.clone(),
            rows: m.rows(),
            cols: m.cols(),
            nnz: m.nnz(),
            precision: T::NAME.to_string(),
            backend: measurer.backend().into(),
            device: meta.device.clone(),
            driver: meta.driver.clone(),
            augur_version: env!("CARGO_PKG_VERSION").into(),
            schema_version: SPMV_SCHEMA_VERSION,
            iterations: meta.iterations.clone(),
            known_s,
            gather_s,
            sample_s,
            upload_s,
            upload_gather_s,
            features: features.values(),
        };
        Ok((info, runs))
    }
}

/// The median wall time of `n` calls of `f` (its result kept from being optimised away).
fn median_wall<R>(n: usize, mut f: impl FnMut() -> R) -> f64 {
    median(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// Seconds of `f` and a synchronisation of the GPU's stream after it; what `f` returns (e.g. a
/// device copy) is dropped after the clock stops.
fn timed_synced<R>(
    gpu: &CudaSpmv,
    f: impl FnOnce() -> Result<R, KernelError>,
) -> Result<f64, KernelError> {
    let t = Instant::now();
    let r = f()?;
    augur_kernels::device::SpmvDevice::synchronize(gpu)?;
    let s = t.elapsed().as_secs_f64();
    drop(r);
    Ok(s)
}

/// One kernel's rounds: the first failure if any failed, else the fastest round's figures (by
/// the per-call label figure; the least setup of any round; reps counts every timed sample).
fn fastest_round(rounds: Vec<Result<Timing, String>>) -> Result<Timing, String> {
    let n = rounds.len();
    let ok: Vec<Timing> = rounds.into_iter().collect::<Result<_, _>>()?;
    let best = ok
        .iter()
        .copied()
        .min_by(|a, b| a.per_iter_s.total_cmp(&b.per_iter_s))
        .ok_or_else(|| "no rounds".to_string())?;
    Ok(Timing {
        setup_s: ok.iter().map(|t| t.setup_s).fold(f64::INFINITY, f64::min),
        reps: best.reps * n,
        ..best
    })
}

fn wrong(rep: &check::CheckReport) -> String {
    format!(
        "wrong result: error {:.3} of the bound at row {:?}, {} NaN/inf rows",
        rep.max_bound_ratio, rep.worst_row, rep.bad_rows
    )
}

fn kernel_run(name: &str, r: Result<Timing, String>) -> KernelRun {
    match r {
        Ok(t) => KernelRun {
            kernel: name.into(),
            timing: Some(t),
            error: String::new(),
        },
        Err(e) => KernelRun {
            kernel: name.into(),
            timing: None,
            error: e,
        },
    }
}
