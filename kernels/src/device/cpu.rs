//! The rayon CPU kernels as an [`SpmvDevice`]: the matrix is the caller's (borrowed, no copy),
//! vectors are host vectors, a prepared kernel is its partition of the work, and everything runs
//! at once (synchronising is a no-op).

use augur_datasets::CsrRef;
use augur_features::spmv::{cpu_sums, CsrPattern, RowSums};

use super::{same_len, BackendKind, SpmvDevice};
use crate::cpu::{CpuKernel, CpuPartition};
use crate::cuda::GpuScalar;
use crate::error::check_dims;
use crate::KernelError;

/// The rayon CPU kernels on the current rayon pool.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuDevice;

impl SpmvDevice for CpuDevice {
    type Matrix<'a, T: GpuScalar + 'a> = CsrRef<'a, T>;
    type Vector<T: GpuScalar> = Vec<T>;
    type Kernel<T: GpuScalar> = CpuPartition;

    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }

    fn kernel_names(&self) -> Vec<&'static str> {
        CpuKernel::ALL.iter().map(|k| k.name()).collect()
    }

    fn upload<'a, T: GpuScalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
    ) -> Result<CsrRef<'a, T>, KernelError> {
        Ok(a.into())
    }

    /// The exact sums on the host (a parallel pass over the pattern).
    fn gather<T: GpuScalar>(&self, a: &CsrRef<'_, T>) -> Result<RowSums, KernelError> {
        Ok(cpu_sums(CsrPattern::of(*a)))
    }

    fn vector<T: GpuScalar>(&self, host: &[T]) -> Result<Vec<T>, KernelError> {
        Ok(host.to_vec())
    }

    fn len<T: GpuScalar>(&self, v: &Vec<T>) -> usize {
        v.len()
    }

    fn write<T: GpuScalar>(&self, host: &[T], v: &mut Vec<T>) -> Result<(), KernelError> {
        same_len("write", v.len(), host.len())?;
        v.copy_from_slice(host);
        Ok(())
    }

    fn read<T: GpuScalar>(&self, v: &Vec<T>, host: &mut [T]) -> Result<(), KernelError> {
        same_len("read", v.len(), host.len())?;
        host.copy_from_slice(v);
        Ok(())
    }

    fn prepare<T: GpuScalar>(
        &self,
        kernel: &str,
        a: &CsrRef<'_, T>,
        x: &Vec<T>,
        y: &mut Vec<T>,
    ) -> Result<CpuPartition, KernelError> {
        let k = CpuKernel::from_name(kernel)?;
        check_dims(a.rows(), a.cols(), x.len(), y.len())?;
        Ok(k.partition(a))
    }

    fn launch<T: GpuScalar>(
        &self,
        k: &mut CpuPartition,
        a: &CsrRef<'_, T>,
        x: &Vec<T>,
        y: &mut Vec<T>,
    ) -> Result<(), KernelError> {
        k.run(a, x, y)
    }

    /// Straight from `x` into `y`: no copies through the plan's vectors.
    fn run_host<T: GpuScalar>(
        &self,
        k: &mut CpuPartition,
        a: &CsrRef<'_, T>,
        _vectors: (&mut Vec<T>, &mut Vec<T>),
        x: &[T],
        y: &mut [T],
    ) -> Result<(), KernelError> {
        k.run(a, x, y)
    }

    fn synchronize(&self) -> Result<(), KernelError> {
        Ok(())
    }
}
