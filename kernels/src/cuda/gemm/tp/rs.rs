//! GEMM + reduce-scatter (row-parallel; see the module above). GPU r holds columns
//! `[r * K / P, (r + 1) * K / P)` of A and of B, makes the partial product A_r B_rᵀ (M x N, in
//! the 16-bit type, as a framework's row-parallel layer does), and receives the sum over the
//! GPUs of rows `[r * M / P, (r + 1) * M / P)`.
//!
//! - `bulk`: one cuBLASLt GEMM over all M rows, then NCCL's reduce-scatter.
//! - `chunked:C`: every GPU's M / P output rows cut in C pieces; for piece j the GEMM makes the
//!   piece's rows of every destination (P GEMMs of M / (P C) rows, into a staging layout where
//!   they lie as the reduce-scatter wants them), an event, and the reduce-scatter of piece j runs
//!   on the communication stream while the GEMMs of piece j + 1 run.
//! - `pc-reduce:C:S` (producer/consumer, no NCCL): the GEMMs (cuBLASLt, targeting all SMs but
//!   S) make piece j of every destination's partial; each is pushed by the copy engines into the
//!   destination's staging slot of this GPU (`cuMemcpyAsync` between peers, one stream per
//!   peer, after the GEMM's event), followed by a word in the destination's flags
//!   (`cuStreamWriteValue32`, the call's epoch); the destination's communication stream waits
//!   for piece j's word from every GPU (`cuStreamWaitValue32`) and runs the reduce kernel
//!   (comm.cu's `tp_reduce_piece_*`, S blocks: the partials summed in f32 from its own memory,
//!   rounded once), while the GEMMs of piece j + 1 run. A copy stream pushes a call's first
//!   piece to a peer only after that peer's ready word for the call (written at the call's start
//!   on its compute stream, after its last call's sums).
//! - `pc-reduce-sm:C:S`: the same, the pushes made by augur's copy kernel (comm.cu's
//!   `tp_copy_pieces`, S blocks on the communication stream, after an event on the piece's
//!   GEMMs; NVLink writes by SMs, each peer's word written by its last block) before each
//!   piece's sum, not by the copy engines.
//!   (A first version read the peers' partials with NVLink loads from the reduce kernel: correct
//!   but 2-4x slower than NCCL's reduce-scatter on 8-32 SMs, `bench/results/tp-grid-h200-2026-11-27/rs-pull-reduce/`.)
//! - `push-reduce:C`: no SMs taken from the GEMMs and no reduce kernel after them (on two GPUs).
//!   Each GPU's GEMMs (cuBLASLt on every SM) make its partials of its peers' rows first (GPU
//!   me + 1's, me + 2's, ..., C pieces each), each piece pushed by the copy engines into the
//!   owner's staging once made (as `pc-reduce`, a word after it); then its own rows, piece by
//!   piece, each GEMM adding the peers' partials of that piece in cuBLASLt's epilogue (C with
//!   beta 1, in f32 before D's one rounding): on two GPUs the peer's staged partial, the
//!   compute stream waiting for its word; on more, their sum (the reduce kernel, 16 blocks on
//!   the communication stream as they arrive, into this GPU's own rows of its partials' buffer,
//!   which its GEMMs leave unwritten). The peers make this GPU's rows first in turn, so the
//!   transfers hide behind the GEMMs of later pieces while the link keeps up. On more than one
//!   GPU only with `AUGUR_TP_UNVERIFIED` set: on two H200s its checks passed where it ran, but
//!   processes hung in it on a later layer or pattern, both GPUs' threads blocked inside the
//!   call's driver calls (not diagnosed, `bench/results/push-reduce-h200-2026-11-30/`); the
//!   GPUs' threads now meet twice a call (rs/copies.rs), against the likeliest cause, not yet
//!   run.
//! - `fused-reduce:S`: one launch of augur's TMA GEMM (gemm_fused.cu's `gemm_tma_rs_*`) per GPU
//!   with no partial product of its own: each half-tile is stored straight into the staging slot of
//!   this GPU at the GPU owning its rows (the tensor-memory unit through a map per owner, built at
//!   the first call once the peers' addresses are known), then counted in the owner's done words; S
//!   blocks of the owner's launch sum each of its tile rows once every GPU has counted it. A GPU
//!   stores into a peer's staging only after that peer's ready word for the call.
//! - `fused-reduce:0` (`gemm_tma_rsa_*`): the same launch with no staging and no summing block:
//!   each half-tile is *added* into the owner's rows of the sum by a tensor-memory reduction
//!   (`cp.reduce.async.bulk.tensor .add`, in the 16-bit type; pairs by `red.add.noftz` where a
//!   GPU's rows are not whole halves). The owner zeroes its rows before its ready word: on one,
//!   two or four GPUs (on other counts with `AUGUR_TP_UNVERIFIED` set, until a run there has
//!   checked it) in its launch, which then writes the ready words, its own too; otherwise by a
//!   memset and host-written words before the launch. Its launch ends once every GPU has
//!   counted all of its tile rows. Where the launch zeroes, at M <= 64 (every GPU's rows in one
//!   token tile) and beyond where 64-row token tiles x 128 columns x the k split fit in one
//!   wave, the GEMM is the swapped one (`gemm_tma_rsa_swap_*`: 128 columns of the partial by a
//!   32- or 64-row token tile a unit, added into its first row's owner by one tensor-memory
//!   reduction, into the later owners' rows 16 bytes at a time); with k split the launch also
//!   rounds the f32 sum at its end, and (on one, two and four GPUs; on other counts with
//!   `AUGUR_TP_UNVERIFIED` set, until a run there has checked it) takes two f32 sums in turn,
//!   each zeroed as it is rounded two calls before (no zeroing, no ready word in the launch),
//!   the swapped GEMM adding its partials by tensor-memory reductions. On 2 GPUs each element
//!   is 0 + a + b, rounded as the summing blocks round it (the sum of two 16-bit values is
//!   exact in f32); on more the additions come in arrival order, so the last bit may differ
//!   from call to call.
//! - The GEMM + all-reduce (`all`, [`gemm_all_reduce`]): every GPU receives the whole sum.
//!   `bulk` and `chunked:C` with NCCL's all-reduce; `fused-all`, `fused-reduce:0`'s launch
//!   (its tiles, or the swapped GEMM's boxes, as `fused-reduce:0` takes them) with each added
//!   into every GPU's whole sum (each GPU zeroes its own in the launch before its ready words,
//!   and the launch ends once every GPU has counted every tile row: two H200s 1.124x over bulk
//!   on the grid, bench/results/all-reduce-h200-2026-11-29/); with k split (`fused-all:K`, or
//!   by itself at small M where few SMs would read a deep B) each k range's partials in f32
//!   into a plane of its own of every GPU's f32 sum (0 + one partial per GPU: the same on both
//!   of two GPUs), the planes added in order and rounded at the launch's end; on more than two
//!   GPUs a plane per source GPU too (fused.rs's `all_per_source`); every other reduce-scatter
//!   pattern, then NCCL's all-gather of the sums. Every GPU's sampled rows are checked to be
//!   the same bits too.
//! - `ll-bulk`: the GEMM, then comm.cu's `tp_reduce_scatter_ll_*` (the `ll` module): each GPU
//!   sends its partial of every peer's rows word by word with the call's epoch into that peer's
//!   LL staging, and sums its own rows' P partials in f32, rank order, rounded once.
//!
//! The check (`harness.rs`, which runs every pattern): the sum of P rounded partials is not
//! exact, so an element passes within [`sum_roundings`] half-units of the 16-bit type of the sum
//! of the partials' magnitudes: P + 1 (each partial rounded once, the f32 sum once), or 2P - 1
//! for `fused-reduce:0` (each partial once, each addition in the 16-bit type but the first, onto
//! zero, once: P + 1 on 2 GPUs; `fused-reduce:0:K` adds in f32 and rounds once: P + 1 bounds
//! it); NaN (a row that never arrived, poisoned) fails.

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtrMut, DeviceRepr};
use cudarc::nccl::{result as nccl, sys as nccl_sys};
use std::cell::Cell;
use std::ffi::c_void;

