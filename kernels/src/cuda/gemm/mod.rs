//! Dense GEMM C = A Bᵀ on one GPU (issue 24; B a linear layer's \[out\]\[in\] weight): augur's
//! tensor-core kernels (`kernels/cuda/gemm.cu`: mma.sync with two tile heights; on Hopper wgmma;
//! `gemm_tma.cu`: the persistent TMA kernel with a split of k and a row gate) and cuBLASLt
//! (through cudarc, loaded at run time, `lt_plan.rs`), on the same device buffers, so that they
//! are checked and timed the same way. `kernels.rs` names the kernels and picks the TMA kernel's
//! tile and split for a shape; `arrive.rs` makes A's rows arrive on one GPU for the
//! producer/consumer overlap. The GEMM + collective overlap patterns build on these; the fused
//! pattern needs a GEMM of augur's own, which must reach 0.8 of cuBLASLt on a shape for that
//! pattern to count there.

use std::ffi::c_void;
use std::sync::Arc;

use augur_features::attention::Dtype;
use cudarc::driver::sys::CUfunction_attribute_enum;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    LaunchConfig, PushKernelArg,
};

use super::{drv, module};

mod arrive;
mod kernels;
mod lt_plan;
pub mod tp;

use crate::gemm::{from_half_bits, to_half_bits, GemmProblem, GemmShape};
use crate::KernelError;
pub use arrive::Arrivals;
pub use kernels::{
    swap_token_tile, tma_auto, tma_auto_explained, tma_choice, tma_estimate_us, tma_swap_choice,
    tma_swap_estimate_us, tma_tail_choice, tma_tail_estimate_us, GemmKernel, TmaPick, MAX_SPLITS,
    SWAP_TILES, TAIL_MARGIN, TMA_WIDTHS,
};
use lt_plan::LtPlan;

/// Shared-memory stages of gemm.cu's mma.sync pipeline (GEMM_STAGES).
pub const STAGES: usize = 3;
/// Shared-memory stages of its wgmma pipeline (WG_STAGES), each a 128 x 64 tile of A and of B.
pub const WG_STAGES: usize = 4;
/// Shared-memory stages of the swapped TMA kernel (SWAP_STAGES), each a 128 x 64 tile of B and
/// an mt x 64 tile of A.
pub const SWAP_STAGES: usize = 8;
const BN: usize = 128;
const BK: usize = 32;

/// A GEMM's buffers on the GPU: A, B and C as 16-bit patterns of `dtype`.
pub struct DeviceGemm {
    pub shape: GemmShape,
    pub dtype: Dtype,
    a: CudaSlice<u16>,
    b: CudaSlice<u16>,
    c: CudaSlice<u16>,
}

/// A CUtensorMap as a kernel argument (passed by value, `__grid_constant__` in gemm_tma.cu).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct TensorMapArg([u64; 16]);

// SAFETY: plain bytes, laid out as gemm_tma.cu's TensorMap (16 x u64, 64-byte aligned).
unsafe impl cudarc::driver::DeviceRepr for TensorMapArg {}

/// A 2-D tensor map over a row-major [rows][k] matrix of 16-bit values at `ptr`, boxes of 64 x
/// `box_rows` (k innermost), 128-byte swizzle (the layout gemm_tma.cu's wgmma descriptors read).
fn tensor_map(
    ptr: u64,
    rows: usize,
    k: usize,
    box_rows: u32,
    dtype: Dtype,
) -> Result<TensorMapArg, KernelError> {
    use cudarc::driver::sys::CUtensorMapDataType as T;
    let ty = match dtype {
        Dtype::Bf16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        _ => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    };
    encode_map(ptr, rows, k, 2, box_rows, ty)
}

/// The same over f32 values: boxes of 32 x `box_rows`, 128 bytes a row as above (gemm_fused.cu's
/// f32 reductions into `fused-reduce:0:K`'s sums).
fn tensor_map_f32(
    ptr: u64,
    rows: usize,
    k: usize,
    box_rows: u32,
) -> Result<TensorMapArg, KernelError> {
    use cudarc::driver::sys::CUtensorMapDataType as T;
    encode_map(
        ptr,
        rows,
        k,
        4,
        box_rows,
        T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    )
}

