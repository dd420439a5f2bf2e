//! Dense GEMM C = A Bᵀ on one GPU (issue 24; B a linear layer's [out][in] weight): augur's
//! tensor-core kernels (`kernels/cuda/gemm.cu`: mma.sync with two tile heights, and wgmma on
//! Hopper) and cuBLASLt (through cudarc, loaded at run time), on the same device buffers, so that
//! they are checked and timed the same way. The GEMM + collective overlap patterns build on these;
//! the fused pattern needs a GEMM of augur's own, which must reach 0.8 of cuBLASLt on a shape for
//! that pattern to count there.

use std::ffi::c_void;
use std::sync::Arc;

use augur_features::attention::Dtype;
use cudarc::cublaslt::{result as lt, sys as lts};
use cudarc::driver::sys::CUfunction_attribute_enum;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    LaunchConfig, PushKernelArg,
};

use super::{drv, module};
use crate::gemm::{from_half_bits, to_half_bits, GemmProblem, GemmShape};
use crate::KernelError;

/// Shared-memory stages of gemm.cu's mma.sync pipeline (GEMM_STAGES).
pub const STAGES: usize = 3;
/// Shared-memory stages of its wgmma pipeline (WG_STAGES), each a 128 x 64 tile of A and of B.
pub const WG_STAGES: usize = 4;
const BN: usize = 128;
const BK: usize = 32;
/// cuBLASLt's workspace.
const LT_WORKSPACE: usize = 32 << 20;

/// The GEMMs compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GemmKernel {
    /// gemm.cu's mma.sync kernel with block tiles of `bm` x 128 (bm = 128 or 64).
    Augur { bm: usize },
    /// gemm.cu's wgmma kernel (Hopper only): 128 x `bn` tiles (bn = 128 or 256), two
    /// warpgroups.
    Wgmma { bn: usize },
    /// gemm.cu's TMA kernel (Hopper only), persistent: 128 x `bn` tiles (bn = 256 or 128), a
    /// producer warpgroup issuing tensor-memory copies, two consumer warpgroups multiplying with
    /// wgmma; k cut into `splits` ranges (1 to 16) whose f32 partials a second kernel sums.
    Tma { bn: usize, splits: usize },
    /// The TMA kernel with the tile width and split count [`tma_choice`] picks for the shape.
    TmaAuto,
    /// cuBLASLt's heuristic choice (f32 accumulation).
    CublasLt,
}

impl GemmKernel {
    /// The kernels `augur overlap gemm` compares by default.
    pub fn all() -> [GemmKernel; 7] {
        [
            GemmKernel::Augur { bm: 128 },
            GemmKernel::Augur { bm: 64 },
            GemmKernel::Wgmma { bn: 128 },
            GemmKernel::Wgmma { bn: 256 },
            GemmKernel::Tma { bn: 256, splits: 1 },
            GemmKernel::TmaAuto,
            GemmKernel::CublasLt,
        ]
    }

    pub fn name(self) -> String {
        match self {
            GemmKernel::Augur { bm } => format!("augur_{bm}x128"),
            GemmKernel::Wgmma { bn } => format!("augur_wgmma_128x{bn}"),
            GemmKernel::Tma { bn, splits: 1 } => format!("augur_tma_128x{bn}"),
            GemmKernel::Tma { bn, splits } => format!("augur_tma_128x{bn}_k{splits}"),
            GemmKernel::TmaAuto => "augur_tma_auto".into(),
            GemmKernel::CublasLt => "cublaslt".into(),
        }
    }

    /// The kernel of a [`GemmKernel::name`]: `augur_128x128`, `augur_64x128`,
    /// `augur_wgmma_128x{128,256}`, `augur_tma_128x{128,256}[_k<splits>]`, `augur_tma_auto`,
    /// `cublaslt`.
    pub fn parse(name: &str) -> Result<GemmKernel, KernelError> {
        let bad = || {
            KernelError::Invalid(format!(
                "unknown GEMM kernel `{name}`: augur_128x128, augur_64x128, augur_wgmma_128x128, \
                 augur_wgmma_128x256, augur_tma_128x256, augur_tma_128x128 (either with _k2 .. \
                 _k16 for a split k), augur_tma_auto or cublaslt"
            ))
        };
        let k = match name {
            "augur_128x128" => GemmKernel::Augur { bm: 128 },
            "augur_64x128" => GemmKernel::Augur { bm: 64 },
            "augur_wgmma_128x128" => GemmKernel::Wgmma { bn: 128 },
            "augur_wgmma_128x256" => GemmKernel::Wgmma { bn: 256 },
            "augur_tma_auto" => GemmKernel::TmaAuto,
            "cublaslt" => GemmKernel::CublasLt,
            t => {
                let rest = t.strip_prefix("augur_tma_128x").ok_or_else(bad)?;
                let (bn, splits) = match rest.split_once("_k") {
                    Some((b, s)) => (b, s.parse::<usize>().map_err(|_| bad())?),
                    None => (rest, 1),
                };
                let bn = bn.parse::<usize>().map_err(|_| bad())?;
                if !(bn == 128 || bn == 256) || !(1..=MAX_SPLITS).contains(&splits) {
                    return Err(bad());
                }
                GemmKernel::Tma { bn, splits }
            }
        };
        Ok(k)
    }
}

