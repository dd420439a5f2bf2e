//! [`Device`]: the backend chosen at run time, and the opaque matrix, vector and kernel types
//! that go with it. This is the one place that matches on the backend; a buffer of one backend
//! given to another is an error, not a crash.

use std::rc::Rc;

use augur_datasets::CsrRef;
use augur_features::spmv::RowSums;
use cudarc::driver::CudaSlice;

use super::{BackendKind, CpuDevice, ModeTimes, SpmvDevice, TimingPlan};
use crate::cpu::CpuPartition;
use crate::cuda::{CudaSpmv, DeviceCsr, GpuScalar, Prepared};
#[cfg(feature = "hip")]
use crate::hip::{HipBuf, HipCsr, HipPrepared, HipSpmv};
use crate::KernelError;

/// Where SpMV runs: the rayon CPU kernels or one GPU. Cheap to clone (a GPU is shared, with its
/// loaded kernels).
#[derive(Clone)]
pub struct Device(Inner);

#[derive(Clone)]
enum Inner {
    Cpu(CpuDevice),
    Cuda(Rc<CudaSpmv>),
    #[cfg(feature = "hip")]
    Hip(Rc<HipSpmv>),
}

/// A matrix where a [`Device`]'s kernels read it.
pub struct DeviceMatrix<'a, T: GpuScalar>(Mat<'a, T>);

enum Mat<'a, T: GpuScalar> {
    Cpu(CsrRef<'a, T>),
    Cuda(DeviceCsr<T>),
    #[cfg(feature = "hip")]
    Hip(HipCsr<T>),
}

/// A vector in a [`Device`]'s memory (host memory for the CPU).
pub struct DeviceVec<T: GpuScalar>(Vector<T>);

enum Vector<T: GpuScalar> {
    Cpu(Vec<T>),
    Cuda(CudaSlice<T>),
    #[cfg(feature = "hip")]
    Hip(HipBuf<T>),
}

/// A kernel set up by [`Device`] for one matrix.
pub struct DeviceKernel<T: GpuScalar>(Kernel<T>);

enum Kernel<T: GpuScalar> {
    Cpu(CpuPartition),
    Cuda(Prepared<T>),
    #[cfg(feature = "hip")]
    Hip(HipPrepared<T>),
}

