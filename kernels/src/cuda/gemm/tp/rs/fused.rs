//! The fused GEMM + reduce-scatter's host side (`fused-reduce:S`, `fused-reduce:0`,
//! `fused-reduce:0:K`; see the `rs` module's docs and gemm_fused.cu): its launches made ready per
//! count of summing blocks and k split, its addresses and tensor maps, and one call enqueued.

use cudarc::driver::{CudaFunction, DeviceRepr, PushKernelArg};

use super::{
    ready, Rs, PUBLISHED_ACC, PUBLISHED_ALL, PUBLISHED_ALL_ACC, PUBLISHED_DONE, PUBLISHED_FLAGS,
    PUBLISHED_OUT, PUBLISHED_STAGING,
};
use crate::cuda::comm::MAX_RANKS;
use crate::cuda::gemm::tp;
use crate::cuda::gemm::{
    drv, swap_token_tile, tensor_map, tensor_map_f32, tma_estimate_us, tma_swap_smem, CudaGemm,
    TensorMapArg, TMA_WIDTHS,
};
use crate::gemm::GemmShape;
use crate::KernelError;
use tp::{Gpu, TpPattern};

/// gemm_fused.cu's fused GEMM + reduce-scatter (`gemm_tma_rs_*`) made ready for `reduce_blocks`
/// summing blocks and k cut in `splits` ranges of `kt_per` steps: the function, the tensor maps
/// of this GPU's A and B, its grid.
pub(super) struct FusedRsLaunch {
    reduce_blocks: usize,
    splits: usize,
    kt_per: usize,
    /// The swapped GEMM's token tile (`gemm_tma_rsa_swap_*`), or None: 128-row tiles.
    swap: Option<usize>,
    /// `fused-reduce:0` zeroing its rows of the sum and writing the ready words in the launch
    /// ([`in_launch`], decided once at set-up).
    zeroes: bool,
    /// `fused-all`'s launch (zeroing in the launch, or with k split prezeroed; the swapped GEMM
    /// where `fused-reduce:0` takes it).
    all: bool,
    f: CudaFunction,
    maps: (TensorMapArg, TensorMapArg),
    grid: u32,
    smem: u32,
    /// The tensor maps of where its tiles go in every GPU (its slot of their staging, their
    /// rows of the sum, or their f32 sums, per plane of them; boxes as high as its tiles'
    /// stores), made at its first call once the peers' addresses are known.
    dst: [std::cell::OnceCell<Box<DstMaps>>; 2],
}

/// Per GPU q, a tensor map over this GPU's slot of q's staging (struct TpMaps in gemm_fused.cu).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct DstMaps([TensorMapArg; MAX_RANKS]);

// SAFETY: plain bytes laid out as the C struct.
unsafe impl DeviceRepr for DstMaps {}

/// The fused kernel's addresses (struct TpFusedRs in gemm_fused.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct TpFusedRs {
    done: [u64; MAX_RANKS],
    slot: [u64; MAX_RANKS],
    ready: u64,
    staging: u64,
    out: u64,
    tickets: u64,
    acc: [u64; MAX_RANKS],
    zero: u64,
    zero_bytes: u64,
    zeroed: u64,
    announce: [u64; MAX_RANKS],
    prezeroed: u64,
    all: u64,
    plane_rows: u64,
    source_rows: u64,
}

// SAFETY: plain old data laid out as the C struct.
unsafe impl DeviceRepr for TpFusedRs {}