/// The most ranges the TMA kernel cuts k into.
pub const MAX_SPLITS: usize = 16;

/// The TMA kernel's tile width and split count for `shape` on `sms` multiprocessors: the
/// candidate (128 x 256 or 128 x 128 tiles; k cut in 1, 2, 4, 8 or 16 ranges of at least 4
/// steps of 64) with the least estimated time ([`tma_estimate_us`]).
pub fn tma_choice(shape: GemmShape, sms: usize) -> (usize, usize) {
    let mut best = (f64::INFINITY, 256, 1);
    for bn in [256usize, 128] {
        for splits in [1usize, 2, 4, 8, 16] {
            if let Some(t) = tma_estimate_us(shape, bn, splits, sms) {
                if t < best.0 {
                    best = (t, bn, splits);
                }
            }
        }
    }
    (best.1, best.2)
}

/// The TMA kernel's estimated time (microseconds) on a Hopper GPU with `sms` multiprocessors,
/// None for a split count that would leave a range empty or under 4 steps. Each SM runs its
/// share of the work units one after the other; a unit costs its k steps plus 3 us of filling
/// and storing, and a step the longer of its products (128 x bn x 64 at 7.5 TFLOP/s per SM, a
/// 128-wide step at 0.7 of a 256-wide one's cost: the same pipeline for half the products) and
/// its loads (the B tile and the A tile's rows inside the matrix at 80 GB/s per SM). The whole
/// takes at least A, B and C once at 3 TB/s, and a split adds the partials written and read at
/// 3 TB/s and 2 us for the summing kernel. Constants fitted on an H100's measurements of every
/// candidate on 34 shapes (bench/results/gemm-splitk-h100-2026-11-25/sweep): the choice ran at
/// 0.99 of the best candidate in the throughput mode and 0.98 in graphs (geometric means), 0.77
/// at worst; 0.98 in both modes once C was stored through shared memory (tma-store-sweep).
pub fn tma_estimate_us(shape: GemmShape, bn: usize, splits: usize, sms: usize) -> Option<f64> {
    let GemmShape { m, n, k } = shape;
    let kt_all = k.div_ceil(64).max(1);
    let kt_per = kt_all.div_ceil(splits.max(1));
    if kt_all.div_ceil(kt_per) != splits || (splits > 1 && kt_per < 4) {
        return None;
    }
    let units = m.div_ceil(128) * n.div_ceil(bn) * splits;
    let per_sm = units.div_ceil(sms.max(1)) as f64;
    let products = (128 * bn * 64 * 2) as f64 / 7.5e6 * if bn == 128 { 1.4 } else { 1.0 };
    let loads = ((bn + m.min(128)) * 64 * 2) as f64 / 80e3;
    let mut t = per_sm * (kt_per as f64 * products.max(loads) + 3.0);
    t = t.max(((m * k + n * k + m * n) * 2) as f64 / 3.0e6);
    if splits > 1 {
        t += 2.0 + (8 * splits * m * n) as f64 / 3.0e6;
    }
    Some(t)
}

/// A GEMM's buffers on the GPU: A, B and C as 16-bit patterns of `dtype`.
pub struct DeviceGemm {
    pub shape: GemmShape,
    pub dtype: Dtype,
    a: CudaSlice<u16>,
    b: CudaSlice<u16>,
    c: CudaSlice<u16>,
}

