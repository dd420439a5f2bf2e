//! Collectives between the GPUs of one process: NCCL and peer-access patterns (`kernels/cuda/comm.cu`
//! and copy engines), for augur's communication-pattern selector.
//!
//! [`CommGroup::new`] opens the GPUs, allocates every rank's registered buffers with `cuMemAlloc`
//! (not from the stream-ordered pool, which context peer access does not open), enables peer access
//! between every pair, tells every rank every rank's addresses, and (optionally) creates NCCL
//! communicators. It returns one [`RankComm`] per GPU; each is `Send` and is driven by its own
//! thread. Every rank must make the same calls in the same order (as with NCCL): the patterns meet
//! through flags in peer memory, and a rank that skips a call leaves the others waiting.
//!
//! Conventions follow nccl-tests: an all-reduce sums every rank's `buf[..n]` into each rank's
//! `out`; an all-gather is in place: rank q's piece already sits in its own `buf` at
//! `[off[q], off[q + 1])` bytes, and afterwards every rank's `buf` holds every piece.

use std::ffi::c_void;
use std::sync::Arc;

use augur_features::attention::Dtype;
use augur_features::message::Collective;
use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};
use cudarc::nccl::{result as nccl, sys as nccl_sys};

use super::{drv, module};
use crate::KernelError;

/// Ranks a group may have (MAX_RANKS in comm.cu).
pub const MAX_RANKS: usize = 8;
/// Blocks a custom kernel may have (MAX_BLOCKS in comm.cu): its flags are per block.
pub const MAX_BLOCKS: usize = 256;

/// The entry points of comm.cu that the patterns launch.
pub const ENTRY_POINTS: [&str; 10] = [
    "all_reduce_one_shot_f32",
    "all_reduce_one_shot_bf16",
    "all_reduce_two_shot_f32",
    "all_reduce_two_shot_bf16",
    "all_gather_pull",
    "all_gather_push",
    "spin_ns",
    "all_reduce_ll_f32",
    "all_reduce_ll_bf16",
    "all_gather_ll",
];
const THREADS: u32 = 512;
/// u32 signal words per rank: flags MAX_BLOCKS x MAX_RANKS for the kernels, 2 x MAX_RANKS for
/// the copy-engine pattern, then the kernels' block counters (see comm.cu).
const SIG_WORDS: usize = MAX_BLOCKS * MAX_RANKS + 2 * MAX_RANKS + MAX_BLOCKS;

/// A way to run a collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// `ncclAllReduce` / `ncclAllGather`.
    Nccl,
    /// All-reduce: each rank reads every rank's buffer over peer access and sums locally.
    OneShot,
    /// All-reduce: reduce-scatter then all-gather, both by peer loads.
    TwoShot,
    /// All-gather: each rank reads every other rank's piece (one kernel, peer loads).
    Pull,
    /// All-gather: each rank writes its piece into every other rank's buffer (peer stores).
    Push,
    /// Low-latency (NCCL's LL protocol, both collectives): every 4-byte word is stored with the
    /// call's epoch as one 8-byte pair into each peer's staging buffer, and receivers poll for
    /// the epoch: no barrier, one one-way trip; twice the bytes on the wire. Messages up to the
    /// group's `ll_bytes`; all-gather pieces at 4-byte aligned offsets.
    Ll,
    /// All-gather: each rank's piece copied to every other rank by the copy engines
    /// (`cuMemcpyAsync` between peers), ordered by flags written and waited on by the streams
    /// (`cuStreamWriteValue32` / `cuStreamWaitValue32`): no kernel, no host round trip.
    CopyEngine,
}

