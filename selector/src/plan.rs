//! [`SpmvPlan`]: select once, set up once, run many times; [`Dispatcher`]: plans cached by matrix
//! identity, so repeated calls with the same matrix reuse the setup.
//!
//! ```no_run
//! use augur::{Backend, PlanOptions, SpmvPlan};
//! let spec = augur::datasets::generate::Generator::parse("stencil2d:nx=500").unwrap();
//! let a = spec.generate::<f32>().unwrap();
//! let backend = Backend::auto(); // CUDA when a GPU is present, else the rayon CPU kernels
//! let opts = PlanOptions { expected_iterations: 500, ..PlanOptions::default() };
//! let mut plan = SpmvPlan::new(&a, &backend, opts).unwrap();
//! println!("{}", plan.decision()); // the kernel and the tree path that chose it
//! let x = vec![1.0f32; a.cols()];
//! let mut y = vec![0.0f32; a.rows()];
//! for _ in 0..500 {
//!     plan.run(&x, &mut y).unwrap();
//! }
//! ```

use std::cell::OnceCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use augur_datasets::Csr;
use augur_features::spmv::{self as fs, CsrPattern, SpmvFeatures};
use augur_kernels::cpu::{CpuKernel, PreparedSpmv};
use augur_kernels::cuda::gather::GpuGatherer;
use augur_kernels::cuda::{self, CudaSpmv, DeviceCsr, GpuKernel, GpuScalar, Prepared};
use augur_kernels::KernelError;
use augur_models::model::Tier;
use cudarc::driver::CudaSlice;
use serde::Serialize;

use crate::{AugurError, Decision, Selector};

/// One GPU opened for SpMV, with its feature gatherer loaded on first use.
pub struct Gpu {
    pub spmv: CudaSpmv,
    gatherer: OnceCell<GpuGatherer>,
}

impl Gpu {
    fn gatherer(&self) -> Result<&GpuGatherer, KernelError> {
        if let Some(g) = self.gatherer.get() {
            return Ok(g);
        }
        let g = GpuGatherer::new(&self.spmv)?;
        // One-time costs of gathering during an upload, here rather than in the first plan's.
        self.spmv.warm_upload_gathering(&g)?;
        Ok(self.gatherer.get_or_init(|| g))
    }
}

/// Where plans run: the rayon CPU kernels, or one GPU. Cheap to clone (the GPU is shared).
#[derive(Clone)]
pub enum Backend {
    Cpu,
    Cuda(Rc<Gpu>),
}

impl Backend {
    /// The rayon CPU kernels on the current rayon pool.
    pub fn cpu() -> Backend {
        Backend::Cpu
    }

    /// GPU `ordinal` (its SpMV kernels compiled by NVRTC or read from the on-disk cache). On a
    /// machine without CUDA this is a clear "not available" error.
    pub fn cuda(ordinal: usize) -> Result<Backend, AugurError> {
        Ok(Backend::Cuda(Rc::new(Gpu {
            spmv: CudaSpmv::new(ordinal)?,
            gatherer: OnceCell::new(),
        })))
    }

    /// GPU 0 when CUDA and a GPU are present, else the CPU.
    pub fn auto() -> Backend {
        if cuda::available().is_ok() {
            if let Ok(b) = Backend::cuda(0) {
                return b;
            }
        }
        Backend::Cpu
    }

    /// `cpu` or `cuda`, as models name backends.
    pub fn kind(&self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda(_) => "cuda",
        }
    }

    /// The GPU's name, or `cpu (N threads)`.
    pub fn device(&self) -> String {
        match self {
            Backend::Cpu => format!("cpu ({} threads)", rayon::current_num_threads()),
            Backend::Cuda(g) => g.spmv.device.name.clone(),
        }
    }

    pub fn gpu(&self) -> Option<&Rc<Gpu>> {
        match self {
            Backend::Cpu => None,
            Backend::Cuda(g) => Some(g),
        }
    }
}

/// Which features to compute beyond the known ones (shape and nnz) before selecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GatherPolicy {
    /// The model's policy decides from the known features and the expected iteration count.
    #[default]
    Auto,
    /// The exact features (a full pass over the pattern; the gathered tier).
    Always,
    /// The sampled tier only (a bounded cost), never a full pass.
    Sample,
    /// The known features only.
    Never,
}

/// How a plan is made.
#[derive(Clone)]
pub struct PlanOptions {
    /// How many products the plan will run: what setup and gathering costs are weighed against.
    pub expected_iterations: u32,
    pub gather: GatherPolicy,
    /// Use this kernel instead of asking the model (a name of the backend's pool).
    pub kernel: Option<String>,
    /// The selector; `None`: the model built in for the backend.
    pub selector: Option<Arc<Selector>>,
    /// Accept a model file trained on another GPU or precision (see
    /// [`Selector::check_for`]).
    pub allow_other_device: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            expected_iterations: 100,
            gather: GatherPolicy::Auto,
            kernel: None,
            selector: None,
            allow_other_device: false,
        }
    }
}