/// cuBLASLt's descriptors and chosen algorithm for one shape (C = A Bᵀ row-major, computed as
/// the column-major Cᵀ = B Aᵀ: B's buffer read as the column-major Bᵀ and transposed).
struct LtPlan {
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

/// A CUtensorMap as a kernel argument (passed by value, `__grid_constant__` in gemm.cu).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct TensorMapArg([u64; 16]);

// SAFETY: plain bytes, laid out as gemm.cu's TensorMap (16 x u64, 64-byte aligned).
unsafe impl cudarc::driver::DeviceRepr for TensorMapArg {}

/// A 2-D tensor map over a row-major [rows][k] matrix of 16-bit values at `ptr`, boxes of 64 x
/// `box_rows` (k innermost), 128-byte swizzle (the layout gemm.cu's wgmma descriptors read).
fn tensor_map(
    ptr: u64,
    rows: usize,
    k: usize,
    box_rows: u32,
    dtype: Dtype,
) -> Result<TensorMapArg, KernelError> {
    use cudarc::driver::sys;
    let mut tm = std::mem::MaybeUninit::<sys::CUtensorMap>::uninit();
    let dims: [u64; 2] = [k as u64, rows as u64];
    let strides: [u64; 1] = [(k * 2) as u64];
    let boxes: [u32; 2] = [64, box_rows];
    let elem: [u32; 2] = [1, 1];
    let ty = match dtype {
        Dtype::Bf16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        _ => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    };
    // SAFETY: the arrays outlive the call; `ptr` is a live allocation of rows x k values.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            tm.as_mut_ptr(),
            ty,
            2,
            ptr as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(KernelError::Cuda(format!("cuTensorMapEncodeTiled: {r:?}")));
    }
    // SAFETY: written by the successful call above.
    Ok(TensorMapArg(unsafe { tm.assume_init() }.opaque))
}

/// One of gemm.cu's kernels made ready: the function, its grid, threads and dynamic shared
/// memory, and the TMA kernel's part.
struct Launch {
    f: CudaFunction,
    grid: (u32, u32, u32),
    threads: u32,
    smem: u32,
    tma: Option<TmaLaunch>,
}

/// The TMA kernel's arguments beyond the shape: the tensor maps of one DeviceGemm's A, B and C
/// (taken in place of the pointers), the split of k, the f32 partials and the kernel that sums them.
struct TmaLaunch {
    maps: (TensorMapArg, TensorMapArg, TensorMapArg),
    splits: usize,
    kt_per: usize,
    /// splits x m x n floats (one float when not split: the argument must point somewhere).
    ws: CudaSlice<f32>,
    sum: Option<CudaFunction>,
    /// One flag for an ungated launch (the argument must point somewhere; never read).
    no_flags: CudaSlice<u32>,
}

/// A's rows arriving on one GPU ([`CudaGemm::arrivals`]): the copy they come from, their flags
/// and the stream that copies them.
pub struct Arrivals {
    staging: CudaSlice<u16>,
    flags: super::comm::DeviceBuffer,
    pub rows_per_flag: usize,
    copy: Arc<CudaStream>,
}

fn check_cu(what: &str, r: cudarc::driver::sys::CUresult) -> Result<(), KernelError> {
    if r == cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(KernelError::Cuda(format!("{what}: {r:?}")))
    }
}

/// The row gate of a producer/consumer overlap: A's rows arrive in blocks of `rows_per_flag`,
/// and the TMA kernel reads block b's rows once `flags[b]` is non-zero (set after the rows are in
/// place: a `cuStreamWriteValue32` behind the copy on its stream, or a kernel's
/// release store). A flag still zero after 10 s makes the kernel trap: the launch fails rather
/// than hangs.
/// The flags are a plain `cuMemAlloc` allocation (stream memory operations refuse memory from
/// the stream-ordered pool): `flags` its device address, `len` its u32 count.
#[derive(Clone, Copy)]
pub struct Gate<'a> {
    pub flags: &'a super::comm::DeviceBuffer,
    pub rows_per_flag: usize,
}

/// A kernel made ready for one [`DeviceGemm`]: one of gemm.cu's, or cuBLASLt's plan.
pub struct GemmPrepared {
    pub kernel: GemmKernel,
    run: Result<Launch, LtPlan>,
}

fn lt_err(what: &str) -> impl Fn(cudarc::cublaslt::result::CublasError) -> KernelError + '_ {
    move |e| KernelError::Cuda(format!("cuBLASLt {what}: {e:?}"))
}

/// The GEMM kernels on one GPU.
pub struct CudaGemm {
    ctx: Arc<CudaContext>,
    compute_capability: (i32, i32),
    multiprocessors: usize,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
}

