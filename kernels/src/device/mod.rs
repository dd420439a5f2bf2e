//! The one SpMV device interface (candle / Ginkgo style): every backend implements
//! [`SpmvDevice`] (pattern upload, kernel setup, launch on device vectors, timing, the feature
//! gatherer), and [`Device`] picks one at run time. Everything above this crate (plans,
//! multi-GPU, collect, check, bench) goes through it, so adding a backend means implementing the
//! trait and one arm of [`Device`].
//!
//! Capabilities a backend may lack have default methods that return
//! [`KernelError::Unsupported`] naming the backend and the capability.
//!
//! ```
//! use augur_kernels::device::{Device, SpmvDevice};
//! let a = augur_datasets::generate::Generator::parse("stencil2d:nx=20")
//!     .unwrap()
//!     .generate::<f64>()
//!     .unwrap();
//! let dev = Device::cpu(); // Device::cuda(0) on a GPU: the same calls
//! let m = dev.upload(&a).unwrap();
//! let x = dev.vector(&vec![1.0; a.cols()]).unwrap();
//! let mut y = dev.zeros::<f64>(a.rows()).unwrap();
//! let mut k = dev.prepare("merge-path", &m, &x, &mut y).unwrap();
//! dev.launch(&mut k, &m, &x, &mut y).unwrap();
//! let mut out = vec![0.0; a.rows()];
//! dev.read(&y, &mut out).unwrap();
//! dev.synchronize().unwrap();
//! assert_eq!(out[0], a.outer_view(0).unwrap().data().iter().sum::<f64>());
//! ```

mod any;
mod cpu;
mod cuda;

use std::time::Instant;

use augur_datasets::{Csr, CsrRef};
use augur_features::spmv::RowSums;

use crate::cuda::GpuScalar;
pub use crate::cuda::{ModeTimes, TimingPlan};
use crate::KernelError;
pub use any::{Device, DeviceKernel, DeviceMatrix, DeviceVec};
pub use cpu::CpuDevice;

/// Which implementation of [`SpmvDevice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// The rayon CPU kernels.
    Cpu,
    /// One NVIDIA GPU (the NVRTC-compiled pool and cuSPARSE).
    Cuda,
    /// One AMD GPU (the same pool compiled by hiprtc; feature `hip`; not yet run on AMD
    /// hardware).
    Hip,
}

impl BackendKind {
    /// `cpu` or `cuda`, as models and runs files name backends.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::Hip => "hip",
        }
    }
}

/// What one backend does for SpMV. The associated types are where that backend keeps a matrix,
/// a vector and a kernel set up for one matrix; [`Device`] wraps them in opaque types.
///
/// Work may be enqueued (a GPU) or done at once (the CPU): [`SpmvDevice::read`] and
/// [`SpmvDevice::synchronize`] are where results are ready on the host.
pub trait SpmvDevice {
    /// A matrix in this backend's memory (the CPU borrows the caller's).
    type Matrix<'a, T: GpuScalar + 'a>;
    /// A vector in this backend's memory.
    type Vector<T: GpuScalar>;
    /// A kernel set up for one matrix and its vectors.
    type Kernel<T: GpuScalar>;

    fn kind(&self) -> BackendKind;
    /// The device as people know it: the GPU's name, or `cpu (N threads)`.
    fn name(&self) -> String;
    /// The kernels [`SpmvDevice::prepare`] takes by name (vendor-library ones only where the
    /// library loads).
    fn kernel_names(&self) -> Vec<&'static str>;