impl Pattern {
    pub const ALL: [Pattern; 7] = [
        Pattern::Nccl,
        Pattern::Ll,
        Pattern::OneShot,
        Pattern::TwoShot,
        Pattern::Pull,
        Pattern::Push,
        Pattern::CopyEngine,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Pattern::Nccl => "nccl",
            Pattern::Ll => "ll",
            Pattern::OneShot => "one-shot",
            Pattern::TwoShot => "two-shot",
            Pattern::Pull => "pull",
            Pattern::Push => "push",
            Pattern::CopyEngine => "copy-engine",
        }
    }

    pub fn parse(s: &str) -> Option<Pattern> {
        Pattern::ALL.into_iter().find(|p| p.name() == s)
    }

    /// The patterns of a collective (NCCL first).
    pub fn of(c: Collective) -> &'static [Pattern] {
        match c {
            Collective::AllReduce => &[
                Pattern::Nccl,
                Pattern::Ll,
                Pattern::OneShot,
                Pattern::TwoShot,
            ],
            Collective::AllGather => &[
                Pattern::Nccl,
                Pattern::Ll,
                Pattern::Pull,
                Pattern::Push,
                Pattern::CopyEngine,
            ],
            Collective::ReduceScatter => &[Pattern::Nccl],
        }
    }
}

/// The element types of the collectives.
pub fn check_dtype(d: Dtype) -> Result<(), KernelError> {
    match d {
        Dtype::F32 | Dtype::Bf16 => Ok(()),
        other => Err(KernelError::Invalid(format!(
            "collectives run on f32 and bf16, not {other:?}"
        ))),
    }
}

fn nccl_type(d: Dtype) -> nccl_sys::ncclDataType_t {
    match d {
        Dtype::Bf16 => nccl_sys::ncclDataType_t::ncclBfloat16,
        Dtype::F16 => nccl_sys::ncclDataType_t::ncclFloat16,
        Dtype::F32 => nccl_sys::ncclDataType_t::ncclFloat32,
    }
}

fn check(what: &str, r: sys::CUresult) -> Result<(), KernelError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(KernelError::Cuda(format!("{what}: {r:?}")))
    }
}

fn nccl_err(what: &'static str) -> impl Fn(nccl::NcclError) -> KernelError {
    move |e| KernelError::Cuda(format!("{what}: {e:?}"))
}

/// Every rank's addresses, as the kernels take them (struct Peers in comm.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Peers {
    pub buf: [u64; MAX_RANKS],
    pub tmp: [u64; MAX_RANKS],
    pub sig: [u64; MAX_RANKS],
    pub ll: [u64; MAX_RANKS],
    pub off: [u64; MAX_RANKS + 1],
}

// SAFETY: plain old data laid out as the C struct.
unsafe impl DeviceRepr for Peers {}

/// A `cuMemAlloc` allocation in one context, freed on drop.
#[derive(Debug)]
pub struct DeviceBuffer {
    ctx: Arc<CudaContext>,
    ptr: u64,
    bytes: usize,
}

impl DeviceBuffer {
    pub fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<DeviceBuffer, KernelError> {
        ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: out-pointer; the context is current.
        // 16 bytes of slack: the LL all-reduce reads whole words (half a word past an odd
        // count of bf16 values).
        check("cuMemAlloc", unsafe {
            sys::cuMemAlloc_v2(&mut ptr, (bytes + 16).max(256))
        })?;
        Ok(DeviceBuffer {
            ctx: ctx.clone(),
            ptr,
            bytes,
        })
    }

    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by cuMemAlloc in this context, freed once.
            unsafe {
                let _ = sys::cuMemFree_v2(self.ptr);
            }
        }
    }
}

/// An NCCL communicator, destroyed on drop (the raw handle is `.0`; whoever wraps one must not
/// destroy it elsewhere).
pub struct NcclComm(pub nccl_sys::ncclComm_t);

// SAFETY: an NCCL communicator may be used from any one thread at a time; its owner holds it.
unsafe impl Send for NcclComm {}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // SAFETY: created by ncclCommInitAll, destroyed once.
        unsafe {
            let _ = nccl::comm_destroy(self.0);
        }
    }
}

