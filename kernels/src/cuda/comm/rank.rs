//! One GPU's side of a group: the collectives it runs (NCCL, LL, one-shot, two-shot, pull, push,
//! copy engines) and their timing.

use std::ffi::c_void;
use std::sync::Arc;

use augur_features::attention::Dtype;
use cudarc::driver::{sys, CudaContext, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nccl::{result as nccl, sys as nccl_sys};

use super::super::drv;
use super::{
    check, check_dtype, nccl_err, nccl_type, DeviceBuffer, Funcs, NcclComm, Pattern, Peers,
    MAX_BLOCKS, MAX_RANKS, THREADS,
};
use crate::KernelError;

/// One rank of a [`CommGroup`](super::CommGroup): its GPU, stream, buffers, kernels and every rank's addresses.
pub struct RankComm {
    pub rank: usize,
    pub world: usize,
    pub ordinal: usize,
    pub(super) ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    /// The registered data buffers ("slots"; slot 0 serves the all-reduce).
    pub(super) bufs: Vec<DeviceBuffer>,
    /// Every rank's address of each slot.
    pub(super) slot_ptrs: Vec<[u64; MAX_RANKS]>,
    pub(super) tmp: Option<DeviceBuffer>,
    pub(super) _sig: DeviceBuffer,
    pub(super) _ll: Option<DeviceBuffer>,
    /// Pairs per source and slot of the LL staging buffer (0: no LL).
    pub(super) ll_words: u64,
    /// LL calls so far (the same on every rank); the epoch of the next is this + 1.
    pub(super) ll_epoch: u32,
    pub(super) peers: Peers,
    pub(super) funcs: Funcs,
    pub(super) nccl: Option<NcclComm>,
    /// Flag values the copy-engine pattern used so far (the same on every rank).
    pub(super) calls: u32,
    pub(super) max_blocks: usize,
}

/// The grid of a custom kernel moving `bytes` per rank: one 512-thread block per 8 KiB, at most
/// one block per SM (every block of every rank must be resident at once: they wait on each
/// other). The same on every rank.
fn grid(bytes: usize, max_blocks: usize) -> u32 {
    let per_block = THREADS as usize * 16;
    bytes.div_ceil(per_block).clamp(1, max_blocks) as u32
}

impl RankComm {
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The registered buffer of this rank (all-reduce input; all-gather buffer): slot 0.
    pub fn buf(&self) -> u64 {
        self.bufs[0].ptr()
    }

    /// This rank's registered buffer `slot` (None beyond the group's slots).
    pub fn slot(&self, slot: usize) -> Option<u64> {
        self.bufs.get(slot).map(|b| b.ptr())
    }

    pub fn capacity(&self) -> usize {
        self.bufs[0].bytes()
    }

    /// Enqueue this rank's collectives on `stream` (a stream of the same GPU, e.g. the one its
    /// products run on, so that they follow each other without events) from now on.
    pub fn use_stream(&mut self, stream: Arc<CudaStream>) {
        self.stream = stream;
    }

    pub fn has_nccl(&self) -> bool {
        self.nccl.is_some()
    }

    fn next_value(&mut self) -> u32 {
        self.calls = self.calls.wrapping_add(2);
        self.calls.wrapping_sub(1)
    }

    /// Enqueue on this rank's stream the sum over ranks of `buf[..n]` (n elements of `dtype`)
    /// into `out` (a device address of this rank with room for n elements).
    pub fn all_reduce(
        &mut self,
        pattern: Pattern,
        dtype: Dtype,
        n: usize,
        out: u64,
    ) -> Result<(), KernelError> {
        check_dtype(dtype)?;
        let bytes = n * dtype.bytes();
        if bytes > self.capacity() {
            return Err(KernelError::Invalid(format!(
                "all-reduce of {bytes} bytes: the registered buffer holds {}",
                self.capacity()
            )));
        }
        self.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        match pattern {
            Pattern::Nccl => {
                let comm = self.nccl_comm()?;
                // SAFETY: buf holds n elements on every rank, out has room for n; every rank
                // enqueues the same collectives in the same order.
                unsafe {
                    nccl::all_reduce(
                        self.buf() as *const c_void,
                        out as *mut c_void,
                        n,
                        nccl_type(dtype),
                        nccl_sys::ncclRedOp_t::ncclSum,
                        comm,
                        self.stream.cu_stream() as nccl_sys::cudaStream_t,
                    )
                }
                .map_err(nccl_err("ncclAllReduce"))?;
                Ok(())
            }
            Pattern::Ll => {
                self.ll_fits(bytes)?;
                let f = if dtype == Dtype::Bf16 {
                    &self.funcs.ll_bf16
                } else {
                    &self.funcs.ll_f32
                };
                self.ll_epoch = self.ll_epoch.wrapping_add(1).max(1);
                let words = bytes.div_ceil(4);
                let cfg = LaunchConfig {
                    grid_dim: (grid(words * 16, self.max_blocks), 1, 1),
                    block_dim: (THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let (rank, world, n64) = (self.rank as i32, self.world as i32, n as u64);
                let mut b = self.stream.launch_builder(f);
                b.arg(&self.peers)
                    .arg(&rank)
                    .arg(&world)
                    .arg(&n64)
                    .arg(&out)
                    .arg(&self.ll_epoch)
                    .arg(&self.ll_words);
                // SAFETY: as below; the message fits the staging buffers (checked).
                unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
                Ok(())
            }
            Pattern::OneShot | Pattern::TwoShot => {
                if pattern == Pattern::TwoShot && self.tmp.is_none() {
                    return Err(KernelError::Cuda(
                        "two-shot all-reduce needs the group's scratch buffers".into(),
                    ));
                }
                let f = match (pattern, dtype) {
                    (Pattern::OneShot, Dtype::Bf16) => &self.funcs.one_shot_bf16,
                    (Pattern::OneShot, _) => &self.funcs.one_shot_f32,
                    (_, Dtype::Bf16) => &self.funcs.two_shot_bf16,
                    _ => &self.funcs.two_shot_f32,
                };
                let blocks = grid(bytes.div_ceil(self.world).max(1), self.max_blocks);
                let (rank, world, n64) = (self.rank as i32, self.world as i32, n as u64);
                let cfg = LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut b = self.stream.launch_builder(f);
                b.arg(&self.peers)
                    .arg(&rank)
                    .arg(&world)
                    .arg(&n64)
                    .arg(&out);
                // SAFETY: the argument list matches the kernel's signature; every address in
                // `peers` is a live registered buffer of its rank, open to this one.
                unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
                Ok(())
            }
            other => Err(KernelError::Invalid(format!(
                "{} is not an all-reduce pattern",
                other.name()
            ))),
        }
    }

    /// Enqueue on this rank's stream the in-place all-gather of the pieces
    /// `[offsets[q], offsets[q + 1])` (bytes; one per rank, `offsets.len() == world + 1`) of
    /// every rank's registered buffer. NCCL needs equal pieces of whole `dtype` elements
    /// starting at 0.
    pub fn all_gather(
        &mut self,
        pattern: Pattern,
        dtype: Dtype,
        offsets: &[u64],
    ) -> Result<(), KernelError> {
        self.all_gather_in(pattern, dtype, offsets, 0)
    }

    /// [`RankComm::all_gather`] in registered buffer `slot`.
    pub fn all_gather_in(
        &mut self,
        pattern: Pattern,
        dtype: Dtype,
        offsets: &[u64],
        slot: usize,
    ) -> Result<(), KernelError> {
        check_dtype(dtype)?;
        if slot >= self.bufs.len() {
            return Err(KernelError::Invalid(format!(
                "registered buffer {slot} asked for; the group has {}",
                self.bufs.len()
            )));
        }
        let mut peers = self.peers;
        peers.buf = self.slot_ptrs[slot];
        if offsets.len() != self.world + 1
            || offsets.windows(2).any(|w| w[0] > w[1])
            || offsets[self.world] as usize > self.capacity()
        {
            return Err(KernelError::Invalid(format!(
                "all-gather pieces {offsets:?}: need {} increasing offsets within {} bytes",
                self.world + 1,
                self.capacity()
            )));
        }
        self.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        let me = self.rank;
        match pattern {
            Pattern::Nccl => {
                let piece = offsets[1] - offsets[0];
                let eb = dtype.bytes() as u64;
                let equal = offsets[0] == 0
                    && piece.is_multiple_of(eb)
                    && offsets.windows(2).all(|w| w[1] - w[0] == piece);
                if !equal {
                    return Err(KernelError::Cuda(
                        "NCCL all-gather needs equal pieces of whole elements from offset 0".into(),
                    ));
                }
                let comm = self.nccl_comm()?;
                let base = peers.buf[me];
                // SAFETY: in place: rank r's piece sits at base + r x piece, the buffer holds
                // world x piece bytes; the same collectives on every rank in the same order.
                unsafe {
                    nccl::all_gather(
                        (base + me as u64 * piece) as *const c_void,
                        base as *mut c_void,
                        (piece / eb) as usize,
                        nccl_type(dtype),
                        comm,
                        self.stream.cu_stream() as nccl_sys::cudaStream_t,
                    )
                }
                .map_err(nccl_err("ncclAllGather"))?;
                Ok(())
            }
            Pattern::Pull | Pattern::Push => {
                let f = if pattern == Pattern::Pull {
                    &self.funcs.pull
                } else {
                    &self.funcs.push
                };
                peers.off[..offsets.len()].copy_from_slice(offsets);
                let biggest = offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
                let blocks = grid(biggest as usize, self.max_blocks);
                let (rank, world) = (me as i32, self.world as i32);
                let cfg = LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut b = self.stream.launch_builder(f);
                b.arg(&peers).arg(&rank).arg(&world);
                // SAFETY: as in all_reduce; the offsets lie within every rank's buffer.
                unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
                Ok(())
            }
            Pattern::Ll => {
                if offsets.iter().any(|o| o % 4 != 0) {
                    return Err(KernelError::Invalid(format!(
                        "LL all-gather needs pieces at 4-byte aligned offsets, not {offsets:?}"
                    )));
                }
                let total = offsets[self.world] as usize;
                // The staging slot holds world x ll_words words, indexed by the buffer's words.
                self.ll_fits(total.div_ceil(self.world))?;
                let biggest = offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
                peers.off[..offsets.len()].copy_from_slice(offsets);
                self.ll_epoch = self.ll_epoch.wrapping_add(1).max(1);
                let cfg = LaunchConfig {
                    grid_dim: (grid(biggest as usize * 4, self.max_blocks), 1, 1),
                    block_dim: (THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let (rank, world) = (me as i32, self.world as i32);
                let mut b = self.stream.launch_builder(&self.funcs.ll_gather);
                b.arg(&peers)
                    .arg(&rank)
                    .arg(&world)
                    .arg(&self.ll_epoch)
                    .arg(&self.ll_words);
                // SAFETY: as for pull/push; the words fit the staging buffers (checked).
                unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
                Ok(())
            }
            Pattern::CopyEngine => self.copy_engine_gather(offsets, &peers.buf),
            other => Err(KernelError::Invalid(format!(
                "{} is not an all-gather pattern",
                other.name()
            ))),
        }
    }

    /// The copy-engine all-gather: tell every peer "ready" (a flag in its memory), wait until
    /// every peer is ready, copy this rank's piece into every peer's buffer, tell every peer
    /// "done", wait for every peer's "done".
    fn copy_engine_gather(
        &mut self,
        offsets: &[u64],
        bufs: &[u64; MAX_RANKS],
    ) -> Result<(), KernelError> {
        let value = self.next_value();
        let me = self.rank;
        let s = self.stream.cu_stream();
        let flag = |rank: usize, slot: usize, from: usize| -> u64 {
            self.peers.sig[rank] + 4 * (MAX_BLOCKS * MAX_RANKS + slot * MAX_RANKS + from) as u64
        };
        let signal = |slot: usize, v: u32| -> Result<(), KernelError> {
            for q in 0..self.world {
                if q != me {
                    // SAFETY: a flag word in peer q's registered signal buffer (peer access on);
                    // the default flags order it after this stream's earlier work.
                    check("cuStreamWriteValue32", unsafe {
                        sys::cuStreamWriteValue32_v2(s, flag(q, slot, me), v, 0)
                    })?;
                }
            }
            Ok(())
        };
        let wait = |slot: usize, v: u32| -> Result<(), KernelError> {
            for q in 0..self.world {
                if q != me {
                    // SAFETY: a flag word in this rank's own signal buffer; GEQ is wrap-aware.
                    check("cuStreamWaitValue32", unsafe {
                        sys::cuStreamWaitValue32_v2(
                            s,
                            flag(me, slot, q),
                            v,
                            sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32,
                        )
                    })?;
                }
            }
            Ok(())
        };
        signal(0, value)?;
        wait(0, value)?;
        let (lo, hi) = (offsets[me], offsets[me + 1]);
        if hi > lo {
            for q in 0..self.world {
                if q != me {
                    // SAFETY: the same byte range of two live registered buffers, peer access
                    // on (unified addressing: the driver picks the peer path).
                    check("cuMemcpyAsync", unsafe {
                        sys::cuMemcpyAsync(bufs[q] + lo, bufs[me] + lo, (hi - lo) as usize, s)
                    })?;
                }
            }
        }
        signal(1, value)?;
        wait(1, value)
    }

    /// Whether a message of `bytes` per source fits the LL staging buffers.
    fn ll_fits(&self, bytes: usize) -> Result<(), KernelError> {
        if bytes as u64 > self.ll_words * 4 {
            return Err(KernelError::Invalid(format!(
                "LL pattern: {bytes} bytes per rank, more than the group's LL limit of {} bytes",
                self.ll_words * 4
            )));
        }
        Ok(())
    }

    /// The largest message per rank the LL pattern takes (bytes; 0: none).
    pub fn ll_bytes(&self) -> usize {
        self.ll_words as usize * 4
    }

    /// Enqueue a kernel that keeps this rank's stream busy for `seconds` (one thread).
    pub fn spin(&self, seconds: f64) -> Result<(), KernelError> {
        self.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        let ns = (seconds * 1e9) as u64;
        let mut b = self.stream.launch_builder(&self.funcs.spin);
        b.arg(&ns);
        // SAFETY: spin_ns(u64) reads nothing but the clock.
        unsafe { b.launch(LaunchConfig::for_num_elems(1)) }.map_err(drv("cuLaunchKernel"))?;
        Ok(())
    }

    fn nccl_comm(&self) -> Result<nccl_sys::ncclComm_t, KernelError> {
        self.nccl
            .as_ref()
            .map(|c| c.0)
            .ok_or_else(|| KernelError::Invalid("this group was opened without NCCL".into()))
    }

    /// Copy host bytes into this rank's buffer at `offset` (synchronous).
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<(), KernelError> {
        self.range_ok(offset, bytes.len())?;
        self.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        // On this rank's stream, then wait for it: a "synchronous" cuMemcpyHtoD from pageable
        // memory returns once the bytes are staged, before the DMA lands, and is not ordered
        // with the (non-blocking) stream the collectives run on. Measured: an LL all-gather of
        // 1.5 MiB, which starts reading at once (no barrier), sent a word of the poison.
        // SAFETY: the range lies in the buffer (checked); `bytes` outlives the copy (waited for).
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                self.buf() + offset as u64,
                bytes.as_ptr() as *const c_void,
                bytes.len(),
                self.stream.cu_stream(),
            )
        })?;
        self.stream
            .synchronize()
            .map_err(drv("cuStreamSynchronize"))
    }

    /// Copy `out.len()` bytes from device address `src` of this rank to the host (after this
    /// rank's stream is done).
    pub fn read(&self, src: u64, out: &mut [u8]) -> Result<(), KernelError> {
        self.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        self.stream
            .synchronize()
            .map_err(drv("cuStreamSynchronize"))?;
        // SAFETY: the caller names a live range of this rank; synchronous copy to host memory.
        check("cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, src, out.len())
        })
    }

    /// Fill `bytes` bytes at device address `dst` of this rank with `byte` (poison).
    pub fn fill(&self, dst: u64, bytes: usize, byte: u8) -> Result<(), KernelError> {
        self.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        // SAFETY: the caller names a live range of this rank.
        check("cuMemsetD8Async", unsafe {
            sys::cuMemsetD8Async(dst, byte, bytes, self.stream.cu_stream())
        })?;
        self.stream
            .synchronize()
            .map_err(drv("cuStreamSynchronize"))
    }

    fn range_ok(&self, offset: usize, len: usize) -> Result<(), KernelError> {
        if offset + len > self.capacity() {
            return Err(KernelError::Invalid(format!(
                "bytes {offset}..{} beyond the registered buffer's {}",
                offset + len,
                self.capacity()
            )));
        }
        Ok(())
    }
}