    /// Make `a` available to this backend's kernels (a copy to the device on a GPU).
    fn upload<'a, T: GpuScalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
    ) -> Result<Self::Matrix<'a, T>, KernelError>;

    /// The exact feature sums of an uploaded matrix, computed where it lives.
    fn gather<T: GpuScalar>(&self, _a: &Self::Matrix<'_, T>) -> Result<RowSums, KernelError> {
        Err(unsupported(self.kind(), "gathering features"))
    }

    /// One-time setup of [`SpmvDevice::gather`] (loading its kernels); a no-op once done, and
    /// where nothing needs loading.
    fn prepare_gather(&self) -> Result<(), KernelError> {
        Ok(())
    }

    /// [`SpmvDevice::upload`] and [`SpmvDevice::gather`] together; a GPU overlaps the gather
    /// with the copy of the values.
    fn upload_gathering<'a, T: GpuScalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
    ) -> Result<(Self::Matrix<'a, T>, RowSums), KernelError> {
        let m = self.upload(a)?;
        let sums = self.gather(&m)?;
        Ok((m, sums))
    }

    /// A vector holding `host`.
    fn vector<T: GpuScalar>(&self, host: &[T]) -> Result<Self::Vector<T>, KernelError>;
    /// A vector of `n` zeros.
    fn zeros<T: GpuScalar>(&self, n: usize) -> Result<Self::Vector<T>, KernelError> {
        self.vector(&vec![T::zero(); n])
    }
    fn len<T: GpuScalar>(&self, v: &Self::Vector<T>) -> usize;
    /// Overwrite `v` with `host` (same length).
    fn write<T: GpuScalar>(&self, host: &[T], v: &mut Self::Vector<T>) -> Result<(), KernelError>;
    /// Copy `v` into `host` (same length); ready when this returns.
    fn read<T: GpuScalar>(&self, v: &Self::Vector<T>, host: &mut [T]) -> Result<(), KernelError>;

    /// Set kernel `kernel` up for `y = A x` on these buffers.
    fn prepare<T: GpuScalar>(
        &self,
        kernel: &str,
        a: &Self::Matrix<'_, T>,
        x: &Self::Vector<T>,
        y: &mut Self::Vector<T>,
    ) -> Result<Self::Kernel<T>, KernelError>;
    /// Seconds the kernel's setup took on the device (0 where it has none or was on the host).
    fn setup_s<T: GpuScalar>(&self, _k: &Self::Kernel<T>) -> f64 {
        0.0
    }

    /// `y = A x` with a prepared kernel (enqueued on a GPU).
    fn launch<T: GpuScalar>(
        &self,
        k: &mut Self::Kernel<T>,
        a: &Self::Matrix<'_, T>,
        x: &Self::Vector<T>,
        y: &mut Self::Vector<T>,
    ) -> Result<(), KernelError>;

    /// `y = A x` from host x into host y through the device vectors `(dx, dy)`; finished when
    /// this returns. The CPU skips the vectors.
    fn run_host<T: GpuScalar>(
        &self,
        k: &mut Self::Kernel<T>,
        a: &Self::Matrix<'_, T>,
        (dx, dy): (&mut Self::Vector<T>, &mut Self::Vector<T>),
        x: &[T],
        y: &mut [T],
    ) -> Result<(), KernelError> {
        run_through_vectors(self, k, a, (dx, dy), x, y)
    }

    /// Wait for everything enqueued.
    fn synchronize(&self) -> Result<(), KernelError>;

    /// Median seconds of one [`SpmvDevice::gather`] of an uploaded matrix: `reps` timed after one
    /// untimed (wall clock; a gather returns its sums, so it has finished).
    fn time_gather<T: GpuScalar>(
        &self,
        a: &Self::Matrix<'_, T>,
        reps: usize,
    ) -> Result<f64, KernelError> {
        self.gather(a)?;
        let t = (0..reps.max(1))
            .map(|_| {
                let s = Instant::now();
                self.gather(a).map(|_| s.elapsed().as_secs_f64())
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(crate::median(t))
    }

    /// Per-call seconds of `enqueue` in the three timing modes ([`crate::cuda::timing`]): latency
    /// ([`SpmvDevice::time`]), throughput (batches of back-to-back calls, sized to last about
    /// [`crate::cuda::timing::BATCH_TARGET_S`], each ended by a synchronisation) and graph
    /// replay, which only CUDA has (elsewhere its figure is the error saying so).
    fn time_modes(
        &self,
        plan: TimingPlan,
        mut enqueue: impl FnMut() -> Result<(), KernelError>,
    ) -> Result<ModeTimes, KernelError> {
        use crate::cuda::timing::{batch_for, BATCH_TARGET_S, MAX_BATCH};
        let lat = crate::median(self.time(plan, &mut enqueue)?);
        let batch = batch_for(lat, BATCH_TARGET_S, MAX_BATCH);
        enqueue()?;
        self.synchronize()?;
        let tp = (0..plan.iterations.max(1))
            .map(|_| {
                let t = Instant::now();
                for _ in 0..batch {
                    enqueue()?;
                }
                self.synchronize()?;
                Ok(t.elapsed().as_secs_f64() / batch as f64)
            })
            .collect::<Result<Vec<_>, KernelError>>()?;
        Ok(ModeTimes {
            latency_s: lat,
            throughput_s: crate::median(tp),
            graph_s: Err(unsupported(self.kind(), "graph replay").to_string()),
            batch,
            samples: plan.iterations.max(1),
        })
    }

    /// Seconds of each of `plan.iterations` calls of `enqueue` after `plan.warmup` untimed ones,
    /// each timed alone (a GPU: between two events from an idle stream; the CPU: wall clock).
    fn time(
        &self,
        plan: TimingPlan,
        mut enqueue: impl FnMut() -> Result<(), KernelError>,
    ) -> Result<Vec<f64>, KernelError> {
        for _ in 0..plan.warmup {
            enqueue()?;
        }
        self.synchronize()?;
        (0..plan.iterations.max(1))
            .map(|_| {
                let t = Instant::now();
                enqueue()?;
                self.synchronize()?;
                Ok(t.elapsed().as_secs_f64())
            })
            .collect()
    }
}

/// [`SpmvDevice::run_host`] through the device vectors: x in, launch, y out, synchronise.
fn run_through_vectors<D: SpmvDevice + ?Sized, T: GpuScalar>(
    d: &D,
    k: &mut D::Kernel<T>,
    a: &D::Matrix<'_, T>,
    (dx, dy): (&mut D::Vector<T>, &mut D::Vector<T>),
    x: &[T],
    y: &mut [T],
) -> Result<(), KernelError> {
    if !x.is_empty() {
        d.write(x, dx)?;
    }
    d.launch(k, a, dx, dy)?;
    if !y.is_empty() {
        d.read(dy, y)?;
    }
    d.synchronize()
}

/// "`what` has length ..." unless a vector of `expected` elements and a host slice of `got`
/// agree (every backend's [`SpmvDevice::write`] and [`SpmvDevice::read`]).
pub(crate) fn same_len(what: &'static str, expected: usize, got: usize) -> Result<(), KernelError> {
    if expected == got {
        Ok(())
    } else {
        Err(KernelError::Invalid(format!(
            "{what}: a vector of length {expected} and a slice of length {got}"
        )))
    }
}

/// "`what` is not supported on the `kind` backend".
pub fn unsupported(kind: BackendKind, what: &str) -> KernelError {
    KernelError::Unsupported {
        backend: kind.name().to_string(),
        what: what.to_string(),
    }
}

/// Every backend passes the one correctness suite: each call uploads the matrix and x, poisons
/// y, sets the kernel up, launches it and reads y back.
impl<D: SpmvDevice> crate::suite::SpmvBackend for D {
    fn name(&self) -> String {
        match self.kind() {
            BackendKind::Cpu => SpmvDevice::name(self),
            k => format!("{} ({})", k.name(), SpmvDevice::name(self)),
        }
    }

    fn kernel_names(&self) -> Vec<&'static str> {
        SpmvDevice::kernel_names(self)
    }

    fn spmv<T: GpuScalar>(
        &mut self,
        kernel: &str,
        a: &Csr<T>,
        x: &[T],
        y: &mut [T],
    ) -> Result<(), KernelError> {
        crate::error::check_dims(a.rows(), a.cols(), x.len(), y.len())?;
        let m = self.upload(a)?;
        let dx = self.vector(x)?;
        let mut dy = self.vector(&vec![T::nan(); a.rows()])?;
        let mut k = self.prepare(kernel, &m, &dx, &mut dy)?;
        self.launch(&mut k, &m, &dx, &mut dy)?;
        self.read(&dy, y)?;
        self.synchronize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Csr<f64> {
        Csr::new(
            (3, 4),
            vec![0, 2, 2, 5],
            vec![0, 3, 0, 1, 2],
            vec![1.5, -2.0, 0.5, 4.0, -1.0],
        )
    }

    #[test]
    fn the_device_runs_and_refuses_mismatched_buffers() {
        let a = small();
        let dev = Device::cpu();
        assert_eq!(dev.kind(), BackendKind::Cpu);
        let m = dev.upload(&a).unwrap();
        assert_eq!(m.shape(), (3, 4, 5));
        let x = dev.vector(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        let mut y = dev.zeros::<f64>(3).unwrap();
        for kernel in SpmvDevice::kernel_names(&dev) {
            let mut k = dev.prepare(kernel, &m, &x, &mut y).unwrap();
            assert_eq!(k.name(), kernel);
            dev.launch(&mut k, &m, &x, &mut y).unwrap();
            assert_eq!(y.as_host().unwrap(), &[1.5 - 8.0, 0.0, 0.5 + 8.0 - 3.0]);
        }
        // Wrong lengths and names are errors naming what is wrong, never panics.
        let short = dev.vector(&[1.0; 3]).unwrap();
        let e = dev.prepare("row-split", &m, &short, &mut y).err().unwrap();
        assert!(e.to_string().contains("x has length 3"), "{e}");
        let e = dev.prepare("warp-magic", &m, &x, &mut y).err().unwrap();
        assert!(e.to_string().contains("unknown kernel `warp-magic`"), "{e}");
        let e = dev.write(&[1.0; 5], &mut y).unwrap_err();
        assert!(
            e.to_string().contains("length 3") && e.to_string().contains("length 5"),
            "{e}"
        );
        let mut out = [0.0; 2];
        assert!(dev.read(&y, &mut out).is_err());
        // A kernel set up for one matrix refuses another.
        let mut k = dev.prepare("merge-path", &m, &x, &mut y).unwrap();
        let b = Csr::new((2, 4), vec![0, 1, 2], vec![0, 1], vec![1.0, 1.0]);
        let mb = dev.upload(&b).unwrap();
        let mut yb = dev.zeros::<f64>(2).unwrap();
        let e = dev.launch(&mut k, &mb, &x, &mut yb).unwrap_err();
        assert!(e.to_string().contains("another matrix"), "{e}");
        // The host path writes y straight from x; the gather matches the CPU gatherer.
        let (mut dx, mut dy) = (dev.zeros(4).unwrap(), dev.zeros(3).unwrap());
        let mut host_y = [f64::NAN; 3];
        dev.run_host(
            &mut k,
            &m,
            (&mut dx, &mut dy),
            &[1.0, 2.0, 3.0, 4.0],
            &mut host_y,
        )
        .unwrap();
        assert_eq!(host_y, [1.5 - 8.0, 0.0, 0.5 + 8.0 - 3.0]);
        let (_, sums) = dev.upload_gathering(&a).unwrap();
        let p = augur_features::spmv::CsrPattern::of(&a);
        assert_eq!(sums, augur_features::spmv::cpu_sums(p));
        assert_eq!(sums.max_len, 3);
    }

    #[test]
    fn timing_gives_one_sample_per_iteration() {
        let dev = CpuDevice;
        let mut calls = 0;
        let t = dev
            .time(
                TimingPlan {
                    warmup: 2,
                    iterations: 5,
                },
                || {
                    calls += 1;
                    Ok(())
                },
            )
            .unwrap();
        assert_eq!((t.len(), calls), (5, 7));
        assert!(t.iter().all(|&s| s >= 0.0));
    }

    #[test]
    fn missing_capabilities_name_the_backend() {
        let e = unsupported(BackendKind::Cuda, "gathering features");
        assert_eq!(
            e.to_string(),
            "gathering features is not supported on the cuda backend"
        );
    }
}