impl CudaGemm {
    pub fn new(ordinal: usize) -> Result<CudaGemm, KernelError> {
        let dev = super::device_info(ordinal)?;
        if dev.compute_capability < (8, 0) {
            return Err(KernelError::Unsupported {
                backend: "cuda".into(),
                what: format!(
                    "the tensor-core GEMM (sm_80 or newer; this GPU is sm_{}{})",
                    dev.compute_capability.0, dev.compute_capability.1
                ),
            });
        }
        let ctx = CudaContext::new(ordinal).map_err(drv("cuCtxCreate"))?;
        let stream = super::own_stream(&ctx)?;
        let (ptx, _) = module::ptx(module::GEMM, dev.compute_capability)?;
        let module = ctx.load_module(ptx).map_err(drv("cuModuleLoadData"))?;
        Ok(CudaGemm {
            ctx,
            compute_capability: dev.compute_capability,
            multiprocessors: dev.multiprocessors.max(1) as usize,
            stream,
            module,
        })
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Upload `p`'s inputs (exact in its dtype) and a poisoned (NaN) C.
    pub fn upload(&self, p: &GemmProblem) -> Result<DeviceGemm, KernelError> {
        p.shape.validate()?;
        let bits = |v: &[f32]| -> Vec<u16> {
            use rayon::prelude::*;
            v.par_iter().map(|&x| to_half_bits(p.dtype, x)).collect()
        };
        let s = &self.stream;
        let up = |v: Vec<u16>| s.clone_htod(&v).map_err(drv("upload"));
        let a = up(bits(&p.a))?;
        let b = up(bits(&p.b))?;
        // SAFETY: every element is written by the poison below before anything reads it.
        let c = unsafe { s.alloc::<u16>(p.shape.m * p.shape.n) }.map_err(drv("alloc"))?;
        let mut d = DeviceGemm {
            shape: p.shape,
            dtype: p.dtype,
            a,
            b,
            c,
        };
        self.poison(&mut d)?;
        Ok(d)
    }

    /// C back to NaN (before a checked run), on the device: every byte 0xFF, a NaN in f16 and in
    /// bf16 alike.
    pub fn poison(&self, d: &mut DeviceGemm) -> Result<(), KernelError> {
        let s = &self.stream;
        let bytes = d.c.len() * 2;
        let (c, _g) = d.c.device_ptr_mut(s);
        // SAFETY: `c` holds `bytes` bytes on this stream's device.
        unsafe { cudarc::driver::result::memset_d8_async(c, 0xFF, bytes, s.cu_stream()) }
            .map_err(drv("poison"))
    }

    /// Make `kernel` ready for `d`'s shape: the function and its shared memory (and the TMA
    /// kernel's tensor maps), or cuBLASLt's descriptors and its heuristic's algorithm. cuBLASLt
    /// missing is "not available"; a Hopper kernel elsewhere is "not supported".
    pub fn prepare(&self, d: &DeviceGemm, kernel: GemmKernel) -> Result<GemmPrepared, KernelError> {
        let ty = match d.dtype {
            Dtype::Bf16 => "bf16",
            _ => "f16",
        };
        let hopper = |what: &str| -> Result<(), KernelError> {
            if self.compute_capability.0 == 9 {
                return Ok(());
            }
            Err(KernelError::Unsupported {
                backend: "cuda".into(),
                what: format!(
                    "the {what} GEMM (Hopper, sm_90; this GPU is sm_{}{})",
                    self.compute_capability.0, self.compute_capability.1
                ),
            })
        };
        let GemmShape { m, n, k } = d.shape;
        let tiled =
            |tile: (usize, usize)| (n.div_ceil(tile.1) as u32, m.div_ceil(tile.0) as u32, 1);
        // The kernel's name, grid, threads, dynamic shared memory (bytes) and TMA part.
        let (name, grid, threads, smem, tma) = match kernel {
            GemmKernel::CublasLt => {
                return Ok(GemmPrepared {
                    kernel,
                    run: Err(self.lt_plan(d)?),
                })
            }
            GemmKernel::Augur { bm } => {
                if bm != 64 && bm != 128 {
                    return Err(KernelError::Invalid(format!(
                        "gemm.cu has block tiles of 64 and 128 rows, not {bm}"
                    )));
                }
                // Per stage a bm x 32 tile of A and a 128 x 32 tile of B, rows padded by 8.
                let smem = STAGES * (bm + BN) * (BK + 8) * 2;
                (format!("gemm_{ty}_{bm}"), tiled((bm, BN)), 256, smem, None)
            }
            GemmKernel::Wgmma { bn } => {
                if bn != 128 && bn != 256 {
                    return Err(KernelError::Invalid(format!(
                        "gemm.cu's wgmma kernel has tiles 128 and 256 wide, not {bn}"
                    )));
                }
                hopper("wgmma")?;
                // A 128 x 64 and a bn x 64 tile per stage, and 1 KiB to align the stages.
                let smem = WG_STAGES * (128 + bn) * 64 * 2 + 1024;
                (
                    format!("gemm_wg_{ty}_{bn}"),
                    tiled((128, bn)),
                    256,
                    smem,
                    None,
                )
            }
            GemmKernel::Tma { .. } | GemmKernel::TmaAuto => {
                hopper("TMA")?;
                let (bn, splits) = match kernel {
                    GemmKernel::Tma { bn, splits } => (bn, splits),
                    _ => tma_choice(d.shape, self.multiprocessors),
                };
                if !(bn == 128 || bn == 256) || !(1..=MAX_SPLITS).contains(&splits) {
                    return Err(KernelError::Invalid(format!(
                        "gemm.cu's TMA kernel has tiles 128 and 256 wide and 1 to {MAX_SPLITS} \
                         splits of k, not {bn} and {splits}"
                    )));
                }
                // Equal ranges of whole steps of 64; fewer splits when the last would be empty.
                let kt_all = k.div_ceil(64).max(1);
                let kt_per = kt_all.div_ceil(splits);
                let splits = kt_all.div_ceil(kt_per);
                // Barriers, 1 KiB of alignment, per stage a 128 x 64 and a bn x 64 tile, and
                // four 64 x 64 staging buffers of C.
                let smem =
                    WG_STAGES * (128 + bn) * 64 * 2 + 4 * 64 * 64 * 2 + 1024 + 2 * WG_STAGES * 8;
                let s = &self.stream;
                let maps = (
                    tensor_map(d.a.device_ptr(s).0, m, k, 128, d.dtype)?,
                    tensor_map(d.b.device_ptr(s).0, n, k, bn as u32, d.dtype)?,
                    // C [m][n] in 64 x 64 boxes.
                    tensor_map(d.c.device_ptr(s).0, m, n, 64, d.dtype)?,
                );
                let tiles = m.div_ceil(128) * n.div_ceil(bn);
                let grid = (
                    (tiles * splits).min(self.multiprocessors).max(1) as u32,
                    1,
                    1,
                );
                let ws_len = if splits > 1 { splits * m * n } else { 1 };
                // SAFETY: filled with NaN right below; each split's partial is then written
                // whole by the TMA kernel before the sum reads it (the one float of an unsplit
                // run is never read), so a partial the kernel missed shows as NaN in C.
                let mut ws = unsafe { s.alloc::<f32>(ws_len) }.map_err(drv("alloc"))?;
                {
                    let (p, _g) = ws.device_ptr_mut(s);
                    // SAFETY: `p` holds ws_len floats on this stream's device.
                    unsafe {
                        cudarc::driver::result::memset_d8_async(p, 0xFF, ws_len * 4, s.cu_stream())
                    }
                    .map_err(drv("poison partials"))?;
                }
                let sum = if splits > 1 {
                    let f = format!("gemm_splitk_{ty}");
                    Some(
                        self.module
                            .load_function(&f)
                            .map_err(|e| KernelError::Cuda(format!("kernel {f}: {e}")))?,
                    )
                } else {
                    None
                };
                let no_flags = s.alloc_zeros::<u32>(1).map_err(drv("alloc"))?;
                let tma = TmaLaunch {
                    maps,
                    splits,
                    kt_per,
                    ws,
                    sum,
                    no_flags,
                };
                (format!("gemm_tma_{ty}_{bn}"), grid, 384, smem, Some(tma))
            }
        };
        let f = self
            .module
            .load_function(&name)
            .map_err(|e| KernelError::Cuda(format!("kernel {name}: {e}")))?;
        f.set_attribute(
            CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            smem as i32,
        )
        .map_err(drv("cuFuncSetAttribute"))?;
        Ok(GemmPrepared {
            kernel,
            run: Ok(Launch {
                f,
                grid,
                threads,
                smem: smem as u32,
                tma,
            }),
        })
    }

    fn lt_plan(&self, d: &DeviceGemm) -> Result<LtPlan, KernelError> {
        // SAFETY: a query of the loader, before any cuBLASLt call (which would panic without it).
        if !unsafe { lts::is_culib_present() } {
            return Err(KernelError::NotAvailable {
                backend: "cublaslt".into(),
                why: "libcublasLt could not be loaded (is the CUDA toolkit's lib64 on \
                      LD_LIBRARY_PATH?)"
                    .into(),
            });
        }
        let ty = match d.dtype {
            Dtype::Bf16 => lts::cudaDataType_t::CUDA_R_16BF,
            _ => lts::cudaDataType_t::CUDA_R_16F,
        };
        let GemmShape { m, n, k } = d.shape;
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
            workspace: self
                .stream
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

    /// Enqueue one product C = A Bᵀ.
    pub fn launch(&self, d: &mut DeviceGemm, p: &GemmPrepared) -> Result<(), KernelError> {
        self.launch_with(d, p, None, None)
    }

    /// Enqueue one product C = A Bᵀ with the TMA kernel's options: `gate` makes it wait for A's
    /// rows to arrive ([`Gate`]), `max_blocks` leaves the other SMs to a kernel beside it (the
    /// kernel is persistent: any grid computes the whole product).
    pub fn launch_with(
        &self,
        d: &mut DeviceGemm,
        p: &GemmPrepared,
        gate: Option<Gate<'_>>,
        max_blocks: Option<usize>,
    ) -> Result<(), KernelError> {
        let s = &self.stream;
        let GemmShape { m, n, k } = d.shape;
        let tma = matches!(&p.run, Ok(l) if l.tma.is_some());
        if !tma && (gate.is_some() || max_blocks.is_some()) {
            return Err(KernelError::Invalid(format!(
                "{}: only the TMA kernel waits on row flags or runs on fewer blocks",
                p.kernel.name()
            )));
        }
        if let Some(g) = &gate {
            let need = m.div_ceil(g.rows_per_flag.max(1));
            if g.rows_per_flag == 0 || g.flags.bytes() / 4 < need {
                return Err(KernelError::Invalid(format!(
                    "row flags: {} rows in blocks of {} need {need} flags, got {}",
                    m,
                    g.rows_per_flag,
                    g.flags.bytes() / 4
                )));
            }
        }
        if max_blocks == Some(0) {
            return Err(KernelError::Invalid(
                "a GEMM needs at least one block".into(),
            ));
        }
        match &p.run {
            Ok(launch) => {
                let mut grid = launch.grid;
                if let Some(b) = max_blocks {
                    grid.0 = grid.0.min(b as u32);
                }
                let cfg = LaunchConfig {
                    grid_dim: grid,
                    block_dim: (launch.threads, 1, 1),
                    shared_mem_bytes: launch.smem,
                };
                let (mi, ni, ki) = (m as i32, n as i32, k as i32);
                let mut l = s.launch_builder(&launch.f);
                l.arg(&mi).arg(&ni).arg(&ki);
                let split = launch
                    .tma
                    .as_ref()
                    .map(|t| (t.splits as i32, t.kt_per as i32));
                match &launch.tma {
                    Some(t) => l.arg(&t.maps.0).arg(&t.maps.1).arg(&t.maps.2),
                    None => l.arg(&d.a).arg(&d.b).arg(&mut d.c),
                };
                let rows_per_flag = gate.as_ref().map_or(0, |g| g.rows_per_flag as i32);
                let flags_ptr = gate.as_ref().map(|g| g.flags.ptr());
                if let (Some(t), Some((splits, kt_per))) = (&launch.tma, &split) {
                    l.arg(splits).arg(kt_per).arg(&t.ws);
                    match &flags_ptr {
                        Some(f) => l.arg(f),
                        None => l.arg(&t.no_flags),
                    };
                    l.arg(&rows_per_flag);
                }
                // SAFETY: gemm.cu's (m, n, k, A, B, C), or for gemm_tma (m, n, k, tensor maps of
                // A, B and C, splits, steps per split, partials of splits x m x n floats, row
                // flags (ceil(m / rows_per_flag) of them, checked above; unread when
                // rows_per_flag is 0), rows_per_flag), with A m x k, B n x k, C m x n halves
                // (the maps describe this DeviceGemm's A, B and C); the shape was validated (n,
                // k multiples of 8).
                unsafe { l.launch(cfg) }.map_err(drv("gemm launch"))?;
                if let (Some(t), Some((splits, _))) = (&launch.tma, &split) {
                    if let Some(sum) = &t.sum {
                        let quads = m * n / 4;
                        let cfg = LaunchConfig {
                            grid_dim: (quads.div_ceil(256).clamp(1, 65535) as u32, 1, 1),
                            block_dim: (256, 1, 1),
                            shared_mem_bytes: 0,
                        };
                        let mut l = s.launch_builder(sum);
                        l.arg(&mi).arg(&ni).arg(splits).arg(&t.ws).arg(&mut d.c);
                        // SAFETY: gemm_splitk_*(m, n, splits, partials of splits x m x n floats,
                        // C of m x n halves); n % 8 == 0, so m x n is a multiple of 4.
                        unsafe { l.launch(cfg) }.map_err(drv("gemm split-k sum"))?;
                    }
                }
                Ok(())
            }
            Err(plan) => {
                let (alpha, beta) = (1.0f32, 0.0f32);
                let (a, _ga) = d.a.device_ptr(s);
                let (b, _gb) = d.b.device_ptr(s);
                let (c, _gc) = d.c.device_ptr_mut(s);
                let (w, _gw) = plan.workspace.device_ptr(s);
                // SAFETY: the plan's layouts describe these buffers (B as the first operand, A
                // as the second: Cᵀ = B Aᵀ), the workspace is LT_WORKSPACE bytes, all on `s`.
                unsafe {
                    lt::matmul(
                        plan.handle,
                        plan.desc,
                        &alpha as *const f32 as *const c_void,
                        &beta as *const f32 as *const c_void,
                        b as *const c_void,
                        plan.layouts[0],
                        a as *const c_void,
                        plan.layouts[1],
                        c as *const c_void,
                        plan.layouts[2],
                        c as *mut c_void,
                        plan.layouts[2],
                        &plan.algo,
                        w as *mut c_void,
                        LT_WORKSPACE,
                        s.cu_stream() as lts::cudaStream_t,
                    )
                }
                .map_err(lt_err("matmul"))
            }
        }
    }

    /// The producer side of a producer/consumer overlap on this one GPU: A's rows arrive from
    /// a copy of A (`staging`) in `blocks` blocks of equal rows, each block a cuMemcpyAsync
    /// on a second stream followed by its flag ([`Gate`]).
    pub fn arrivals(&self, d: &DeviceGemm, blocks: usize) -> Result<Arrivals, KernelError> {
        let m = d.shape.m;
        if blocks == 0 || blocks > m.max(1) {
            return Err(KernelError::Invalid(format!(
                "{blocks} blocks of rows for {m} rows: 1 to {m}"
            )));
        }
        let s = &self.stream;
        let mut staging = unsafe { s.alloc::<u16>(d.a.len()) }.map_err(drv("alloc"))?;
        // SAFETY: the copy below writes every element before anything reads it.
        s.memcpy_dtod(&d.a, &mut staging).map_err(drv("copy"))?;
        let rows_per_flag = m.div_ceil(blocks);
        let flags =
            super::comm::DeviceBuffer::new(&self.ctx, 4 * m.div_ceil(rows_per_flag).max(1))?;
        let copy = self.ctx.new_stream().map_err(drv("cuStreamCreate"))?;
        Ok(Arrivals {
            staging,
            flags,
            rows_per_flag,
            copy,
        })
    }

    /// Enqueue the gated product with every flag already set (no copies): what the gate itself
    /// costs the TMA kernel.
    pub fn launch_gate_open(
        &self,
        d: &mut DeviceGemm,
        p: &GemmPrepared,
        arr: &Arrivals,
    ) -> Result<(), KernelError> {
        let s = &self.stream;
        // SAFETY: the flags buffer holds this many bytes on this stream's device; 0x01 bytes
        // make every flag non-zero.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                arr.flags.ptr(),
                1,
                arr.flags.bytes(),
                s.cu_stream(),
            )
        }
        .map_err(drv("set flags"))?;
        let gate = Gate {
            flags: &arr.flags,
            rows_per_flag: arr.rows_per_flag,
        };
        self.launch_with(d, p, Some(gate), None)
    }