/// What making a plan cost, seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SetupCost {
    /// Loading the model (the first plan of a process parses the built-in one).
    pub model_s: f64,
    /// Known features (and sampled or gathered ones when the plan computed them); not the
    /// one-time load of the GPU gatherer's kernels, which is `modules_s`, nor a GPU gather,
    /// which runs during the upload (`upload_s`).
    pub features_s: f64,
    /// Loading kernel modules once per GPU and process (the feature gatherer's, on the first plan
    /// that gathers, with the first run of its kernels and the buffers and stream a gather
    /// during an upload uses): 0 when they were already loaded.
    pub modules_s: f64,
    pub select_s: f64,
    /// Copying the matrix to the device (0 on the CPU). A GPU plan that gathers runs the gather
    /// during this copy (on the pattern while the values copy), so its time is in here.
    pub upload_s: f64,
    /// The kernel's own setup (partition, binning, cuSPARSE buffer and preprocessing).
    pub kernel_setup_s: f64,
    pub total_s: f64,
}

/// Identity of a matrix for the plan cache: where its arrays live, its shape, and a checksum
/// of a few dozen entries spread over them (cheap: it is computed on every cached call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MatrixKey {
    ptrs: [usize; 3],
    shape: [usize; 3],
    checksum: u64,
}

impl MatrixKey {
    pub fn of<T: GpuScalar>(a: &Csr<T>) -> MatrixKey {
        let ptr = a.indptr();
        let ptr = ptr.raw_storage();
        let (idx, val) = (a.indices(), a.data());
        const SAMPLES: usize = 16;
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut mix = |v: u64| {
            h ^= v;
            h = h.wrapping_mul(0x0100_0000_01b3);
        };
        for i in 0..SAMPLES.min(ptr.len()) {
            mix(ptr[i * (ptr.len() - 1) / SAMPLES] as u64);
        }
        if !idx.is_empty() {
            for i in 0..SAMPLES {
                let at = i * (idx.len() - 1) / (SAMPLES - 1);
                mix(idx[at] as u64);
                mix(val[at].as_f64().to_bits());
            }
        }
        MatrixKey {
            ptrs: [
                ptr.as_ptr() as usize,
                idx.as_ptr() as usize,
                val.as_ptr() as usize,
            ],
            shape: [a.rows(), a.cols(), a.nnz()],
            checksum: h,
        }
    }
}

/// The CUDA side of a plan: the matrix and two vectors on the device, the kernel set up.
struct CudaExec<T: GpuScalar> {
    gpu: Rc<Gpu>,
    a: DeviceCsr<T>,
    x: CudaSlice<T>,
    y: CudaSlice<T>,
    prepared: Prepared<T>,
}

enum Exec<'a, T: GpuScalar> {
    Cpu(PreparedSpmv<'a, T>),
    Cuda(Box<CudaExec<T>>),
}

/// SpMV `y = A x` for one matrix: features extracted, kernel selected, matrix uploaded and the
/// kernel set up once; [`SpmvPlan::run`] as often as needed.
pub struct SpmvPlan<'a, T: GpuScalar> {
    a: &'a Csr<T>,
    decision: Decision,
    features: SpmvFeatures,
    setup: SetupCost,
    exec: Exec<'a, T>,
}

/// Refuse what 32-bit kernels cannot index. (A [`Csr`] cannot be built that large through sprs'
/// checked constructors, nor read by augur's reader; this guards the rest.)
pub fn check_size<T>(a: &Csr<T>) -> Result<(), AugurError> {
    check_shape(a.rows(), a.cols(), a.nnz())
}

/// [`check_size`] on a shape.
pub fn check_shape(rows: usize, cols: usize, nnz: usize) -> Result<(), AugurError> {
    let max = i32::MAX as usize;
    let what = if rows > max {
        "rows"
    } else if cols > max {
        "columns"
    } else if nnz > max {
        "entries"
    } else {
        return Ok(());
    };
    Err(AugurError::TooLarge {
        what,
        rows,
        cols,
        nnz,
    })
}