use super::ag::MAX_PIECES;
use super::{nccl_err, nccl_half, piece_plans, pieces_of, plan_for, ptr};
use super::{set_up, Gpu, PiecePlans, TpPattern};
use crate::cuda::comm::{DeviceBuffer, MAX_RANKS};
use crate::cuda::gemm::lt_plan::LtPlan;
use crate::cuda::gemm::{drv, CudaGemm};
use crate::gemm::GemmShape;
use crate::KernelError;

mod copies;
mod fused;
use copies::PushDiagnostics;
mod harness;
pub(super) use fused::all_counts;
use fused::{fused_rs_launches, tickets_at, FusedRsLaunch};
pub(super) use harness::{columns, magnitudes, sum_error, sum_roundings};
pub use harness::{gemm_all_reduce, gemm_reduce_scatter};

/// One GPU's buffers (device addresses, the partial product its own) and plans.
pub(super) struct Rs {
    /// Its columns of A (M x kp) and of B (N x kp), halves.
    a: u64,
    b: u64,
    /// Its partial product (M x N), in A's row order (bulk) or the staging order (chunked).
    part: CudaSlice<u16>,
    /// Its rows of the sum (rows x N), halves.
    out: u64,
    /// The buffers behind `a`, `b` and `out` when this GPU allocated them (the harness); None
    /// on a caller's ([`super::plan`]).
    owned: Option<RsOwned>,
    rows: usize,
    n: usize,
    kp: usize,
    /// The 16-bit type of A, B and the sums (NCCL's type for the reduce-scatter).
    dtype: augur_features::attention::Dtype,
    full: LtPlan,
    /// Per count of pieces: the plan for rows / pieces rows, an event per piece.
    pieces: PiecePlans,
    /// `pc-reduce`'s part, when a pattern runs it.
    reduce: Option<Reduce>,
    /// `ll-bulk`'s staging and kernel, when it runs.
    ll: Option<super::ll::Ll>,
    /// The GEMM + all-reduce's whole sum (M x n halves, every GPU's), where the layer is one
    /// (see [`Rs::enqueue`]); None for the reduce-scatter.
    all: Option<u64>,
    /// Buffers the Rs keeps alive for its caller (a plan's rows of the sum, which an all-reduce
    /// plan makes itself: its caller gives only the whole sum).
    kept: Vec<DeviceBuffer>,
}