/// One rank of a [`CommGroup`]: its GPU, stream, buffers, kernels and every rank's addresses.
pub struct RankComm {
    pub rank: usize,
    pub world: usize,
    pub ordinal: usize,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// The registered data buffers ("slots"; slot 0 serves the all-reduce).
    bufs: Vec<DeviceBuffer>,
    /// Every rank's address of each slot.
    slot_ptrs: Vec<[u64; MAX_RANKS]>,
    tmp: Option<DeviceBuffer>,
    _sig: DeviceBuffer,
    _ll: Option<DeviceBuffer>,
    /// Pairs per source and slot of the LL staging buffer (0: no LL).
    ll_words: u64,
    /// LL calls so far (the same on every rank); the epoch of the next is this + 1.
    ll_epoch: u32,
    peers: Peers,
    funcs: Funcs,
    nccl: Option<NcclComm>,
    /// Flag values the copy-engine pattern used so far (the same on every rank).
    calls: u32,
    max_blocks: usize,
}

struct Funcs {
    one_shot_f32: CudaFunction,
    one_shot_bf16: CudaFunction,
    two_shot_f32: CudaFunction,
    two_shot_bf16: CudaFunction,
    pull: CudaFunction,
    push: CudaFunction,
    spin: CudaFunction,
    ll_f32: CudaFunction,
    ll_bf16: CudaFunction,
    ll_gather: CudaFunction,
}

/// Options of [`CommGroup::new`].
#[derive(Debug, Clone)]
pub struct GroupOptions {
    /// Bytes of each rank's registered buffer.
    pub capacity: usize,
    /// Also a scratch buffer of `capacity` bytes per rank (two-shot all-reduce).
    pub scratch: bool,
    /// NCCL communicators too (needs libnccl).
    pub nccl: bool,
    /// Registered data buffers per rank (at least 1): an all-gather names the one it runs in,
    /// so that two can take turns (e.g. x and y of an iterated product).
    pub slots: usize,
    /// Largest all-reduce (and all-gather piece) of the LL pattern, bytes (0: no LL; its
    /// staging buffer takes 4 x world x this per rank).
    pub ll_bytes: usize,
}

/// Opens a group of GPUs; see the module docs.
pub struct CommGroup;

