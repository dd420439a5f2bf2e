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
use augur_kernels::cuda::{GpuKernel, GpuScalar, TimingPlan};
use augur_kernels::device::{BackendKind, Device, SpmvDevice};
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

/// What measures: a device of the seam ([`Device`]) with the kernels to measure, and its
/// driver's version.
pub struct Measurer {
    device: Device,
    kernels: Vec<&'static str>,
    driver: String,
}

impl Measurer {
    /// The rayon CPU kernels named (all when none are).
    pub fn cpu(kernels: &[String]) -> Result<Measurer, AugurError> {
        Measurer::on(Device::cpu(), kernels, String::new())
    }

    /// GPU `ordinal` with the kernels named (all when none are); the cuSPARSE ones are left out
    /// where libcusparse does not load (the note says so).
    pub fn cuda(
        ordinal: usize,
        kernels: &[String],
    ) -> Result<(Measurer, Option<String>), AugurError> {
        let device = Device::cuda(ordinal)?;
        let note = (!augur_kernels::cuda::cusparse::available())
            .then(|| "libcusparse not found; cuSPARSE kernels skipped".to_string());
        let driver = augur_kernels::cuda::driver_version()?;
        // The gatherer's kernels, loaded once (not in the first matrix's figures).
        device.prepare_gather()?;
        let mut m = Measurer::on(device, kernels, driver)?;
        m.kernels
            .retain(|k| note.is_none() || !k.starts_with("cusparse"));
        Ok((m, note))
    }

    /// AMD GPU `ordinal` (feature `hip`; the portable pool; not yet run on AMD hardware).
    pub fn hip(ordinal: usize, kernels: &[String]) -> Result<Measurer, AugurError> {
        Measurer::on(Device::hip(ordinal)?, kernels, String::new())
    }

    /// Any device, with the kernels named (all of its pool when none are; a name it does not
    /// have is an error naming the ones it has).
    pub fn on(device: Device, kernels: &[String], driver: String) -> Result<Measurer, AugurError> {
        let pool = SpmvDevice::kernel_names(&device);
        let kernels = if kernels.is_empty() {
            pool
        } else {
            // The pool's own parsers: the same names and the same error as everywhere else.
            let kind = device.kind();
            kernels
                .iter()
                .map(|n| match kind {
                    BackendKind::Cpu => CpuKernel::from_name(n).map(|k| k.name()),
                    #[cfg(feature = "hip")]
                    BackendKind::Hip => {
                        augur_kernels::hip::HipKernel::from_name(n).map(|k| k.name())
                    }
                    _ => GpuKernel::from_name(n).map(|k| k.name()),
                })
                .collect::<Result<_, _>>()?
        };
        Ok(Measurer {
            device,
            kernels,
            driver,
        })
    }

    pub fn kernel_names(&self) -> Vec<String> {
        self.kernels.iter().map(|k| k.to_string()).collect()
    }

    /// The kernels it measures, as the pool names them.
    pub fn kernels(&self) -> &[&'static str] {
        &self.kernels
    }

    /// The device it measures on.
    pub fn device_handle(&self) -> &Device {
        &self.device
    }

