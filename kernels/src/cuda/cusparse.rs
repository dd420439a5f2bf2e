//! A small safe wrapper over cuSPARSE's generic SpMV (`cusparseSpMV`, CSR, ALG1 and ALG2), which
//! cudarc exposes only as raw bindings. One handle per [`super::CudaSpmv`], bound to its stream;
//! one matrix descriptor, buffer and (ALG2) preprocessing per prepared matrix.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::cusparse::sys as cs;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::spmv::{DeviceCsr, GpuScalar};
use crate::KernelError;

fn check(what: &str, s: cs::cusparseStatus_t) -> Result<(), KernelError> {
    if s == cs::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(KernelError::Cuda(format!("{what}: {s:?}")))
    }
}

/// Whether libcusparse can be loaded (checked before cudarc would panic).
pub fn available() -> bool {
    // SAFETY: only tries to dlopen libcusparse by its usual names.
    unsafe { cs::is_culib_present() }
}

/// A cuSPARSE handle bound to a stream.
pub struct Handle {
    raw: cs::cusparseHandle_t,
    _stream: Arc<CudaStream>,
}

impl Handle {
    pub fn new(stream: &Arc<CudaStream>) -> Result<Handle, KernelError> {
        if !available() {
            return Err(KernelError::NotAvailable {
                backend: "cusparse".into(),
                why: "libcusparse is not installed (or not on LD_LIBRARY_PATH)".into(),
            });
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer to a handle; the stream outlives the handle (kept in the struct).
        unsafe {
            check("cusparseCreate", cs::cusparseCreate(&mut raw))?;
            check(
                "cusparseSetStream",
                cs::cusparseSetStream(raw, stream.cu_stream() as cs::cudaStream_t),
            )?;
        }
        Ok(Handle {
            raw,
            _stream: stream.clone(),
        })
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created by cusparseCreate and destroyed once.
        unsafe {
            cs::cusparseDestroy(self.raw);
        }
    }
}

/// cuSPARSE SpMV set up for one matrix: descriptors, work buffer, preprocessing done.
pub struct CusparseSpmv {
    mat: cs::cusparseSpMatDescr_t,
    x: cs::cusparseDnVecDescr_t,
    y: cs::cusparseDnVecDescr_t,
    buffer: CudaSlice<u8>,
    alg: cs::cusparseSpMVAlg_t,
    dtype: cs::cudaDataType,
}

fn dtype<T: GpuScalar>() -> cs::cudaDataType {
    if T::SUFFIX == "f32" {
        cs::cudaDataType::CUDA_R_32F
    } else {
        cs::cudaDataType::CUDA_R_64F
    }
}

impl CusparseSpmv {
    /// Create the descriptors, size and allocate the buffer, and run `cusparseSpMV_preprocess`
    /// (the setup cost of ALG2 in particular) for `y = A x` with these very buffers.
    pub fn new<T: GpuScalar>(
        handle: &Handle,
        stream: &Arc<CudaStream>,
        a: &DeviceCsr<T>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
        alg2: bool,
    ) -> Result<CusparseSpmv, KernelError> {
        let (ptr, idx, val) = a.raw();
        let dt = dtype::<T>();
        let alg = if alg2 {
            cs::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG2
        } else {
            cs::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG1
        };
        let mut mat = std::ptr::null_mut();
        let mut xd = std::ptr::null_mut();
        let mut yd = std::ptr::null_mut();
        let (one, zero) = (T::one(), T::zero());
        let mut size = 0usize;
        // SAFETY: the device pointers come from live CudaSlices of the sizes cuSPARSE is told
        // (rows+1, nnz, nnz, cols, rows); descriptors are destroyed in Drop.
        unsafe {
            let (p, _g1) = ptr.device_ptr(stream);
            let (i, _g2) = idx.device_ptr(stream);
            let (v, _g3) = val.device_ptr(stream);
            check(
                "cusparseCreateCsr",
                cs::cusparseCreateCsr(
                    &mut mat,
                    a.rows as i64,
                    a.cols as i64,
                    a.nnz as i64,
                    p as *mut c_void,
                    i as *mut c_void,
                    v as *mut c_void,
                    cs::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    cs::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    cs::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    dt,
                ),
            )?;
            let (xp, _g4) = x.device_ptr(stream);
            check(
                "cusparseCreateDnVec",
                cs::cusparseCreateDnVec(&mut xd, a.cols as i64, xp as *mut c_void, dt),
            )?;
            let (yp, _g5) = y.device_ptr_mut(stream);
            check(
                "cusparseCreateDnVec",
                cs::cusparseCreateDnVec(&mut yd, a.rows as i64, yp as *mut c_void, dt),
            )?;
            check(
                "cusparseSpMV_bufferSize",
                cs::cusparseSpMV_bufferSize(
                    handle.raw,
                    cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    &one as *const T as *const c_void,
                    mat,
                    xd,
                    &zero as *const T as *const c_void,
                    yd,
                    dt,
                    alg,
                    &mut size,
                ),
            )?;
        }
        let buffer = stream
            .alloc_zeros::<u8>(size.max(1))
            .map_err(|e| KernelError::Cuda(format!("cuMemAlloc: {e}")))?;
        let s = CusparseSpmv {
            mat,
            x: xd,
            y: yd,
            buffer,
            alg,
            dtype: dt,
        };
        // SAFETY: as above; the buffer has the size cuSPARSE asked for.
        unsafe {
            let (b, _g) = s.buffer.device_ptr(stream);
            check(
                "cusparseSpMV_preprocess",
                cs::cusparseSpMV_preprocess(
                    handle.raw,
                    cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    &one as *const T as *const c_void,
                    s.mat,
                    s.x,
                    &zero as *const T as *const c_void,
                    s.y,
                    dt,
                    alg,
                    b as *mut c_void,
                ),
            )?;
        }
        Ok(s)
    }

    /// Enqueue `y = A x` (the x and y given to [`CusparseSpmv::new`] or later ones of the same
    /// lengths).
    pub fn run<T: GpuScalar>(
        &self,
        handle: &Handle,
        stream: &Arc<CudaStream>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<(), KernelError> {
        let (one, zero) = (T::one(), T::zero());
        // SAFETY: descriptors from `new`; x and y are live buffers of the lengths the descriptors
        // were created with (checked by the caller).
        unsafe {
            let (xp, _g1) = x.device_ptr(stream);
            let (yp, _g2) = y.device_ptr_mut(stream);
            let (b, _g3) = self.buffer.device_ptr(stream);
            check(
                "cusparseDnVecSetValues",
                cs::cusparseDnVecSetValues(self.x, xp as *mut c_void),
            )?;
            check(
                "cusparseDnVecSetValues",
                cs::cusparseDnVecSetValues(self.y, yp as *mut c_void),
            )?;
            check(
                "cusparseSpMV",
                cs::cusparseSpMV(
                    handle.raw,
                    cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    &one as *const T as *const c_void,
                    self.mat,
                    self.x,
                    &zero as *const T as *const c_void,
                    self.y,
                    self.dtype,
                    self.alg,
                    b as *mut c_void,
                ),
            )?;
        }
        Ok(())
    }
}

impl Drop for CusparseSpmv {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe {
            cs::cusparseDestroySpMat(self.mat);
            cs::cusparseDestroyDnVec(self.x);
            cs::cusparseDestroyDnVec(self.y);
        }
    }
}