impl Device {
    /// A matrix already in the GPU's memory (CUDA): [`CudaSpmv::copy_device_csr`] (copied on
    /// the device, in order with the caller's `stream`). Other backends: unsupported.
    ///
    /// # Safety
    /// As [`CudaSpmv::copy_device_csr`].
    pub unsafe fn adopt_cuda_csr<'a, T: GpuScalar>(
        &self,
        shape: (usize, usize, usize),
        ptrs: (u64, u64, u64),
        stream: Option<u64>,
    ) -> Result<DeviceMatrix<'a, T>, KernelError> {
        match &self.0 {
            // SAFETY: the caller's promise, passed on.
            Inner::Cuda(d) => Ok(DeviceMatrix(Mat::Cuda(unsafe {
                d.copy_device_csr(shape, ptrs, stream)
            }?))),
            _ => Err(super::unsupported(
                self.kind(),
                "a matrix in CUDA device memory",
            )),
        }
    }
    /// The rayon CPU kernels on the current rayon pool.
    pub fn cpu() -> Device {
        Device(Inner::Cpu(CpuDevice))
    }

    /// GPU `ordinal` with its SpMV kernels (compiled by NVRTC or read from the on-disk cache);
    /// on a machine without CUDA a clear "not available" error.
    pub fn cuda(ordinal: usize) -> Result<Device, KernelError> {
        Ok(Device::from_cuda(Rc::new(CudaSpmv::new(ordinal)?)))
    }

    /// A GPU already opened.
    pub fn from_cuda(gpu: Rc<CudaSpmv>) -> Device {
        Device(Inner::Cuda(gpu))
    }

    /// AMD GPU `ordinal` (the portable pool compiled by hiprtc; not yet run on AMD hardware).
    /// Without ROCm or an AMD GPU, or in a build without the `hip` feature: "not available",
    /// naming what is missing.
    pub fn hip(ordinal: usize) -> Result<Device, KernelError> {
        #[cfg(feature = "hip")]
        {
            Ok(Device(Inner::Hip(Rc::new(HipSpmv::new(ordinal)?))))
        }
        #[cfg(not(feature = "hip"))]
        {
            let _ = ordinal;
            Err(KernelError::NotAvailable {
                backend: "hip".into(),
                why: "this build of augur has no HIP backend (cargo feature `hip`)".into(),
            })
        }
    }

    /// GPU 0 when CUDA and a GPU are present, else the CPU.
    pub fn auto() -> Device {
        if crate::cuda::available().is_ok() {
            if let Ok(d) = Device::cuda(0) {
                return d;
            }
        }
        Device::cpu()
    }

    /// The CUDA backend under this device, for CUDA-only work (streams, NCCL, events).
    pub fn as_cuda(&self) -> Option<&Rc<CudaSpmv>> {
        match &self.0 {
            Inner::Cuda(g) => Some(g),
            _ => None,
        }
    }

    /// Two handles to the same backend (the same GPU) or both the CPU.
    pub fn same(&self, other: &Device) -> bool {
        match (&self.0, &other.0) {
            (Inner::Cpu(_), Inner::Cpu(_)) => true,
            (Inner::Cuda(a), Inner::Cuda(b)) => Rc::ptr_eq(a, b),
            #[cfg(feature = "hip")]
            (Inner::Hip(a), Inner::Hip(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Device({}: {})",
            self.kind().name(),
            SpmvDevice::name(self)
        )
    }
}

/// "a `got` `what` given to a `kind` device".
fn foreign(what: &str, kind: BackendKind, got: BackendKind) -> KernelError {
    KernelError::Invalid(format!(
        "a {what} of the {} backend given to a {} device",
        got.name(),
        kind.name()
    ))
}

impl<T: GpuScalar> DeviceMatrix<'_, T> {
    pub fn backend(&self) -> BackendKind {
        match &self.0 {
            Mat::Cpu(_) => BackendKind::Cpu,
            Mat::Cuda(_) => BackendKind::Cuda,
            #[cfg(feature = "hip")]
            Mat::Hip(_) => BackendKind::Hip,
        }
    }

    /// (rows, cols, nnz).
    pub fn shape(&self) -> (usize, usize, usize) {
        match &self.0 {
            Mat::Cpu(a) => (a.rows(), a.cols(), a.nnz()),
            Mat::Cuda(a) => (a.rows, a.cols, a.nnz),
            #[cfg(feature = "hip")]
            Mat::Hip(a) => (a.rows, a.cols, a.nnz),
        }
    }

    /// The device copy of a CUDA matrix.
    pub fn as_cuda(&self) -> Option<&DeviceCsr<T>> {
        match &self.0 {
            Mat::Cuda(a) => Some(a),
            _ => None,
        }
    }
}