impl CommGroup {
    /// One [`RankComm`] per GPU in `ordinals` (rank = position), or the first error.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(ordinals: &[usize], opts: &GroupOptions) -> Result<Vec<RankComm>, KernelError> {
        let world = ordinals.len();
        if world == 0 || world > MAX_RANKS {
            return Err(KernelError::Invalid(format!(
                "a group has 1 to {MAX_RANKS} GPUs, not {world}"
            )));
        }
        let n = super::available()?;
        for (i, &o) in ordinals.iter().enumerate() {
            if o >= n {
                return Err(KernelError::NotAvailable {
                    backend: "cuda".into(),
                    why: format!("GPU {o} asked for, but only {n} present"),
                });
            }
            if ordinals[..i].contains(&o) {
                return Err(KernelError::Invalid(format!(
                    "GPU {o} named twice in the group"
                )));
            }
        }
        let devices = super::devices()?;
        let mut ctxs = Vec::with_capacity(world);
        for &o in ordinals {
            ctxs.push(CudaContext::new(o).map_err(drv("cuCtxCreate"))?);
        }
        // Peer access between every pair (both directions).
        for (a, ca) in ctxs.iter().enumerate() {
            ca.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
            for (b, cb) in ctxs.iter().enumerate() {
                if a == b {
                    continue;
                }
                let info = super::peer(ordinals[a], ordinals[b])?;
                if !info.access {
                    return Err(KernelError::Cuda(format!(
                        "GPU {} cannot access GPU {} (no peer access)",
                        ordinals[a], ordinals[b]
                    )));
                }
                // SAFETY: both contexts are live primary contexts of this process.
                let r = unsafe { sys::cuCtxEnablePeerAccess(cb.cu_ctx(), 0) };
                if r != sys::CUresult::CUDA_SUCCESS
                    && r != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                {
                    check("cuCtxEnablePeerAccess", r)?;
                }
            }
        }
        let mut peers = Peers::default();
        let mut parts = Vec::with_capacity(world);
        for (r, ctx) in ctxs.iter().enumerate() {
            let dev = &devices[ordinals[r]];
            let (ptx, _) = module::ptx(module::COMM, dev.compute_capability)?;
            let m = ctx.load_module(ptx).map_err(drv("cuModuleLoadData"))?;
            let f = |name: &str| m.load_function(name).map_err(drv("cuModuleGetFunction"));
            let funcs = Funcs {
                one_shot_f32: f("all_reduce_one_shot_f32")?,
                one_shot_bf16: f("all_reduce_one_shot_bf16")?,
                two_shot_f32: f("all_reduce_two_shot_f32")?,
                two_shot_bf16: f("all_reduce_two_shot_bf16")?,
                pull: f("all_gather_pull")?,
                push: f("all_gather_push")?,
                spin: f("spin_ns")?,
                ll_f32: f("all_reduce_ll_f32")?,
                ll_bf16: f("all_reduce_ll_bf16")?,
                ll_gather: f("all_gather_ll")?,
            };
            let bufs = (0..opts.slots.max(1))
                .map(|_| DeviceBuffer::new(ctx, opts.capacity))
                .collect::<Result<Vec<_>, _>>()?;
            let tmp = if opts.scratch {
                Some(DeviceBuffer::new(ctx, opts.capacity)?)
            } else {
                None
            };
            let ll_words = opts.ll_bytes.div_ceil(4) as u64;
            let ll = if ll_words > 0 {
                let b = DeviceBuffer::new(ctx, 2 * world * ll_words as usize * 8)?;
                // SAFETY: a live allocation of this (current) context, that many bytes.
                check("cuMemsetD8", unsafe {
                    sys::cuMemsetD8_v2(b.ptr(), 0, b.bytes())
                })?;
                Some(b)
            } else {
                None
            };
            let sig = DeviceBuffer::new(ctx, SIG_WORDS * 4)?;
            // SAFETY: SIG_WORDS u32 in a live allocation of this (current) context.
            check("cuMemsetD32", unsafe {
                sys::cuMemsetD32_v2(sig.ptr(), 0, SIG_WORDS)
            })?;
            peers.buf[r] = bufs[0].ptr();
            peers.tmp[r] = tmp.as_ref().map_or(0, |t| t.ptr());
            peers.sig[r] = sig.ptr();
            peers.ll[r] = ll.as_ref().map_or(0, |b| b.ptr());
            let stream = ctx.new_stream().map_err(drv("cuStreamCreate"))?;
            let max_blocks = (dev.multiprocessors.max(1) as usize).min(MAX_BLOCKS);
            parts.push((
                ctx.clone(),
                stream,
                bufs,
                tmp,
                sig,
                ll,
                ll_words,
                funcs,
                max_blocks,
            ));
        }
        let mut comms: Vec<Option<NcclComm>> = (0..world).map(|_| None).collect();
        if opts.nccl {
            // SAFETY: only tries to dlopen libnccl.
            if !unsafe { nccl_sys::is_culib_present() } {
                return Err(KernelError::NotAvailable {
                    backend: "nccl".into(),
                    why: "libnccl.so is not installed".into(),
                });
            }
            let mut raw = vec![std::ptr::null_mut(); world];
            let devs: Vec<i32> = ordinals.iter().map(|&o| o as i32).collect();
            // SAFETY: `world` out-pointers and device ordinals.
            unsafe { nccl::comm_init_all(raw.as_mut_ptr(), world as i32, devs.as_ptr()) }
                .map_err(nccl_err("ncclCommInitAll"))?;
            for (c, r) in comms.iter_mut().zip(raw) {
                *c = Some(NcclComm(r));
            }
        }
        let mut slot_ptrs = vec![[0u64; MAX_RANKS]; opts.slots.max(1)];
        for (r, part) in parts.iter().enumerate() {
            for (s, b) in part.2.iter().enumerate() {
                slot_ptrs[s][r] = b.ptr();
            }
        }
        let mut out = Vec::with_capacity(world);
        for (rank, ((ctx, stream, bufs, tmp, sig, ll, ll_words, funcs, max_blocks), nccl)) in
            parts.into_iter().zip(comms).enumerate()
        {
            out.push(RankComm {
                rank,
                world,
                ordinal: ordinals[rank],
                ctx,
                stream,
                bufs,
                slot_ptrs: slot_ptrs.clone(),
                tmp,
                _sig: sig,
                _ll: ll,
                ll_words,
                ll_epoch: 0,
                peers,
                funcs,
                nccl,
                calls: 0,
                max_blocks,
            });
        }
        Ok(out)
    }
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

