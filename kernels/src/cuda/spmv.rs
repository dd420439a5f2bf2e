//! CUDA SpMV: the kernel pool of `kernels/cuda/spmv_csr.cu`, device-resident CSR matrices, launch,
//! and event timing.

use std::sync::Arc;
use std::time::Instant;

use augur_datasets::{Csr, Scalar};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, LaunchConfig,
    PushKernelArg, ValidAsZeroBits,
};

use super::module;
use crate::KernelError;

/// The GPU SpMV kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum GpuKernel {
    /// One thread per row.
    Scalar,
    /// `lanes` consecutive threads of a warp per row (2, 4, 8, 16 or 32).
    Vector(u32),
    /// One block of 256 threads per row.
    Block,
}

impl GpuKernel {
    pub const ALL: [GpuKernel; 7] = [
        GpuKernel::Scalar,
        GpuKernel::Vector(2),
        GpuKernel::Vector(4),
        GpuKernel::Vector(8),
        GpuKernel::Vector(16),
        GpuKernel::Vector(32),
        GpuKernel::Block,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GpuKernel::Scalar => "scalar",
            GpuKernel::Vector(2) => "vector2",
            GpuKernel::Vector(4) => "vector4",
            GpuKernel::Vector(8) => "vector8",
            GpuKernel::Vector(16) => "vector16",
            GpuKernel::Vector(32) => "vector32",
            GpuKernel::Vector(_) => "vector?",
            GpuKernel::Block => "block",
        }
    }

    pub fn from_name(name: &str) -> Result<GpuKernel, KernelError> {
        GpuKernel::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| KernelError::UnknownKernel {
                name: name.to_string(),
                known: GpuKernel::ALL.map(|k| k.name()).join(", "),
            })
    }

    fn entry(self, suffix: &str) -> String {
        format!("spmv_{}_{suffix}", self.name())
    }

    fn config(self, rows: usize) -> LaunchConfig {
        const BLOCK: u32 = 256;
        let threads = match self {
            GpuKernel::Scalar => rows as u64,
            GpuKernel::Vector(l) => rows as u64 * l as u64,
            GpuKernel::Block => rows as u64 * BLOCK as u64,
        };
        LaunchConfig {
            grid_dim: (threads.div_ceil(BLOCK as u64).max(1) as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

/// How many launches to make untimed, then timed.
#[derive(Debug, Clone, Copy)]
pub struct TimingPlan {
    pub warmup: usize,
    pub iterations: usize,
}

/// A value type the GPU kernels take.
pub trait GpuScalar: Scalar + DeviceRepr + ValidAsZeroBits {
    const SUFFIX: &'static str;
}
impl GpuScalar for f32 {
    const SUFFIX: &'static str = "f32";
}
impl GpuScalar for f64 {
    const SUFFIX: &'static str = "f64";
}

/// A CSR matrix in device memory.
pub struct DeviceCsr<T> {
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    ptr: CudaSlice<i32>,
    idx: CudaSlice<i32>,
    val: CudaSlice<T>,
}

/// One GPU with the SpMV module loaded.
pub struct CudaSpmv {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    pub device: super::DeviceInfo,
    /// Seconds to compile (or read from the cache) and load the module.
    pub module_s: f64,
    pub module_cached: bool,
}

fn drv(what: &str) -> impl Fn(cudarc::driver::DriverError) -> KernelError + '_ {
    move |e| KernelError::Cuda(format!("{what}: {e}"))
}

impl CudaSpmv {
    /// Open GPU `ordinal` and load the SpMV kernels (compiled by NVRTC or read from the cache).
    pub fn new(ordinal: usize) -> Result<CudaSpmv, KernelError> {
        let device = super::devices()?.into_iter().nth(ordinal).ok_or_else(|| {
            KernelError::NotAvailable {
                backend: "cuda".into(),
                why: format!("no GPU {ordinal}; use --backend cpu"),
            }
        })?;
        let ctx = CudaContext::new(ordinal).map_err(drv("cuCtxCreate"))?;
        let stream = ctx.default_stream();
        let t = Instant::now();
        let (ptx, cached) = module::ptx(module::SPMV_CSR, device.compute_capability)?;
        let module = ctx.load_module(ptx).map_err(drv("cuModuleLoadData"))?;
        Ok(CudaSpmv {
            ctx,
            stream,
            module,
            device,
            module_s: t.elapsed().as_secs_f64(),
            module_cached: cached,
        })
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    fn function(&self, k: GpuKernel, suffix: &str) -> Result<CudaFunction, KernelError> {
        self.module
            .load_function(&k.entry(suffix))
            .map_err(drv("cuModuleGetFunction"))
    }

    /// Copy a matrix to the device.
    pub fn upload<T: GpuScalar>(&self, a: &Csr<T>) -> Result<DeviceCsr<T>, KernelError> {
        let s = &self.stream;
        Ok(DeviceCsr {
            rows: a.rows(),
            cols: a.cols(),
            nnz: a.nnz(),
            ptr: s
                .clone_htod(a.indptr().raw_storage())
                .map_err(drv("upload row pointers"))?,
            idx: s.clone_htod(a.indices()).map_err(drv("upload indices"))?,
            val: s.clone_htod(a.data()).map_err(drv("upload values"))?,
        })
    }

    pub fn htod<T: DeviceRepr>(&self, v: &[T]) -> Result<CudaSlice<T>, KernelError> {
        self.stream
            .clone_htod(v)
            .map_err(drv("host to device copy"))
    }

    pub fn dtoh<T: DeviceRepr + Default + Clone>(
        &self,
        d: &CudaSlice<T>,
    ) -> Result<Vec<T>, KernelError> {
        self.stream
            .clone_dtoh(d)
            .map_err(drv("device to host copy"))
    }

    /// Enqueue `y = A x` with kernel `k` (no synchronisation).
    pub fn launch<T: GpuScalar>(
        &self,
        k: GpuKernel,
        a: &DeviceCsr<T>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<(), KernelError> {
        if x.len() != a.cols || y.len() != a.rows {
            return Err(KernelError::Dimension {
                what: if x.len() != a.cols { "x" } else { "y" },
                expected: if x.len() != a.cols { a.cols } else { a.rows },
                got: if x.len() != a.cols { x.len() } else { y.len() },
                rows: a.rows,
                cols: a.cols,
            });
        }
        if a.rows == 0 {
            return Ok(());
        }
        let f = self.function(k, T::SUFFIX)?;
        let rows = a.rows as i32;
        let mut b = self.stream.launch_builder(&f);
        b.arg(&rows)
            .arg(&a.ptr)
            .arg(&a.idx)
            .arg(&a.val)
            .arg(x)
            .arg(y);
        // SAFETY: the arguments match the kernel's signature (int, int*, int*, T*, T*, T*) and
        // the buffers hold rows+1, nnz, nnz, cols and rows elements.
        unsafe { b.launch(k.config(a.rows)) }.map_err(drv("cuLaunchKernel"))?;
        Ok(())
    }

    /// Times (seconds) of `plan.iterations` launches after `plan.warmup`, each between two timing
    /// events (CU_EVENT_DEFAULT). With `flush`, a buffer larger than L2 is overwritten before each
    /// timed launch, so no launch finds the matrix in L2.
    pub fn time<T: GpuScalar>(
        &self,
        k: GpuKernel,
        (a, x, y): (&DeviceCsr<T>, &CudaSlice<T>, &mut CudaSlice<T>),
        plan: TimingPlan,
        mut flush: Option<&mut CudaSlice<u8>>,
    ) -> Result<Vec<f64>, KernelError> {
        let TimingPlan {
            warmup,
            iterations: iters,
        } = plan;
        for _ in 0..warmup {
            self.launch(k, a, x, y)?;
        }
        let ev = |s: &str| {
            self.ctx
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(drv(s))
        };
        let (start, stop) = (ev("cuEventCreate")?, ev("cuEventCreate")?);
        let mut times = Vec::with_capacity(iters);
        for _ in 0..iters {
            if let Some(buf) = flush.as_deref_mut() {
                self.stream.memset_zeros(buf).map_err(drv("L2 flush"))?;
            }
            start.record(&self.stream).map_err(drv("cuEventRecord"))?;
            self.launch(k, a, x, y)?;
            stop.record(&self.stream).map_err(drv("cuEventRecord"))?;
            stop.synchronize().map_err(drv("cuEventSynchronize"))?;
            times.push(start.elapsed_ms(&stop).map_err(drv("cuEventElapsedTime"))? as f64 / 1e3);
        }
        Ok(times)
    }

    /// A device buffer of twice the L2 size, for [`CudaSpmv::time`]'s flush.
    pub fn flush_buffer(&self) -> Result<CudaSlice<u8>, KernelError> {
        let n = (2 * self.device.l2_bytes.max(1 << 20)) as usize;
        self.stream.alloc_zeros::<u8>(n).map_err(drv("cuMemAlloc"))
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
        let ev = || {
            self.ctx
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(drv("cuEventCreate"))
        };
        let (start, stop) = (ev()?, ev()?);
        let mut times = Vec::new();
        for i in 0..11 {
            start.record(&self.stream).map_err(drv("cuEventRecord"))?;
            self.stream
                .memcpy_dtod(&src, &mut dst)
                .map_err(drv("cuMemcpyDtoD"))?;
            stop.record(&self.stream).map_err(drv("cuEventRecord"))?;
            stop.synchronize().map_err(drv("cuEventSynchronize"))?;
            if i > 0 {
                times
                    .push(start.elapsed_ms(&stop).map_err(drv("cuEventElapsedTime"))? as f64 / 1e3);
            }
        }
        times.sort_by(f64::total_cmp);
        Ok(2.0 * n as f64 / times[times.len() / 2] / 1e9)
    }
}