impl<'a, T: GpuScalar> SpmvPlan<'a, T> {
    /// Make a plan for `a` on `backend`: known features, then (when the policy or `opts` say
    /// so) the gathered ones, the model's choice, the upload and the kernel's setup.
    pub fn new(
        a: &'a Csr<T>,
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<SpmvPlan<'a, T>, AugurError> {
        let t0 = Instant::now();
        check_size(a)?;
        let k = opts.expected_iterations.max(1);
        let mut setup = SetupCost::default();
        let pattern = CsrPattern::of(a);

        // Which selector, and does it fit here?
        let t = Instant::now();
        let (selector, mut notes) = if opts.kernel.is_some() {
            (None, Vec::new())
        } else {
            let (s, note) = match &opts.selector {
                Some(s) => (s.clone(), None),
                None => Selector::builtin_for(backend.kind(), &backend.device())?,
            };
            let mut notes = s.check_for(
                backend.kind(),
                &backend.device(),
                T::NAME,
                opts.allow_other_device,
            )?;
            notes.extend(note);
            (Some(s), notes)
        };
        setup.model_s = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let mut features = fs::known(pattern);
        let tier = match (&selector, opts.gather) {
            (None, GatherPolicy::Auto) | (_, GatherPolicy::Never) => Tier::Known,
            (_, GatherPolicy::Always) => Tier::Gathered,
            (_, GatherPolicy::Sample) => Tier::Sampled,
            (Some(s), GatherPolicy::Auto) => s.tier_for(&features, k),
        };
        if tier == Tier::Sampled {
            fs::sample_into(pattern, &mut features);
        }
        let gather = tier == Tier::Gathered;
        setup.features_s = t.elapsed().as_secs_f64();

        // Upload first on a GPU: the device gatherer reads the uploaded pattern.
        let device = match backend {
            Backend::Cpu => {
                if gather {
                    let t = Instant::now();
                    features = fs::CpuGatherer.exact(pattern);
                    setup.features_s += t.elapsed().as_secs_f64();
                }
                None
            }
            Backend::Cuda(g) => {
                let da = if gather {
                    let t = Instant::now();
                    let gatherer = g.gatherer()?;
                    setup.modules_s = t.elapsed().as_secs_f64();
                    // The gather runs on the pattern while the values copy: its cost is
                    // inside `upload_s`, and only what does not fit under the copy is extra.
                    let t = Instant::now();
                    let (da, sums) = g.spmv.upload_gathering(a, gatherer)?;
                    g.spmv.stream().synchronize().map_err(cuda_err)?;
                    setup.upload_s = t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    features = fs::exact_features(pattern, &sums);
                    setup.features_s += t.elapsed().as_secs_f64();
                    da
                } else {
                    let t = Instant::now();
                    let da = g.spmv.upload(a)?;
                    g.spmv.stream().synchronize().map_err(cuda_err)?;
                    setup.upload_s = t.elapsed().as_secs_f64();
                    da
                };
                Some((g.clone(), da))
            }
        };

        let t = Instant::now();
        let mut decision = match (&opts.kernel, &selector) {
            (Some(name), _) => Decision::forced(name, k),
            (None, Some(s)) => s.select(&features, k),
            (None, None) => unreachable!("a selector is loaded when no kernel is forced"),
        };
        decision.notes.append(&mut notes);
        setup.select_s = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let exec = match device {
            None => {
                let kernel = CpuKernel::from_name(&decision.kernel)?;
                Exec::Cpu(kernel.prepare(a))
            }
            Some((gpu, da)) => {
                let kernel = GpuKernel::from_name(&decision.kernel)?;
                if matches!(kernel, GpuKernel::Cusparse { .. })
                    && !augur_kernels::cuda::cusparse::available()
                {
                    return Err(AugurError::Invalid(format!(
                        "kernel {} needs libcusparse, which is not installed here; force another \
                         kernel (PlanOptions::kernel)",
                        decision.kernel
                    )));
                }
                let s = &gpu.spmv;
                let x = s.htod(&vec![T::zero(); a.cols()])?;
                let mut y = s.htod(&vec![T::zero(); a.rows()])?;
                let prepared = s.prepare(kernel, &da, &x, &mut y)?;
                s.stream().synchronize().map_err(cuda_err)?;
                Exec::Cuda(Box::new(CudaExec {
                    gpu,
                    a: da,
                    x,
                    y,
                    prepared,
                }))
            }
        };
        setup.kernel_setup_s = t.elapsed().as_secs_f64();
        setup.total_s = t0.elapsed().as_secs_f64();
        Ok(SpmvPlan {
            a,
            decision,
            features,
            setup,
            exec,
        })
    }

    /// The kernel and why it was chosen.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// The features the choice read (gathered ones NaN when not gathered).
    pub fn features(&self) -> &SpmvFeatures {
        &self.features
    }

    pub fn setup(&self) -> &SetupCost {
        &self.setup
    }