/// cuTensorMapEncodeTiled over [rows][k] values of `bytes` each: boxes 128 bytes wide (k
/// innermost) and `box_rows` high, 128-byte swizzle.
fn encode_map(
    ptr: u64,
    rows: usize,
    k: usize,
    bytes: usize,
    box_rows: u32,
    ty: cudarc::driver::sys::CUtensorMapDataType,
) -> Result<TensorMapArg, KernelError> {
    use cudarc::driver::sys;
    let mut tm = std::mem::MaybeUninit::<sys::CUtensorMap>::uninit();
    let dims: [u64; 2] = [k as u64, rows as u64];
    let strides: [u64; 1] = [(k * bytes) as u64];
    let boxes: [u32; 2] = [(128 / bytes) as u32, box_rows];
    let elem: [u32; 2] = [1, 1];
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

/// One of gemm.cu's or gemm_tma.cu's kernels made ready: the function, its grid, threads and
/// dynamic shared memory, and the TMA kernel's part.
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
    /// The kernel as launched (GemmKernel::Tma, TmaTail or TmaSwap, the split as used).
    kernel: GemmKernel,
    splits: usize,
    kt_per: usize,
    /// The tail split's first cut tile (GemmKernel::TmaTail, gemm_tma_tail_*'s last argument):
    /// the tiles before it in the kernel's order are whole, the others cut in `splits` ranges.
    /// None for the other kernels, which cut every tile when split.
    split_from: Option<i32>,
    /// splits x m x n floats, or for a tail split splits x (its tiles) x 128 x bn (one float
    /// when not split: the argument must point somewhere).
    ws: CudaSlice<f32>,
    sum: Option<CudaFunction>,
    /// One flag for an ungated launch (the argument must point somewhere; never read).
    no_flags: CudaSlice<u32>,
}

impl TmaLaunch {
    /// The kernel's work units for an m x n product: its tiles, each cut in `splits` (a tail
    /// split: only those from `split_from` on).
    fn units(&self, m: usize, n: usize) -> usize {
        let tiles = self.kernel.tma_tiles(m, n).expect("a TMA kernel");
        match self.split_from {
            Some(f) => f as usize + (tiles - f as usize) * self.splits,
            None => tiles * self.splits,
        }
    }

