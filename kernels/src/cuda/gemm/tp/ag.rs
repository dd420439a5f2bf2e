//! All-gather + GEMM (column-parallel; see the module above). GPU r holds rows
//! `[r * M / P, (r + 1) * M / P)` of A in place in a buffer of all of A, and rows
//! `[r * N / P, ...)` of B; it makes C's columns of those rows of B.
//!
//! - `bulk`: NCCL's in-place all-gather of A, then one cuBLASLt GEMM over all M rows.
//! - `chunked:C`: every GPU's rows cut in C pieces, each broadcast by its owner (NCCL, piece by
//!   piece, owners in order) on the communication stream, an event after each; the compute
//!   stream multiplies its own rows first, then each piece once its event has fired.
//! - `pull:C`: every GPU pulls its peers' rows into its own buffer with the copy engines
//!   (`cuMemcpyAsync` between peers, one stream per peer, C pieces per peer, no SMs taken from
//!   the GEMM), each peer's first piece after that peer's flag says its rows are ready for this
//!   call; the compute stream multiplies its own rows, then each piece once it has arrived.
//! - `pull-bulk`: the same pulls in one piece, then one GEMM over all rows.
//! - `push:C`: the other way: every GPU writes its rows into its peers' buffers (copy engines,
//!   one stream per peer, C pieces), each piece followed by an arrival flag in the peer's
//!   memory (`cuStreamWriteValue32`), which the peer's compute stream waits for
//!   (`cuStreamWaitValue32`) before that piece's GEMM. NVLink writes rather than reads.
//! - `pc-push:C:S`, `pc-pull:C:S` (producer/consumer): the same rows moved by augur's copy
//!   kernel (comm.cu's `tp_copy_pieces`, S blocks on the communication stream, NVLink writes or
//!   reads by SMs, each piece's arrival word written by its last block), while cuBLASLt's GEMMs
//!   target the other SMs (`CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET`), each piece's after its
//!   arrival word. On two and four GPUs (other counts with `AUGUR_TP_UNVERIFIED` set) the
//!   copy kernel spins on the peers' ready words itself instead of the communication stream
//!   waiting for them, as `own-bulk`'s does: 1.025x faster with one piece on four H200s (up
//!   to 1.09x; two pieces unchanged: bench/results/own-bulk-grid-h200-2026-11-29/). On two GPUs
//!   (others with the variable) the last piece's GEMMs, which follow the copy kernel's end,
//!   take every SM (1.035x with one piece on two H200s: bench/results/pc-tail-h200-2026-11-29/).
//! - `fused-push:C:S`, `fused-pull:C:S`: one launch of augur's TMA GEMM (gemm_fused.cu's
//!   `gemm_tma_ag_*`) whose first S blocks to start move the rows (pushed or pulled, C pieces
//!   per peer, each piece's arrival word written by the last of them), while its other blocks
//!   multiply every tile once the pieces it reads have arrived (own rows first, then each
//!   peer's in the order they arrive); the call's ready words as for the copies below, waited
//!   for inside the kernel.
//! - `own-bulk`: the copy kernel pushing on one block per SM, then one GEMM on every SM:
//!   bulk with augur's own all-gather (its push pattern, the comm selector's choice for these
//!   sizes on 4 H200s) in place of NCCL's. The kernel waits for the ready words and the rows'
//!   arrival itself (spinning), the GEMM joining its stream, with no stream waits.
//! - `ll-bulk`: comm.cu's `tp_all_gather_ll` (the `ll` module: every word of this GPU's rows
//!   sent with the call's epoch into each peer's LL staging, the peers' polled and copied into
//!   A), then one GEMM; no ready words: the staging's two slots by the epoch's parity.
//!
//! The copies' ordering, with no host round trip: at the start of a call each GPU writes the
//! call's number (an epoch, the same on every GPU: they make the same calls) into a ready flag
//! of its own in every peer's memory (`cuStreamWriteValue32` on its compute stream, so after
//! whatever wrote its rows and after its last call's GEMMs), and the copy stream of a peer
//! pair waits for the peer's flag to reach it (`cuStreamWaitValue32`, GEQ) before copying (a
//! pull: the peer's rows are ready; a push: the peer has done reading its last call's rows); a
//! copy stream first waits for its own GPU's compute stream (a pull overwrites rows the last
//! call's GEMMs read; a push sends rows written before the call). What it does not order: a
//! GPU overwriting its own rows while peers still pull them (a layer's next input comes after
//! a collective of its own).

use cudarc::driver::{
    sys, CudaEvent, CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};
use cudarc::nccl::{result as nccl, sys as nccl_sys};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Arc;

use super::{check, nccl_err, piece_plans, pieces_of, plan_for, ptr, run_group, Gpu, PiecePlans};
use super::{set_up, wait_word, write_word};
use super::{TpOp, TpPattern, TpResult};
use crate::cuda::comm::{DeviceBuffer, MAX_RANKS};
use crate::cuda::gemm::lt_plan::LtPlan;
use crate::cuda::gemm::{
    drv, swap_token_tile, tma_choice, tma_swap_choice, CudaGemm, GemmKernel, TmaLaunch,
};
use crate::gemm::{check_rows, from_half_bits, reference_rows, to_half_bits};
use crate::gemm::{GemmProblem, GemmShape};
use crate::KernelError;

