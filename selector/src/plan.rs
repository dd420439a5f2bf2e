//! [`SpmvPlan`]: select once, set up once, run many times; [`Dispatcher`]: plans cached by matrix
//! identity, so repeated calls with the same matrix reuse the setup.
//!
//! ```no_run
//! use augur::{Backend, PlanOptions, SpmvPlan};
//! let spec = augur::datasets::generate::Generator::parse("stencil2d:nx=500").unwrap();
//! let a = spec.generate::<f32>().unwrap();
//! let backend = Backend::auto(); // CUDA when a GPU is present, else the rayon CPU kernels
//! let opts = PlanOptions::default().expected_iterations(500);
//! let mut plan = SpmvPlan::new(&a, &backend, opts).unwrap();
//! println!("{}", plan.decision()); // the kernel and the tree path that chose it
//! let x = vec![1.0f32; a.cols()];
//! let mut y = vec![0.0f32; a.rows()];
//! for _ in 0..500 {
//!     plan.run(&x, &mut y).unwrap();
//! }
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use augur_datasets::{Csr, CsrRef};
use augur_features::spmv::{self as fs, CsrPattern, PassOn, SpmvFeatures};
use augur_kernels::cuda::GpuScalar;
use augur_kernels::device::{
    BackendKind, Device, DeviceKernel, DeviceMatrix, DeviceVec, SpmvDevice,
};
use augur_models::model::Tier;
use serde::Serialize;

use crate::{AugurError, Decision, Selector};

/// Where plans run: the rayon CPU kernels or one GPU, through augur-kernels' one device seam
/// ([`Device`]). Cheap to clone (a GPU is shared, with its loaded kernels and gatherer).
#[derive(Clone, Debug)]
pub struct Backend(Device);

impl Backend {
    /// The rayon CPU kernels on the current rayon pool.
    pub fn cpu() -> Backend {
        Backend(Device::cpu())
    }

    /// GPU `ordinal` (its SpMV kernels compiled by NVRTC or read from the on-disk cache). On a
    /// machine without CUDA this is a clear "not available" error.
    pub fn cuda(ordinal: usize) -> Result<Backend, AugurError> {
        Ok(Backend(Device::cuda(ordinal)?))
    }

    /// AMD GPU `ordinal` through HIP (feature `hip`; the portable kernel pool compiled by
    /// hiprtc; not yet run on AMD hardware). Without ROCm, an AMD GPU or the feature: a clear
    /// "not available".
    pub fn hip(ordinal: usize) -> Result<Backend, AugurError> {
        Ok(Backend(Device::hip(ordinal)?))
    }

    /// GPU 0 when CUDA and a GPU are present, else the CPU.
    pub fn auto() -> Backend {
        Backend(Device::auto())
    }

    /// `cpu`, `cuda` or `hip`, as models name backends.
    pub fn kind(&self) -> &'static str {
        self.0.kind().name()
    }

    /// The GPU's name, or `cpu (N threads)`.
    pub fn device(&self) -> String {
        SpmvDevice::name(&self.0)
    }

    /// The device under this backend: to make vectors for [`SpmvPlan::launch_from`], read
    /// them, synchronise, time.
    /// A device already opened (e.g. a second handle of a GPU on another stream).
    pub(crate) fn from_device(d: Device) -> Backend {
        Backend(d)
    }

    pub fn as_device(&self) -> &Device {
        &self.0
    }
}