    /// Enqueue on the GEMM's stream: A poisoned (NaN) if `poison_a`, the flags cleared; then on
    /// the copy stream each block of A's rows copied in from the staging copy and its flag set;
    /// and the product: with `gated`, beside the copies, its producer waiting on each block's
    /// flag; without, after the last copy (copy, then GEMM). The copy stream is joined back, so
    /// the whole is one unit of the GEMM's stream (timed and captured as such). Only the TMA
    /// kernel can be gated; `gemm: None` runs the copies alone.
    pub fn launch_arriving(
        &self,
        d: &mut DeviceGemm,
        p: Option<&GemmPrepared>,
        arr: &Arrivals,
        gated: bool,
        poison_a: bool,
    ) -> Result<(), KernelError> {
        use cudarc::driver::{result, sys};
        let s = &self.stream;
        let GemmShape { m, k, .. } = d.shape;
        if poison_a {
            let (a, _g) = d.a.device_ptr_mut(s);
            // SAFETY: `a` holds m x k halves on this stream's device.
            unsafe { result::memset_d8_async(a, 0xFF, m * k * 2, s.cu_stream()) }
                .map_err(drv("poison A"))?;
        }
        // SAFETY: the flags buffer holds this many bytes on this stream's device.
        unsafe { result::memset_d8_async(arr.flags.ptr(), 0, arr.flags.bytes(), s.cu_stream()) }
            .map_err(drv("clear flags"))?;
        arr.copy.join(s).map_err(drv("fork"))?;
        let c = &arr.copy;
        let (src, _gs) = arr.staging.device_ptr(c);
        let (dst, _gd) = d.a.device_ptr(c);
        let flags = arr.flags.ptr();
        let mut r0 = 0;
        let mut b = 0u64;
        while r0 < m {
            let r1 = (r0 + arr.rows_per_flag).min(m);
            let off = (r0 * k * 2) as u64;
            // SAFETY: rows [r0, r1) of two m x k buffers of halves on this device.
            unsafe {
                result::memcpy_dtod_async(dst + off, src + off, (r1 - r0) * k * 2, c.cu_stream())
            }
            .map_err(drv("copy rows"))?;
            // SAFETY: flag b of the flags buffer; the write follows the copy on this stream.
            check_cu("cuStreamWriteValue32", unsafe {
                sys::cuStreamWriteValue32_v2(c.cu_stream(), flags + 4 * b, 1, 0)
            })?;
            r0 = r1;
            b += 1;
        }
        drop((_gs, _gd));
        match p {
            None => s.join(c).map_err(drv("join")),
            Some(p) if gated => {
                let gate = Gate {
                    flags: &arr.flags,
                    rows_per_flag: arr.rows_per_flag,
                };
                self.launch_with(d, p, Some(gate), None)?;
                s.join(c).map_err(drv("join"))
            }
            Some(p) => {
                s.join(c).map_err(drv("join"))?;
                self.launch(d, p)
            }
        }
    }