impl Rs {
    /// Enqueue one call of `fused-reduce:sms` (see the module docs and gemm_fused.cu) on the
    /// compute stream: the call's epoch announced to the peers first (this GPU's staging may be
    /// stored into: its last call's sums are done), or, where the launch zeroes ([`in_launch`]),
    /// by the kernel once it has zeroed this GPU's rows of the sum.
    pub(super) fn fused_reduce(
        &self,
        gpu: &Gpu,
        sms: usize,
        splits: usize,
    ) -> Result<(), KernelError> {
        let r = tp::set_up(&self.reduce, "fused-reduce")?;
        let splits = splits_run(sms, splits, r.auto_splits);
        let (i, l, done) = tp::fused_launch(
            &r.fused,
            |l| (l.reduce_blocks, l.splits, l.all),
            (sms, splits, false),
            r.done.as_ref(),
            "fused-reduce",
        )?;
        let (s, me, world) = (gpu.stream(), gpu.rank, gpu.world);
        let m = world * self.rows;
        let add = sms == 0;
        // GPU q's buffer `which` (one of the PUBLISHED_* it published), `own` on this GPU.
        let of = |q: usize, own: u64, which: usize| if q == me { own } else { gpu.peers[q][which] };
        // Where this GPU's tiles of GPU q's rows go: its slot of q's staging, or (`add`) q's rows
        // of the sum.
        let slot = |q: usize| {
            if add {
                of(q, self.out, PUBLISHED_OUT)
            } else {
                of(q, r.staging.ptr(), PUBLISHED_STAGING) + (me * self.rows * self.n * 2) as u64
            }
        };
        // k split: the partials go into the f32 sums.
        let acc = if splits > 1 {
            Some(tp::set_up(&r.acc, "fused-reduce:0:K")?)
        } else {
            None
        };
        // Where the launch zeroes, each GPU has two f32 sums and the split calls take them in
        // turn, each zeroed by the call two before as it rounds it (gemm_fused.cu's rs_convert):
        // every GPU makes the same calls, so all take the same one.
        let prezeroed = l.zeroes && acc.is_some();
        let plane = if prezeroed {
            let c = r.acc_calls.get();
            r.acc_calls.set(c.wrapping_add(1));
            (c & 1) as usize
        } else {
            0
        };
        let plane_bytes = (plane * self.rows * self.n * 4) as u64;
        // GPU q's f32 sum of its rows for this call (`fused-reduce:0:K`).
        let acc_of = |q: usize| acc.map(|a| of(q, a.0.ptr(), PUBLISHED_ACC) + plane_bytes);
        let dst = match l.dst[plane].get() {
            Some(d) => d,
            None => {
                let mut maps = [TensorMapArg([0; 16]); MAX_RANKS];
                // The swapped GEMM stores (and adds) boxes as high as its token tile.
                let high = l.swap.unwrap_or(64) as u32;
                for (q, map) in maps.iter_mut().enumerate().take(world) {
                    *map = match acc_of(q) {
                        Some(at) => tensor_map_f32(at, self.rows, self.n, high)?,
                        None => tensor_map(slot(q), self.rows, self.n, high, self.dtype)?,
                    };
                }
                l.dst[plane].get_or_init(|| Box::new(DstMaps(maps)))
            }
        };
        // This GPU's rows of the sum (halves, or f32 with k split): with `add` zeroed before any
        // GPU adds into them, by the kernel (which then writes the ready words, its own
        // included) where it zeroes (`l.zeroes`), else by a memset here before the ready words.
        let sum = match acc {
            Some(a) => (a.0.ptr() + plane_bytes, self.rows * self.n * 4),
            None => (self.out, self.rows * self.n * 2),
        };
        let (e, (zero, zero_bytes)) = if l.zeroes {
            (r.next_epoch(), if prezeroed { (0, 0) } else { sum })
        } else {
            if add {
                // SAFETY: this GPU's rows of the sum, on this stream's GPU.
                unsafe { cudarc::driver::result::memset_d8_async(sum.0, 0, sum.1, s.cu_stream()) }
                    .map_err(drv("cuMemsetD8Async"))?;
            }
            // This GPU's staging may be stored into (its last call's sums are done), or its
            // rows of the sum added into.
            (r.announce(gpu)?, (0, 0))
        };
        let target = r
            .fused_target
            .get()
            .wrapping_add((2 * self.n.div_ceil(64) * l.splits) as u32);
        r.fused_target.set(target);
        // This launch's words after the done counts: its tickets, then its count of blocks done
        // zeroing.
        let words = done.ptr() + (tickets_at(world, m) + 16 * i) as u64;
        let mut t = TpFusedRs {
            ready: r.flags.ptr() + 4 * ready(0),
            staging: r.staging.ptr(),
            out: self.out,
            tickets: words,
            zero,
            zero_bytes: zero_bytes as u64,
            zeroed: words + 8,
            prezeroed: prezeroed as u64,
            ..TpFusedRs::default()
        };
        for q in 0..world {
            t.slot[q] = slot(q);
            t.done[q] = of(q, done.ptr(), PUBLISHED_DONE);
            t.acc[q] = acc_of(q).unwrap_or(0);
            t.announce[q] = of(q, r.flags.ptr(), PUBLISHED_FLAGS) + 4 * ready(me);
        }
        // SAFETY: `dst` maps this GPU's slot in every GPU's staging (rows x n), or their rows of
        // the sum, or their f32 sums (peer access on); `t` holds live buffers of this GPU or of
        // a peer (`zero`: zero_bytes, a multiple of 16, of this GPU's; the counters in `done`,
        // per launch); `sms` summing blocks are fewer than the grid.
        unsafe { self.launch_fused(gpu, l, dst, &t, sms, (e, target)) }?;
        // Where the launch zeroed the f32 sum it also rounds it into the rows of the sum at its
        // end (gemm_fused.cu's rs_convert).
        if let Some((sum, convert)) = acc.filter(|_| !l.zeroes) {
            // The launch ended with every GPU's partials of this GPU's rows added: round the
            // f32 sum once into the rows of the sum (gemm_splitk_*, one plane).
            let quads = self.rows * self.n / 4;
            let cfg = cudarc::driver::LaunchConfig {
                grid_dim: (
                    quads.div_ceil(256).clamp(1, 4 * gpu.g.multiprocessors) as u32,
                    1,
                    1,
                ),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let (ri, ni, one) = (self.rows as i32, self.n as i32, 1i32);
            let (src, dst) = (sum.ptr(), self.out);
            let mut b = s.launch_builder(convert);
            b.arg(&ri).arg(&ni).arg(&one).arg(&src).arg(&dst);
            // SAFETY: gemm_splitk_*(m, n, splits, ws, C): rows x n f32 at `src`, rows x n
            // halves at `dst`, both this GPU's (n a multiple of 8: tp::check).
            unsafe { b.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        }
        Ok(())
    }
}

impl Rs {
    /// Enqueue one call of `fused-all` (the GEMM + all-reduce, see gemm_fused.cu) on the compute
    /// stream: `fused-reduce:0`'s launch with every half-tile added into every GPU's whole sum
    /// (`all` here, each peer's as it published it), each GPU's zeroed by its own launch before
    /// its ready words; the launch ends once every GPU has counted every tile row in this GPU's
    /// done words (the second set in `done`, after the launches' words). With k split
    /// ([`all_splits`] of `splits`) the partials go into every GPU's whole f32 sum of the call
    /// (two a GPU, taken in turn as `fused-reduce:0:K`'s, zeroed two calls before), which each
    /// GPU's launch rounds into its whole sum at its end.
    pub(super) fn fused_all(&self, gpu: &Gpu, all: u64, splits: usize) -> Result<(), KernelError> {
        let r = tp::set_up(&self.reduce, "fused-all")?;
        let splits = all_splits(splits, r.all_auto_splits);
        let (i, l, done) = tp::fused_launch(
            &r.fused,
            |l| (l.reduce_blocks, l.splits, l.all),
            (0, splits, true),
            r.done.as_ref(),
            "fused-all",
        )?;
        let (me, world) = (gpu.rank, gpu.world);
        let m = world * self.rows;
        let of = |q: usize, own: u64, which: usize| if q == me { own } else { gpu.peers[q][which] };
        // k split, or a plane per source GPU ([`all_per_source`]): every GPU's two f32 sums,
        // this call's of them (every GPU makes the same calls, so all take the same one).
        let sources = if all_per_source(world) { world } else { 1 };
        let acc = match (splits > 1 || sources > 1, r.all_acc.as_ref()) {
            (false, _) => None,
            (true, Some((a, most))) if l.zeroes && splits <= *most => {
                let c = r.all_calls.get();
                r.all_calls.set(c.wrapping_add(1));
                Some((a.ptr(), (c & 1) as usize, *most))
            }
            (true, _) => {
                return Err(KernelError::Invalid(format!(
                    "fused-all:{splits}: its planes were not set up (on {world} GPUs the \
                     launch does not zero)"
                )))
            }
        };
        // This call's planes in every GPU's buffer ([`all_acc_bytes`]): split, f32 planes of
        // `plane_rows` x n per k range (the most any pattern here asks) and source GPU; unsplit
        // with a plane per source, the 16-bit planes after all of those (the f32 planes must
        // stay zero between split calls, which the 16-bit planes' stores would not leave them).
        let plane_rows = all_plane_rows(m);
        let plane = acc.map_or(0, |a| a.1);
        let offset = acc.map_or(0, |(_, _, most)| {
            let (f32_bytes, half_bytes) = all_acc_bytes(sources, most, m, self.n);
            if splits == 1 {
                f32_bytes + plane * half_bytes / 2
            } else {
                plane * f32_bytes / 2
            }
        }) as u64;
        let acc_of = |q: usize| acc.map(|a| of(q, a.0, PUBLISHED_ALL_ACC) + offset);
        let dst = match l.dst[plane].get() {
            Some(d) => d,
            None => {
                let mut maps = [TensorMapArg([0; 16]); MAX_RANKS];
                // The swapped GEMM adds boxes as high as its token tile.
                let high = l.swap.unwrap_or(64) as u32;
                for (q, map) in maps.iter_mut().enumerate().take(world) {
                    *map = match acc_of(q) {
                        // Unsplit with a plane per source GPU: 16-bit planes, stored into.
                        Some(at) if splits == 1 => {
                            tensor_map(at, sources * plane_rows, self.n, high, self.dtype)?
                        }
                        Some(at) => {
                            tensor_map_f32(at, sources * splits * plane_rows, self.n, high)?
                        }
                        None => tensor_map(of(q, all, PUBLISHED_ALL), m, self.n, high, self.dtype)?,
                    };
                }
                l.dst[plane].get_or_init(|| Box::new(DstMaps(maps)))
            }
        };
        let e = r.next_epoch();
        let target = r
            .all_target
            .get()
            .wrapping_add((2 * self.n.div_ceil(64) * l.splits) as u32);
        r.all_target.set(target);
        let counts = (tickets_at(world, m) + 16 * r.fused.len()) as u64;
        let words = done.ptr() + (tickets_at(world, m) + 16 * i) as u64;
        // Split, nothing is zeroed here: the f32 sums were, two calls before, and the launch
        // writes the whole sum (rs_convert).
        let (zero, zero_bytes) = if acc.is_some() {
            (0, 0)
        } else {
            (all, (m * self.n * 2) as u64)
        };
        let mut t = TpFusedRs {
            ready: r.flags.ptr() + 4 * ready(0),
            staging: r.staging.ptr(),
            out: all,
            tickets: words,
            zero,
            zero_bytes,
            zeroed: words + 8,
            prezeroed: acc.is_some() as u64,
            all: 1,
            plane_rows: if acc.is_some() { plane_rows as u64 } else { 0 },
            source_rows: if acc.is_some() && sources > 1 {
                (splits * plane_rows) as u64
            } else {
                0
            },
            ..TpFusedRs::default()
        };
        for q in 0..world {
            t.slot[q] = of(q, all, PUBLISHED_ALL);
            t.done[q] = of(q, done.ptr(), PUBLISHED_DONE) + counts;
            t.acc[q] = acc_of(q).unwrap_or(0);
            t.announce[q] = of(q, r.flags.ptr(), PUBLISHED_FLAGS) + 4 * ready(me);
        }
        // SAFETY: `dst` maps every GPU's whole sum (M x n halves), or its whole f32 sum of this
        // call (M x n f32; peer access on); `t` holds live buffers of this GPU or of a peer
        // (`zero`: this GPU's whole sum, M x n halves, a multiple of 16 bytes, or nothing; `out`
        // this GPU's whole sum; the counts after the launches' words in `done`); no summing
        // blocks.
        unsafe { self.launch_fused(gpu, l, dst, &t, 0, (e, target)) }
    }

    /// `l`'s launch on the compute stream with its tensor maps of this GPU's A (M x kp) and B
    /// (n x kp), the maps `dst`, the addresses `t`, `sms` summing blocks, the call's epoch and
    /// the done counts' target.
    ///
    /// # Safety
    /// `dst` and `t` must be what gemm_tma_rs_* / gemm_tma_rsa_* take for this GPU's call (see
    /// gemm_fused.cu's TpFusedRs), live until the launch ends.
    unsafe fn launch_fused(
        &self,
        gpu: &Gpu,
        l: &FusedRsLaunch,
        dst: &DstMaps,
        t: &TpFusedRs,
        sms: usize,
        (e, target): (u32, u32),
    ) -> Result<(), KernelError> {
        let m = gpu.world * self.rows;
        let (mi, ni, ki) = (m as i32, self.n as i32, self.kp as i32);
        let ints = [
            gpu.rank as i32,
            gpu.world as i32,
            self.rows as i32,
            sms as i32,
            l.splits as i32,
            l.kt_per as i32,
        ];
        let s = gpu.stream();
        let mut b = s.launch_builder(&l.f);
        b.arg(&mi).arg(&ni).arg(&ki);
        b.arg(&l.maps.0).arg(&l.maps.1).arg(dst).arg(t);
        for v in &ints {
            b.arg(v);
        }
        b.arg(&e).arg(&target);
        // SAFETY: the arguments match the kernel (m, n, k, the maps, the addresses, rank,
        // world, rows per GPU, summing blocks (fewer than the grid), k splits and steps per
        // split, epoch, target; the rest as the caller says); the grid is at most one block per
        // SM, so every block runs at once.
        unsafe { b.launch(tp::fused_config(l.grid, l.smem)) }.map_err(drv("cuLaunchKernel"))?;
        Ok(())
    }
}

/// Whether `fused-all` runs on `world` GPUs: one and two, where it was checked (every GPU's
/// sum 0 + each partial in either order, the same bits on both: two 16-bit values' sum rounds
/// alike either way; split, a plane per k range). On more it gives each source GPU planes of
/// its own ([`all_per_source`]; a single sum would take three or more additions in arrival
/// order and the GPUs' copies could differ in the last bit), not yet run there: only with
/// AUGUR_TP_UNVERIFIED set.
pub(crate) fn all_counts(world: usize) -> bool {
    tp::checked_on(world, &[1, 2])
}

/// The rows between `fused-all`'s k ranges' planes of its f32 sums, for M rows: M in whole
/// 128-row tiles, so that no tile's box (128-row tiles, or the swapped GEMM's token tiles of at
/// most 64) reaches the next plane (the rows past M take only the zeros of A's rows past M).
pub(super) fn all_plane_rows(m: usize) -> usize {
    m.next_multiple_of(128)
}

/// The bytes of `fused-all`'s f32 planes and of its 16-bit planes in each GPU's buffer of them,
/// for `sources` source GPUs (1, or every GPU: [`all_per_source`]), at most `most` k ranges and
/// M x n sums; each two sums taken in turn, the 16-bit ones after the f32 ones: the f32
/// planes where a call splits (`most` > 1; zeroed as they are read, for the next split call),
/// the 16-bit planes where each source has its own and a call does not split (stored into,
/// never zeroed).
pub(super) fn all_acc_bytes(sources: usize, most: usize, m: usize, n: usize) -> (usize, usize) {
    let rows = all_plane_rows(m);
    let f32_bytes = if most > 1 {
        2 * sources * most * rows * n * 4
    } else {
        0
    };
    let half_bytes = if sources > 1 {
        2 * sources * rows * n * 2
    } else {
        0
    };
    (f32_bytes, half_bytes)
}

/// Whether `fused-all` on `world` GPUs gives each source GPU planes of its own in every GPU's
/// sum (gemm_fused.cu's `source_rows`; unsplit, 16-bit planes each partial is stored into; split,
/// f32 planes per k range): on more than two, where three or more additions onto one value
/// would come in arrival order and the GPUs' sums could differ in the last bit; on two only
/// where AUGUR_TP_ALL_PLANES is set (to check the path where it runs). On two H200s the f32
/// planes unsplit were 0.52x the 16-bit sums' speed (0.29x from M 1024: remote f32 reductions,
/// twice the bytes; bench/results/fused-all-split-h200-2026-11-30/planes/); hence the 16-bit
/// stores unsplit.
pub(crate) fn all_per_source(world: usize) -> bool {
    world > 2 || std::env::var_os("AUGUR_TP_ALL_PLANES").is_some()
}

/// The k split `fused-all` (`splits` 0) or `fused-all:K` (`splits` K) runs with, `auto` the one
/// it takes here by itself ([`all_auto_splits`]).
pub(super) fn all_splits(splits: usize, auto: usize) -> usize {
    if splits == 0 {
        auto
    } else {
        splits
    }
}

/// Whether `fused-reduce:0` on `world` GPUs zeroes its rows of the sum and writes the ready
/// words in its launch (and, with k split, rounds its f32 sum at its end), and takes the
/// swapped GEMM at small M: on one, two and four GPUs, where it was checked and timed (one
/// H200: bench/results/fused-reduce-swap-h200-2026-11-29/, split-convert-h200-2026-11-29/,
/// swap-mid-h200-2026-11-29/, zero-helpers-h200-2026-11-29/; two H200s, every check passed and
/// 1.05-1.80x faster than the host's way: fused-rs-2gpu-h200-2026-11-29/; four H200s, with
/// boxes of the swapped GEMM holding three and four owners' rows, every check passed and
/// 1.03-2.29x faster: fused-4gpu-h200-2026-11-29/); on other counts only with
/// AUGUR_TP_UNVERIFIED set, until a run on them has checked it. The first version stopped
/// with an illegal instruction on two GPUs: its tensor-memory reductions at a negative row of
/// a later owner's map, an illegal instruction on one H200 too
/// (bench/results/tma-negative-h200-2026-11-29/). Otherwise the host's memset and ready words,
/// 128-row tiles and a second launch for the f32 sum, as before.
///
/// Where it holds, `fused-reduce:0:K` also takes two f32 sums a GPU in turn, each zeroed by the
/// call two before as it rounds it, instead of zeroing one in the launch and writing the ready
/// words, and the swapped GEMM adds its partials by tensor-memory reductions, their completion
/// waited for at its next store (gemm_fused.cu's `prezeroed`): checked and timed on one, two
/// and four GPUs too (one H200, 1.10-1.26x faster by split at M 16-1024; two H200s, every check
/// passed and `:0:2` / `:0:4` 1.03x / 1.07x faster at M 16-256:
/// bench/results/split-prezeroed-h200-2026-11-29/; four H200s, every check passed, 1.79x /
/// 1.64x faster than with the host's zeroing at M 16-256: fused-4gpu-h200-2026-11-29/).
pub(super) fn in_launch(world: usize) -> bool {
    tp::checked_on(world, &[1, 2, 4])
}

/// The k split `fused-reduce:0` takes by itself on `world` GPUs for this GPU's product (its
/// rows of every GPU, M = world x rows, by n, over kp) on `sms` SMs: where the launch zeroes
/// ([`in_launch`], so the split's f32 sums are zeroed two calls ahead) and the swapped GEMM
/// runs unsplit (M <= 64, or its 64-row units fit in one wave), 2 or 4 (the most) where that
/// many times its units still fit in one wave and k / P cuts into that many ranges of 8 or more
/// whole steps of 64; else 1. It runs exactly `fused-reduce:0:K`'s launch. Chosen on the last
/// runs of both (where it splits, `:0:K` 1.21x faster than `:0` on 4 of the one-GPU bar's 20
/// layers, all at M 16: bench/results/split-prezeroed-h200-2026-11-29/bar/; 1.10x on 21 of the
/// 2-GPU grids' 92 layers, M 16-128: regrid-2gpu/ there), then run between two H200s: every check
/// passed and `fused-reduce:0` 1.103x faster on those 21 layers (0.89-1.35;
/// bench/results/auto-split-h200-2026-11-29/).
pub(super) fn auto_splits(world: usize, shape: (usize, usize, usize), sms: usize) -> usize {
    let Some((units, steps)) = swap_units_steps(world, shape, sms) else {
        return 1;
    };
    [4, 2]
        .into_iter()
        .find(|&s| units * s <= sms && steps % s == 0 && steps / s >= 8)
        .unwrap_or(1)
}

/// The k split `fused-all` takes by itself on `world` GPUs for this GPU's product (M = world x
/// rows, by n, over kp) on `sms` SMs: 2 where the swapped GEMM runs unsplit ([`auto_splits`]'s
/// condition) with at most a third of the SMs' units (its GEMM there is bound by how fast that
/// few SMs read B, n x kp) and k / P is 96 steps of 64 or more (an even count); else 1. Each k
/// range's partials go to every GPU in f32, a plane each: four times `fused-all:1`'s bytes
/// per range pair, and a rounding pass at the launch's end. Chosen on one run of two H200s
/// (bench/results/fused-all-split-h200-2026-11-30/, small-m.csv, 32 layers M 16-256): taking
/// `fused-reduce:0`'s split, `fused-all` was 0.997x bulk against 1.058x unsplit (at M 64
/// and N 4096, 0.63x against 1.03x); split in two it was 1.09-1.37x faster than unsplit on 6 of
/// the 7 layers this rule splits (28-40 units, k / P 6912-9472; 0.86x on the seventh), and
/// 0.90-0.98x on the three with 56-64 units and as deep a B.
pub(super) fn all_auto_splits(world: usize, shape: (usize, usize, usize), sms: usize) -> usize {
    match swap_units_steps(world, shape, sms) {
        Some((units, steps)) if units * 3 <= sms && steps >= 96 && steps % 2 == 0 => 2,
        _ => 1,
    }
}

/// Whether the swapped GEMM runs for M rows by n in `splits` k ranges on `sms` SMs: M <= 64
/// (every GPU's rows in one token tile), or its 64-row units x `splits` fit in one wave.
fn swap_runs(m: usize, n: usize, splits: usize, sms: usize) -> bool {
    m <= 64 || m.div_ceil(64) * n.div_ceil(128) * splits <= sms
}

/// What [`auto_splits`] and [`all_auto_splits`] weigh, where either may split at all (the
/// launch zeroes, [`in_launch`]; k / P in whole steps of 64; the swapped GEMM runs unsplit,
/// [`swap_runs`]): the swapped GEMM's units (token tiles x 128 columns) and k / P's steps.
fn swap_units_steps(
    world: usize,
    (m, n, kp): (usize, usize, usize),
    sms: usize,
) -> Option<(usize, usize)> {
    (in_launch(world) && kp % 64 == 0 && swap_runs(m, n, 1, sms))
        .then(|| (m.div_ceil(swap_token_tile(m)) * n.div_ceil(128), kp / 64))
}

/// The k split a `fused-reduce` pattern of `sms` summing blocks and `splits` ranges runs with:
/// `fused-reduce:0` with the one it takes by itself (`auto`, [`auto_splits`]), every other as
/// it asks.
pub(super) fn splits_run(sms: usize, splits: usize, auto: usize) -> usize {
    if sms == 0 && splits == 1 {
        auto
    } else {
        splits
    }
}

/// Whether `fused-all`'s planes (`bytes` a GPU: [`all_acc_bytes`] for at most `most` k ranges
/// at M x n) fit in the `free` bytes its GPU has, or why not: an explicit `fused-all:K` at
/// large M asks K f32 planes of the whole M x n sum, two sums, a GPU, which the allocation would
/// refuse only with the driver's out-of-memory error.
pub(super) fn all_planes_fit(
    most: usize,
    (m, n): (usize, usize),
    bytes: usize,
    free: usize,
) -> Result<(), KernelError> {
    if bytes <= free {
        return Ok(());
    }
    let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
    Err(KernelError::Invalid(format!(
        "fused-all:{most} at {m} x {n}: its planes of the whole {m} x {n} sum take {:.2} GiB a \
         GPU, more than the {:.2} GiB free; fewer k ranges (`fused-all` splits by itself only \
         at small M, in two)",
        gib(bytes),
        gib(free)
    )))
}

/// The width of the fused reduce-scatter's and all-reduce's 128-row tiles as the environment
/// variable AUGUR_TP_FUSED_WIDTH forces it (128, 192 or 256; a diagnostic: how the width trades
/// the GEMM's own speed against its stores' waits on the link), `None` where it is not set (the
/// GEMM's estimate picks). The swapped GEMM's token tiles are not affected.
pub(super) fn forced_width() -> Result<Option<usize>, KernelError> {
    match std::env::var("AUGUR_TP_FUSED_WIDTH") {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(v) => parse_width(&v).map(Some),
        Err(e) => Err(KernelError::Invalid(format!("AUGUR_TP_FUSED_WIDTH: {e}"))),
    }
}

/// AUGUR_TP_FUSED_WIDTH's value `v` as a tile width, or why not.
fn parse_width(v: &str) -> Result<usize, KernelError> {
    match v.trim().parse::<usize>() {
        Ok(bn) if TMA_WIDTHS.contains(&bn) => Ok(bn),
        _ => Err(KernelError::Invalid(format!(
            "AUGUR_TP_FUSED_WIDTH={v:?}: the fused tiles' width is one of {TMA_WIDTHS:?}"
        ))),
    }
}

/// Where the fused kernel's tickets lie in its words: after the done counts of `world` GPUs
/// for M rows in tiles of 128, 8-byte aligned.
pub(super) fn tickets_at(world: usize, m: usize) -> usize {
    (4 * world * m.div_ceil(128)).next_multiple_of(8)
}

/// The fused kernel made ready for each count of summing blocks the `fused-reduce` patterns
/// among `patterns` ask (none without them): over this GPU's A (M x kp) at `a` and B (n x kp) at
/// `b`, the tile width chosen for the SMs the summing blocks leave (k never split: each tile goes
/// to its owner whole).
pub(super) fn fused_rs_launches(
    g: &CudaGemm,
    patterns: &[TpPattern],
    world: usize,
    (m, n, kp): (usize, usize, usize),
    dtype: augur_features::attention::Dtype,
    [a, b]: [u64; 2],
) -> Result<Vec<FusedRsLaunch>, KernelError> {
    tp::fused_counts(patterns, |p| match p {
        TpPattern::FusedReduce { sms, splits } => Some((*sms, *splits, false)),
        TpPattern::FusedAll { splits } => Some((0, *splits, true)),
        _ => None,
    })
    .into_iter()
    .map(|(reduce_blocks, splits, all)| {
        let sms = tp::fused_sms(g, reduce_blocks, "summing")?;
        let shape = GemmShape { m, n, k: kp };
        // tp::check said it first; the launch's counts depend on it.
        let kt_per = tp::split_ranges(kp, splits)
            .map_err(|e| KernelError::Invalid(format!("fused-reduce:0:{splits}: {e}")))?;
        // `fused-reduce:0[:K]` at M <= 64 (every GPU's rows in one token tile), and beyond
        // where its units (64-row token tiles x 128 columns x K) fit in one wave: the swapped
        // GEMM (gemm_tma.cu's gemm_tma_swap), 128 columns of C by a token tile a unit. On one H200
        // at M 96-256 (bench/results/swap-mid-h200-2026-11-29): 1.17x faster than the 128-row
        // tiles where they fit (0.96-1.54x), 0.52-0.96x where a split's units did not.
        let zeroes = reduce_blocks == 0 && in_launch(world);
        if zeroes && swap_runs(m, n, splits, sms) {
            let mt = swap_token_tile(m);
            let (f, smem) = tp::fused_function_with(g, "rsa_swap", dtype, mt, tma_swap_smem(mt))?;
            let units = m.div_ceil(mt) * n.div_ceil(128) * splits;
            return Ok(FusedRsLaunch {
                reduce_blocks,
                splits,
                kt_per,
                swap: Some(mt),
                zeroes,
                all,
                f,
                maps: (
                    tensor_map(a, m, kp, mt as u32, dtype)?,
                    tensor_map(b, n, kp, 128, dtype)?,
                ),
                grid: units.min(sms) as u32,
                smem: smem as u32,
                dst: Default::default(),
            });
        }
        // Otherwise 128-row tiles, their width by the GEMM's estimate at this split (the f32
        // additions not in it), or as AUGUR_TP_FUSED_WIDTH forces it.
        let bn = match forced_width()? {
            Some(bn) => bn,
            None => TMA_WIDTHS
                .into_iter()
                .min_by(|&x, &y| {
                    let t = |bn| {
                        tma_estimate_us(shape, bn, splits, sms)
                            .or_else(|| tma_estimate_us(shape, bn, 1, sms))
                            .unwrap_or(f64::INFINITY)
                    };
                    t(x).total_cmp(&t(y))
                })
                .unwrap_or(256),
        };
        let kind = if reduce_blocks == 0 { "rsa" } else { "rs" };
        let (f, smem) = tp::fused_function(g, kind, dtype, bn)?;
        let units = m.div_ceil(128) * n.div_ceil(bn) * splits;
        Ok(FusedRsLaunch {
            reduce_blocks,
            splits,
            kt_per,
            swap: None,
            zeroes,
            all,
            f,
            maps: (
                tensor_map(a, m, kp, 128, dtype)?,
                tensor_map(b, n, kp, bn as u32, dtype)?,
            ),
            grid: (reduce_blocks + units.min(sms)) as u32,
            smem: smem as u32,
            dst: Default::default(),
        })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_launch_zeroes_on_the_gpu_counts_it_was_checked_on() {
        // Checked on one, two and four H200s (the split's sums zeroed two calls ahead too); on
        // three or eight only when asked for.
        assert!(super::in_launch(1) && super::in_launch(2) && super::in_launch(4));
        let asked = std::env::var_os("AUGUR_TP_UNVERIFIED").is_some();
        assert_eq!(super::in_launch(3), asked);
        assert_eq!(super::in_launch(8), asked);
    }

    #[test]
    fn fused_reduce_0_splits_k_where_its_units_leave_the_sms_idle() {
        use super::auto_splits;
        // One GPU, M 16 (token tiles of 32): 32 units of 128 columns; k 2048 = 32 steps.
        assert_eq!(auto_splits(1, (16, 4096, 2048), 132), 4);
        // 64 units: two of each fit.
        assert_eq!(auto_splits(1, (16, 8192, 4096), 132), 2);
        // 128 units fill the wave already; past one wave the 128-row tiles run.
        assert_eq!(auto_splits(1, (256, 4096, 2048), 132), 1);
        assert_eq!(auto_splits(1, (256, 8192, 4096), 132), 1);
        // Too few steps for 4 ranges of 8 (16 steps): 2; for 2 (8 steps): none.
        assert_eq!(auto_splits(2, (16, 3584, 1024), 132), 2);
        assert_eq!(auto_splits(2, (16, 3584, 512), 132), 1);
        // k / P not in whole steps, or steps not cut evenly (14 steps in 4): the next that is.
        assert_eq!(auto_splits(2, (16, 3584, 1000), 132), 1);
        assert_eq!(auto_splits(2, (16, 3584, 896), 132), 1);
        assert_eq!(auto_splits(2, (16, 3584, 1792), 132), 2);
        // Four GPUs (M 16: 4 rows a GPU, one token tile): as on one.
        assert_eq!(auto_splits(4, (16, 4096, 2048), 132), 4);
        // Not where the launch does not zero (eight GPUs unless asked).
        let asked = std::env::var_os("AUGUR_TP_UNVERIFIED").is_some();
        assert_eq!(
            auto_splits(8, (16, 4096, 2048), 132),
            if asked { 4 } else { 1 }
        );
    }

    #[test]
    fn fused_all_planes_larger_than_the_free_memory_are_refused_by_name() {
        use super::{all_acc_bytes, all_planes_fit};
        // 16384 x 8192 in 8 ranges: 2 x 8 x 16384 x 8192 x 4 bytes = 8 GiB.
        let (f, h) = all_acc_bytes(1, 8, 16384, 8192);
        assert_eq!(f + h, 8 << 30);
        assert!(all_planes_fit(8, (16384, 8192), f + h, 9 << 30).is_ok());
        let e = all_planes_fit(8, (16384, 8192), f + h, 6 << 30)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("fused-all:8 at 16384 x 8192")
                && e.contains("8.00 GiB")
                && e.contains("6.00 GiB free"),
            "{e}"
        );
    }

    #[test]
    fn a_forced_tile_width_is_one_the_kernels_have() {
        assert_eq!(super::parse_width("192").unwrap(), 192);
        assert_eq!(super::parse_width(" 128\n").unwrap(), 128);
        for bad in ["64", "", "wide", "-1"] {
            let e = super::parse_width(bad).unwrap_err().to_string();
            assert!(
                e.contains("AUGUR_TP_FUSED_WIDTH") && e.contains("[256, 192, 128]"),
                "{e}"
            );
        }
    }

    #[test]
    fn fused_all_splits_in_two_where_few_units_read_a_deep_b() {
        use super::all_auto_splits;
        // M 16, N 3584: 28 units of 128 columns; k / P 9472 = 148 steps.
        assert_eq!(all_auto_splits(2, (16, 3584, 9472), 132), 2);
        // M 64, N 5120: 40 units, a third of 132 SMs at most 44.
        assert_eq!(all_auto_splits(2, (64, 5120, 7168), 132), 2);
        // 56 and 64 units: not split.
        assert_eq!(all_auto_splits(2, (32, 7168, 10240), 132), 1);
        assert_eq!(all_auto_splits(2, (16, 8192, 14336), 132), 1);
        // Too shallow (64 steps), or an odd count of steps (97).
        assert_eq!(all_auto_splits(2, (16, 4096, 4096), 132), 1);
        assert_eq!(all_auto_splits(2, (16, 4096, 97 * 64), 132), 1);
        // Past the swapped GEMM's one wave (128-row tiles): not split.
        assert_eq!(all_auto_splits(2, (1024, 3584, 9472), 132), 1);
    }

    #[test]
    fn fused_all_keeps_its_f32_and_16_bit_planes_apart() {
        use super::all_acc_bytes;
        // 4 sources, up to 2 k ranges, M 200 (256-row planes), n 64: two sums of 8 f32 planes,
        // then two of 4 16-bit planes.
        assert_eq!(
            all_acc_bytes(4, 2, 200, 64),
            (2 * 8 * 256 * 64 * 4, 2 * 4 * 256 * 64 * 2)
        );
        // Never split: no f32 planes; one source: no 16-bit planes (the sums are added into).
        assert_eq!(all_acc_bytes(4, 1, 200, 64), (0, 2 * 4 * 256 * 64 * 2));
        assert_eq!(all_acc_bytes(1, 2, 200, 64), (2 * 2 * 256 * 64 * 4, 0));
        assert_eq!(all_acc_bytes(1, 1, 200, 64), (0, 0));
    }

    #[test]
    fn fused_all_gives_each_gpu_planes_of_its_own_on_more_than_two() {
        use super::all_per_source;
        assert!(all_per_source(3) && all_per_source(4) && all_per_source(8));
        let asked = std::env::var_os("AUGUR_TP_ALL_PLANES").is_some();
        assert_eq!(all_per_source(1), asked);
        assert_eq!(all_per_source(2), asked);
    }

    #[test]
    fn fused_all_splits_as_told_and_its_planes_hold_whole_tiles() {
        use super::{all_plane_rows, all_splits};
        assert_eq!(all_splits(0, 4), 4);
        assert_eq!(all_splits(0, 1), 1);
        assert_eq!(all_splits(1, 4), 1);
        assert_eq!(all_splits(2, 4), 2);
        // Whole 128-row tiles: no tile's box crosses into the next k range's plane.
        assert_eq!(all_plane_rows(16), 128);
        assert_eq!(all_plane_rows(128), 128);
        assert_eq!(all_plane_rows(200), 256);
    }

    #[test]
    fn the_fused_kernels_tickets_follow_the_done_counts_aligned() {
        // 3 GPUs x 1 tile row: 12 bytes of counts, the tickets (u64) at 16.
        assert_eq!(super::tickets_at(3, 16), 16);
        // 2 GPUs x 64 tile rows: 512 bytes, already aligned.
        assert_eq!(super::tickets_at(2, 8192), 512);
        for (world, m) in [(1, 1), (3, 129 * 128), (5, 300), (8, 16384)] {
            let t = super::tickets_at(world, m);
            assert!(
                t.is_multiple_of(8) && t >= 4 * world * m.div_ceil(128),
                "{world} {m}"
            );
        }
    }
}
