//! Timing launches on the device (latency, throughput and graph modes, with an L2 flush between
//! launches) and the ceilings they are compared with (gather, copy bandwidth).

use super::*;

impl CudaSpmv {
    /// Latency-mode times (seconds) of `plan.iterations` launches after `plan.warmup`, each
    /// between two timing events (CU_EVENT_DEFAULT) from an idle stream. With `flush`, a buffer larger than L2 is overwritten before each
    /// timed launch, so no launch finds the matrix in L2.
    pub fn time<T: GpuScalar>(
        &self,
        k: &mut Prepared<T>,
        (a, x, y): (&DeviceCsr<T>, &CudaSlice<T>, &mut CudaSlice<T>),
        plan: TimingPlan,
        flush: Option<&mut CudaSlice<u8>>,
    ) -> Result<Vec<f64>, KernelError> {
        self.time_events(plan, flush, || self.launch(k, a, x, y))
    }

    /// `k` timed in the latency, throughput and graph modes ([`crate::cuda::time_modes`]).
    pub fn time_modes<T: GpuScalar>(
        &self,
        k: &mut Prepared<T>,
        (a, x, y): (&DeviceCsr<T>, &CudaSlice<T>, &mut CudaSlice<T>),
        plan: TimingPlan,
        flush: Option<&mut CudaSlice<u8>>,
    ) -> Result<crate::cuda::ModeTimes, KernelError> {
        crate::cuda::time_modes(&self.stream, plan, flush, || self.launch(k, a, x, y))
    }

    /// [`crate::cuda::time_events`] on this GPU's stream.
    pub fn time_events(
        &self,
        plan: TimingPlan,
        flush: Option<&mut CudaSlice<u8>>,
        enqueue: impl FnMut() -> Result<(), KernelError>,
    ) -> Result<Vec<f64>, KernelError> {
        crate::cuda::time_events(&self.stream, plan, flush, enqueue)
    }

    /// A device buffer of twice the L2 size, for [`CudaSpmv::time`]'s flush.
    pub fn flush_buffer(&self) -> Result<CudaSlice<u8>, KernelError> {
        let n = (2 * self.device.l2_bytes.max(1 << 20)) as usize;
        self.stream.alloc_zeros::<u8>(n).map_err(drv("cuMemAlloc"))
    }

    /// The x-gather ceiling of `a` (seconds, median of `plan.iterations` after `plan.warmup`):
    /// values and column indices streamed once and x gathered in the matrix's column order, with
    /// no row structure (`gather_ceiling` in spmv_csr.cu). Every CSR kernel makes these loads, so
    /// this plus the row pointers and y at copy bandwidth is an empirical floor for the matrix
    /// that, unlike the byte count, charges what random columns cost (a sector per x value).
    /// With `flush`, L2 is overwritten before each timed launch as in [`CudaSpmv::time`].
    pub fn gather_ceiling<T: GpuScalar>(
        &self,
        a: &DeviceCsr<T>,
        x: &CudaSlice<T>,
        plan: TimingPlan,
        flush: Option<&mut CudaSlice<u8>>,
    ) -> Result<f64, KernelError> {
        if a.nnz == 0 {
            return Ok(0.0);
        }
        const ITEMS: u64 = 8; // GF_ITEMS in the .cu file
        let cfg = threads_config((a.nnz as u64).div_ceil(ITEMS));
        let warps = cfg.grid_dim.0 as usize * (BLOCK as usize / 32);
        let mut out = self
            .stream
            .alloc_zeros::<T>(warps)
            .map_err(drv("cuMemAlloc"))?;
        let f = self.function_named(&format!("gather_ceiling_{}", T::SUFFIX))?;
        let nnz = a.nnz as i32;
        let plan = TimingPlan {
            iterations: plan.iterations.max(1),
            ..plan
        };
        let times = self.time_events(plan, flush, || {
            let mut b = self.stream.launch_builder(&f);
            b.arg(&nnz).arg(&a.idx).arg(&a.val).arg(x).arg(&mut out);
            // SAFETY: (int, int*, T*, T*, T*) as in gather_ceiling; idx and val hold nnz
            // entries, every index is < cols = x.len(), out holds one entry per warp launched.
            unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
            Ok(())
        })?;
        Ok(crate::median(times))
    }

    /// Device-to-device copy bandwidth, bytes read + written per second (GB/s): median of 10
    /// copies of 1 GiB after a warm-up, timed by events.
    pub fn copy_bandwidth(&self) -> Result<f64, KernelError> {
        let n = 1usize << 30;
        let src = self
            .stream
            .alloc_zeros::<u8>(n)
            .map_err(drv("cuMemAlloc"))?;
        let mut dst = self
            .stream
            .alloc_zeros::<u8>(n)
            .map_err(drv("cuMemAlloc"))?;
        let plan = TimingPlan {
            warmup: 1,
            iterations: 10,
        };
        let times = self.time_events(plan, None, || {
            self.stream
                .memcpy_dtod(&src, &mut dst)
                .map_err(drv("cuMemcpyDtoD"))
        })?;
        Ok(2.0 * n as f64 / crate::median(times) / 1e9)
    }
}
