//! Products on memory and streams the caller owns: device addresses handed over by DLPack
//! (PyTorch, CuPy, JAX), `__cuda_array_interface__` or C, and the caller's CUDA stream. Nothing
//! is copied and the host does not wait: the plan's stream waits for the caller's stream (an
//! event), the kernel runs, and the caller's stream waits for the kernel (another event), so work
//! the caller enqueues after it on its stream sees y, and its allocator may reuse x and y in
//! order on that stream.

use cudarc::driver::{sys, CudaEvent, CudaSlice};

use super::spmv::{CudaSpmv, DeviceCsr, GpuScalar, Prepared};
use super::{check, drv};
use crate::KernelError;

/// The two events of a join (created once per GPU handle, timing off).
pub(crate) struct Joins {
    before: CudaEvent,
    after: CudaEvent,
}

/// Make the work enqueued on `waiter` from now on wait for the work already on `first`,
/// through `event` (recorded on `first`), without the host waiting.
///
/// # Safety
/// `event` a live event and both streams live streams of the current context.
unsafe fn order(
    event: &CudaEvent,
    first: sys::CUstream,
    waiter: sys::CUstream,
) -> Result<(), KernelError> {
    // SAFETY: the caller's promise.
    check("cuEventRecord", unsafe {
        sys::cuEventRecord(event.cu_event(), first)
    })?;
    check("cuStreamWaitEvent", unsafe {
        sys::cuStreamWaitEvent(waiter, event.cu_event(), 0)
    })
}

impl CudaSpmv {
    fn joins(&self) -> Result<&Joins, KernelError> {
        if let Some(j) = self.joins.get() {
            return Ok(j);
        }
        let ctx = self.context();
        let j = Joins {
            before: ctx.new_event(None).map_err(drv("cuEventCreate"))?,
            after: ctx.new_event(None).map_err(drv("cuEventCreate"))?,
        };
        Ok(self.joins.get_or_init(|| j))
    }

