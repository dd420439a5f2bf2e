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
            check("cuEventRecord", unsafe {
                sys::cuEventRecord(j.before.cu_event(), s)
            })?;
            check("cuStreamWaitEvent", unsafe {
                sys::cuStreamWaitEvent(ours, j.before.cu_event(), 0)
            })?;
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
            check("cuEventRecord", unsafe {
                sys::cuEventRecord(j.after.cu_event(), ours)
            })?;
            check("cuStreamWaitEvent", unsafe {
                sys::cuStreamWaitEvent(s, j.after.cu_event(), 0)
            })?;
        }
        Ok(())
    }
}
