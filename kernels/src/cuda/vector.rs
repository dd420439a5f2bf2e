//! The vector kernels of distributed products and device-side iterations (`kernels/cuda/vector.cu`):
//! the halo exchange's pack and scatter-add, and conjugate gradients' dot products and updates
//! with their scalars kept in device memory.
//!
//! Arguments are raw device addresses (`CUdeviceptr`): the callers (augur's multi-GPU shards) pass
//! pieces of larger buffers (a shard's rows of a whole vector, one slot of a scalar array), and
//! order their streams themselves by events, so the slices' own tracking is not wanted here. Every
//! launch is `unsafe`: the caller promises the addresses hold what the kernel reads and writes.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg,
};

use super::{drv, module, GpuScalar};
use crate::KernelError;

/// Blocks of a dot product's first level (DOT_BLOCKS in vector.cu): its partial sums per slot.
pub const DOT_BLOCKS: usize = 1024;
const THREADS: u32 = 256;

/// The entry points of vector.cu, per value type (the HIP compile check reads them too).
pub const ENTRY_POINTS: [&str; 12] = [
    "pack_f32",
    "pack_f64",
    "scatter_add_f32",
    "scatter_add_f64",
    "dot_partial_f32",
    "dot_partial_f64",
    "dot_finish_f32",
    "dot_finish_f64",
    "cg_xr_f32",
    "cg_xr_f64",
    "cg_p_f32",
    "cg_p_f64",
];

/// A device address (`CUdeviceptr`).
pub type DevPtr = u64;