/// One collective call to check and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub collective: Collective,
    pub dtype: Dtype,
    /// nccl-tests convention: the all-reduce buffer, the all-gather output (whole elements per
    /// rank: see [`Case::elements`]).
    pub bytes: usize,
    pub pattern: Pattern,
}

impl Case {
    /// Elements per rank's buffer (all-reduce) or piece (all-gather).
    pub fn elements(&self, world: usize) -> usize {
        match self.collective {
            Collective::AllGather => self.bytes / world / self.dtype.bytes(),
            _ => self.bytes / self.dtype.bytes(),
        }
    }

    /// The bytes the case really moves: rounded down to whole elements per piece.
    pub fn real_bytes(&self, world: usize) -> usize {
        match self.collective {
            Collective::AllGather => self.elements(world) * world * self.dtype.bytes(),
            _ => self.elements(world) * self.dtype.bytes(),
        }
    }
}

/// How cases are timed.
#[derive(Debug, Clone, Copy)]
pub struct SweepPlan {
    /// Untimed calls first.
    pub warmup: usize,
    /// Timed batches; the median batch is reported.
    pub reps: usize,
    /// A batch is enough back-to-back calls to last about this long (at least 1, at most 200).
    pub batch_s: f64,
    /// Check every case against the host before timing it.
    pub check: bool,
}

/// What one case gave.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub case: Case,
    /// Bytes really moved (see [`Case::real_bytes`]).
    pub bytes: usize,
    /// Seconds per call at the device's pace: for each batch (enqueued behind a spin kernel),
    /// the event time of the rank that started last / calls, median over batches. None when
    /// the case failed (see `error`).
    pub median_s: Option<f64>,
    pub reps: usize,
    /// Calls per timed batch.
    pub batch: usize,
    /// `exact` (every rank's result equals the host's), `skipped`, or empty on error.
    pub check: String,
    pub error: String,
}

/// Input element i of rank r: multiples of 1/4 in [-4, 4], exact in bf16, and so are sums of
/// up to 8 of them: a correct collective gives the host's bits exactly, and a value read from
/// the wrong place or rank does not.
fn value(i: usize, r: usize) -> f32 {
    (((i * 7 + r * 13) % 33) as f32 - 16.0) * 0.25
}

/// `out` = the `n` values `f(0..n)` as `dtype` bytes (in parallel: the checks of 1 GiB messages
/// would otherwise take most of a sweep's device time).
fn encode(dtype: Dtype, n: usize, f: impl Fn(usize) -> f32 + Sync, out: &mut Vec<u8>) {
    use rayon::prelude::*;
    let eb = dtype.bytes();
    out.clear();
    out.resize(n * eb, 0);
    const CHUNK: usize = 1 << 16;
    out.par_chunks_mut(CHUNK * eb)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (j, e) in chunk.chunks_exact_mut(eb).enumerate() {
                let v = f(c * CHUNK + j);
                match dtype {
                    Dtype::F32 => e.copy_from_slice(&v.to_le_bytes()),
                    // Exact: the values have at most 8 significant bits.
                    _ => e.copy_from_slice(&((v.to_bits() >> 16) as u16).to_le_bytes()),
                }
            }
        });
}

/// Shared by the rank threads of a sweep.
struct Meet {
    barrier: std::sync::Barrier,
    slots: std::sync::Mutex<Vec<f64>>,
}

impl Meet {
    /// Every rank puts a number in; every rank gets `fold` of them all.
    fn fold(&self, rank: usize, v: f64, init: f64, f: fn(f64, f64) -> f64) -> f64 {
        self.slots.lock().expect("no rank panics holding it")[rank] = v;
        self.barrier.wait();
        let m = self
            .slots
            .lock()
            .expect("no rank panics holding it")
            .iter()
            .copied()
            .fold(init, f);
        self.barrier.wait();
        m
    }

    fn max(&self, rank: usize, v: f64) -> f64 {
        self.fold(rank, v, f64::NEG_INFINITY, f64::max)
    }