impl<T: GpuScalar> DeviceVec<T> {
    pub fn backend(&self) -> BackendKind {
        match &self.0 {
            Vector::Cpu(_) => BackendKind::Cpu,
            Vector::Cuda(_) => BackendKind::Cuda,
            #[cfg(feature = "hip")]
            Vector::Hip(_) => BackendKind::Hip,
        }
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Vector::Cpu(v) => v.len(),
            Vector::Cuda(v) => v.len(),
            #[cfg(feature = "hip")]
            Vector::Hip(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A CPU vector's values (None on a GPU: read them with [`SpmvDevice::read`]).
    pub fn as_host(&self) -> Option<&[T]> {
        match &self.0 {
            Vector::Cpu(v) => Some(v),
            _ => None,
        }
    }

    /// The device buffer of a CUDA vector, for CUDA-only work (NCCL, peer copies).
    pub fn as_cuda(&self) -> Option<&CudaSlice<T>> {
        match &self.0 {
            Vector::Cuda(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_cuda_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.0 {
            Vector::Cuda(v) => Some(v),
            _ => None,
        }
    }

    /// A CUDA buffer as a vector (it must belong to the device it is used with).
    pub fn from_cuda(v: CudaSlice<T>) -> DeviceVec<T> {
        DeviceVec(Vector::Cuda(v))
    }

    /// Exchange the contents of two vectors of the same backend and length (y becomes the
    /// next x without a copy).
    pub fn swap(&mut self, other: &mut DeviceVec<T>) -> Result<(), KernelError> {
        if self.backend() != other.backend() || self.len() != other.len() {
            return Err(KernelError::Invalid(format!(
                "swap: a {} vector of length {} with a {} vector of length {}",
                self.backend().name(),
                self.len(),
                other.backend().name(),
                other.len()
            )));
        }
        std::mem::swap(self, other);
        Ok(())
    }
}

impl<T: GpuScalar> DeviceKernel<T> {
    pub fn backend(&self) -> BackendKind {
        match &self.0 {
            Kernel::Cpu(_) => BackendKind::Cpu,
            Kernel::Cuda(_) => BackendKind::Cuda,
            #[cfg(feature = "hip")]
            Kernel::Hip(_) => BackendKind::Hip,
        }
    }

    /// The kernel's name, as [`SpmvDevice::prepare`] took it.
    pub fn name(&self) -> &'static str {
        match &self.0 {
            Kernel::Cpu(k) => k.kernel().name(),
            Kernel::Cuda(k) => k.kernel.name(),
            #[cfg(feature = "hip")]
            Kernel::Hip(k) => k.kernel.name(),
        }
    }

    /// The prepared CUDA kernel, for CUDA-only timing.
    pub fn as_cuda_mut(&mut self) -> Option<&mut Prepared<T>> {
        match &mut self.0 {
            Kernel::Cuda(k) => Some(k),
            _ => None,
        }
    }
}

impl SpmvDevice for Device {
    type Matrix<'a, T: GpuScalar + 'a> = DeviceMatrix<'a, T>;
    type Vector<T: GpuScalar> = DeviceVec<T>;
    type Kernel<T: GpuScalar> = DeviceKernel<T>;

    fn kind(&self) -> BackendKind {
        match &self.0 {
            Inner::Cpu(d) => d.kind(),
            Inner::Cuda(d) => d.kind(),
            #[cfg(feature = "hip")]
            Inner::Hip(d) => d.kind(),
        }
    }

    fn name(&self) -> String {
        match &self.0 {
            Inner::Cpu(d) => SpmvDevice::name(d),
            Inner::Cuda(d) => SpmvDevice::name(&**d),
            #[cfg(feature = "hip")]
            Inner::Hip(d) => SpmvDevice::name(&**d),
        }
    }

    fn kernel_names(&self) -> Vec<&'static str> {
        match &self.0 {
            Inner::Cpu(d) => SpmvDevice::kernel_names(d),
            Inner::Cuda(d) => SpmvDevice::kernel_names(&**d),
            #[cfg(feature = "hip")]
            Inner::Hip(d) => SpmvDevice::kernel_names(&**d),
        }
    }

    fn upload<'a, T: GpuScalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
    ) -> Result<DeviceMatrix<'a, T>, KernelError> {
        let a = a.into();
        Ok(DeviceMatrix(match &self.0 {
            Inner::Cpu(d) => Mat::Cpu(d.upload(a)?),
            Inner::Cuda(d) => Mat::Cuda(SpmvDevice::upload(&**d, a)?),
            #[cfg(feature = "hip")]
            Inner::Hip(d) => Mat::Hip(d.upload(a)?),
        }))
    }

    fn gather<T: GpuScalar>(&self, a: &DeviceMatrix<'_, T>) -> Result<RowSums, KernelError> {
        match (&self.0, &a.0) {
            (Inner::Cpu(d), Mat::Cpu(a)) => d.gather(a),
            (Inner::Cuda(d), Mat::Cuda(a)) => SpmvDevice::gather(&**d, a),
            #[cfg(feature = "hip")]
            (Inner::Hip(d), Mat::Hip(a)) => d.gather(a),
            _ => Err(foreign("matrix", self.kind(), a.backend())),
        }
    }

    fn prepare_gather(&self) -> Result<(), KernelError> {
        match &self.0 {
            Inner::Cpu(d) => d.prepare_gather(),
            Inner::Cuda(d) => d.prepare_gather(),
            #[cfg(feature = "hip")]
            Inner::Hip(d) => d.prepare_gather(),
        }
    }