/// One GPU's buffers (device addresses) and plans.
pub(super) struct Ag {
    /// All of A (M x k halves); this GPU's rows at `rank * rows`. From cuMemAlloc (or
    /// cudaMalloc), not a stream-ordered pool, so that peers can read and write it once peer
    /// access is on.
    a: u64,
    /// This GPU's rows of B (n_r x k) and columns of C (M x n_r), halves.
    b: u64,
    c: u64,
    /// The buffers behind `a`, `b` and `c` when this GPU allocated them (the harness); None on
    /// a caller's ([`super::plan`]).
    owned: Option<Owned>,
    rows: usize,
    n_r: usize,
    k: usize,
    full: LtPlan,
    /// Per count of pieces: the plan for rows / pieces rows, an event per (owner, piece).
    pieces: PiecePlans,
    /// The copy engines' streams, one per peer (by rank; None for this GPU).
    copy_streams: Vec<Option<Arc<CudaStream>>>,
    /// The ready and arrival words (see [`MAX_PIECES`]; cuMemAlloc too).
    flags: DeviceBuffer,
    /// This GPU's calls of the copy patterns (pulls and pushes) so far.
    epoch: Cell<u32>,
    /// The copy kernel (comm.cu's `tp_copy_pieces`) and its block counters
    /// ([MAX_RANKS][MAX_PIECES] u32, zero between calls), when a pattern runs it.
    copy_kernel: Option<(CudaFunction, DeviceBuffer)>,
    /// The GPU's SMs (the copy kernel's grid in `own-bulk`).
    sms: usize,
    /// Which waits the copy kernel of `pc-push` / `pc-pull` makes itself: the ready words on
    /// two and four GPUs, where that was checked (or with `AUGUR_TP_UNVERIFIED` set), else
    /// none. Decided once at set-up.
    pc_waits: CopyWaits,
    /// Whether the GEMMs of `pc-push` / `pc-pull`'s last piece take every SM (plans without
    /// an SM target; they follow the piece's arrival, which the copy kernel writes as it ends):
    /// on two GPUs, where that was timed (1.035x with one piece on two H200s:
    /// bench/results/pc-tail-h200-2026-11-29/), or with `AUGUR_TP_UNVERIFIED` set. Decided
    /// once at set-up.
    pc_tail: bool,
    /// The fused kernel per count of copy blocks, when a pattern runs it, and its words: the
    /// copy blocks' counters ([MAX_RANKS][MAX_PIECES] u32, zero between calls), then each
    /// launch's tickets (one u64 per entry of `fused`: a launch takes as many as its grid has
    /// blocks, so each counter stays a multiple of its own grid).
    fused: Vec<FusedLaunch>,
    fused_words: Option<DeviceBuffer>,
    /// `ll-bulk`'s staging and kernel, when it runs.
    ll: Option<super::ll::Ll>,
}

/// gemm_fused.cu's fused all-gather + GEMM (`gemm_tma_ag_*`) made ready for `copy_blocks` copy
/// blocks: the function, its TMA arguments over all of A, this GPU's B and C, and its grid.
struct FusedLaunch {
    copy_blocks: usize,
    f: CudaFunction,
    tma: TmaLaunch,
    grid: u32,
    smem: u32,
}

/// The fused kernel's addresses (struct TpFused in gemm_fused.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct TpFused {
    src: [u64; MAX_RANKS],
    dst: [u64; MAX_RANKS],
    flag: [u64; MAX_RANKS],
    ready: u64,
    arrived: u64,
    counters: u64,
    tickets: u64,
}

// SAFETY: plain old data laid out as the C struct.
unsafe impl DeviceRepr for TpFused {}

/// Where the tickets lie in the fused kernel's words (after the counters), 8 bytes per launch.
const TICKETS_AT: usize = 4 * MAX_RANKS * MAX_PIECES;

/// The harness's own buffers.
pub(super) struct Owned {
    _a: DeviceBuffer,
    _b: CudaSlice<u16>,
    c: CudaSlice<u16>,
}

/// The copy kernel's addresses (struct TpPieces in comm.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TpPieces {
    pub(super) src: [u64; MAX_RANKS],
    pub(super) dst: [u64; MAX_RANKS],
    pub(super) flag: [u64; MAX_RANKS],
    pub(super) counters: u64,
    pub(super) ready: u64,
    pub(super) mine: u64,
}

// SAFETY: plain old data laid out as the C struct.
unsafe impl DeviceRepr for TpPieces {}

/// Which of a call's waits the copy kernel makes itself ([`Ag::kernel_copies`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CopyWaits {
    /// None: stream waits before the launch (the ready words) and before each GEMM (arrivals).
    Stream,
    /// The peers' ready words, spun on before the first copy.
    Ready,
    /// Those, and (pushed) every peer's rows' arrival before the launch ends.
    ReadyAndArrivals,
}

/// The waits `pc-push` / `pc-pull`'s copy kernel makes itself on `world` GPUs: the peers' ready
/// words on two and four, where that was checked and timed
/// (bench/results/own-bulk-grid-h200-2026-11-29/), on other counts only with
/// `AUGUR_TP_UNVERIFIED` set; else the communication stream waits for them.
pub(super) fn pc_waits(world: usize) -> CopyWaits {
    if super::checked_on(world, &[2, 4]) {
        CopyWaits::Ready
    } else {
        CopyWaits::Stream
    }
}