/// vector.cu loaded on one GPU.
pub struct VectorKernels {
    _module: Arc<CudaModule>,
    functions: Vec<(&'static str, CudaFunction)>,
}

/// A grid for `n` elements: one thread each, at most [`DOT_BLOCKS`] blocks (grid-stride loops).
fn grid(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (
            (n.div_ceil(THREADS as usize)).clamp(1, DOT_BLOCKS) as u32,
            1,
            1,
        ),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Elements per launch: the kernels index with `int`.
fn count(n: usize) -> Result<i32, KernelError> {
    i32::try_from(n).map_err(|_| {
        KernelError::Cuda(format!(
            "{n} elements in one vector kernel: at most {} (int indices)",
            i32::MAX
        ))
    })
}

impl VectorKernels {
    /// Load vector.cu (compiled by NVRTC for `arch`, or read from the cache) into `ctx`.
    pub fn new(ctx: &Arc<CudaContext>, arch: (i32, i32)) -> Result<VectorKernels, KernelError> {
        let (ptx, _) = module::ptx(module::VECTOR, arch)?;
        let m = ctx.load_module(ptx).map_err(drv("cuModuleLoadData"))?;
        let functions = ENTRY_POINTS
            .iter()
            .map(|&n| {
                m.load_function(n)
                    .map(|f| (n, f))
                    .map_err(drv("cuModuleGetFunction"))
            })
            .collect::<Result<_, _>>()?;
        Ok(VectorKernels {
            _module: m,
            functions,
        })
    }

    fn f<T: GpuScalar>(&self, base: &str) -> Result<&CudaFunction, KernelError> {
        let name = format!("{base}_{}", T::SUFFIX);
        self.functions
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| f)
            .ok_or_else(|| KernelError::Cuda(format!("no kernel `{name}` in vector.cu")))
    }

    /// `out[i] = x[idx[i]]` for `i < n`.
    ///
    /// # Safety
    /// `idx` holds n ints indexing into `x`; `out` has room for n values of T.
    pub unsafe fn pack<T: GpuScalar>(
        &self,
        s: &CudaStream,
        n: usize,
        idx: DevPtr,
        x: DevPtr,
        out: DevPtr,
    ) -> Result<(), KernelError> {
        if n == 0 {
            return Ok(());
        }
        let n32 = count(n)?;
        let mut l = s.launch_builder(self.f::<T>("pack")?);
        l.arg(&n32).arg(&idx).arg(&x).arg(&out);
        unsafe { l.launch(grid(n)) }
            .map(|_| ())
            .map_err(drv("cuLaunchKernel"))
    }

    /// `y[rows[i]] += v[i]` for `i < n` (rows distinct).
    ///
    /// # Safety
    /// `rows` holds n distinct ints indexing into `y`; `v` holds n values of T.
    pub unsafe fn scatter_add<T: GpuScalar>(
        &self,
        s: &CudaStream,
        n: usize,
        rows: DevPtr,
        v: DevPtr,
        y: DevPtr,
    ) -> Result<(), KernelError> {
        if n == 0 {
            return Ok(());
        }
        let n32 = count(n)?;
        let mut l = s.launch_builder(self.f::<T>("scatter_add")?);
        l.arg(&n32).arg(&rows).arg(&v).arg(&y);
        unsafe { l.launch(grid(n)) }
            .map(|_| ())
            .map_err(drv("cuLaunchKernel"))
    }

    /// `out[0] = a . b` over n elements, through `partial` (room for [`DOT_BLOCKS`] values);
    /// the same bits on every run.
    ///
    /// # Safety
    /// `a`, `b` hold n values of T; `partial` DOT_BLOCKS; `out` one.
    pub unsafe fn dot<T: GpuScalar>(
        &self,
        s: &CudaStream,
        n: usize,
        a: DevPtr,
        b: DevPtr,
        partial: DevPtr,
        out: DevPtr,
    ) -> Result<(), KernelError> {
        let n32 = count(n)?;
        let g = grid(n);
        let zero = 0i32;
        let mut l = s.launch_builder(self.f::<T>("dot_partial")?);
        l.arg(&n32).arg(&a).arg(&b).arg(&partial).arg(&zero);
        unsafe { l.launch(g) }.map_err(drv("cuLaunchKernel"))?;
        unsafe { self.finish::<T>(s, g.grid_dim.0 as i32, 1, partial, out) }
    }

    /// `out[k] = ` the sum of slot k's `blocks` partial sums, for k < slots.
    unsafe fn finish<T: GpuScalar>(
        &self,
        s: &CudaStream,
        blocks: i32,
        slots: i32,
        partial: DevPtr,
        out: DevPtr,
    ) -> Result<(), KernelError> {
        let mut l = s.launch_builder(self.f::<T>("dot_finish")?);
        l.arg(&blocks).arg(&slots).arg(&partial).arg(&out);
        let one = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { l.launch(one) }
            .map(|_| ())
            .map_err(drv("cuLaunchKernel"))
    }

    /// CG's `x += alpha p; r -= alpha ap; z = r * inv_diag` with alpha = `*num / *den`, skipped
    /// (z still computed) once `*rr_prev <= tol2 * *bb`; then `out[0] = r . z`, `out[1] = r . r`
    /// (this GPU's rows), through `partial` (room for 2 x [`DOT_BLOCKS`]).
    ///
    /// # Safety
    /// The vectors hold n values of T; the scalars one each; `out` two.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn cg_xr<T: GpuScalar>(
        &self,
        s: &CudaStream,
        n: usize,
        scalars: CgScalars,
        tol2: T,
        p: DevPtr,
        ap: DevPtr,
        inv_diag: DevPtr,
        x: DevPtr,
        r: DevPtr,
        z: DevPtr,
        partial: DevPtr,
        out: DevPtr,
    ) -> Result<(), KernelError> {
        let n32 = count(n)?;
        let g = grid(n);
        let CgScalars {
            num,
            den,
            rr_prev,
            bb,
        } = scalars;
        let mut l = s.launch_builder(self.f::<T>("cg_xr")?);
        l.arg(&n32)
            .arg(&num)
            .arg(&den)
            .arg(&rr_prev)
            .arg(&bb)
            .arg(&tol2)
            .arg(&p)
            .arg(&ap)
            .arg(&inv_diag)
            .arg(&x)
            .arg(&r)
            .arg(&z)
            .arg(&partial);
        unsafe { l.launch(g) }.map_err(drv("cuLaunchKernel"))?;
        unsafe { self.finish::<T>(s, g.grid_dim.0 as i32, 2, partial, out) }
    }

    /// CG's `p_out = z + beta p_in` with beta = `*num / *den` (p_out may be p_in), and
    /// `*hist = *rr`.
    ///
    /// # Safety
    /// The vectors hold n values of T; the scalars one each.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn cg_p<T: GpuScalar>(
        &self,
        s: &CudaStream,
        n: usize,
        num: DevPtr,
        den: DevPtr,
        rr: DevPtr,
        hist: DevPtr,
        z: DevPtr,
        p_in: DevPtr,
        p_out: DevPtr,
    ) -> Result<(), KernelError> {
        let n32 = count(n)?;
        let mut l = s.launch_builder(self.f::<T>("cg_p")?);
        l.arg(&n32)
            .arg(&num)
            .arg(&den)
            .arg(&rr)
            .arg(&hist)
            .arg(&z)
            .arg(&p_in)
            .arg(&p_out);
        unsafe { l.launch(grid(n)) }
            .map(|_| ())
            .map_err(drv("cuLaunchKernel"))
    }
}

/// The device scalars [`VectorKernels::cg_xr`] reads.
#[derive(Debug, Clone, Copy)]
pub struct CgScalars {
    /// r.z of the last iteration.
    pub num: DevPtr,
    /// p.Ap.
    pub den: DevPtr,
    /// r.r of the last iteration (the convergence test).
    pub rr_prev: DevPtr,
    /// b.b.
    pub bb: DevPtr,
}