    fn min(&self, rank: usize, v: f64) -> f64 {
        self.fold(rank, v, f64::INFINITY, f64::min)
    }
}

/// Check and time every case on every rank, one thread per rank, in order; `progress` sees
/// each result as it comes. A failure is reported in its case and the sweep goes on; a rank
/// whose launch fails while the others wait in a custom kernel would leave them waiting, so
/// every check that can fail is made before anything is enqueued (the same on every rank).
pub fn sweep(
    ranks: Vec<RankComm>,
    cases: &[Case],
    plan: SweepPlan,
    progress: &(dyn Fn(&CaseResult) + Sync),
) -> Vec<CaseResult> {
    let world = ranks.len();
    let meet = Meet {
        barrier: std::sync::Barrier::new(world),
        slots: std::sync::Mutex::new(vec![0.0; world]),
    };
    let errors: std::sync::Mutex<Vec<Vec<String>>> =
        std::sync::Mutex::new(vec![vec![String::new(); world]; cases.len()]);
    let results: std::sync::Mutex<Vec<Option<CaseResult>>> =
        std::sync::Mutex::new(vec![None; cases.len()]);
    std::thread::scope(|scope| {
        for mut rc in ranks {
            let (meet, errors, results) = (&meet, &errors, &results);
            scope.spawn(move || {
                let rank = rc.rank;
                let out = DeviceBuffer::new(&rc.ctx, rc.capacity()).map_err(|e| e.to_string());
                for (ci, case) in cases.iter().enumerate() {
                    let r = run_case(
                        &mut rc,
                        out.as_ref().map_err(String::as_str),
                        *case,
                        plan,
                        meet,
                    );
                    let mine = match &r {
                        Ok(_) => String::new(),
                        Err(e) => format!("rank {rank}: {e}"),
                    };
                    errors.lock().expect("no panic")[ci][rank] = mine;
                    meet.barrier.wait();
                    if rank == 0 {
                        let errs: Vec<String> = errors.lock().expect("no panic")[ci]
                            .iter()
                            .filter(|e| !e.is_empty())
                            .cloned()
                            .collect();
                        let res = match (r, errs.is_empty()) {
                            (Ok((median, reps, batch, check)), true) => CaseResult {
                                case: *case,
                                bytes: case.real_bytes(world),
                                median_s: Some(median),
                                reps,
                                batch,
                                check,
                                error: String::new(),
                            },
                            _ => CaseResult {
                                case: *case,
                                bytes: case.real_bytes(world),
                                median_s: None,
                                reps: 0,
                                batch: 0,
                                check: String::new(),
                                error: errs.join("; "),
                            },
                        };
                        progress(&res);
                        results.lock().expect("no panic")[ci] = Some(res);
                    }
                    meet.barrier.wait();
                }
            });
        }
    });
    results
        .into_inner()
        .expect("no panic")
        .into_iter()
        .map(|r| r.expect("rank 0 filled every case"))
        .collect()
}