    /// `cpu`, `cuda` or `hip`, as runs files name backends.
    pub fn backend(&self) -> &'static str {
        self.device.kind().name()
    }

    /// The GPU's name, or `cpu (N threads)`.
    pub fn device(&self) -> String {
        SpmvDevice::name(&self.device)
    }

    /// The CUDA driver's version (empty elsewhere).
    pub fn driver(&self) -> &str {
        &self.driver
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
        let dev = &self.device;
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
        let cpu = dev.kind() == BackendKind::Cpu;
        let (mut upload_s, mut upload_gather_s) = (None, None);
        // The CPU gathers on the host; a GPU times its device pass on the upload below.
        let host_gather_s = if cpu {
            // The gathered tier as a CPU plan computes it (the known and exact features), the
            // median of three.
            Some(median_wall(3, || CpuGatherer.exact(pat)))
        } else {
            // The upload a plan makes (copy and synchronise), alone and with the gathered tier
            // computed during it as a plan that gathers makes it (alternated pairs after one
            // of each to warm up; the device copy is freed after the clock stops).
            let upload = || timed_synced(dev, || dev.upload(m));
            let beside = || timed_synced(dev, || dev.upload_gathering(m));
            upload()?;
            beside()?;
            // Pairs, alternated: the extra is the median of the pairs' differences (the upload
            // itself varies by more than the gather adds to it); five pairs below 2 ms.
            let first = upload()?;
            let (mut alone, mut diff) = (vec![first], vec![beside()? - first]);
            let pairs = if first < 2e-3 { 5 } else { 3 };
            for _ in 1..pairs {
                let u = upload()?;
                alone.push(u);
                diff.push(beside()? - u);
            }
            let up = median(alone);
            upload_s = Some(up);
            upload_gather_s = Some(up + median(diff).max(0.0));
            None
        };
        // The sampled tier as a plan from this host matrix pays it (beside the upload for a
        // large matrix: the hand-off and any wait after the upload; before it for a small one):
        // the median of five after one (three where an upload takes 2 ms or more).
        let known_f = spmv::known(pat);
        let sampled_upload = || -> Result<f64, AugurError> {
            let work = crate::plan::HostWork {
                checked: true,
                sample: Some((pat, &known_f)),
                rows: None,
            };
            let (dm, _, host_s) = crate::plan::upload_with_host_work(dev, m.into(), work)?;
            dev.synchronize()?;
            drop(dm);
            Ok(host_s)
        };
        sampled_upload()?;
        let n = if upload_s.unwrap_or(0.0) < 2e-3 { 5 } else { 3 };
        let mut beside = Vec::with_capacity(n);
        for _ in 0..n {
            beside.push(sampled_upload()?);
        }
        let sample_upload_s = Some(median(beside));
        // The gathered tier's row-length statistics from the row pointers on the host beside
        // the upload (GPUs; what a plan pays for a selector whose gathered trees read no column
        // statistics): what the plan's thread pays, as for the sampled tier.
        let gather_upload_s = if cpu {
            None
        } else {
            let gathered_upload = || -> Result<f64, AugurError> {
                let work = crate::plan::HostWork {
                    checked: true,
                    sample: None,
                    rows: Some(pat),
                };
                let (dm, _, host_s) = crate::plan::upload_with_host_work(dev, m.into(), work)?;
                dev.synchronize()?;
                drop(dm);
                Ok(host_s)
            };
            gathered_upload()?;
            let mut beside = Vec::with_capacity(n);
            for _ in 0..n {
                beside.push(gathered_upload()?);
            }
            Some(median(beside))
        };
        let dm = dev.upload(m)?;
        // The device pass alone (GPUs): the gathered tier reads the known and exact features.
        let gather_s = match host_gather_s {
            Some(s) => s,
            None => dev.time_gather(&dm, 5)?,
        };
        let dx = dev.vector(&x)?;
        let poison = vec![T::nan(); m.rows()];
        let mut y = vec![T::zero(); m.rows()];
        let plan = TimingPlan {
            warmup: a.warmup,
            iterations: a.reps,
        };
        let mut per: Vec<Vec<Result<Timing, String>>> = vec![Vec::new(); self.kernels.len()];
        for _ in 0..a.rounds.max(1) {
            for (ki, &k) in self.kernels.iter().enumerate() {
                let r = (|| -> Result<Timing, KernelError> {
                    let mut dy = dev.vector(&poison)?;
                    let t = Instant::now();
                    let mut p = dev.prepare(k, &dm, &dx, &mut dy)?;
                    let host_setup_s = t.elapsed().as_secs_f64();
                    dev.launch(&mut p, &dm, &dx, &mut dy)?;
                    dev.read(&dy, &mut y)?;
                    let rep = check::compare(m, &reference, &scale, &y);
                    if !rep.passed {
                        return Err(KernelError::Invalid(wrong(&rep)));
                    }
                    if cpu {
                        // Wall clock per call (the CPU computes at once).
                        let t = dev.time(plan, || dev.launch(&mut p, &dm, &dx, &mut dy))?;
                        return Ok(Timing::wall(host_setup_s, median(t).max(1e-9), a.reps));
                    }
                    let modes = dev.time_modes(plan, || dev.launch(&mut p, &dm, &dx, &mut dy))?;
                    if let Err(e) = &modes.graph_s {
                        if dev.kind() == BackendKind::Cuda {
                            eprintln!("augur: note: {k}: no graph figure: {e}");
                        }
                    }
                    // Throughput labels (what a loop of plan.launch sees); latency and the
                    // graph figure apart.
                    let throughput_s = modes.throughput_s.max(1e-9);
                    Ok(Timing {
                        setup_s: dev.setup_s(&p),
                        per_iter_s: throughput_s,
                        timing: LabelTiming::Throughput,
                        latency_s: modes.latency_s.max(1e-9),
                        throughput_s: Some(throughput_s),
                        graph_s: modes.graph_s.ok().map(|g| g.max(1e-9)),
                        batch: modes.batch,
                        reps: modes.samples,
                    })
                })();
                per[ki].push(r.map_err(|e| match e {
                    KernelError::Invalid(s) if s.starts_with("wrong result") => s,
                    e => e.to_string(),
                }));
            }
        }
        let runs = self
            .kernels
            .iter()
            .zip(per)
            .map(|(k, rs)| kernel_run(k, fastest_round(rs)))
            .collect();
        let info = MatrixInfo {
            matrix: name.into(),
            family: meta.family.clone(),
            source: meta.source.clone(),
            rows: m.rows(),
            cols: m.cols(),
            nnz: m.nnz(),
            precision: T::NAME.to_string(),
            backend: self.backend().into(),
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
            sample_upload_s,
            gather_upload_s,
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

/// Seconds of `f` and a synchronisation of the device after it; what `f` returns (e.g. a device
/// copy) is dropped after the clock stops.
fn timed_synced<R>(
    dev: &Device,
    f: impl FnOnce() -> Result<R, KernelError>,
) -> Result<f64, KernelError> {
    let t = Instant::now();
    let r = f()?;
    dev.synchronize()?;
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
