//! `ll-bulk`: bulk with augur's LL collective in place of NCCL's (comm.cu's `tp_all_gather_ll`
//! and `tp_reduce_scatter_ll_*`, one launch on the compute stream before or after cuBLASLt's
//! GEMM). Every 4-byte word travels with the call's epoch in one 8-byte store into the
//! receiver's staging, which the receiver polls: one one-way trip over NVLink, no ready words,
//! no flags, no barrier, so at small M its cost is the link's latency rather than NCCL's
//! launch and handshakes. Its cost is twice the bytes: it is for small messages.
//!
//! `pc-ll:C:S` (all-gather only) runs the same kernel in C calls of one piece each, on S blocks
//! on the communication stream, while cuBLASLt's GEMMs, told to leave S SMs free, multiply
//! this GPU's rows and then each piece once its call has ended (an event): the producer /
//! consumer pattern with LL stores in place of the copy kernel's arrival words.

use std::cell::Cell;

use cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};

use super::Gpu;
use crate::cuda::comm::{DeviceBuffer, MAX_RANKS};
use crate::cuda::gemm::{drv, CudaGemm};
use crate::KernelError;

/// Every GPU's LL staging (struct TpLl in comm.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct TpLl {
    ll: [u64; MAX_RANKS],
}

// SAFETY: plain old data laid out as the C struct.
unsafe impl DeviceRepr for TpLl {}

/// Threads per block of the LL kernels (their __launch_bounds__).
const THREADS: u32 = 512;

/// One GPU's part of `ll-bulk`: its staging (cuMemAlloc, zeroed: peers store into it), the
/// kernel, this GPU's share in 4-byte words, its calls so far.
pub(super) struct Ll {
    staging: DeviceBuffer,
    kernel: CudaFunction,
    words: usize,
    epoch: Cell<u32>,
    blocks: u32,
}

impl Ll {
    /// comm.cu's `kernel` on `g`'s GPU, for a share of `words` 4-byte words per GPU of
    /// `world`: staging of 2 slots x world sources x words (data, epoch) pairs.
    pub(super) fn new(
        g: &CudaGemm,
        world: usize,
        words: usize,
        kernel: &str,
    ) -> Result<Ll, KernelError> {
        let kernel = super::comm_module(g)?
            .load_function(kernel)
            .map_err(drv("cuModuleGetFunction"))?;
        Ok(Ll {
            staging: DeviceBuffer::zeroed(&g.ctx, 2 * world * words * 8)?,
            kernel,
            words,
            epoch: Cell::new(0),
            blocks: words.div_ceil(THREADS as usize).clamp(1, g.multiprocessors) as u32,
        })
    }

    /// The staging's address (what this GPU publishes).
    pub(super) fn ptr(&self) -> u64 {
        self.staging.ptr()
    }

    /// The next call's epoch: never 0 (the zeroed staging's flags) and alternating in parity
    /// from call to call, across the wrap too. Every launch of one call (`pc-ll`'s pieces, of
    /// disjoint word ranges) takes the same epoch, so that call n + 1 stores into the other
    /// slot whatever the number of pieces: a peer can be a call ahead of this GPU's reads, not
    /// two (its call n + 2 waits for this GPU's n + 1 stores, queued after n's reads).
    pub(super) fn next_epoch(&self) -> u32 {
        let e = match self.epoch.get().wrapping_add(1) {
            0 => 2,
            e => e,
        };
        self.epoch.set(e);
        e
    }

    /// Enqueue one launch of a call of epoch `e` (`next_epoch`; every GPU makes the same calls
    /// in the same order) on `st`, on `blocks` blocks (None: one per 512 words, at most one per
    /// SM): the kernel's arguments (TpLl, rank, world, words), then `args`, then the epoch; the
    /// peers' staging at their published address `published`.
    ///
    /// # Safety
    /// `args` must be what the kernel takes between `words` and the epoch: word ranges within
    /// the share, and buffers on this GPU of the sizes its comment in comm.cu says.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn launch(
        &self,
        gpu: &Gpu,
        st: &CudaStream,
        blocks: Option<usize>,
        published: usize,
        args: &[u64],
        e: u32,
    ) -> Result<(), KernelError> {
        let mut t = TpLl::default();
        for (q, at) in t.ll.iter_mut().enumerate().take(gpu.world) {
            *at = if q == gpu.rank {
                self.ptr()
            } else {
                gpu.peers[q][published]
            };
        }
        let (rank, world, words) = (gpu.rank as i32, gpu.world as i32, self.words as u64);
        let mut b = st.launch_builder(&self.kernel);
        b.arg(&t).arg(&rank).arg(&world).arg(&words);
        for p in args {
            b.arg(p);
        }
        b.arg(&e);
        let cfg = LaunchConfig {
            grid_dim: (blocks.map_or(self.blocks, |n| n as u32), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match the kernel (the caller's part: `ptrs`); every GPU's
        // staging is 2 x world x words pairs, live while the group runs, peer access on.
        unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        Ok(())
    }
}
