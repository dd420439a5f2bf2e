//! One NVIDIA GPU as an [`SpmvDevice`]: [`CudaSpmv`] (the NVRTC-compiled pool, cuSPARSE, the
//! feature gatherer) on its own stream.

use augur_datasets::CsrRef;
use augur_features::spmv::RowSums;
use cudarc::driver::CudaSlice;

use super::{same_len, BackendKind, ModeTimes, SpmvDevice, TimingPlan};
use crate::cuda::{drv, CudaSpmv, DeviceCsr, GpuKernel, GpuScalar, Prepared};
use crate::KernelError;

impl SpmvDevice for CudaSpmv {
    type Matrix<'a, T: GpuScalar + 'a> = DeviceCsr<T>;
    type Vector<T: GpuScalar> = CudaSlice<T>;
    type Kernel<T: GpuScalar> = Prepared<T>;

    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn name(&self) -> String {
        self.device.name.clone()
    }

    fn kernel_names(&self) -> Vec<&'static str> {
        let cusparse = crate::cuda::cusparse::available();
        GpuKernel::ALL
            .into_iter()
            .filter(|k| cusparse || !matches!(k, GpuKernel::Cusparse { .. }))
            .map(|k| k.name())
            .collect()
    }

    fn upload<'a, T: GpuScalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
    ) -> Result<DeviceCsr<T>, KernelError> {
        CudaSpmv::upload(self, a)
    }

    fn prepare_gather(&self) -> Result<(), KernelError> {
        self.gatherer().map(|_| ())
    }

    /// A device pass over the uploaded pattern (two kernels and one copy back).
    fn gather<T: GpuScalar>(&self, a: &DeviceCsr<T>) -> Result<RowSums, KernelError> {
        let (ptr, idx) = a.pattern();
        self.gatherer()?.sums(a.rows, a.nnz, ptr, idx)
    }

    /// The gather runs on the pattern while the values copy
    /// ([`CudaSpmv::upload_gathering`]).
    fn upload_gathering<'a, T: GpuScalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
    ) -> Result<(DeviceCsr<T>, RowSums), KernelError> {
        CudaSpmv::upload_gathering(self, a, self.gatherer()?)
    }

    fn vector<T: GpuScalar>(&self, host: &[T]) -> Result<CudaSlice<T>, KernelError> {
        self.htod(host)
    }

    fn zeros<T: GpuScalar>(&self, n: usize) -> Result<CudaSlice<T>, KernelError> {
        self.stream().alloc_zeros(n).map_err(drv("cuMemAlloc"))
    }

    fn len<T: GpuScalar>(&self, v: &CudaSlice<T>) -> usize {
        v.len()
    }

    fn write<T: GpuScalar>(&self, host: &[T], v: &mut CudaSlice<T>) -> Result<(), KernelError> {
        same_len("write", v.len(), host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        self.stream()
            .memcpy_htod(host, v)
            .map_err(drv("host to device copy"))
    }

    fn read<T: GpuScalar>(&self, v: &CudaSlice<T>, host: &mut [T]) -> Result<(), KernelError> {
        same_len("read", v.len(), host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        self.stream()
            .memcpy_dtoh(v, host)
            .map_err(drv("device to host copy"))?;
        self.synchronize()
    }

    fn prepare<T: GpuScalar>(
        &self,
        kernel: &str,
        a: &DeviceCsr<T>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<Prepared<T>, KernelError> {
        let k = GpuKernel::from_name(kernel)?;
        if matches!(k, GpuKernel::Cusparse { .. }) && !crate::cuda::cusparse::available() {
            return Err(KernelError::NotAvailable {
                backend: "cuda".into(),
                why: format!("kernel {kernel} needs libcusparse, which does not load here"),
            });
        }
        CudaSpmv::prepare(self, k, a, x, y)
    }

    fn setup_s<T: GpuScalar>(&self, k: &Prepared<T>) -> f64 {
        k.setup_s
    }

    fn launch<T: GpuScalar>(
        &self,
        k: &mut Prepared<T>,
        a: &DeviceCsr<T>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<(), KernelError> {
        CudaSpmv::launch(self, k, a, x, y)
    }

    fn synchronize(&self) -> Result<(), KernelError> {
        self.stream()
            .synchronize()
            .map_err(drv("cuStreamSynchronize"))
    }

    /// The three modes on this GPU's stream, graph replay included ([`crate::cuda::time_modes`]).
    fn time_modes(
        &self,
        plan: TimingPlan,
        enqueue: impl FnMut() -> Result<(), KernelError>,
    ) -> Result<ModeTimes, KernelError> {
        crate::cuda::time_modes(self.stream(), plan, None, enqueue)
    }

    /// Between two events from an idle stream ([`crate::cuda::time_events`]).
    fn time(
        &self,
        plan: TimingPlan,
        enqueue: impl FnMut() -> Result<(), KernelError>,
    ) -> Result<Vec<f64>, KernelError> {
        self.time_events(plan, None, enqueue)
    }
}