    fn upload_gathering<'a, T: GpuScalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
    ) -> Result<(DeviceMatrix<'a, T>, RowSums), KernelError> {
        let a = a.into();
        Ok(match &self.0 {
            Inner::Cpu(d) => {
                let (m, s) = d.upload_gathering(a)?;
                (DeviceMatrix(Mat::Cpu(m)), s)
            }
            Inner::Cuda(d) => {
                let (m, s) = SpmvDevice::upload_gathering(&**d, a)?;
                (DeviceMatrix(Mat::Cuda(m)), s)
            }
            #[cfg(feature = "hip")]
            Inner::Hip(d) => {
                let (m, s) = d.upload_gathering(a)?;
                (DeviceMatrix(Mat::Hip(m)), s)
            }
        })
    }

    fn vector<T: GpuScalar>(&self, host: &[T]) -> Result<DeviceVec<T>, KernelError> {
        Ok(DeviceVec(match &self.0 {
            Inner::Cpu(d) => Vector::Cpu(d.vector(host)?),
            Inner::Cuda(d) => Vector::Cuda(SpmvDevice::vector(&**d, host)?),
            #[cfg(feature = "hip")]
            Inner::Hip(d) => Vector::Hip(d.vector(host)?),
        }))
    }

    fn zeros<T: GpuScalar>(&self, n: usize) -> Result<DeviceVec<T>, KernelError> {
        Ok(DeviceVec(match &self.0 {
            Inner::Cpu(d) => Vector::Cpu(d.zeros(n)?),
            Inner::Cuda(d) => Vector::Cuda(SpmvDevice::zeros(&**d, n)?),
            #[cfg(feature = "hip")]
            Inner::Hip(d) => Vector::Hip(d.zeros(n)?),
        }))
    }

    fn len<T: GpuScalar>(&self, v: &DeviceVec<T>) -> usize {
        v.len()
    }

    fn write<T: GpuScalar>(&self, host: &[T], v: &mut DeviceVec<T>) -> Result<(), KernelError> {
        let got = v.backend();
        match (&self.0, &mut v.0) {
            (Inner::Cpu(d), Vector::Cpu(v)) => d.write(host, v),
            (Inner::Cuda(d), Vector::Cuda(v)) => SpmvDevice::write(&**d, host, v),
            #[cfg(feature = "hip")]
            (Inner::Hip(d), Vector::Hip(v)) => d.write(host, v),
            _ => Err(foreign("vector", self.kind(), got)),
        }
    }

    fn read<T: GpuScalar>(&self, v: &DeviceVec<T>, host: &mut [T]) -> Result<(), KernelError> {
        match (&self.0, &v.0) {
            (Inner::Cpu(d), Vector::Cpu(v)) => d.read(v, host),
            (Inner::Cuda(d), Vector::Cuda(v)) => SpmvDevice::read(&**d, v, host),
            #[cfg(feature = "hip")]
            (Inner::Hip(d), Vector::Hip(v)) => d.read(v, host),
            _ => Err(foreign("vector", self.kind(), v.backend())),
        }
    }

    fn prepare<T: GpuScalar>(
        &self,
        kernel: &str,
        a: &DeviceMatrix<'_, T>,
        x: &DeviceVec<T>,
        y: &mut DeviceVec<T>,
    ) -> Result<DeviceKernel<T>, KernelError> {
        let (kind, yk) = (self.kind(), y.backend());
        Ok(DeviceKernel(match (&self.0, &a.0, &x.0, &mut y.0) {
            (Inner::Cpu(d), Mat::Cpu(a), Vector::Cpu(x), Vector::Cpu(y)) => {
                Kernel::Cpu(d.prepare(kernel, a, x, y)?)
            }
            (Inner::Cuda(d), Mat::Cuda(a), Vector::Cuda(x), Vector::Cuda(y)) => {
                Kernel::Cuda(SpmvDevice::prepare(&**d, kernel, a, x, y)?)
            }
            #[cfg(feature = "hip")]
            (Inner::Hip(d), Mat::Hip(a), Vector::Hip(x), Vector::Hip(y)) => {
                Kernel::Hip(d.prepare(kernel, a, x, y)?)
            }
            _ => return Err(mismatch(kind, a.backend(), x.backend(), yk)),
        }))
    }

    fn setup_s<T: GpuScalar>(&self, k: &DeviceKernel<T>) -> f64 {
        match &k.0 {
            Kernel::Cpu(_) => 0.0,
            Kernel::Cuda(k) => k.setup_s,
            #[cfg(feature = "hip")]
            Kernel::Hip(k) => k.setup_s,
        }
    }

    fn launch<T: GpuScalar>(
        &self,
        k: &mut DeviceKernel<T>,
        a: &DeviceMatrix<'_, T>,
        x: &DeviceVec<T>,
        y: &mut DeviceVec<T>,
    ) -> Result<(), KernelError> {
        let (kind, yk, kk) = (self.kind(), y.backend(), k.backend());
        match (&self.0, &mut k.0, &a.0, &x.0, &mut y.0) {
            (Inner::Cpu(d), Kernel::Cpu(k), Mat::Cpu(a), Vector::Cpu(x), Vector::Cpu(y)) => {
                d.launch(k, a, x, y)
            }
            (Inner::Cuda(d), Kernel::Cuda(k), Mat::Cuda(a), Vector::Cuda(x), Vector::Cuda(y)) => {
                SpmvDevice::launch(&**d, k, a, x, y)
            }
            #[cfg(feature = "hip")]
            (Inner::Hip(d), Kernel::Hip(k), Mat::Hip(a), Vector::Hip(x), Vector::Hip(y)) => {
                d.launch(k, a, x, y)
            }
            _ if kk != kind => Err(foreign("kernel", kind, kk)),
            _ => Err(mismatch(kind, a.backend(), x.backend(), yk)),
        }
    }

    fn run_host<T: GpuScalar>(
        &self,
        k: &mut DeviceKernel<T>,
        a: &DeviceMatrix<'_, T>,
        (dx, dy): (&mut DeviceVec<T>, &mut DeviceVec<T>),
        x: &[T],
        y: &mut [T],
    ) -> Result<(), KernelError> {
        match (&self.0, &mut k.0, &a.0) {
            (Inner::Cpu(d), Kernel::Cpu(k), Mat::Cpu(a)) => {
                crate::error::check_dims(a.rows(), a.cols(), x.len(), y.len())?;
                let (Vector::Cpu(dx), Vector::Cpu(dy)) = (&mut dx.0, &mut dy.0) else {
                    let got = if dx.backend() != BackendKind::Cpu {
                        dx.backend()
                    } else {
                        dy.backend()
                    };
                    return Err(foreign("vector", BackendKind::Cpu, got));
                };
                d.run_host(k, a, (dx, dy), x, y)
            }
            _ => {
                let (r, c, _) = a.shape();
                crate::error::check_dims(r, c, x.len(), y.len())?;
                super::run_through_vectors(self, k, a, (dx, dy), x, y)
            }
        }
    }

    fn synchronize(&self) -> Result<(), KernelError> {
        match &self.0 {
            Inner::Cpu(d) => d.synchronize(),
            Inner::Cuda(d) => SpmvDevice::synchronize(&**d),
            #[cfg(feature = "hip")]
            Inner::Hip(d) => d.synchronize(),
        }
    }

    fn time_gather<T: GpuScalar>(
        &self,
        a: &DeviceMatrix<'_, T>,
        reps: usize,
    ) -> Result<f64, KernelError> {
        match (&self.0, &a.0) {
            (Inner::Cpu(d), Mat::Cpu(a)) => d.time_gather(a, reps),
            (Inner::Cuda(d), Mat::Cuda(a)) => SpmvDevice::time_gather(&**d, a, reps),
            #[cfg(feature = "hip")]
            (Inner::Hip(d), Mat::Hip(a)) => d.time_gather(a, reps),
            _ => Err(foreign("matrix", self.kind(), a.backend())),
        }
    }

    fn time_modes(
        &self,
        plan: TimingPlan,
        enqueue: impl FnMut() -> Result<(), KernelError>,
    ) -> Result<ModeTimes, KernelError> {
        match &self.0 {
            Inner::Cpu(d) => d.time_modes(plan, enqueue),
            Inner::Cuda(d) => SpmvDevice::time_modes(&**d, plan, enqueue),
            #[cfg(feature = "hip")]
            Inner::Hip(d) => d.time_modes(plan, enqueue),
        }
    }

    fn time(
        &self,
        plan: TimingPlan,
        enqueue: impl FnMut() -> Result<(), KernelError>,
    ) -> Result<Vec<f64>, KernelError> {
        match &self.0 {
            Inner::Cpu(d) => d.time(plan, enqueue),
            Inner::Cuda(d) => SpmvDevice::time(&**d, plan, enqueue),
            #[cfg(feature = "hip")]
            Inner::Hip(d) => d.time(plan, enqueue),
        }
    }
}

/// The first buffer of another backend among a launch's matrix and vectors.
fn mismatch(kind: BackendKind, a: BackendKind, x: BackendKind, y: BackendKind) -> KernelError {
    let (what, got) = if a != kind {
        ("matrix", a)
    } else if x != kind {
        ("vector x", x)
    } else {
        ("vector y", y)
    };
    foreign(what, kind, got)
}