    /// Enqueue the sum of the split partials into C (m x n halves at `c`) on `s`, when k was
    /// split.
    ///
    /// # Safety
    /// `c` must hold the m x n halves the partials were made for, on `s`'s device.
    unsafe fn sum_into(
        &self,
        s: &CudaStream,
        m: usize,
        n: usize,
        c: u64,
    ) -> Result<(), KernelError> {
        let Some(sum) = &self.sum else {
            return Ok(());
        };
        if let (Some(from), GemmKernel::TmaTail { bn, .. }) = (&self.split_from, self.kernel) {
            let (tiles_m, tiles_n) = (m.div_ceil(128), n.div_ceil(bn));
            let quads = (tiles_m * tiles_n - *from as usize) * 128 * bn / 4;
            let cfg = LaunchConfig {
                grid_dim: (quads.div_ceil(256).clamp(1, 65535) as u32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let args = [m, n, bn, tiles_m, tiles_n].map(|v| v as i32);
            let splits = self.splits as i32;
            let mut l = s.launch_builder(sum);
            for a in &args {
                l.arg(a);
            }
            l.arg(from).arg(&splits).arg(&self.ws).arg(&c);
            // SAFETY: gemm_tail_sum_*(m, n, bn, tiles_m, tiles_n, from, splits, partials of
            // splits x (tiles_m x tiles_n - from) x 128 x bn floats, C of m x n halves), as
            // tma_parts sized them; bn % 64 == 0 and n % 8 == 0.
            unsafe { l.launch(cfg) }.map_err(drv("gemm tail-split sum"))?;
            return Ok(());
        }
        let quads = m * n / 4;
        let cfg = LaunchConfig {
            grid_dim: (quads.div_ceil(256).clamp(1, 65535) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let (mi, ni, splits) = (m as i32, n as i32, self.splits as i32);
        let mut l = s.launch_builder(sum);
        l.arg(&mi).arg(&ni).arg(&splits).arg(&self.ws).arg(&c);
        // SAFETY: gemm_splitk_*(m, n, splits, partials of splits x m x n floats, C of m x n
        // halves); n % 8 == 0, so m x n is a multiple of 4.
        unsafe { l.launch(cfg) }.map_err(drv("gemm split-k sum"))?;
        Ok(())
    }
}

/// The TMA kernels' dynamic shared memory (bytes) for tiles `bn` wide: barriers, 1 KiB of
/// alignment, per stage a 128 x 64 and a bn x 64 tile, and four 64 x 64 staging buffers of C.
fn tma_smem(bn: usize) -> usize {
    WG_STAGES * (128 + bn) * 64 * 2 + 4 * 64 * 64 * 2 + 1024 + 2 * WG_STAGES * 8
}

/// The swapped TMA kernel's (token tiles `mt` rows high): barriers, 1 KiB of alignment, per
/// stage a 128 x 64 tile of B and an mt x 64 tile of A, and two mt x 64 staging boxes of C.
fn tma_swap_smem(mt: usize) -> usize {
    SWAP_STAGES * (128 + mt) * 64 * 2 + 2 * mt * 64 * 2 + 1024 + 2 * SWAP_STAGES * 8
}

/// The row gate of a producer/consumer overlap: A's rows arrive in blocks of `rows_per_flag`,
/// and the TMA kernel reads block b's rows once `flags[b]` is non-zero (set after the rows are in
/// place: a `cuStreamWriteValue32` behind the copy on its stream, or a kernel's
/// release store). A flag still zero after 10 s makes the kernel trap: the launch fails rather
/// than hangs.
/// The flags are a plain `cuMemAlloc` allocation (stream memory operations refuse memory from
/// the stream-ordered pool), one u32 per block of rows.
#[derive(Clone, Copy)]
pub struct Gate<'a> {
    pub flags: &'a super::comm::DeviceBuffer,
    pub rows_per_flag: usize,
}

/// A gate over `m` rows in blocks of `rows_per_flag` needs that many rows per block (>= 1) and a
/// flag per block.
fn check_gate(m: usize, rows_per_flag: usize, flags: usize) -> Result<(), KernelError> {
    if rows_per_flag == 0 {
        return Err(KernelError::Invalid(
            "row flags: blocks of 0 rows (at least 1)".into(),
        ));
    }
    let need = m.div_ceil(rows_per_flag);
    if flags < need {
        return Err(KernelError::Invalid(format!(
            "row flags: {m} rows in blocks of {rows_per_flag} need {need} flags, got {flags}"
        )));
    }
    Ok(())
}

/// A kernel made ready for one [`DeviceGemm`]: one of gemm.cu's or gemm_tma.cu's, or
/// cuBLASLt's plan.
pub struct GemmPrepared {
    pub kernel: GemmKernel,
    run: Result<Launch, LtPlan>,
}

impl GemmPrepared {
    /// The kernel as launched: for [`GemmKernel::TmaAuto`] the TMA kernel it picked, with the
    /// split count it used (fewer where the last range would be empty, as for any TMA kernel).
    pub fn resolved(&self) -> GemmKernel {
        match &self.run {
            Ok(Launch { tma: Some(t), .. }) => t.kernel,
            _ => self.kernel,
        }
    }
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
        let GemmShape { m, n, .. } = d.shape;
        let tiled =
            |tile: (usize, usize)| (n.div_ceil(tile.1) as u32, m.div_ceil(tile.0) as u32, 1);
        // The kernel's name, grid, threads, dynamic shared memory (bytes) and TMA part.
        let (name, grid, threads, smem, tma) = match kernel {
            GemmKernel::CublasLt => {
                return Ok(GemmPrepared {
                    kernel,
                    run: Err(LtPlan::new(&self.stream, d)?),
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
            GemmKernel::Tma { .. }
            | GemmKernel::TmaTail { .. }
            | GemmKernel::TmaSwap { .. }
            | GemmKernel::TmaAuto => {
                hopper("TMA")?;
                let chosen = match kernel {
                    GemmKernel::TmaAuto => tma_auto(d.shape, self.multiprocessors),
                    k => k,
                };
                let s = &self.stream;
                let ptrs = [
                    d.a.device_ptr(s).0,
                    d.b.device_ptr(s).0,
                    d.c.device_ptr(s).0,
                ];
                let (tma, smem) = self.tma_parts(ptrs, d.shape, d.dtype, chosen)?;
                let name = match chosen {
                    GemmKernel::TmaSwap { mt, .. } => format!("gemm_tma_swap_{ty}_{mt}"),
                    GemmKernel::Tma { bn, .. } => format!("gemm_tma_{ty}_{bn}"),
                    GemmKernel::TmaTail { bn, .. } => format!("gemm_tma_tail_{ty}_{bn}"),
                    _ => unreachable!("a TMA kernel"),
                };
                let grid = (
                    tma.units(m, n).min(self.multiprocessors).max(1) as u32,
                    1,
                    1,
                );
                (name, grid, 384, smem, Some(tma))
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

    /// The arguments of `kernel` (`GemmKernel::Tma` or `GemmKernel::TmaSwap`) for C = A Bᵀ on the
    /// buffers at `[a, b, c]` (`shape`, 16-bit `dtype`), k in its `splits` ranges (fewer where
    /// the last would be empty): the tensor maps, the f32 partials (poisoned), the kernel that
    /// sums them; and the dynamic shared memory it takes (bytes).
    fn tma_parts(
        &self,
        [a, b, c]: [u64; 3],
        shape: GemmShape,
        dtype: Dtype,
        kernel: GemmKernel,
    ) -> Result<(TmaLaunch, usize), KernelError> {
        let GemmShape { m, n, k } = shape;
        let ty = match dtype {
            Dtype::Bf16 => "bf16",
            _ => "f16",
        };
        // The box heights of A, B and C (64 columns of C a box) and the shared memory.
        let (splits, boxes, smem) = match kernel {
            GemmKernel::Tma { bn, splits } | GemmKernel::TmaTail { bn, splits }
                if kernels::TMA_WIDTHS.contains(&bn) =>
            {
                (splits, (128, bn as u32, 64), tma_smem(bn))
            }
            GemmKernel::TmaSwap { mt, splits } if kernels::SWAP_TILES.contains(&mt) => {
                (splits, (mt as u32, 128, mt as u32), tma_swap_smem(mt))
            }
            _ => {
                return Err(KernelError::Invalid(format!(
                    "gemm_tma.cu's TMA kernels have tiles 128 x 256, 128 x 192, 128 x 128, \
                     32 x 128 and 64 x 128, not {}",
                    kernel.name()
                )))
            }
        };
        if !(1..=MAX_SPLITS).contains(&splits) {
            return Err(KernelError::Invalid(format!(
                "gemm_tma.cu's TMA kernels cut k in 1 to {MAX_SPLITS} ranges, not {splits}"
            )));
        }
        // Equal ranges of whole steps of 64; fewer splits when the last would be empty.
        let (kt_per, splits) = kernels::split_steps(k, splits);
        let kernel = match kernel {
            GemmKernel::Tma { bn, .. } => GemmKernel::Tma { bn, splits },
            GemmKernel::TmaTail { bn, .. } => GemmKernel::TmaTail { bn, splits },
            GemmKernel::TmaSwap { mt, .. } => GemmKernel::TmaSwap { mt, splits },
            k => k,
        };
        let s = &self.stream;
        let maps = (
            tensor_map(a, m, k, boxes.0, dtype)?,
            tensor_map(b, n, k, boxes.1, dtype)?,
            tensor_map(c, m, n, boxes.2, dtype)?,
        );
        // A tail split: the tiles of the last, part-filled wave over this GPU's SMs are cut
        // (none where the tiles fill whole waves).
        // (tail: the cut tiles' floats per split.)
        let (split_from, tail) = match kernel {
            GemmKernel::TmaTail { bn, .. } => {
                let tiles = kernel.tma_tiles(m, n).expect("a TMA kernel");
                let from = kernels::tail_from(tiles, self.multiprocessors);
                (Some(from as i32), (tiles - from) * 128 * bn)
            }
            _ => (None, 0),
        };
        let ws_len = match (splits > 1, split_from) {
            (false, _) => 1,
            (true, None) => splits * m * n,
            (true, Some(_)) => (splits * tail).max(1),
        };
        // SAFETY: filled with NaN right below; each split's partial is then written whole by
        // the TMA kernel before the sum reads it (the one float of an unsplit run is never
        // read), so a partial the kernel missed shows as NaN in C.
        let mut ws = unsafe { s.alloc::<f32>(ws_len) }.map_err(drv("alloc"))?;
        {
            let (p, _g) = ws.device_ptr_mut(s);
            // SAFETY: `p` holds ws_len floats on this stream's device.
            unsafe { cudarc::driver::result::memset_d8_async(p, 0xFF, ws_len * 4, s.cu_stream()) }
                .map_err(drv("poison partials"))?;
        }
        let sum = if splits > 1 && (split_from.is_none() || tail > 0) {
            let f = if split_from.is_some() {
                format!("gemm_tail_sum_{ty}")
            } else {
                format!("gemm_splitk_{ty}")
            };
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
            kernel,
            splits,
            kt_per,
            split_from,
            ws,
            sum,
            no_flags,
        };
        Ok((tma, smem))
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
            check_gate(m, g.rows_per_flag, g.flags.bytes() / 4)?;
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
                    if let Some(from) = &t.split_from {
                        l.arg(from);
                    }
                }
                // SAFETY: gemm.cu's (m, n, k, A, B, C), or for gemm_tma.cu's gemm_tma (m, n, k,
                // tensor maps of A, B and C, splits, steps per split, partials (splits x m x n
                // floats, or a tail split's, as tma_parts sized them), row flags (ceil(m /
                // rows_per_flag) of them, checked above; unread when rows_per_flag is 0),
                // rows_per_flag, and for gemm_tma_tail_* the first cut tile), with A m x k, B n x
                // k, C m x n halves (the maps describe this DeviceGemm's A, B and C); the shape
                // was validated (n, k multiples of 8).
                unsafe { l.launch(cfg) }.map_err(drv("gemm launch"))?;
                if let Some(t) = &launch.tma {
                    let (c, _g) = d.c.device_ptr_mut(s);
                    // SAFETY: `c` holds m x n halves, the partials' shape.
                    unsafe { t.sum_into(s, m, n, c) }?;
                }
                Ok(())
            }
            Err(plan) => plan.run(d, s),
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
        let plan = super::TimingPlan::new(warmup, reps);
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
mod gate_tests {
    use super::check_gate;

    #[test]
    fn a_gate_needs_a_flag_per_block_of_rows() {
        assert!(check_gate(1000, 250, 4).is_ok());
        assert!(check_gate(1000, 300, 4).is_ok());
        let e = check_gate(1000, 100, 4).unwrap_err().to_string();
        assert!(
            e.contains("1000 rows in blocks of 100 need 10 flags, got 4"),
            "{e}"
        );
        assert!(check_gate(1000, 0, 4).is_err());
        assert!(check_gate(0, 1, 0).is_ok());
    }
}

#[cfg(test)]
mod smem_tests {
    use super::{tma_smem, tma_swap_smem, SWAP_TILES, TMA_WIDTHS};

    /// The most dynamic shared memory a block may have on an H100 or H200 (227 KiB).
    const BLOCK_MAX: usize = 232_448;

    #[test]
    fn every_tma_kernel_fits_its_shared_memory() {
        for bn in TMA_WIDTHS {
            assert!(tma_smem(bn) <= BLOCK_MAX, "{bn}: {}", tma_smem(bn));
        }
        for mt in SWAP_TILES {
            assert!(
                tma_swap_smem(mt) <= BLOCK_MAX,
                "{mt}: {}",
                tma_swap_smem(mt)
            );
        }
    }
}