/// What `pc-reduce` adds: this GPU's partials, the staging its peers push theirs into, the
/// words the GPUs write each other, the reduce kernel, the copy streams, the calls so far.
struct Reduce {
    /// M x N halves: this GPU's partial of every destination's rows, in A's row order.
    own: DeviceBuffer,
    /// world x rows x N halves: slot q the partial of this GPU's rows that GPU q pushed
    /// (cuMemAlloc: peers write it).
    staging: DeviceBuffer,
    /// [`computed`] words, then [`ready`] words (cuMemAlloc: peers write them).
    flags: DeviceBuffer,
    kernel: CudaFunction,
    /// The copy kernel and its block counters, for `pc-reduce-sm`.
    copy: Option<(CudaFunction, DeviceBuffer)>,
    /// The copy engines' streams, one per peer (by rank; None for this GPU).
    copy_streams: Vec<Option<std::sync::Arc<CudaStream>>>,
    epoch: Cell<u32>,
    /// The fused kernel per count of summing blocks, when a pattern runs it.
    fused: Vec<FusedRsLaunch>,
    /// The fused kernel's words: the done counts ([world][tiles_m] u32: GPU q's of tile row
    /// g; peers add to them), then per entry of `fused` its launch's tickets and its count of
    /// blocks done zeroing (`fused-reduce:0`), a u64 each.
    done: Option<DeviceBuffer>,
    /// What the done counts reach by the end of the fused calls so far: each call adds 2
    /// ceil(N / 64) per k split.
    fused_target: Cell<u32>,
    /// The same for `fused-all`'s done counts (after the launches' words in `done`: every GPU
    /// counts every tile row there, which `fused-reduce`'s calls do not).
    all_target: Cell<u32>,
    /// `fused-reduce:0:K`'s f32 sum of this GPU's rows (rows x N f32; cuMemAlloc: peers add
    /// into it; two of them, zeroed, where the launch zeroes: fused.rs), and gemm_tma.cu's
    /// conversion to the 16-bit type (`gemm_splitk_*`, one plane).
    acc: Option<(DeviceBuffer, CudaFunction)>,
    /// The split calls so far, where they take the two f32 sums in turn.
    acc_calls: Cell<u32>,
    /// `fused-all`'s planes where it splits k or gives each source GPU its own, and the most k
    /// ranges a pattern asks (fused.rs's `all_acc_bytes`: f32 planes, then 16-bit ones;
    /// cuMemAlloc: peers add or store into them), zeroed (fused.rs's `fused_all`).
    all_acc: Option<(DeviceBuffer, usize)>,
    /// `fused-all`'s split calls so far.
    all_calls: Cell<u32>,
    /// The k split `fused-reduce:0` takes here ([`fused::auto_splits`]; 1: none).
    auto_splits: usize,
    /// The one `fused-all` takes here ([`fused::all_auto_splits`]).
    all_auto_splits: usize,
    /// `push-reduce`'s diagnostics, read from the environment once.
    diagnostics: PushDiagnostics,
}

impl Reduce {
    /// Start a call of a pattern that pushes partials into the peers' staging: its epoch (the
    /// next), written into this GPU's ready word in every peer's flags on the compute stream,
    /// after everything before it there (its last call's sums included: this GPU's staging may
    /// be pushed into).
    fn announce(&self, gpu: &Gpu) -> Result<u32, KernelError> {
        super::announce(gpu, &self.epoch, PUBLISHED_FLAGS, ready(gpu.rank))
    }