/// Whether `pc-push` / `pc-pull`'s last piece's GEMMs take every SM on `world` GPUs: on two,
/// where that was timed (bench/results/pc-tail-h200-2026-11-29/), on other counts only with
/// `AUGUR_TP_UNVERIFIED` set.
pub(super) fn pc_tail(world: usize) -> bool {
    super::checked_on(world, &[2])
}

/// Threads per block of the copy kernel (its __launch_bounds__).
const COPY_THREADS: u32 = 512;

/// What each GPU publishes to the others: its A (all rows), its flags and its LL staging (0
/// without `ll-bulk`).
const PUBLISHED_A: usize = 0;
const PUBLISHED_FLAGS: usize = 1;
const PUBLISHED_LL: usize = 2;

/// The flags: `world` ready words (one per peer: the last call it has started), then the push
/// patterns' arrival words, [`MAX_PIECES`] per peer.
pub const MAX_PIECES: usize = 64;

/// The arrival word of peer `from`'s piece `j` (an index into the flags).
fn arrival(world: usize, from: usize, j: usize) -> u64 {
    (world + from * MAX_PIECES + j) as u64
}

/// The peers in the order their rows reach this GPU: pulled, in the order this GPU asks them
/// (rank + 1, rank + 2, ...); pushed, in the order they send to it (each peer sends to its next
/// ranks first: rank - 1, rank - 2, ...).
fn arrival_order(gpu: &Gpu, push: bool) -> Vec<usize> {
    let (me, w) = (gpu.rank, gpu.world);
    (1..w)
        .map(|i| if push { (me + w - i) % w } else { (me + i) % w })
        .collect()
}