/// One case on one rank: (median seconds per call, reps, batch, check).
fn run_case(
    rc: &mut RankComm,
    out: Result<&DeviceBuffer, &str>,
    case: Case,
    plan: SweepPlan,
    meet: &Meet,
) -> Result<(f64, usize, usize, String), KernelError> {
    let world = rc.world;
    let n = case.elements(world);
    let eb = case.dtype.bytes();
    // Checks that decide whether anything is enqueued: the same outcome on every rank.
    check_dtype(case.dtype)?;
    if !Pattern::of(case.collective).contains(&case.pattern) {
        return Err(KernelError::Invalid(format!(
            "{} is not a pattern of {:?}",
            case.pattern.name(),
            case.collective
        )));
    }
    let out = out.map_err(|e| KernelError::Cuda(format!("output buffer: {e}")))?;
    if case.real_bytes(world) > rc.capacity() || n == 0 {
        return Err(KernelError::Invalid(format!(
            "{} bytes: outside 1 element .. the {}-byte buffers",
            case.bytes,
            rc.capacity()
        )));
    }
    if case.pattern == Pattern::Nccl && !rc.has_nccl() {
        return Err(KernelError::Invalid("opened without NCCL".into()));
    }
    if case.pattern == Pattern::TwoShot && rc.tmp.is_none() {
        return Err(KernelError::Invalid(
            "opened without scratch buffers".into(),
        ));
    }
    let offsets: Vec<u64> = (0..=world).map(|q| (q * n * eb) as u64).collect();
    let out_ptr = out.ptr();
    let call = |rc: &mut RankComm| -> Result<(), KernelError> {
        match case.collective {
            Collective::AllReduce => rc.all_reduce(case.pattern, case.dtype, n, out_ptr),
            _ => rc.all_gather(case.pattern, case.dtype, &offsets),
        }
    };
    let rank = rc.rank;
    let mut check = "skipped".to_string();
    if plan.check {
        let mut bytes = Vec::new();
        let total = case.real_bytes(world);
        match case.collective {
            Collective::AllReduce => {
                encode(case.dtype, n, |i| value(i, rank), &mut bytes);
                rc.write(0, &bytes)?;
                rc.fill(out_ptr, total, 0xff)?;
            }
            _ => {
                rc.fill(rc.buf(), total, 0xff)?;
                encode(case.dtype, n, |i| value(rank * n + i, rank), &mut bytes);
                rc.write(rank * n * eb, &bytes)?;
            }
        }
        meet.barrier.wait();
        call(rc)?;
        let mut got = vec![0u8; total];
        match case.collective {
            Collective::AllReduce => {
                rc.read(out_ptr, &mut got)?;
                encode(
                    case.dtype,
                    n,
                    |i| (0..world).map(|r| value(i, r)).sum::<f32>(),
                    &mut bytes,
                );
            }
            _ => {
                rc.read(rc.buf(), &mut got)?;
                encode(case.dtype, n * world, |i| value(i, i / n), &mut bytes);
            }
        }
        let wrong = {
            use rayon::prelude::*;
            got.par_iter()
                .zip(bytes.par_iter())
                .position_first(|(a, b)| a != b)
        };
        // Every rank learns whether any rank's result was wrong, so that all of them leave this
        // case at the same point (the host barriers and the kernels pair up rank by rank).
        if meet.max(rank, f64::from(u8::from(wrong.is_some()))) > 0.0 {
            return Err(KernelError::Cuda(match wrong {
                Some(i) => format!(
                    "wrong result at element {} of {} (byte {i}: {:#04x}, expected {:#04x})",
                    i / eb,
                    got.len() / eb,
                    got[i],
                    bytes[i]
                ),
                None => "another GPU's result was wrong".into(),
            }));
        }
        check = "exact".into();
    }
    meet.barrier.wait();
    let ev = || {
        rc.ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(drv("cuEventCreate"))
    };
    let (start, stop) = (ev()?, ev()?);
    // Warm-up, and one timed call to size the batches (the slowest rank's time decides).
    for _ in 0..plan.warmup {
        call(rc)?;
    }
    meet.barrier.wait();
    start.record(&rc.stream).map_err(drv("cuEventRecord"))?;
    call(rc)?;
    stop.record(&rc.stream).map_err(drv("cuEventRecord"))?;
    stop.synchronize().map_err(drv("cuEventSynchronize"))?;
    let one = start.elapsed_ms(&stop).map_err(drv("cuEventElapsedTime"))? as f64 / 1e3;
    let one = meet.max(rank, one);
    let batch = ((plan.batch_s / one.max(1e-7)).ceil() as usize).clamp(1, 200);
    // Each batch: a spin kernel keeps the stream busy while the host enqueues the calls, so that
    // they run back to back at the device's pace (launch costs hidden, as in a CUDA graph). The
    // spin lasts twice the host's enqueue time of the batch before; the first batch only
    // measures that and is not kept. Per batch, the time of the rank that started last (the
    // least event time: it waits for nobody at its first call) / calls; median over batches.
    let mut enqueue_s = 50e-6 * batch as f64;
    let mut times = Vec::with_capacity(plan.reps);
    let mut late = 0usize;
    for rep in 0..=plan.reps.max(1) {
        meet.barrier.wait();
        rc.spin(2.0 * enqueue_s + 20e-6)?;
        let t0 = std::time::Instant::now();
        start.record(&rc.stream).map_err(drv("cuEventRecord"))?;
        for _ in 0..batch {
            call(rc)?;
        }
        stop.record(&rc.stream).map_err(drv("cuEventRecord"))?;
        let host = t0.elapsed().as_secs_f64();
        // Whether the GPU had reached the calls before the host finished enqueuing them.
        let reached = start.is_complete();
        enqueue_s = host;
        stop.synchronize().map_err(drv("cuEventSynchronize"))?;
        let t = start.elapsed_ms(&stop).map_err(drv("cuEventElapsedTime"))? as f64 / 1e3;
        let t = meet.min(rank, t / batch as f64);
        if rep > 0 {
            late += usize::from(reached);
            times.push(t);
        }
    }
    if late > 0 && rank == 0 {
        eprintln!(
            "augur: note: {} {:?} {} B: the GPU caught up with the host in {late} of {} batches",
            case.pattern.name(),
            case.collective,
            case.bytes,
            plan.reps.max(1)
        );
    }
    Ok((crate::median(times), plan.reps.max(1), batch, check))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_names_round_trip_and_belong_to_collectives() {
        for p in Pattern::ALL {
            assert_eq!(Pattern::parse(p.name()), Some(p));
        }
        assert_eq!(Pattern::parse("ring"), None);
        assert!(Pattern::of(Collective::AllReduce).contains(&Pattern::TwoShot));
        assert!(!Pattern::of(Collective::AllReduce).contains(&Pattern::Push));
        assert!(Pattern::of(Collective::AllGather).contains(&Pattern::CopyEngine));
        assert!(Pattern::of(Collective::AllGather).contains(&Pattern::Ll));
    }

    #[test]
    fn cases_round_down_to_whole_elements_per_rank() {
        let c = Case {
            collective: Collective::AllGather,
            dtype: Dtype::Bf16,
            bytes: 1028,
            pattern: Pattern::Push,
        };
        // 1028 bytes over 4 ranks: 257 bytes each, 128 bf16 values.
        assert_eq!(c.elements(4), 128);
        assert_eq!(c.real_bytes(4), 1024);
        let r = Case {
            collective: Collective::AllReduce,
            dtype: Dtype::F32,
            bytes: 18,
            pattern: Pattern::OneShot,
        };
        assert_eq!((r.elements(2), r.real_bytes(2)), (4, 16));
    }

    /// The check compares bits: every input and every sum of up to 8 inputs must be exact in
    /// bf16 (and f32), so that any correct order of summation gives the host's bits.
    #[test]
    fn check_values_and_their_sums_are_exact_in_bf16() {
        let mut bytes = Vec::new();
        for i in 0..2000 {
            for world in 1..=MAX_RANKS {
                let s: f32 = (0..world).map(|r| value(i, r)).sum();
                encode(Dtype::Bf16, 1, |_| s, &mut bytes);
                let back = f32::from_bits((u16::from_le_bytes([bytes[0], bytes[1]]) as u32) << 16);
                assert_eq!(back, s, "i {i} world {world}");
            }
        }
        // Not all zero, and not all equal.
        assert!((0..64).any(|i| value(i, 0) != 0.0));
        assert!((0..64).any(|i| value(i, 0) != value(i, 1)));
    }

    #[test]
    fn groups_refuse_bad_sizes_and_missing_gpus_clearly() {
        let opts = GroupOptions {
            capacity: 1 << 20,
            scratch: true,
            nccl: false,
            slots: 1,
            ll_bytes: 0,
        };
        let e = CommGroup::new(&[], &opts).err().unwrap().to_string();
        assert!(e.contains("1 to 8 GPUs"), "{e}");
        let e = CommGroup::new(&[0; 9], &opts).err().unwrap().to_string();
        assert!(e.contains("1 to 8 GPUs"), "{e}");
        if super::super::available().is_err() {
            let e = CommGroup::new(&[0, 1], &opts).err().unwrap();
            assert!(matches!(e, KernelError::NotAvailable { .. }), "{e}");
        }
    }
}