    /// A diagnostic (`AUGUR_TP_TRACE`, `push-reduce`'s first calls in the process): wait up to
    /// 5 s for this GPU's streams, then say on stderr which are still busy and what its words
    /// hold (every GPU's ready word, and its `computed` words of pieces 0..pieces), or that
    /// they could not be read in 2 s more.
    fn trace(&self, gpu: &Gpu, what: &str, pieces: usize) -> Result<(), KernelError> {
        let t0 = std::time::Instant::now();
        let still = super::busy_after_wait(gpu, &self.copy_streams, "copy->");
        let Some(f) = super::read_words(gpu, self.flags.ptr(), FLAG_WORDS)? else {
            eprintln!(
                "tp trace: rank {} {what}: busy {still:?} after 5 s; its words unreadable in 2 s \
                 more",
                gpu.rank
            );
            return Ok(());
        };
        let ready: Vec<u32> = (0..gpu.world).map(|q| f[ready(q) as usize]).collect();
        let computed: Vec<Vec<u32>> = (0..gpu.world)
            .map(|q| (0..pieces).map(|j| f[computed(q, j) as usize]).collect())
            .collect();
        eprintln!(
            "tp trace: rank {} {what}: after {:.2} s busy {still:?}, ready {ready:?}, computed \
             {computed:?}, epoch {}",
            gpu.rank,
            t0.elapsed().as_secs_f64(),
            self.epoch.get()
        );
        Ok(())
    }

    /// The copy stream to peer `q` (the copy-engine patterns', named by `what` if missing).
    fn copy_stream(
        &self,
        q: usize,
        what: &str,
    ) -> Result<&std::sync::Arc<CudaStream>, KernelError> {
        self.copy_streams[q]
            .as_ref()
            .ok_or_else(|| KernelError::Invalid(format!("{what}'s copy stream missing")))
    }

    /// The next call's epoch, announced by the caller's kernel (`fused-reduce:0` writes the
    /// ready words itself once its rows of the sum are zeroed).
    fn next_epoch(&self) -> u32 {
        super::next_epoch(&self.epoch)
    }
}

/// The harness's own buffers (the rows of the sum by cuMemAlloc, as a plan's caller's: peers
/// add into them in `fused-reduce:0`, which memory from a stream-ordered pool does not allow).
pub(super) struct RsOwned {
    _a: CudaSlice<u16>,
    _b: CudaSlice<u16>,
    out: DeviceBuffer,
    /// The all-reduce's whole sum (M x n halves), when the layer is a GEMM + all-reduce.
    all: Option<DeviceBuffer>,
}

/// What each GPU publishes: its staging, its flags, the fused kernel's done counts (0 without a
/// fused pattern), its rows of the sum (which `fused-reduce:0` adds into), its f32 sum
/// (`fused-reduce:0:K`; 0 without) and its LL staging (`ll-bulk`; 0 without).
const PUBLISHED_STAGING: usize = 0;
const PUBLISHED_FLAGS: usize = 1;
const PUBLISHED_DONE: usize = 2;
const PUBLISHED_OUT: usize = 3;
const PUBLISHED_ACC: usize = 4;
const PUBLISHED_LL: usize = 5;
const PUBLISHED_ALL: usize = 6;
const PUBLISHED_ALL_ACC: usize = 7;

/// The words of a GPU's flags: [`computed`] words, then [`ready`] words.
const FLAG_WORDS: usize = MAX_RANKS * MAX_PIECES + MAX_RANKS;

/// The word GPU `from` sets (to the call's epoch) in a destination's flags once its partial of
/// the destination's piece `j` is there (in the destination's staging, or its own partial).
fn computed(from: usize, j: usize) -> u64 {
    (from * MAX_PIECES + j) as u64
}

/// The word GPU `from` sets (to the call's epoch) in every peer's flags at the start of a call
/// on its compute stream: whatever came before is done, its last call's sums included (the
/// call ended with its communication stream joined), so its staging may be pushed into.
fn ready(from: usize) -> u64 {
    (MAX_RANKS * MAX_PIECES + from) as u64
}

/// The NCCL collectives the row-parallel patterns run ([`Rs::collective`]).
#[derive(Debug, Clone, Copy)]
enum Collective {
    ReduceScatter,
    AllReduce,
    AllGather,
}

/// The reduce kernel's addresses (struct TpReduce in comm.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct TpReduce {
    src: [u64; MAX_RANKS],
}

// SAFETY: plain old data laid out as the C struct.
unsafe impl DeviceRepr for TpReduce {}