    /// Whether `ptr` is device memory this GPU's kernels can use (its own allocation, or managed
    /// memory): an error naming `what` otherwise (host memory, another GPU's, a stale address).
    pub fn check_device_pointer(&self, what: &str, ptr: u64) -> Result<(), KernelError> {
        self.context()
            .bind_to_thread()
            .map_err(drv("cuCtxSetCurrent"))?;
        let mut ordinal: i32 = -1;
        // SAFETY: an out-pointer of the attribute's type (int); any address may be asked about.
        let r = unsafe {
            sys::cuPointerGetAttribute(
                (&mut ordinal as *mut i32).cast(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                ptr,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(KernelError::Invalid(format!(
                "{what} (address {ptr:#x}) is not CUDA device memory ({r:?})"
            )));
        }
        if ordinal as usize != self.device.ordinal {
            return Err(KernelError::Invalid(format!(
                "{what} is on GPU {ordinal}, this plan runs on GPU {}",
                self.device.ordinal
            )));
        }
        Ok(())
    }

    /// A matrix already in this GPU's memory (the caller's CSR arrays: `rows + 1` row pointers,
    /// `nnz` column indices and values of T) copied on the device into arrays of its own, in
    /// order after the work already on `stream` and before the work enqueued on it next (as
    /// [`CudaSpmv::launch_external`]). The caller may free its arrays once its stream has passed
    /// this point. The structure is not checked on the host (it is not there): indices out of
    /// range fault the GPU later, as they would in cuSPARSE.
    ///
    /// # Safety
    /// The three addresses must be device allocations of this GPU of at least those many
    /// elements (checked: that they are device memory of this GPU); `stream` a live stream of
    /// this GPU's primary context.
    pub unsafe fn copy_device_csr<T: GpuScalar>(
        &self,
        (rows, cols, nnz): (usize, usize, usize),
        (ptr, idx, val): (u64, u64, u64),
        stream: Option<u64>,
    ) -> Result<DeviceCsr<T>, KernelError> {
        self.check_device_pointer("the row pointers", ptr)?;
        if nnz > 0 {
            self.check_device_pointer("the column indices", idx)?;
            self.check_device_pointer("the values", val)?;
        }
        let s = self.stream();
        let ours = s.cu_stream();
        let theirs = stream.map(|s| s as sys::CUstream);
        let j = self.joins()?;
        if let Some(t) = theirs {
            // SAFETY: live events of this context; `t` a live stream (the caller's promise).
            unsafe { order(&j.before, t, ours) }?;
        }
        fn copy<U: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
            s: &std::sync::Arc<cudarc::driver::CudaStream>,
            from: u64,
            n: usize,
        ) -> Result<CudaSlice<U>, KernelError> {
            let mut dst = s.alloc_zeros::<U>(n).map_err(drv("cuMemAlloc"))?;
            if n > 0 {
                // SAFETY: the caller's allocation of n elements (copy_device_csr's contract).
                let src: CudaSlice<U> = unsafe { s.upgrade_device_ptr(from, n) };
                let r = s.memcpy_dtod(&src, &mut dst).map_err(drv("cuMemcpyDtoD"));
                src.leak();
                r?;
            }
            Ok(dst)
        }
        let m = DeviceCsr {
            rows,
            cols,
            nnz,
            ptr: copy::<i32>(s, ptr, rows + 1)?,
            idx: copy::<i32>(s, idx, nnz)?,
            val: copy::<T>(s, val, nnz)?,
        };
        if let Some(t) = theirs {
            // SAFETY: as above.
            unsafe { order(&j.after, ours, t) }?;
        }
        // The two row pointers the host can afford to read: the first must be 0, the last nnz.
        let ends = [
            s.clone_dtoh(&m.ptr.slice(0..1))
                .map_err(drv("device to host copy"))?[0],
            s.clone_dtoh(&m.ptr.slice(rows..rows + 1))
                .map_err(drv("device to host copy"))?[0],
        ];
        if ends != [0, nnz as i32] {
            return Err(KernelError::Invalid(format!(
                "the device row pointers run from {} to {}; a {rows}-row matrix with {nnz} \
                 entries needs 0 to {nnz}",
                ends[0], ends[1]
            )));
        }
        Ok(m)
    }

    /// `y = A x` with a prepared kernel on the caller's device memory: `x_ptr` holds `a.cols`
    /// values of T and `y_ptr` `a.rows`, ordered after the work already on `stream` (a CUstream
    /// of this GPU's primary context; `0` is the legacy default stream) and before the work the
    /// caller enqueues on it afterwards. `None`: ordered on this handle's own stream only (the
    /// caller synchronises it, e.g. through [`crate::device::SpmvDevice::synchronize`]).
    ///
    /// # Safety
    /// `x_ptr` and `y_ptr` must be device allocations of at least that many elements (checked:
    /// that they are device memory of this GPU), not overlapping, and stay allocated until the
    /// product has run (the caller's stream, which waits for it, orders that). `stream` must be a
    /// live stream of this GPU's primary context.
    pub unsafe fn launch_external<T: GpuScalar>(
        &self,
        p: &mut Prepared<T>,
        a: &DeviceCsr<T>,
        (x_ptr, y_ptr): (u64, u64),
        stream: Option<u64>,
    ) -> Result<(), KernelError> {
        if a.cols > 0 {
            self.check_device_pointer("x", x_ptr)?;
        }
        if a.rows > 0 {
            self.check_device_pointer("y", y_ptr)?;
        }
        let ours = self.stream().cu_stream();
        let theirs = stream.map(|s| s as sys::CUstream);
        let j = self.joins()?;
        if let Some(s) = theirs {
            // SAFETY: live events of this context; `s` a live stream (the caller's promise).
            unsafe { order(&j.before, s, ours) }?;
        }
        // The caller's buffers as slices of this stream, released without being freed.
        // SAFETY: device memory of this GPU of those lengths (the caller's promise, checked above
        // as far as the driver can tell).
        let x: CudaSlice<T> = unsafe { self.stream().upgrade_device_ptr(x_ptr, a.cols) };
        let mut y: CudaSlice<T> = unsafe { self.stream().upgrade_device_ptr(y_ptr, a.rows) };
        let r = self.launch(p, a, &x, &mut y);
        x.leak();
        y.leak();
        r?;
        if let Some(s) = theirs {
            // SAFETY: as above.
            unsafe { order(&j.after, ours, s) }?;
        }
        Ok(())
    }
}