impl From<Device> for Backend {
    fn from(d: Device) -> Backend {
        Backend(d)
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
#[non_exhaustive]
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

/// Builder-style setters (the struct is `#[non_exhaustive]`: start from the default and set
/// what differs, so new options do not break callers).
impl PlanOptions {
    /// Sets [`PlanOptions::expected_iterations`].
    pub fn expected_iterations(mut self, v: u32) -> Self {
        self.expected_iterations = v;
        self
    }

    /// Sets [`PlanOptions::gather`].
    pub fn gather(mut self, v: GatherPolicy) -> Self {
        self.gather = v;
        self
    }

    /// Sets [`PlanOptions::kernel`].
    pub fn kernel(mut self, v: impl Into<String>) -> Self {
        self.kernel = Some(v.into());
        self
    }

    /// Sets [`PlanOptions::selector`].
    pub fn selector(mut self, v: Arc<Selector>) -> Self {
        self.selector = Some(v);
        self
    }

    /// Sets [`PlanOptions::allow_other_device`].
    pub fn allow_other_device(mut self, v: bool) -> Self {
        self.allow_other_device = v;
        self
    }
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
    /// Making the matrix available to the kernels: copying it to the device. A GPU plan that
    /// gathers runs the gather during this copy (on the pattern while the values copy), so its
    /// time is in here; on the CPU there is no copy, and this is the gather of a plan that
    /// gathers (0 otherwise).
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

/// SpMV `y = A x` for one matrix: features extracted, kernel selected, matrix uploaded and the
/// kernel set up once; [`SpmvPlan::run`] as often as needed.
pub struct SpmvPlan<'a, T: GpuScalar> {
    /// The host arrays (None: a matrix that was only in GPU memory).
    a: Option<CsrRef<'a, T>>,
    /// Rows, columns, entries.
    shape: (usize, usize, usize),
    decision: Decision,
    features: SpmvFeatures,
    setup: SetupCost,
    device: Device,
    m: DeviceMatrix<'a, T>,
    /// The plan's own vectors (host vectors on the CPU).
    x: DeviceVec<T>,
    y: DeviceVec<T>,
    kernel: DeviceKernel<T>,
}

/// Refuse what 32-bit kernels cannot index. (A [`Csr`] cannot be built that large through sprs'
/// checked constructors, nor read by augur's reader; this guards the rest.)
pub fn check_size<T>(a: &Csr<T>) -> Result<(), AugurError> {
    check_proper(a)?;
    check_shape(a.rows(), a.cols(), a.nnz())
}

/// Refuse row pointers that do not start at 0: sprs keeps a row slice's offset in an owned copy
/// of it (`a.slice_outer(r).to_owned()`), which every kernel here would misread.
pub fn check_proper<T>(a: &Csr<T>) -> Result<(), AugurError> {
    let ptr = a.indptr();
    if ptr.is_proper() {
        return Ok(());
    }
    Err(AugurError::Invalid(format!(
        "the matrix's row pointers start at {}, not 0 (sprs keeps a row slice's offset in an \
         owned copy of it): rebuild it with `indptr().to_proper()`",
        ptr.raw_storage().first().copied().unwrap_or(0)
    )))
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

/// Entries (or rows) from which a plan checks or samples a host matrix while it uploads; rows
/// from which it computes the gathered tier's row statistics while it uploads. Below, the work
/// runs on the calling thread before the upload: handing it to a sleeping worker costs this
/// thread 1-17 us on the GPU machines' hosts and the worker starts 8-60 us later, while the
/// sample costs 13-65 us and the row pass 1-3 ns per row (`examples/handoff.rs`, 2026-11-27).
pub(crate) const OVERLAP_MIN_NNZ: usize = 1 << 13;

fn not_canonical((rows, cols, nnz): (usize, usize, usize)) -> AugurError {
    AugurError::NotCanonical { rows, cols, nnz }
}

#[cfg(test)]
thread_local! {
    /// Tests: plans made on this thread treat a CPU upload as one that hides host work, so that
    /// the path taken beside a GPU upload runs without a GPU.
    pub(crate) static CPU_HIDES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn cpu_hides() -> bool {
    CPU_HIDES.with(|c| c.get())
}

#[cfg(not(test))]
fn cpu_hides() -> bool {
    false
}

/// What a plan made from a host matrix does on the host beside its upload.
pub(crate) struct HostWork<'f> {
    /// The arrays are known canonical (else they are checked).
    pub checked: bool,
    /// The sampled tier: the pattern to sample, and the known features to complete.
    pub sample: Option<(CsrPattern<'f>, &'f SpmvFeatures)>,
    /// The gathered tier's row-length statistics, on the host from the row pointers alone
    /// (`spmv::row_features`, on the rayon pool): for a selector whose gathered trees read no
    /// column statistics.
    pub rows: Option<CsrPattern<'f>>,
}

/// The upload of a host matrix with its host work (`HostWork`): on a rayon worker beside the
/// upload from [`OVERLAP_MIN_NNZ`] entries or rows (the choice it informs is made after the
/// upload, and the upload needs no more than the arrays), before it below or on the CPU.
/// Returns the uploaded matrix, the sampled features, and the seconds this thread spent on the
/// host work: the work itself, or the hand-off and the wait after the upload. Arrays that are not canonical are
/// [`AugurError::NotCanonical`], and no kernel has seen them.
pub(crate) fn upload_with_host_work<'a, T: GpuScalar>(
    device: &Device,
    a: CsrRef<'a, T>,
    work: HostWork<'_>,
) -> Result<(DeviceMatrix<'a, T>, Option<SpmvFeatures>, f64), AugurError> {
    let shape = (a.rows(), a.cols(), a.nnz());
    // A CPU "upload" borrows the arrays: there is nothing to hide the work behind.
    let hides = device.kind() != BackendKind::Cpu || cpu_hides();
    let inline = !hides
        || if work.checked && work.sample.is_none() {
            work.rows.is_none() || shape.0 < OVERLAP_MIN_NNZ
        } else {
            shape.0.max(shape.2) < OVERLAP_MIN_NNZ
        };
    let host = || {
        let ok = work.checked || a.is_canonical();
        let sampled = work.sample.filter(|_| ok).map(|(p, known)| {
            let mut f = known.clone();
            fs::sample_into(p, &mut f);
            f
        });
        // On a worker beside the upload (or for a CPU plan) the pass may spread over the pool;
        // before an upload it stays on this thread (waking the pool costs more than a small
        // pass).
        let on = if inline && hides {
            PassOn::Caller
        } else {
            PassOn::Pool
        };
        let gathered = work.rows.filter(|_| ok).map(|p| fs::row_features_on(p, on));
        (ok, sampled.or(gathered))
    };
    let t0 = Instant::now();
    if inline {
        let (ok, sampled) = host();
        let host_s = t0.elapsed().as_secs_f64();
        if !ok {
            return Err(not_canonical(shape));
        }
        return Ok((device.upload(a)?, sampled, host_s));
    }
    let (done, (m, start, end)) = crate::beside::beside(host, || {
        let start = Instant::now();
        let m = device.upload(a);
        (m, start, Instant::now())
    });
    let host_s = (start - t0).as_secs_f64() + end.elapsed().as_secs_f64();
    let (ok, sampled) = done.unwrap_or_else(|p| std::panic::resume_unwind(p));
    if !ok {
        return Err(not_canonical(shape));
    }
    Ok((m?, sampled, host_s))
}

/// Where a plan's matrix comes from.
enum Source<'a, T> {
    /// Host arrays, and whether they are known canonical (else checked before any kernel can
    /// read them, while they upload where the matrix is large).
    Host(CsrRef<'a, T>, bool),
    Cuda {
        shape: (usize, usize, usize),
        ptrs: (u64, u64, u64),
        stream: Option<u64>,
    },
}

impl<'a, T: GpuScalar> SpmvPlan<'a, T> {
    /// Make a plan for `a` on `backend`: known features, then (when the policy or `opts` say
    /// so) the gathered ones, the model's choice, the upload and the kernel's setup.
    pub fn new(
        a: &'a Csr<T>,
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<SpmvPlan<'a, T>, AugurError> {
        check_proper(a)?;
        SpmvPlan::from_ref(a.into(), backend, opts)
    }

    /// [`SpmvPlan::new`] for CSR arrays borrowed from wherever they live (checked by
    /// [`CsrRef::try_new`]): no copy on the host; a GPU plan reads them only while it is made
    /// (the upload), a CPU plan at every product.
    pub fn from_ref(
        a: CsrRef<'a, T>,
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<SpmvPlan<'a, T>, AugurError> {
        SpmvPlan::build(Source::Host(a, true), backend, opts)
    }

    /// [`SpmvPlan::from_ref`] for CSR arrays not checked yet: `indptr` (rows + 1 entries),
    /// `indices` and `data` (nnz each), checked as [`CsrRef::try_new`] does, but on another core
    /// while they upload (on a large matrix the check then costs nothing; a GPU kernel never sees
    /// them unchecked). Arrays that are not canonical CSR (unsorted or repeated columns included)
    /// are [`AugurError::NotCanonical`]: [`augur_datasets::csr_from_arrays`] sorts and sums
    /// those, or names the bad entry.
    pub fn from_arrays(
        shape: (usize, usize),
        indptr: &'a [i32],
        indices: &'a [i32],
        data: &'a [T],
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<SpmvPlan<'a, T>, AugurError> {
        // SAFETY: `build` checks them before any kernel runs (Source::Host(_, false)).
        let a = unsafe { CsrRef::new_unchecked(shape, indptr, indices, data) };
        SpmvPlan::build(Source::Host(a, false), backend, opts)
    }

    /// A plan for a matrix already in CUDA memory (a CuPy or PyTorch CSR matrix, a C caller's
    /// device arrays): `rows + 1` row pointers, `nnz` int32 column indices and values of T at
    /// those device addresses, copied on the device in order with the caller's `stream` (as
    /// [`SpmvPlan::launch_cuda`]). Its features are the known ones or gathered on the device
    /// (there is no host pattern to sample: a sampled tier is read as gathered, with a note).
    ///
    /// # Safety
    /// The addresses must be device allocations of the plan's GPU holding that many elements, a
    /// valid CSR structure (the row pointers' ends are checked; column indices out of range
    /// fault the GPU); `stream` a live stream of that GPU.
    pub unsafe fn from_cuda_csr(
        shape: (usize, usize, usize),
        ptrs: (u64, u64, u64),
        stream: Option<u64>,
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<SpmvPlan<'static, T>, AugurError> {
        SpmvPlan::build(
            Source::Cuda {
                shape,
                ptrs,
                stream,
            },
            backend,
            opts,
        )
    }

    fn build(
        src: Source<'a, T>,
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<SpmvPlan<'a, T>, AugurError>
    where
        T: 'a,
    {
        let t0 = Instant::now();
        let (host, checked, shape) = match &src {
            Source::Host(a, checked) => (Some(*a), *checked, (a.rows(), a.cols(), a.nnz())),
            Source::Cuda { shape, .. } => (None, true, *shape),
        };
        check_shape(shape.0, shape.1, shape.2)?;
        let k = opts.expected_iterations.max(1);
        let mut setup = SetupCost::default();
        let pattern = host.map(CsrPattern::of);

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
        let mut features = fs::known_shape(shape.0, shape.1, shape.2);
        let mut tier = match (&selector, opts.gather) {
            (None, GatherPolicy::Auto) | (_, GatherPolicy::Never) => Tier::Known,
            (_, GatherPolicy::Always) => Tier::Gathered,
            (_, GatherPolicy::Sample) => Tier::Sampled,
            (Some(s), GatherPolicy::Auto) => s.tier_for(&features, k),
        };
        match pattern {
            None if tier == Tier::Sampled => {
                tier = Tier::Gathered;
                notes.push(
                    "the matrix is in GPU memory only: no host pattern to sample, its features \
                     were gathered on the device instead"
                        .into(),
                );
            }
            _ => {}
        }
        // The gathered tier of a selector whose gathered trees read the row lengths only, for a
        // host matrix: the row pointers on the host beside the upload (rows x 4 bytes) rather
        // than both passes on the device during it.
        let rows_only = tier == Tier::Gathered
            && pattern.is_some()
            && selector
                .as_ref()
                .is_some_and(|s| !s.model().gathered_reads_columns());
        let gather = tier == Tier::Gathered && !rows_only;
        // Host work on the arrays: the check of unchecked ones, the sample of the sampled tier.
        // On a large matrix it runs on another core while the matrix uploads (it needs only the
        // host arrays, and the choice it informs is made after the upload); a gather during the
        // upload reads the arrays on the GPU, so they are checked before it.
        let sample = pattern.filter(|_| tier == Tier::Sampled);
        if let (Some(a), true) = (host, gather && !checked) {
            if !a.is_canonical() {
                return Err(not_canonical(shape));
            }
        }
        setup.features_s = t.elapsed().as_secs_f64();

        // Upload first: a GPU's gatherer reads the uploaded pattern (during the upload).
        let device = backend.as_device();
        if gather {
            let t = Instant::now();
            device.prepare_gather()?;
            setup.modules_s = t.elapsed().as_secs_f64();
        }
        let t = Instant::now();
        // What this thread spent on the host work during the upload phase (not the upload's).
        let mut host_s = 0.0;
        let (m, sums) = match (src, gather) {
            (Source::Host(a, _), true) => {
                let (m, sums) = device.upload_gathering(a)?;
                (m, Some(sums))
            }
            (Source::Host(a, _), false) => {
                let work = HostWork {
                    checked,
                    sample: sample.map(|p| (p, &features)),
                    rows: pattern.filter(|_| rows_only),
                };
                let (m, sampled, s) = upload_with_host_work(device, a, work)?;
                host_s = s;
                if let Some(f) = sampled {
                    features = f;
                }
                (m, None)
            }
            (
                Source::Cuda {
                    shape,
                    ptrs,
                    stream,
                },
                _,
            ) => {
                // SAFETY: from_cuda_csr's contract, passed on.
                let m = unsafe { device.adopt_cuda_csr(shape, ptrs, stream) }?;
                let sums = if gather {
                    Some(device.gather(&m)?)
                } else {
                    None
                };
                (m, sums)
            }
        };
        device.synchronize()?;
        setup.upload_s = t.elapsed().as_secs_f64() - host_s;
        setup.features_s += host_s;
        if let Some(sums) = sums {
            let t = Instant::now();
            features = fs::exact_features_shape(shape, &sums);
            setup.features_s += t.elapsed().as_secs_f64();
        }

        let t = Instant::now();
        let mut decision = match (&opts.kernel, &selector) {
            (Some(name), _) => Decision::forced(name, k),
            (None, Some(s)) => s.select(&features, k),
            (None, None) => unreachable!("a selector is loaded when no kernel is forced"),
        };
        decision.notes.append(&mut notes);
        setup.select_s = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let x = device.zeros(shape.1)?;
        let mut y = device.zeros(shape.0)?;
        let kernel = device.prepare(&decision.kernel, &m, &x, &mut y)?;
        device.synchronize()?;
        setup.kernel_setup_s = t.elapsed().as_secs_f64();
        setup.total_s = t0.elapsed().as_secs_f64();
        Ok(SpmvPlan {
            a: host,
            shape,
            decision,
            features,
            setup,
            device: device.clone(),
            m,
            x,
            y,
            kernel,
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

    /// The matrix the plan was made for (its host arrays, where they live; None for a plan
    /// made from GPU memory).
    pub fn matrix(&self) -> Option<CsrRef<'a, T>> {
        self.a
    }

    /// Rows, columns and stored entries.
    pub fn shape(&self) -> (usize, usize, usize) {
        self.shape
    }

    /// `y = A x` with host vectors (on a GPU: x copied in, y copied out, synchronised; on the
    /// CPU straight from x into y).
    pub fn run(&mut self, x: &[T], y: &mut [T]) -> Result<(), AugurError> {
        augur_kernels::error::check_dims(self.shape.0, self.shape.1, x.len(), y.len())?;
        let vectors = (&mut self.x, &mut self.y);
        Ok(self
            .device
            .run_host(&mut self.kernel, &self.m, vectors, x, y)?)
    }

    /// The plan's own vectors `(x, y)` on its device (host vectors on the CPU), to fill x or
    /// read y without a host round trip per product (e.g. y becomes the next x:
    /// [`SpmvPlan::swap_xy`]); read and write them through [`SpmvPlan::device`].
    pub fn vectors(&mut self) -> (&mut DeviceVec<T>, &mut DeviceVec<T>) {
        (&mut self.x, &mut self.y)
    }

    /// Copy `x` into the plan's x (enqueued on a GPU).
    pub fn write_x(&mut self, x: &[T]) -> Result<(), AugurError> {
        Ok(self.device.write(x, &mut self.x)?)
    }

    /// Copy the plan's y into `y` (ready when this returns).
    pub fn read_y(&self, y: &mut [T]) -> Result<(), AugurError> {
        Ok(self.device.read(&self.y, y)?)
    }

    /// Exchange the plan's x and y (square matrices: the last product becomes the next x).
    pub fn swap_xy(&mut self) -> Result<(), AugurError> {
        Ok(self.x.swap(&mut self.y)?)
    }

    /// Enqueue `y = A x` on the plan's own vectors, without synchronising (the CPU computes it
    /// at once).
    pub fn launch(&mut self) -> Result<(), AugurError> {
        Ok(self
            .device
            .launch(&mut self.kernel, &self.m, &self.x, &mut self.y)?)
    }

    /// Enqueue `y = A x` from another vector x of the plan's device (length checked) into the
    /// plan's y.
    pub fn launch_from(&mut self, x: &DeviceVec<T>) -> Result<(), AugurError> {
        Ok(self
            .device
            .launch(&mut self.kernel, &self.m, x, &mut self.y)?)
    }

    /// [`SpmvPlan::launch_from`] with a CUDA buffer of the plan's GPU (MultiGpuSpmv's shared x).
    pub(crate) fn launch_from_cuda(
        &mut self,
        x: &cudarc::driver::CudaSlice<T>,
    ) -> Result<(), AugurError> {
        let (Some(gpu), Some(m), Some(k), Some(y)) = (
            self.device.as_cuda(),
            self.m.as_cuda(),
            self.kernel.as_cuda_mut(),
            self.y.as_cuda_mut(),
        ) else {
            return Err(AugurError::Invalid(
                "a CUDA vector given to a plan of another backend".into(),
            ));
        };
        Ok(gpu.launch(k, m, x, y)?)
    }

    /// Enqueue `y = A x` on CUDA memory the caller owns (device addresses on the plan's GPU:
    /// from DLPack, `__cuda_array_interface__` or C), in order with the caller's `stream` (a
    /// CUstream of the GPU's primary context, `0` for the legacy default stream): after the work
    /// already on it, before the work enqueued on it next. Nothing is copied and the host does
    /// not wait. `None`: ordered on the plan's own stream only ([`SpmvPlan::synchronize`]).
    ///
    /// # Safety
    /// `x` must hold `cols` and `y` `rows` values of T, not overlap, and stay allocated until
    /// the product has run; `stream` must be a live stream of the plan's GPU. (Whether the
    /// addresses are device memory of that GPU is checked.)
    pub unsafe fn launch_cuda(
        &mut self,
        x: u64,
        y: u64,
        stream: Option<u64>,
    ) -> Result<(), AugurError> {
        let (Some(gpu), Some(m), Some(k)) = (
            self.device.as_cuda(),
            self.m.as_cuda(),
            self.kernel.as_cuda_mut(),
        ) else {
            return Err(AugurError::Invalid(format!(
                "device pointers given to a plan on the {} backend (CUDA only)",
                self.device.kind().name()
            )));
        };
        // SAFETY: the caller's promise, passed on.
        Ok(unsafe { gpu.launch_external(k, m, (x, y), stream) }?)
    }

    /// The device a plan runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Wait for everything enqueued on the plan's device.
    pub fn synchronize(&self) -> Result<(), AugurError> {
        Ok(self.device.synchronize()?)
    }
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
