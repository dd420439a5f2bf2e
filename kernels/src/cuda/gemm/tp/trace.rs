//! The harness's diagnostics (`AUGUR_TP_TRACE`): each GPU thread's steps on stderr, and the
//! bounded looks at a GPU's streams and words that the traced patterns print after a call.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::Gpu;
use crate::cuda::gemm::drv;
use crate::KernelError;

/// A diagnostic's wait (`AUGUR_TP_TRACE`): up to 5 s for this GPU's compute and communication
/// streams and its copy streams (one per peer, named `label` and the peer's rank) to finish; the
/// names of those still busy then.
pub(super) fn busy_after_wait(
    gpu: &Gpu,
    copies: &[Option<Arc<CudaStream>>],
    label: &str,
) -> Vec<String> {
    let busy = |st: &CudaStream| {
        // SAFETY: a live stream of this context.
        let r = unsafe { cudarc::driver::sys::cuStreamQuery(st.cu_stream()) };
        r == cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_READY
    };
    let s = gpu.stream();
    let mut streams: Vec<(String, &CudaStream)> = vec![("compute".into(), &*s)];
    streams.push(("comm".into(), &*gpu.comm_stream));
    for (q, st) in copies.iter().enumerate() {
        if let Some(st) = st {
            streams.push((format!("{label}{q}"), &**st));
        }
    }
    let t0 = std::time::Instant::now();
    while streams.iter().any(|(_, st)| busy(st)) && t0.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    streams
        .into_iter()
        .filter(|(_, st)| busy(st))
        .map(|(n, _)| n)
        .collect()
}

/// A diagnostic's read (`AUGUR_TP_TRACE`) of `count` u32 words at `at` on this GPU, on a stream
/// of its own into page-locked memory (a copy into pageable memory would return only once
/// done), bounded: None if the copy has not finished in 2 s (a GPU whose streams wait on words
/// may not serve it; the page-locked buffer is then leaked, not freed under the copy).
pub(super) fn read_words(
    gpu: &Gpu,
    at: u64,
    count: usize,
) -> Result<Option<Vec<u32>>, KernelError> {
    use cudarc::driver::sys;
    let side = gpu.g.ctx.new_stream().map_err(drv("cuStreamCreate"))?;
    // SAFETY: read only after the copy below has filled it.
    let mut f = unsafe { gpu.g.ctx.alloc_pinned_with_flags::<u32>(count, 0) }
        .map_err(drv("cuMemHostAlloc"))?;
    // Its own event is never recorded: this does not wait.
    let host = f.as_mut_ptr().map_err(drv("pinned buffer"))?;
    // SAFETY: `at` holds `count` u32 on this GPU; `host` as many, kept until the copy is done.
    unsafe {
        crate::cuda::check(
            "cuMemcpyDtoHAsync",
            sys::cuMemcpyDtoHAsync_v2(host as *mut c_void, at, 4 * count, side.cu_stream()),
        )?;
    }
    let t0 = std::time::Instant::now();
    loop {
        // SAFETY: a live stream of this context.
        match unsafe { sys::cuStreamQuery(side.cu_stream()) } {
            sys::CUresult::CUDA_ERROR_NOT_READY if t0.elapsed().as_secs() < 2 => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            sys::CUresult::CUDA_ERROR_NOT_READY => {
                std::mem::forget(f);
                return Ok(None);
            }
            r => {
                crate::cuda::check("cuStreamQuery", r)?;
                return Ok(Some(f.as_slice().map_err(drv("pinned buffer"))?.to_vec()));
            }
        }
    }
}

/// When the process's diagnostics started, if `AUGUR_TP_TRACE` is set (read once): the
/// traces below, the all-gather's and push-reduce's ([`tracing`] decides them all).
fn trace_start() -> Option<std::time::Instant> {
    static START: std::sync::OnceLock<Option<std::time::Instant>> = std::sync::OnceLock::new();
    *START.get_or_init(|| {
        std::env::var_os("AUGUR_TP_TRACE")
            .is_some()
            .then(std::time::Instant::now)
    })
}

/// Whether `AUGUR_TP_TRACE` is set.
pub(super) fn tracing() -> bool {
    trace_start().is_some()
}

/// A diagnostic (`AUGUR_TP_TRACE`): "tp trace: T s rank R: WHAT" on stderr as a GPU's thread
/// reaches a step of a layer (set-up, each pattern's check and timing, the close), so that a
/// thread blocked in a driver or NCCL call shows by its last step.
pub(super) fn step(rank: usize, what: impl FnOnce() -> String) {
    if let Some(t0) = trace_start() {
        eprintln!(
            "tp trace: {:.3} s rank {rank}: {}",
            t0.elapsed().as_secs_f64(),
            what()
        );
    }
}