    /// `p` timed in the latency, throughput and graph modes ([`super::time_modes`]).
    pub fn time_modes(
        &self,
        d: &mut DeviceGemm,
        p: &GemmPrepared,
        warmup: usize,
        reps: usize,
    ) -> Result<super::ModeTimes, KernelError> {
        let plan = super::TimingPlan {
            warmup,
            iterations: reps.max(1),
        };
        super::time_modes(&self.stream, plan, None, || self.launch(d, p))
    }

    /// Rows `rows` of C as f32 (waits for the stream).
    pub fn rows(&self, d: &DeviceGemm, rows: &[usize]) -> Result<Vec<f32>, KernelError> {
        let n = d.shape.n;
        let mut out = Vec::with_capacity(rows.len() * n);
        let mut i = 0;
        while i < rows.len() {
            // Runs of consecutive rows in one copy.
            let mut j = i + 1;
            while j < rows.len() && rows[j] == rows[j - 1] + 1 {
                j += 1;
            }
            let part = self
                .stream
                .clone_dtoh(&d.c.slice(rows[i] * n..(rows[j - 1] + 1) * n))
                .map_err(drv("download"))?;
            out.extend(part.into_iter().map(|h| from_half_bits(d.dtype, h)));
            i = j;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_round_trip() {
        let mut all: Vec<GemmKernel> = GemmKernel::all().to_vec();
        all.extend([
            GemmKernel::Tma { bn: 128, splits: 1 },
            GemmKernel::Tma { bn: 256, splits: 4 },
            GemmKernel::Tma {
                bn: 128,
                splits: 16,
            },
        ]);
        for k in all {
            assert_eq!(GemmKernel::parse(&k.name()).unwrap(), k, "{}", k.name());
        }
        for bad in [
            "augur_tma_128x64",
            "augur_tma_128x256_k0",
            "augur_tma_128x256_k17",
            "augur_tma_128x256_kx",
            "cublas",
        ] {
            let e = GemmKernel::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn tma_choice_splits_only_where_tiles_leave_sms_idle() {
        let sh = |m, n, k| GemmShape { m, n, k };
        // Plenty of tiles: 128 x 256, no split.
        assert_eq!(tma_choice(sh(8192, 8192, 8192), 132), (256, 1));
        // Decode-sized M on a narrow N: 6 tiles of 128 x 256 for 132 SMs, k cut.
        let (_, s) = tma_choice(sh(16, 1536, 4096), 132);
        assert!(s >= 8, "{s}");
        // Short k is never cut below 4 steps of 64.
        let (_, s) = tma_choice(sh(16, 1536, 256), 132);
        assert_eq!(s, 1);
        // Every choice is a valid kernel.
        for m in [1, 16, 128, 512, 2048, 16384] {
            for (n, k) in [(1536, 4096), (4096, 1024), (8192, 8192), (8, 8)] {
                let (bn, s) = tma_choice(sh(m, n, k), 132);
                assert!(GemmKernel::parse(&GemmKernel::Tma { bn, splits: s }.name()).is_ok());
                assert!(k.div_ceil(64).div_ceil(k.div_ceil(64).div_ceil(s)) == s);
            }
        }
    }
}
