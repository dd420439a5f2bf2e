//! cuBLASLt through cudarc (loaded at run time): the baseline augur's GEMMs are measured
//! against, on the same buffers and stream.

use std::ffi::c_void;
use std::sync::Arc;

use augur_features::attention::Dtype;
use cudarc::cublaslt::{result as lt, sys as lts};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::{drv, DeviceGemm};
use crate::gemm::GemmShape;
use crate::KernelError;

/// cuBLASLt's workspace.
const LT_WORKSPACE: usize = 32 << 20;

/// cuBLASLt's descriptors and chosen algorithm for one shape (C = A Bᵀ row-major, computed as
/// the column-major Cᵀ = B Aᵀ: B's buffer read as the column-major Bᵀ and transposed).
pub(super) struct LtPlan {
    handle: lts::cublasLtHandle_t,
    desc: lts::cublasLtMatmulDesc_t,
    layouts: [lts::cublasLtMatrixLayout_t; 3],
    algo: lts::cublasLtMatmulAlgo_t,
    workspace: CudaSlice<u8>,
}

impl Drop for LtPlan {
    fn drop(&mut self) {
        // SAFETY: created by LtPlan::new and destroyed only here.
        unsafe {
            for l in self.layouts {
                let _ = lt::destroy_matrix_layout(l);
            }
            let _ = lt::destroy_matmul_desc(self.desc);
            let _ = lt::destroy_handle(self.handle);
        }
    }
}

fn lt_err(what: &str) -> impl Fn(cudarc::cublaslt::result::CublasError) -> KernelError + '_ {
    move |e| KernelError::Cuda(format!("cuBLASLt {what}: {e:?}"))
}

impl LtPlan {
    /// Descriptors, workspace and the heuristic's algorithm for `d`'s shape and type.
    pub(super) fn new(stream: &Arc<CudaStream>, d: &DeviceGemm) -> Result<LtPlan, KernelError> {
        LtPlan::for_shape(stream, d.shape, d.dtype, 0)
    }

    /// [`LtPlan::new`] for a shape and type, to run on any buffers of that shape
    /// ([`LtPlan::run_on`]); `sms` > 0 tells cuBLASLt to target that many SMs
    /// (`CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET`: the rest are left to a kernel beside it).
    pub(super) fn for_shape(
        stream: &Arc<CudaStream>,
        shape: GemmShape,
        dtype: Dtype,
        sms: usize,
    ) -> Result<LtPlan, KernelError> {
        // SAFETY: a query of the loader, before any cuBLASLt call (which would panic without it).
        if !unsafe { lts::is_culib_present() } {
            return Err(KernelError::NotAvailable {
                backend: "cublaslt".into(),
                why: "libcublasLt could not be loaded (is the CUDA toolkit's lib64 on \
                      LD_LIBRARY_PATH?)"
                    .into(),
            });
        }
        let ty = match dtype {
            Dtype::Bf16 => lts::cudaDataType_t::CUDA_R_16BF,
            _ => lts::cudaDataType_t::CUDA_R_16F,
        };
        let GemmShape { m, n, k } = shape;
        let (m, n, k) = (m as u64, n as u64, k as u64);
        let handle = lt::create_handle().map_err(lt_err("create"))?;
        let mut plan = LtPlan {
            handle,
            desc: lt::create_matmul_desc(
                lts::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                lts::cudaDataType_t::CUDA_R_32F,
            )
            .map_err(lt_err("matmul desc"))?,
            layouts: [std::ptr::null_mut(); 3],
            algo: lts::cublasLtMatmulAlgo_t { data: [0; 8] },
            workspace: stream
                .alloc_zeros::<u8>(LT_WORKSPACE)
                .map_err(drv("workspace"))?,
        };
        // Column-major Cᵀ (n x m) = B (n x k) Aᵀ (k x m): B's buffer is the column-major k x n
        // Bᵀ, transposed by the first operand's op; A's is the column-major k x m Aᵀ.
        plan.layouts = [
            lt::create_matrix_layout(ty, k, n, k as i64).map_err(lt_err("layout"))?,
            lt::create_matrix_layout(ty, k, m, k as i64).map_err(lt_err("layout"))?,
            lt::create_matrix_layout(ty, n, m, n as i64).map_err(lt_err("layout"))?,
        ];
        // cublasOperation_t as an i32: CUBLAS_OP_T is 1.
        let op_t: i32 = 1;
        // SAFETY: a live descriptor; the attribute is a cublasOperation_t (a 32-bit enum).
        unsafe {
            lt::set_matmul_desc_attribute(
                plan.desc,
                lts::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                &op_t as *const i32 as *const c_void,
                std::mem::size_of::<i32>(),
            )
        }
        .map_err(lt_err("transpose"))?;
        if sms > 0 {
            let target = i32::try_from(sms)
                .map_err(|_| KernelError::Invalid(format!("{sms} SMs for a GEMM")))?;
            // SAFETY: a live descriptor; the attribute is an int32_t.
            unsafe {
                lt::set_matmul_desc_attribute(
                    plan.desc,
                    lts::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                    &target as *const i32 as *const c_void,
                    std::mem::size_of::<i32>(),
                )
            }
            .map_err(lt_err("SM count target"))?;
        }
        let pref = lt::create_matmul_pref().map_err(lt_err("preference"))?;
        let ws = LT_WORKSPACE as u64;
        // SAFETY: live descriptors; the attribute is a u64 byte count.
        let heuristic = unsafe {
            lt::set_matmul_pref_attribute(
                pref,
                lts::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &ws as *const u64 as *const c_void,
                std::mem::size_of::<u64>(),
            )
            .map_err(lt_err("workspace preference"))?;
            let h = lt::get_matmul_algo_heuristic(
                plan.handle,
                plan.desc,
                plan.layouts[0],
                plan.layouts[1],
                plan.layouts[2],
                plan.layouts[2],
                pref,
            );
            let _ = lt::destroy_matmul_pref(pref);
            h.map_err(lt_err("heuristic"))?
        };
        plan.algo = heuristic.algo;
        Ok(plan)
    }