    pub fn matrix(&self) -> &'a Csr<T> {
        self.a
    }

    /// `y = A x` with host vectors (on a GPU: x copied in, y copied out, synchronised).
    pub fn run(&mut self, x: &[T], y: &mut [T]) -> Result<(), AugurError> {
        augur_kernels::error::check_dims(self.a.rows(), self.a.cols(), x.len(), y.len())?;
        match &mut self.exec {
            Exec::Cpu(p) => p.run(x, y)?,
            Exec::Cuda(c) => {
                let s = c.gpu.spmv.stream();
                if !x.is_empty() {
                    s.memcpy_htod(x, &mut c.x).map_err(cuda_err)?;
                }
                c.gpu.spmv.launch(&mut c.prepared, &c.a, &c.x, &mut c.y)?;
                if !y.is_empty() {
                    s.memcpy_dtoh(&c.y, y).map_err(cuda_err)?;
                }
                s.synchronize().map_err(cuda_err)?;
            }
        }
        Ok(())
    }

    /// GPU plans: the plan's own device vectors `(x, y)`, to fill x or read y without a host
    /// round trip per product (e.g. y becomes the next x). `None` on the CPU.
    pub fn device_vectors(&mut self) -> Option<(&mut CudaSlice<T>, &mut CudaSlice<T>)> {
        match &mut self.exec {
            Exec::Cpu(_) => None,
            Exec::Cuda(c) => Some((&mut c.x, &mut c.y)),
        }
    }

    /// The CUDA side of a GPU plan; on the CPU, an error saying that `what` needs a GPU plan.
    fn cuda(&mut self, what: &str) -> Result<&mut CudaExec<T>, AugurError> {
        match &mut self.exec {
            Exec::Cpu(_) => Err(AugurError::Invalid(format!(
                "SpmvPlan::{what} runs on device vectors; a CPU plan has none: use run"
            ))),
            Exec::Cuda(c) => Ok(c),
        }
    }

    /// GPU plans: enqueue `y = A x` on the plan's device vectors, without synchronising.
    pub fn launch(&mut self) -> Result<(), AugurError> {
        let c = self.cuda("launch")?;
        Ok(c.gpu.spmv.launch(&mut c.prepared, &c.a, &c.x, &mut c.y)?)
    }

    /// GPU plans: enqueue `y = A x` from another device x (length checked) into the plan's y.
    pub fn launch_from(&mut self, x: &CudaSlice<T>) -> Result<(), AugurError> {
        let c = self.cuda("launch_from")?;
        Ok(c.gpu.spmv.launch(&mut c.prepared, &c.a, x, &mut c.y)?)
    }

    /// The GPU a plan runs on.
    pub fn gpu(&self) -> Option<&Rc<Gpu>> {
        match &self.exec {
            Exec::Cpu(_) => None,
            Exec::Cuda(c) => Some(&c.gpu),
        }
    }

    /// Wait for everything enqueued on the plan's GPU (no-op on the CPU).
    pub fn synchronize(&self) -> Result<(), AugurError> {
        if let Exec::Cuda(c) = &self.exec {
            c.gpu.spmv.stream().synchronize().map_err(cuda_err)?;
        }
        Ok(())
    }
}

pub(crate) fn cuda_err(e: cudarc::driver::DriverError) -> AugurError {
    AugurError::Kernel(KernelError::Cuda(e.to_string()))
}

/// Plans cached by matrix identity ([`MatrixKey`]): the first call with a matrix makes its
/// plan, later calls with the same matrix reuse it.
pub struct Dispatcher<'a, T: GpuScalar> {
    backend: Backend,
    options: PlanOptions,
    plans: HashMap<MatrixKey, SpmvPlan<'a, T>>,
    /// Calls that found their plan, and that made one.
    pub hits: u64,
    pub misses: u64,
}

impl<'a, T: GpuScalar> Dispatcher<'a, T> {
    pub fn new(backend: Backend, options: PlanOptions) -> Self {
        Dispatcher {
            backend,
            options,
            plans: HashMap::new(),
            hits: 0,
            misses: 0,
        }
    }

    /// The plan for `a`, made on first use.
    pub fn plan(&mut self, a: &'a Csr<T>) -> Result<&mut SpmvPlan<'a, T>, AugurError> {
        use std::collections::hash_map::Entry;
        match self.plans.entry(MatrixKey::of(a)) {
            Entry::Occupied(e) => {
                self.hits += 1;
                Ok(e.into_mut())
            }
            Entry::Vacant(v) => {
                self.misses += 1;
                let p = SpmvPlan::new(a, &self.backend, self.options.clone())?;
                Ok(v.insert(p))
            }
        }
    }

    /// `y = A x` through the cached plan of `a`.
    pub fn spmv(&mut self, a: &'a Csr<T>, x: &[T], y: &mut [T]) -> Result<(), AugurError> {
        self.plan(a)?.run(x, y)
    }

    /// Drop the plan of `a` (its device memory with it).
    pub fn forget(&mut self, a: &Csr<T>) -> bool {
        self.plans.remove(&MatrixKey::of(a)).is_some()
    }

    pub fn len(&self) -> usize {
        self.plans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plans.is_empty()
    }
}