impl Rs {
    /// This GPU's part of a layer on the buffers at `[a, b, out]` (see [`Rs`]'s fields): its
    /// partial product, the plans for `patterns` and what `pc-reduce` needs; with the addresses
    /// to publish to the peers (none unless a pattern pushes partials to them). A GEMM +
    /// all-reduce gives `all`, its whole sum ([`Rs::enqueue`]).
    ///
    /// # Safety
    /// `a` must hold `world x rows x kp` halves, `b` `n x kp`, `out` `rows x n` (cuMemAlloc'd:
    /// peers may add into it), `all` (if any) `world x rows x n`, in `g`'s context, live as long
    /// as the Rs.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn new(
        g: &CudaGemm,
        rank: usize,
        world: usize,
        (rows, n, kp): (usize, usize, usize),
        dtype: augur_features::attention::Dtype,
        patterns: &[TpPattern],
        [a, b, out]: [u64; 3],
        all: Option<u64>,
        owned: Option<RsOwned>,
    ) -> Result<(Rs, Vec<u64>), KernelError> {
        let s = &g.stream;
        let m = world * rows;
        // No pc-push / pc-pull here (tp::check refuses them for the reduce-scatter).
        let pieces = pieces_of(patterns, false);
        let part = s.alloc_zeros::<u16>(m * n).map_err(drv("alloc"))?;
        let full = LtPlan::for_shape(s, GemmShape { m, n, k: kp }, dtype, 0)?;
        let plans = piece_plans(
            g,
            &pieces,
            dtype,
            |c| GemmShape {
                m: rows / c,
                n,
                k: kp,
            },
            // chunked: one per piece; pc-reduce: one per (destination, piece).
            |c| world * c,
        )?;
        // AUGUR_TP_WARM_PLANS (a diagnostic of push-reduce's hang): every GEMM the patterns
        // launch run once now, into the partial (scratch until a call writes it), so that no
        // kernel's module is first loaded (lazily, CUDA's default) during a call. With it,
        // push-reduce hung sooner (the first layer; push-reduce-h200-2026-11-30).
        if std::env::var_os("AUGUR_TP_WARM_PLANS").is_some() {
            let adds = patterns
                .iter()
                .any(|q| matches!(q, TpPattern::PushReduce(_)));
            let scratch = super::ptr(&part, s);
            // SAFETY: `a` holds m x kp halves and `b` n x kp (the caller's contract), `part`
            // m x n; each piece's plan reads its first rows of `a` and writes (adds into) as
            // many of `part`'s.
            unsafe {
                full.run_on(a, b, scratch, s)?;
                for (_, plan, _) in &plans {
                    plan.run_on(a, b, scratch, s)?;
                    if adds {
                        plan.run_add_on(a, b, scratch, scratch, s)?;
                    }
                }
            }
        }
        let reduce = if patterns.iter().any(|q| {
            matches!(
                q,
                TpPattern::PcReduce { .. }
                    | TpPattern::PushReduce(_)
                    | TpPattern::FusedReduce { .. }
                    | TpPattern::FusedAll { .. }
            )
        }) {
            let module = super::comm_module(g)?;
            let name = match dtype {
                augur_features::attention::Dtype::Bf16 => "tp_reduce_piece_bf16",
                _ => "tp_reduce_piece_f16",
            };
            let kernel = module
                .load_function(name)
                .map_err(drv("cuModuleGetFunction"))?;
            let sm_push = |q: &TpPattern| matches!(q, TpPattern::PcReduce { sm_push: true, .. });
            let copy = if patterns.iter().any(sm_push) {
                Some(super::copy_kernel(g, &module)?)
            } else {
                None
            };
            // The partials' staging (`pc-reduce`, `push-reduce`, `fused-reduce:S`);
            // `fused-reduce:0` adds into the rows of the sum and needs none.
            let staged = patterns.iter().any(|q| match q {
                TpPattern::PcReduce { .. } | TpPattern::PushReduce(_) => true,
                TpPattern::FusedReduce { sms, .. } => *sms > 0,
                _ => false,
            });
            // `fused-reduce:0` as it runs here: split by itself where its units would leave the
            // SMs idle (fused::auto_splits), set up as that `fused-reduce:0:K`.
            let auto_splits = fused::auto_splits(world, (m, n, kp), g.multiprocessors);
            let all_auto_splits = fused::all_auto_splits(world, (m, n, kp), g.multiprocessors);
            let resolved: Vec<TpPattern> = patterns
                .iter()
                .map(|&q| match q {
                    TpPattern::FusedReduce { sms, splits } => TpPattern::FusedReduce {
                        sms,
                        splits: fused::splits_run(sms, splits, auto_splits),
                    },
                    TpPattern::FusedAll { splits } => TpPattern::FusedAll {
                        splits: fused::all_splits(splits, all_auto_splits),
                    },
                    q => q,
                })
                .collect();
            let patterns = &resolved[..];
            let split =
                |q: &TpPattern| matches!(q, TpPattern::FusedReduce { splits, .. } if *splits > 1);
            let acc = if patterns.iter().any(split) {
                let name = match dtype {
                    augur_features::attention::Dtype::Bf16 => "gemm_splitk_bf16",
                    _ => "gemm_splitk_f16",
                };
                let f = g
                    .module
                    .load_function(name)
                    .map_err(drv("cuModuleGetFunction"))?;
                // Where the launch zeroes, two sums taken in turn, zeroed here for the first two
                // calls and then by the calls themselves (fused.rs).
                let sums = if fused::in_launch(world) { 2 } else { 1 };
                Some((DeviceBuffer::zeroed(&g.ctx, sums * rows * n * 4)?, f))
            } else {
                None
            };
            // `fused-all`'s planes (fused.rs's `all_acc_bytes`), for the most k ranges any
            // `fused-all` here takes; none without it.
            let sources = if fused::all_per_source(world) {
                world
            } else {
                1
            };
            let most = patterns
                .iter()
                .filter_map(|q| match q {
                    TpPattern::FusedAll { splits } => Some(*splits),
                    _ => None,
                })
                .max();
            let all_acc = match most.map(|most| (most, fused::all_acc_bytes(sources, most, m, n))) {
                Some((most, (f32_bytes, half_bytes))) if f32_bytes + half_bytes > 0 => {
                    let (free, _) = g.ctx.mem_get_info().map_err(drv("cuMemGetInfo"))?;
                    fused::all_planes_fit(most, (m, n), f32_bytes + half_bytes, free)?;
                    Some((DeviceBuffer::zeroed(&g.ctx, f32_bytes + half_bytes)?, most))
                }
                _ => None,
            };
            let bytes = if staged { m * n * 2 } else { 16 };
            let own = DeviceBuffer::new(&g.ctx, bytes)?;
            let staging = DeviceBuffer::new(&g.ctx, bytes)?;
            let copy_streams = (0..world)
                .map(|q| {
                    (q != rank)
                        .then(|| g.ctx.new_stream().map_err(drv("cuStreamCreate")))
                        .transpose()
                })
                .collect::<Result<Vec<_>, _>>()?;
            let flags = DeviceBuffer::zeroed(&g.ctx, 4 * FLAG_WORDS)?;
            let fused = fused_rs_launches(g, patterns, world, (m, n, kp), dtype, [a, b])?;
            let done = if fused.is_empty() {
                None
            } else {
                // The counts, the launches' words, and `fused-all`'s counts.
                let bytes = 2 * tickets_at(world, m) + 16 * fused.len();
                Some(DeviceBuffer::zeroed(&g.ctx, bytes)?)
            };
            Some(Reduce {
                own,
                staging,
                flags,
                kernel,
                copy,
                copy_streams,
                epoch: Cell::new(0),
                fused,
                done,
                fused_target: Cell::new(0),
                all_target: Cell::new(0),
                acc,
                acc_calls: Cell::new(0),
                all_acc,
                all_calls: Cell::new(0),
                auto_splits,
                all_auto_splits,
                diagnostics: PushDiagnostics::from_env(),
            })
        } else {
            None
        };
        let mut published = reduce.as_ref().map_or(Vec::new(), |r| {
            let done = r.done.as_ref().map_or(0, |d| d.ptr());
            let acc = r.acc.as_ref().map_or(0, |a| a.0.ptr());
            vec![r.staging.ptr(), r.flags.ptr(), done, out, acc]
        });
        let ll = if patterns.contains(&TpPattern::LlBulk) {
            let name = match dtype {
                augur_features::attention::Dtype::Bf16 => "tp_reduce_scatter_ll_bf16",
                _ => "tp_reduce_scatter_ll_f16",
            };
            let l = super::ll::Ll::new(g, world, rows * n / 2, name)?;
            published.resize(PUBLISHED_LL, 0);
            published.push(l.ptr());
            Some(l)
        } else {
            None
        };
        // `fused-all` adds into every GPU's whole sum.
        let fused_all = |p: &TpPattern| matches!(p, TpPattern::FusedAll { .. });
        if let Some(all) = all.filter(|_| patterns.iter().any(fused_all)) {
            published.resize(PUBLISHED_ALL, 0);
            published.push(all);
            // Its planes, where it splits k or each source GPU has its own.
            if let Some((a, _)) = reduce.as_ref().and_then(|r| r.all_acc.as_ref()) {
                published.push(a.ptr());
            }
        }
        Ok((
            Rs {
                a,
                b,
                part,
                out,
                owned,
                rows,
                n,
                kp,
                dtype,
                full,
                pieces: plans,
                reduce,
                ll,
                all,
                kept: Vec::new(),
            },
            published,
        ))
    }

    /// Keep `buf` alive as long as this Rs (a plan's own rows of the sum).
    pub(super) fn keep(&mut self, buf: DeviceBuffer) {
        self.kept.push(buf);
    }

    /// NCCL's `kind` of collective on `st`, from `src` into `dst`, `count` values a GPU: the
    /// reduce-scatter's `src` world x count and `dst` count; the all-reduce's both count; the
    /// all-gather's `src` count and `dst` world x count.
    fn collective(
        &self,
        gpu: &Gpu,
        kind: Collective,
        [src, dst]: [u64; 2],
        count: usize,
        st: &cudarc::driver::CudaStream,
    ) -> Result<(), KernelError> {
        let (s, d) = (src as *const c_void, dst as *mut c_void);
        let (ty, sum) = (nccl_half(self.dtype), nccl_sys::ncclRedOp_t::ncclSum);
        let (comm, cs) = (gpu.comm.0, st.cu_stream() as nccl_sys::cudaStream_t);
        // SAFETY: `src` and `dst` hold what `kind` reads and writes (above), on this GPU; every
        // GPU enqueues the same collectives in the same order.
        unsafe {
            match kind {
                Collective::ReduceScatter => nccl::reduce_scatter(s, d, count, ty, sum, comm, cs)
                    .map_err(nccl_err("ncclReduceScatter")),
                Collective::AllReduce => nccl::all_reduce(s, d, count, ty, sum, comm, cs)
                    .map_err(nccl_err("ncclAllReduce")),
                Collective::AllGather => {
                    nccl::all_gather(s, d, count, ty, comm, cs).map_err(nccl_err("ncclAllGather"))
                }
            }
        }
        .map(|_| ())
    }

    /// One call of `p`. The reduce-scatter: each pattern as the module docs say. The GEMM +
    /// all-reduce (`all` set): `comm` and `bulk` with NCCL's all-reduce (of the partial, into
    /// `all`); `chunked:C` the M rows cut in C pieces, each piece's GEMMs then its all-reduce on
    /// the communication stream while the next piece's GEMMs run; every other pattern its
    /// reduce-scatter into this GPU's rows of the sum, then NCCL's all-gather of them into
    /// `all` (the reduce-scatter overlapped as that pattern overlaps it, the all-gather after).
    pub(super) fn enqueue(&self, gpu: &Gpu, p: TpPattern) -> Result<(), KernelError> {
        let Some(all) = self.all else {
            return self.enqueue_rs(gpu, p);
        };
        let s = gpu.stream();
        let part = ptr(&self.part, &s);
        let (m, n) = (gpu.world * self.rows, self.n);
        match p {
            TpPattern::GemmAlone => self.enqueue_rs(gpu, p),
            TpPattern::CommAlone => {
                self.collective(gpu, Collective::AllReduce, [part, all], m * n, &s)
            }
            TpPattern::Bulk => {
                // SAFETY: `a` is M x kp, `b` n x kp, `part` M x n halves on this GPU.
                unsafe { self.full.run_on(self.a, self.b, part, &s) }?;
                self.collective(gpu, Collective::AllReduce, [part, all], m * n, &s)
            }
            TpPattern::FusedAll { splits } => self.fused_all(gpu, all, splits),
            TpPattern::Chunked(pieces) => {
                let (plan, events) = plan_for(&self.pieces, pieces, 0)?;
                // A piece is M / C rows, made by P GEMMs of the plan's rows / C rows each.
                let (sub, rows) = (self.rows / pieces, m / pieces);
                let (a_row, c_row) = ((self.kp * 2) as u64, (n * 2) as u64);
                let cs = &gpu.comm_stream;
                for (j, ev) in events.iter().take(pieces).enumerate() {
                    for q in 0..gpu.world {
                        let r0 = (j * rows + q * sub) as u64;
                        // SAFETY: the plan for `sub` rows reads rows r0.. of `a` (M x kp) and
                        // writes rows r0.. of `part` (M x n), r0 + sub <= M.
                        unsafe { plan.run_on(self.a + r0 * a_row, self.b, part + r0 * c_row, &s) }?;
                    }
                    ev.record(&s).map_err(drv("record"))?;
                    cs.wait(ev).map_err(drv("wait"))?;
                    let at = (j * rows) as u64 * c_row;
                    self.collective(
                        gpu,
                        Collective::AllReduce,
                        [part + at, all + at],
                        rows * n,
                        cs,
                    )?;
                }
                gpu.join()
            }
            _ => {
                self.enqueue_rs(gpu, p)?;
                self.collective(
                    gpu,
                    Collective::AllGather,
                    [self.out, all],
                    self.rows * n,
                    &s,
                )
            }
        }
    }

    fn enqueue_rs(&self, gpu: &Gpu, p: TpPattern) -> Result<(), KernelError> {
        let s = gpu.stream();
        let cs = &gpu.comm_stream;
        let (a, b) = (self.a, self.b);
        let (part, out) = (ptr(&self.part, &s), self.out);
        let (a_row, c_row) = ((self.kp * 2) as u64, (self.n * 2) as u64);
        let count = self.rows * self.n;
        // SAFETY (every GEMM below): `a` is M x kp, `b` n x kp, `part` M x n halves on this
        // GPU; a plan for m rows reads rows [r0, r0 + m) of `a` and writes m rows of `part`.
        match p {
            TpPattern::GemmAlone => unsafe { self.full.run_on(a, b, part, &s) },
            TpPattern::CommAlone => {
                self.collective(gpu, Collective::ReduceScatter, [part, out], count, &s)
            }
            TpPattern::Bulk => {
                unsafe { self.full.run_on(a, b, part, &s) }?;
                self.collective(gpu, Collective::ReduceScatter, [part, out], count, &s)
            }
            TpPattern::Chunked(pieces) => {
                let (plan, events) = plan_for(&self.pieces, pieces, 0)?;
                let piece = self.rows / pieces;
                for (j, ev) in events.iter().take(pieces).enumerate() {
                    for q in 0..gpu.world {
                        let src = (q * self.rows + j * piece) as u64;
                        let dst = ((j * gpu.world + q) * piece) as u64;
                        unsafe { plan.run_on(a + src * a_row, b, part + dst * c_row, &s) }?;
                    }
                    ev.record(&s).map_err(drv("record"))?;
                    cs.wait(ev).map_err(drv("wait"))?;
                    let staged = part + ((j * gpu.world * piece) as u64) * c_row;
                    let mine = out + ((j * piece) as u64) * c_row;
                    self.collective(
                        gpu,
                        Collective::ReduceScatter,
                        [staged, mine],
                        piece * self.n,
                        cs,
                    )?;
                }
                gpu.join()
            }
            TpPattern::PcReduce {
                pieces,
                sms,
                sm_push,
            } => self.pc_reduce(gpu, pieces, sms, sm_push),
            TpPattern::PushReduce(pieces) => self.push_reduce(gpu, pieces),
            TpPattern::FusedReduce { sms, splits } => self.fused_reduce(gpu, sms, splits),
            TpPattern::LlBulk => {
                let ll = set_up(&self.ll, "ll-bulk")?;
                unsafe { self.full.run_on(a, b, part, &s) }?;
                // SAFETY: tp_reduce_scatter_ll's `part` (world x rows x n halves: GPU q's rows
                // at q x rows x n, the GEMM's just above on this stream) and `out` (rows x n),
                // both on this GPU.
                unsafe { ll.launch(gpu, &s, None, PUBLISHED_LL, &[part, out], ll.next_epoch()) }
            }
            TpPattern::Pull(_)
            | TpPattern::PullBulk
            | TpPattern::Push(_)
            | TpPattern::Pc { .. }
            | TpPattern::Fused { .. }
            | TpPattern::PcLl { .. }
            | TpPattern::OwnBulk
            | TpPattern::FusedAll { .. } => Err(KernelError::Invalid(format!(
                "{}: not a reduce-scatter pattern (refused by tp::check)",
                p.name()
            ))),
        }
    }

    /// The partial product and this GPU's rows of the sum (and the all-reduce's whole sum) to
    /// NaN (0xFFFF).
    pub(super) fn poison(&mut self, gpu: &Gpu) -> Result<(), KernelError> {
        let s = gpu.stream();
        let (pb, ob) = (self.part.len() * 2, self.rows * self.n * 2);
        let out = self.out;
        let (part, _gp) = self.part.device_ptr_mut(&s);
        // SAFETY: both buffers on this stream's GPU, of those sizes in bytes.
        unsafe {
            use cudarc::driver::result::memset_d8_async;
            memset_d8_async(part, 0xFF, pb, s.cu_stream()).map_err(drv("poison"))?;
            memset_d8_async(out, 0xFF, ob, s.cu_stream()).map_err(drv("poison"))?;
            if let Some(all) = self.all {
                memset_d8_async(all, 0xFF, pb, s.cu_stream()).map_err(drv("poison"))?;
            }
            if let Some(r) = &self.reduce {
                for buf in [&r.own, &r.staging] {
                    memset_d8_async(buf.ptr(), 0xFF, buf.bytes(), s.cu_stream())
                        .map_err(drv("poison"))?;
                }
            }
        }
        Ok(())
    }
}