    /// Enqueue C = A Bᵀ for `d` on `s`.
    pub(super) fn run(&self, d: &mut DeviceGemm, s: &Arc<CudaStream>) -> Result<(), KernelError> {
        let (a, _ga) = d.a.device_ptr(s);
        let (b, _gb) = d.b.device_ptr(s);
        let (c, _gc) = d.c.device_ptr_mut(s);
        // SAFETY: d's buffers have the plan's shape, on `s`'s GPU.
        unsafe { self.run_on(a, b, c, s) }
    }

    /// Enqueue C = A Bᵀ on `s` for device addresses of the plan's shape.
    ///
    /// # Safety
    /// `a` (m x k), `b` (n x k) and `c` (m x n) must be live 16-bit row-major buffers of the
    /// plan's type on `s`'s GPU, `c` overlapping neither.
    pub(super) unsafe fn run_on(
        &self,
        a: u64,
        b: u64,
        c: u64,
        s: &Arc<CudaStream>,
    ) -> Result<(), KernelError> {
        // SAFETY: the caller's contract; C read with beta 0 is not read.
        unsafe { self.matmul(a, b, (c, 0.0), c, s) }
    }

    /// Enqueue D = A Bᵀ + C on `s` (cuBLASLt's epilogue adds C, in f32, before D's one
    /// rounding) for device addresses of the plan's shape.
    ///
    /// # Safety
    /// As [`LtPlan::run_on`], with `c` and `d` both m x n, `d` overlapping neither `a` nor `b`
    /// (`c` may be `d`).
    pub(super) unsafe fn run_add_on(
        &self,
        a: u64,
        b: u64,
        c: u64,
        d: u64,
        s: &Arc<CudaStream>,
    ) -> Result<(), KernelError> {
        // SAFETY: the caller's contract.
        unsafe { self.matmul(a, b, (c, 1.0), d, s) }
    }

    /// cuBLASLt's D = A Bᵀ + beta C.
    ///
    /// # Safety
    /// As [`LtPlan::run_add_on`].
    unsafe fn matmul(
        &self,
        a: u64,
        b: u64,
        (c, beta): (u64, f32),
        d: u64,
        s: &Arc<CudaStream>,
    ) -> Result<(), KernelError> {
        let alpha = 1.0f32;
        let (w, _gw) = self.workspace.device_ptr(s);
        // SAFETY: the plan's layouts describe these buffers (B as the first operand, A
        // as the second: Cᵀ = B Aᵀ; C and D alike), the workspace is LT_WORKSPACE bytes, all
        // on `s`.
        unsafe {
            lt::matmul(
                self.handle,
                self.desc,
                &alpha as *const f32 as *const c_void,
                &beta as *const f32 as *const c_void,
                b as *const c_void,
                self.layouts[0],
                a as *const c_void,
                self.layouts[1],
                c as *const c_void,
                self.layouts[2],
                d as *mut c_void,
                self.layouts[2],
                &self.algo,
                w as *mut c_void,
                LT_WORKSPACE,
                s.cu_stream() as lts::cudaStream_t,
            )
        }
        .map_err(lt_err("matmul"))
    }
}