impl Ag {
    /// This GPU's part of a layer on the buffers at `[a, b, c]` (see [`Ag`]'s fields): the
    /// plans for `patterns`, the flags, the copy streams and the copy kernel they need; with
    /// the addresses to publish to the peers (none unless a pattern copies between them).
    ///
    /// # Safety
    /// `a` must hold `world x rows x k` halves, `b` `n_r x k`, `c` `world x rows x n_r`, in
    /// `g`'s context, from cuMemAlloc or cudaMalloc (peers reach `a`), live as long as the Ag.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn new(
        g: &CudaGemm,
        rank: usize,
        world: usize,
        (rows, n_r, k): (usize, usize, usize),
        dtype: augur_features::attention::Dtype,
        patterns: &[TpPattern],
        [a, b, c]: [u64; 3],
        owned: Option<Owned>,
    ) -> Result<(Ag, Vec<u64>), KernelError> {
        let m = world * rows;
        let tail = pc_tail(world);
        let pieces = pieces_of(patterns, tail);
        let copying = patterns.iter().any(|q| q.copies());
        let words = world * (1 + MAX_PIECES);
        let flags = DeviceBuffer::zeroed(&g.ctx, 4 * words)?;
        let full = LtPlan::for_shape(&g.stream, GemmShape { m, n: n_r, k }, dtype, 0)?;
        let plans = piece_plans(
            g,
            &pieces,
            dtype,
            |c| GemmShape {
                m: rows / c,
                n: n_r,
                k,
            },
            |c| world * c,
        )?;
        let copy_streams = (0..world)
            .map(|q| {
                (copying && q != rank)
                    .then(|| g.ctx.new_stream().map_err(drv("cuStreamCreate")))
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let copy_kernel = if patterns.iter().any(|q| q.kernel_copies()) {
            Some(super::copy_kernel(g, &super::comm_module(g)?)?)
        } else {
            None
        };
        let fused = fused_launches(g, patterns, (m, n_r, k), dtype, [a, b, c])?;
        let fused_words = if fused.is_empty() {
            None
        } else {
            Some(DeviceBuffer::zeroed(&g.ctx, TICKETS_AT + 8 * fused.len())?)
        };
        let ll = if patterns
            .iter()
            .any(|q| matches!(q, TpPattern::LlBulk | TpPattern::PcLl { .. }))
        {
            Some(super::ll::Ll::new(
                g,
                world,
                rows * k / 2,
                "tp_all_gather_ll",
            )?)
        } else {
            None
        };
        let published = if copying || ll.is_some() {
            vec![a, flags.ptr(), ll.as_ref().map_or(0, |l| l.ptr())]
        } else {
            Vec::new()
        };
        let ag = Ag {
            a,
            b,
            c,
            owned,
            rows,
            n_r,
            k,
            full,
            pieces: plans,
            copy_streams,
            flags,
            epoch: Cell::new(0),
            copy_kernel,
            sms: g.multiprocessors,
            pc_waits: pc_waits(world),
            pc_tail: tail,
            fused,
            fused_words,
            ll,
        };
        Ok((ag, published))
    }

    fn gather(&self, gpu: &Gpu, st: &CudaStream) -> Result<(), KernelError> {
        let a = self.a;
        let shard = self.rows * self.k * 2;
        // SAFETY: in place: this GPU's rows of `a` at rank x shard bytes, `a` world x shard
        // bytes; every GPU enqueues the same collectives in the same order.
        unsafe {
            nccl::all_gather(
                (a + (gpu.rank * shard) as u64) as *const c_void,
                a as *mut c_void,
                shard,
                nccl_sys::ncclDataType_t::ncclUint8,
                gpu.comm.0,
                st.cu_stream() as nccl_sys::cudaStream_t,
            )
        }
        .map_err(nccl_err("ncclAllGather"))
        .map(|_| ())
    }

    /// Enqueue the NCCL broadcasts of one call of `chunked:pieces` on the communication stream:
    /// every GPU's rows in `pieces` pieces, owners in order, `events[q * pieces + j]` recorded
    /// after owner q's piece j.
    fn broadcasts(
        &self,
        gpu: &Gpu,
        pieces: usize,
        events: &[CudaEvent],
    ) -> Result<(), KernelError> {
        let (s, cs) = (gpu.stream(), &gpu.comm_stream);
        let (a, row, piece) = (self.a, (self.k * 2) as u64, self.rows / pieces);
        // The broadcasts overwrite rows the last call's GEMMs read.
        cs.join(&s).map_err(drv("join"))?;
        for j in 0..pieces {
            for q in 0..gpu.world {
                let at = a + ((q * self.rows + j * piece) as u64) * row;
                // SAFETY: `piece` rows of `a` at `at`, on this GPU; q sends, every GPU receives,
                // in this order everywhere.
                unsafe {
                    nccl::broadcast(
                        at as *const c_void,
                        at as *mut c_void,
                        piece * self.k * 2,
                        nccl_sys::ncclDataType_t::ncclUint8,
                        q as i32,
                        gpu.comm.0,
                        cs.cu_stream() as nccl_sys::cudaStream_t,
                    )
                }
                .map_err(nccl_err("ncclBroadcast"))?;
                events[q * pieces + j].record(cs).map_err(drv("record"))?;
            }
        }
        Ok(())
    }

    /// Enqueue the copies of one call between this GPU and its peers (see the module docs), on
    /// one copy stream per peer: pulled, every peer's rows into this GPU's A, with
    /// `events[q * pieces + j]` recorded after peer q's piece j; pushed, this GPU's rows into
    /// every peer's A, each piece followed by its arrival flag in the peer's memory.
    fn copies(
        &self,
        gpu: &Gpu,
        pieces: usize,
        push: bool,
        events: &[CudaEvent],
    ) -> Result<(), KernelError> {
        let e = self.announce(gpu)?;
        let (s, me) = (gpu.stream(), gpu.rank);
        let a = self.a;
        let (shard, bytes) = (self.rows * self.k * 2, self.rows * self.k * 2 / pieces);
        for i in 1..gpu.world {
            let q = (me + i) % gpu.world;
            let ps = set_up(&self.copy_streams[q], "a copy pattern")?;
            ps.join(&s).map_err(drv("join"))?;
            self.wait_ready(ps, q, e)?;
            let theirs = gpu.peers[q][PUBLISHED_A];
            for j in 0..pieces {
                let (from, to, off) = if push {
                    (a, theirs, (me * shard + j * bytes) as u64)
                } else {
                    (theirs, a, (q * shard + j * bytes) as u64)
                };
                // SAFETY: the same byte range of peer q's A and of this GPU's (both M x k
                // halves, live while the group runs; unified addressing, peer access on).
                crate::cuda::check("cuMemcpyAsync", unsafe {
                    sys::cuMemcpyAsync(to + off, from + off, bytes, ps.cu_stream())
                })?;
                if push {
                    // An arrival word in peer q's flags, after the copy (its data visible first).
                    let arrived = gpu.peers[q][PUBLISHED_FLAGS] + 4 * arrival(gpu.world, me, j);
                    write_word(ps, arrived, e)?;
                } else {
                    events[q * pieces + j].record(ps).map_err(drv("record"))?;
                }
            }
        }
        Ok(())
    }

    /// Start a call of a copy pattern: its epoch (the next), written into this GPU's ready
    /// word in every peer's flags on the compute stream, after everything before it there.
    fn announce(&self, gpu: &Gpu) -> Result<u32, KernelError> {
        super::announce(gpu, &self.epoch, PUBLISHED_FLAGS, gpu.rank as u64)
    }

    /// `st` waits until peer q's ready word in this GPU's flags reaches epoch `e`.
    fn wait_ready(&self, st: &CudaStream, q: usize, e: u32) -> Result<(), KernelError> {
        wait_word(st, self.flags.ptr() + 4 * q as u64, e)
    }

    /// `st` waits until peer q's piece j has arrived in this GPU's A in the call of epoch `e`.
    fn wait_arrival(
        &self,
        world: usize,
        st: &CudaStream,
        q: usize,
        j: usize,
        e: u32,
    ) -> Result<(), KernelError> {
        wait_word(st, self.flags.ptr() + 4 * arrival(world, q, j), e)
    }

    /// Enqueue the LL all-gather of one call of `pc-ll:pieces:sms` on the communication stream
    /// (after the compute stream's work so far: it overwrites the peers' rows the last call's
    /// GEMMs read): one LL call per piece on `sms` blocks, piece j of every GPU's rows, then
    /// `events[q * pieces + j]` for every peer q.
    fn ll_pieces(
        &self,
        gpu: &Gpu,
        pieces: usize,
        sms: usize,
        events: &[CudaEvent],
    ) -> Result<(), KernelError> {
        let ll = set_up(&self.ll, "pc-ll")?;
        let cs = &gpu.comm_stream;
        cs.join(&gpu.stream()).map_err(drv("join"))?;
        let per = (self.rows / pieces * self.k / 2) as u64;
        let e = ll.next_epoch(); // one per call: its pieces' word ranges are disjoint
        for j in 0..pieces as u64 {
            // SAFETY: words [j per, (j + 1) per) of each GPU's share (rows x k / 2 words;
            // whole words per piece: tp::check) of `a`, all of A on this GPU.
            unsafe {
                ll.launch(
                    gpu,
                    cs,
                    Some(sms),
                    PUBLISHED_LL,
                    &[j * per, (j + 1) * per, self.a],
                    e,
                )
            }?;
            for q in (0..gpu.world).filter(|&q| q != gpu.rank) {
                events[q * pieces + j as usize]
                    .record(cs)
                    .map_err(drv("record"))?;
            }
        }
        Ok(())
    }

    /// Enqueue the copy kernel of one call on the communication stream, `blocks` blocks,
    /// after the compute stream's work so far and every peer's ready word: pushed, this GPU's
    /// rows into every peer's A; pulled, every peer's rows into this GPU's; in `pieces` pieces
    /// per peer, each piece's arrival word (the receiver's flags) set to the call's epoch.
    /// `waits`: which of the call's waits the kernel makes itself, spinning, in place of the
    /// stream waits (cuStreamWaitValue32; own-bulk's six cost about 13 us a call on four
    /// H200s): the peers' ready words before its first copy, and (pushed only) every peer's
    /// rows' arrival here before the launch ends, so that a stream joining the communication
    /// stream may read them.
    fn kernel_copies(
        &self,
        gpu: &Gpu,
        pieces: usize,
        blocks: usize,
        push: bool,
        waits: CopyWaits,
    ) -> Result<(), KernelError> {
        let (f, counters) = set_up(&self.copy_kernel, "the copy kernel's pattern")?;
        let e = self.announce(gpu)?;
        let (s, cs, me, world) = (gpu.stream(), &gpu.comm_stream, gpu.rank, gpu.world);
        // The copies overwrite rows the last call's GEMMs read (pulled), or send rows written
        // before this call (pushed).
        cs.join(&s).map_err(drv("join"))?;
        let shard = (self.rows * self.k * 2) as u64;
        let arrivals = waits == CopyWaits::ReadyAndArrivals && push;
        if waits == CopyWaits::Stream {
            for q in (0..world).filter(|&q| q != me) {
                self.wait_ready(cs, q, e)?;
            }
        }
        let (src, dst, flag) = self.peer_rows(gpu, push);
        let t = TpPieces {
            src,
            dst,
            flag,
            counters: counters.ptr(),
            ready: if waits == CopyWaits::Stream {
                0
            } else {
                self.flags.ptr()
            },
            mine: if arrivals {
                self.flags.ptr() + 4 * arrival(world, 0, 0)
            } else {
                0
            },
        };
        let bytes = shard / pieces as u64;
        let (rank, world_i, pieces_i) = (me as i32, world as i32, pieces as i32);
        let remote: i32 = i32::from(!push);
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (COPY_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = cs.launch_builder(f);
        b.arg(&t)
            .arg(&rank)
            .arg(&world_i)
            .arg(&bytes)
            .arg(&pieces_i)
            .arg(&e)
            .arg(&remote);
        // SAFETY: the arguments match tp_copy_pieces; every address is a live cuMemAlloc
        // buffer of this GPU or of a peer (peer access on), each piece whole 16-byte vectors
        // (tp::check), the counters MAX_RANKS x MAX_PIECES words.
        unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        Ok(())
    }

    /// Per peer q (by rank; zero for this GPU): where the rows a copy moves between this GPU and
    /// q are read and written, and the arrival word of the first piece (piece j's is j words on):
    /// pushed, this GPU's rows into q's A and q's word for them; pulled, q's rows into this
    /// GPU's A and this GPU's word for them.
    #[allow(clippy::type_complexity)]
    fn peer_rows(
        &self,
        gpu: &Gpu,
        push: bool,
    ) -> ([u64; MAX_RANKS], [u64; MAX_RANKS], [u64; MAX_RANKS]) {
        let (me, world, a) = (gpu.rank, gpu.world, self.a);
        let shard = (self.rows * self.k * 2) as u64;
        let (mut src, mut dst, mut flag) = ([0; MAX_RANKS], [0; MAX_RANKS], [0; MAX_RANKS]);
        for q in (0..world).filter(|&q| q != me) {
            let theirs = gpu.peers[q][PUBLISHED_A];
            if push {
                src[q] = a + me as u64 * shard;
                dst[q] = theirs + me as u64 * shard;
                flag[q] = gpu.peers[q][PUBLISHED_FLAGS] + 4 * arrival(world, me, 0);
            } else {
                src[q] = theirs + q as u64 * shard;
                dst[q] = a + q as u64 * shard;
                flag[q] = self.flags.ptr() + 4 * arrival(world, q, 0);
            }
        }
        (src, dst, flag)
    }

    /// Enqueue one call of the fused kernel with `copy_blocks` copy blocks on the compute
    /// stream (see gemm_fused.cu): the call's epoch announced to the peers first, the split's sum
    /// after.
    fn fused(
        &self,
        gpu: &Gpu,
        pieces: usize,
        copy_blocks: usize,
        push: bool,
    ) -> Result<(), KernelError> {
        let (i, l, words) = super::fused_launch(
            &self.fused,
            |l| l.copy_blocks,
            copy_blocks,
            self.fused_words.as_ref(),
            "the fused pattern",
        )?;
        let e = self.announce(gpu)?;
        let s = gpu.stream();
        let (src, dst, flag) = self.peer_rows(gpu, push);
        let t = TpFused {
            src,
            dst,
            flag,
            ready: self.flags.ptr(),
            arrived: self.flags.ptr() + 4 * arrival(gpu.world, 0, 0),
            counters: words.ptr(),
            tickets: words.ptr() + (TICKETS_AT + 8 * i) as u64,
        };
        let m = gpu.world * self.rows;
        let (mi, ni, ki) = (m as i32, self.n_r as i32, self.k as i32);
        let (splits, kt_per) = (l.tma.splits as i32, l.tma.kt_per as i32);
        let ints = [
            gpu.rank as i32,
            gpu.world as i32,
            self.rows as i32,
            pieces as i32,
            copy_blocks as i32,
        ];
        let push_i = i32::from(push);
        let cfg = super::fused_config(l.grid, l.smem);
        let mut b = s.launch_builder(&l.f);
        b.arg(&mi).arg(&ni).arg(&ki);
        b.arg(&l.tma.maps.0).arg(&l.tma.maps.1).arg(&l.tma.maps.2);
        b.arg(&splits).arg(&kt_per).arg(&l.tma.ws).arg(&t);
        for v in &ints {
            b.arg(v);
        }
        b.arg(&e).arg(&push_i);
        // SAFETY: the arguments match gemm_tma_ag_* (m, n, k, tensor maps of this GPU's A (all
        // M rows), B and C, splits, steps per split, partials, the addresses (live buffers of
        // this GPU or of a peer, peer access on), rank, world, rows per GPU, pieces per GPU
        // (whole 16-byte vectors each: tp::check), copy blocks (fewer than the grid), epoch,
        // push); the grid is at most one block per SM, so every block runs at once.
        unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        // SAFETY: `c` holds M x n_r halves, the partials' shape.
        unsafe { l.tma.sum_into(&s, m, self.n_r, self.c) }
    }

    /// Enqueue one call of `p`, ordered after everything before it on both streams.
    pub(super) fn enqueue(&self, gpu: &Gpu, p: TpPattern) -> Result<(), KernelError> {
        let s = gpu.stream();
        let (a, b, c) = (self.a, self.b, self.c);
        let (row, c_row) = ((self.k * 2) as u64, (self.n_r * 2) as u64);
        // SAFETY (every GEMM below): `a` is M x k, `b` n_r x k, `c` M x n_r halves on this GPU;
        // a plan for m rows runs on rows [r0, r0 + m) of `a` and `c`.
        match p {
            TpPattern::GemmAlone => unsafe { self.full.run_on(a, b, c, &s) },
            TpPattern::CommAlone => self.gather(gpu, &s),
            TpPattern::Bulk => {
                self.gather(gpu, &s)?;
                unsafe { self.full.run_on(a, b, c, &s) }
            }
            TpPattern::Chunked(pieces)
            | TpPattern::Pull(pieces)
            | TpPattern::Push(pieces)
            | TpPattern::Pc { pieces, .. }
            | TpPattern::PcLl { pieces, .. } => {
                let (plan, events) = plan_for(&self.pieces, pieces, p.kernel_sms())?;
                let piece = self.rows / pieces;
                // The transfers, and the peers in the order their pieces were queued.
                let me = gpu.rank;
                let peers: Vec<usize> = match p {
                    TpPattern::Chunked(_) => {
                        self.broadcasts(gpu, pieces, events)?;
                        (0..gpu.world).filter(|&q| q != me).collect()
                    }
                    TpPattern::Pull(_) => {
                        self.copies(gpu, pieces, false, events)?;
                        arrival_order(gpu, false)
                    }
                    TpPattern::Pc { sms, push, .. } => {
                        self.kernel_copies(gpu, pieces, sms, push, self.pc_waits)?;
                        arrival_order(gpu, push)
                    }
                    TpPattern::PcLl { sms, .. } => {
                        self.ll_pieces(gpu, pieces, sms, events)?;
                        (0..gpu.world).filter(|&q| q != me).collect()
                    }
                    _ => {
                        self.copies(gpu, pieces, true, events)?;
                        arrival_order(gpu, true)
                    }
                };
                // pc-push / pc-pull: the last piece's GEMMs follow its arrival, written by the
                // copy kernel's last block as it ends, so they may take every SM (`pc_tail`).
                let last = match p {
                    TpPattern::Pc { .. } if self.pc_tail => plan_for(&self.pieces, pieces, 0)?.0,
                    _ => plan,
                };
                let gemm = |plan: &LtPlan, r0: usize| unsafe {
                    plan.run_on(a + r0 as u64 * row, b, c + r0 as u64 * c_row, &s)
                };
                for j in 0..pieces {
                    gemm(plan, me * self.rows + j * piece)?;
                }
                let e = self.epoch.get();
                for j in 0..pieces {
                    for &q in &peers {
                        if let TpPattern::Push(_) | TpPattern::Pc { .. } = p {
                            self.wait_arrival(gpu.world, &s, q, j, e)?;
                        } else {
                            s.wait(&events[q * pieces + j]).map_err(drv("wait"))?;
                        }
                        gemm(
                            if j + 1 == pieces { last } else { plan },
                            q * self.rows + j * piece,
                        )?;
                    }
                }
                match p {
                    // The broadcasts' stream joins back; so does the copy kernel's (its last
                    // arrival words written before the call ends).
                    TpPattern::Chunked(_) | TpPattern::Pc { .. } | TpPattern::PcLl { .. } => {
                        gpu.join()
                    }
                    // The copy streams' last work (the flags' writes) before the next call's.
                    TpPattern::Push(_) => {
                        for q in self.copy_streams.iter().flatten() {
                            s.join(q).map_err(drv("join"))?;
                        }
                        Ok(())
                    }
                    _ => Ok(()),
                }
            }
            TpPattern::Fused { pieces, sms, push } => self.fused(gpu, pieces, sms, push),
            TpPattern::PcReduce { .. }
            | TpPattern::PushReduce(_)
            | TpPattern::FusedReduce { .. }
            | TpPattern::FusedAll { .. } => Err(KernelError::Invalid(format!(
                "{}: not an all-gather pattern (refused by tp::check)",
                p.name()
            ))),
            TpPattern::OwnBulk => {
                // The copy kernel waits for the peers' ready words and this GPU's arrival
                // words itself; the GEMM follows it (no stream waits: bench/results/
                // fused-4gpu-h200-2026-11-29/copy-grid/, 1.06-1.27x faster on four GPUs).
                self.kernel_copies(gpu, 1, self.sms, true, CopyWaits::ReadyAndArrivals)?;
                // The launch ends once every row is here, and is the communication stream's
                // last work of the call.
                gpu.join()?;
                unsafe { self.full.run_on(a, b, c, &s) }
            }
            TpPattern::LlBulk => {
                let ll = set_up(&self.ll, "ll-bulk")?;
                let words = (self.rows * self.k / 2) as u64;
                // SAFETY: tp_all_gather_ll's range (the whole share, rows x k / 2 words) and
                // `a`: all of A, world x rows x k halves on this GPU, after the last call's
                // GEMM (this stream).
                unsafe { ll.launch(gpu, &s, None, PUBLISHED_LL, &[0, words, a], ll.next_epoch()) }?;
                unsafe { self.full.run_on(a, b, c, &s) }
            }
            TpPattern::PullBulk => {
                let (_, events) = plan_for(&self.pieces, 1, 0)?;
                self.copies(gpu, 1, false, events)?;
                for q in (0..gpu.world).filter(|&q| q != gpu.rank) {
                    s.wait(&events[q]).map_err(drv("wait"))?;
                }
                unsafe { self.full.run_on(a, b, c, &s) }
            }
        }
    }

    /// A diagnostic (`AUGUR_TP_TRACE`): wait up to 5 s for this GPU's streams, then say on
    /// stderr which are still busy and what its ready flags hold (if they can be read in 2 s).
    fn trace(&self, gpu: &Gpu, what: &str) -> Result<(), KernelError> {
        let t0 = std::time::Instant::now();
        let still = super::busy_after_wait(gpu, &self.copy_streams, "pull<-");
        let f = match super::read_words(gpu, self.flags.ptr(), gpu.world)? {
            Some(f) => format!("{f:?}"),
            None => "unreadable in 2 s".into(),
        };
        eprintln!(
            "tp trace: rank {} {what}: after {:.2} s busy {still:?}, flags {f}, epoch {}",
            gpu.rank,
            t0.elapsed().as_secs_f64(),
            self.epoch.get()
        );
        Ok(())
    }

    /// The rows of A that are not this GPU's, and all of C, to NaN (0xFFFF).
    pub(super) fn poison(&mut self, gpu: &Gpu) -> Result<(), KernelError> {
        let s = gpu.stream();
        let shard = self.rows * self.k * 2;
        let total = gpu.world * shard;
        let c_bytes = gpu.world * self.rows * self.n_r * 2;
        let (a, c) = (self.a, self.c);
        let (mine, after) = (gpu.rank * shard, (gpu.rank + 1) * shard);
        // SAFETY: the ranges lie in `a` (total bytes) and `c` (c_bytes), on this stream's GPU.
        unsafe {
            use cudarc::driver::result::memset_d8_async;
            let st = s.cu_stream();
            if mine > 0 {
                memset_d8_async(a, 0xFF, mine, st).map_err(drv("poison"))?;
            }
            if after < total {
                memset_d8_async(a + after as u64, 0xFF, total - after, st)
                    .map_err(drv("poison"))?;
            }
            memset_d8_async(c, 0xFF, c_bytes, st).map_err(drv("poison"))?;
        }
        Ok(())
    }
}

/// The fused kernel made ready for each count of copy blocks the fused patterns among
/// `patterns` ask (none without them): over all M rows of A at `a`, this GPU's `n_r` rows of B
/// at `b` and its columns of C at `c`, the tile width and split of k chosen for the SMs the
/// copy blocks leave.
fn fused_launches(
    g: &CudaGemm,
    patterns: &[TpPattern],
    (m, n_r, k): (usize, usize, usize),
    dtype: augur_features::attention::Dtype,
    [a, b, c]: [u64; 3],
) -> Result<Vec<FusedLaunch>, KernelError> {
    super::fused_counts(patterns, |p| match p {
        TpPattern::Fused { sms, .. } => Some(*sms),
        _ => None,
    })
    .into_iter()
    .map(|copy_blocks| {
        let sms = super::fused_sms(g, copy_blocks, "copy")?;
        let shape = GemmShape { m, n: n_r, k };
        // Every GPU's rows in one token tile (M <= 64): the swapped GEMM (gemm_tma.cu's
        // gemm_tma_swap), else the 128-row tiles.
        let kernel = if m <= 64 {
            let mt = swap_token_tile(m);
            GemmKernel::TmaSwap {
                mt,
                splits: tma_swap_choice(shape, mt, sms),
            }
        } else {
            let (bn, splits) = tma_choice(shape, sms);
            GemmKernel::Tma { bn, splits }
        };
        let (tma, smem) = g.tma_parts([a, b, c], shape, dtype, kernel)?;
        let (kind, size) = match kernel {
            GemmKernel::TmaSwap { mt, .. } => ("ag_swap", mt),
            GemmKernel::Tma { bn, .. } => ("ag", bn),
            _ => unreachable!("a TMA kernel"),
        };
        let (f, smem) = super::fused_function_with(g, kind, dtype, size, smem)?;
        let units = kernel.tma_tiles(m, n_r).expect("a TMA kernel") * tma.splits;
        Ok(FusedLaunch {
            copy_blocks,
            f,
            grid: (copy_blocks + units.min(sms)) as u32,
            smem: smem as u32,
            tma,
        })
    })
    .collect()
}

/// Run, check and time every pattern of the all-gather + GEMM on the GPUs `ordinals` for the
/// layer `p` (A M x K, B N x K), in the same order on every GPU, each timed as `timing` says.
pub fn all_gather_gemm(
    ordinals: &[usize],
    p: &GemmProblem,
    patterns: &[TpPattern],
    timing: super::TpTiming,
) -> Result<Vec<TpResult>, KernelError> {
    let world = ordinals.len();
    let (rows, n_r) = check(TpOp::AllGatherGemm, p.shape, world, patterns)?;
    let k = p.shape.k;
    let m = world * rows;
    let at = p.check_rows(256, 24);
    let want = reference_rows(p, &at);
    let bits = |v: &[f32]| -> Vec<u16> { v.iter().map(|&x| to_half_bits(p.dtype, x)).collect() };
    let setup = |rank: usize, g: &CudaGemm| -> Result<(Ag, Vec<u64>), KernelError> {
        let s = &g.stream;
        let mut a_host = vec![0xFFFFu16; m * k];
        let mine = rank * rows * k..(rank + 1) * rows * k;
        a_host[mine.clone()].copy_from_slice(&bits(&p.a[mine]));
        let a = DeviceBuffer::new(&g.ctx, m * k * 2)?;
        // SAFETY: `a` holds m x k halves in this (current) context.
        unsafe {
            crate::cuda::check(
                "cuMemcpyHtoD",
                sys::cuMemcpyHtoD_v2(a.ptr(), a_host.as_ptr() as *const c_void, m * k * 2),
            )?;
        }
        let b = s
            .clone_htod(&bits(&p.b[rank * n_r * k..(rank + 1) * n_r * k]))
            .map_err(drv("upload"))?;
        let c = s.alloc_zeros::<u16>(m * n_r).map_err(drv("alloc"))?;
        let (b_ptr, c_ptr) = (ptr(&b, s), ptr(&c, s));
        let a_ptr = a.ptr();
        let owned = Owned { _a: a, _b: b, c };
        // SAFETY: the buffers just allocated, of the sizes Ag::new needs, live in `owned`.
        unsafe {
            Ag::new(
                g,
                rank,
                world,
                (rows, n_r, k),
                p.dtype,
                patterns,
                [a_ptr, b_ptr, c_ptr],
                Some(owned),
            )
        }
    };
    let body = |gpu: &Gpu, st: &mut Ag| {
        // This GPU's columns of the exact rows; a view of its shape for the check.
        let mine: Vec<Vec<f64>> = want
            .iter()
            .map(|row| row[gpu.rank * n_r..(gpu.rank + 1) * n_r].to_vec())
            .collect();
        let view = GemmProblem {
            shape: GemmShape { m, n: n_r, k },
            dtype: p.dtype,
            a: Vec::new(),
            b: Vec::new(),
        };
        let mut out = Vec::new();
        for &pat in patterns {
            super::step(gpu.rank, || format!("{}: checking", pat.name()));
            let err = if pat.computes() {
                st.poison(gpu)?;
                if pat == TpPattern::GemmAlone {
                    // The GEMM alone reads a gathered A.
                    st.enqueue(gpu, TpPattern::CommAlone)?;
                }
                st.enqueue(gpu, pat)?;
                if super::tracing() {
                    st.trace(gpu, &pat.name())?;
                }
                let s = gpu.stream();
                gpu.settle(&s, "the checked call")?;
                let mut got = Vec::with_capacity(at.len() * n_r);
                for &r in &at {
                    let c = &st.owned.as_ref().expect("the harness's own buffers").c;
                    let v = s
                        .clone_dtoh(&c.slice(r * n_r..(r + 1) * n_r))
                        .map_err(drv("download"))?;
                    got.extend(v.into_iter().map(|h| from_half_bits(p.dtype, h)));
                }
                Some(check_rows(&view, &at, &mine, &got).0)
            } else {
                None
            };
            super::step(gpu.rank, || format!("{}: timing", pat.name()));
            let t = gpu.time(timing, || st.enqueue(gpu, pat))?;
            out.push((err, t));
        }
        Ok(out)
    };
    run_group(ordinals, patterns, setup, body)
}
