//! Which of augur's GEMM kernels: their names, and the TMA kernel's tile width and split of k
//! for a shape (a time estimate fitted on measurements).

use crate::gemm::GemmShape;
use crate::KernelError;

/// The GEMMs compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GemmKernel {
    /// gemm.cu's mma.sync kernel with block tiles of `bm` x 128 (bm = 128 or 64).
    Augur { bm: usize },
    /// gemm.cu's wgmma kernel (Hopper only): 128 x `bn` tiles (bn = 128 or 256), two
    /// warpgroups.
    Wgmma { bn: usize },
    /// gemm_tma.cu's TMA kernel (Hopper only), persistent: 128 x `bn` tiles (bn: one of
    /// [`TMA_WIDTHS`]), a producer warpgroup issuing tensor-memory copies, two consumer warpgroups multiplying with
    /// wgmma; k cut into `splits` ranges (1 to 16) whose f32 partials a second kernel sums.
    Tma { bn: usize, splits: usize },
    /// The TMA kernel with a tail split: where its 128 x `bn` tiles fill whole waves of the SMs
    /// and part of one more, the tiles of that last wave are cut in `splits` ranges of k (2 to
    /// 16; the others whole), so that their ranges spread over the SMs the part-filled wave
    /// would leave idle; a second kernel sums those tiles' partials.
    TmaTail { bn: usize, splits: usize },
    /// gemm_tma.cu's swapped TMA kernel (Hopper only) for small M: tiles of `mt` rows of C (mt = 32
    /// or 64) by 128 columns, B's rows wgmma's M and A's its N; k cut as for [`GemmKernel::Tma`].
    TmaSwap { mt: usize, splits: usize },
    /// The TMA kernel (either) with the tile and split count [`tma_auto`] picks for the shape.
    TmaAuto,
    /// cuBLASLt's heuristic choice (f32 accumulation).
    CublasLt,
}

impl GemmKernel {
    /// The kernels `augur overlap gemm` compares by default: the TMA kernel unsplit in each tile
    /// width, as chosen per shape, and cuBLASLt (the mma.sync and the wgmma kernels without TMA,
    /// the steps on the way at 0.3-0.45 of cuBLASLt, by name only).
    pub fn all() -> [GemmKernel; 5] {
        [
            GemmKernel::Tma { bn: 256, splits: 1 },
            GemmKernel::Tma { bn: 192, splits: 1 },
            GemmKernel::Tma { bn: 128, splits: 1 },
            GemmKernel::TmaAuto,
            GemmKernel::CublasLt,
        ]
    }

    pub fn name(self) -> String {
        match self {
            GemmKernel::Augur { bm } => format!("augur_{bm}x128"),
            GemmKernel::Wgmma { bn } => format!("augur_wgmma_128x{bn}"),
            GemmKernel::Tma { bn, splits: 1 } => format!("augur_tma_128x{bn}"),
            GemmKernel::Tma { bn, splits } => format!("augur_tma_128x{bn}_k{splits}"),
            GemmKernel::TmaTail { bn, splits } => format!("augur_tma_128x{bn}_t{splits}"),
            GemmKernel::TmaSwap { mt, splits: 1 } => format!("augur_tma_swap_{mt}x128"),
            GemmKernel::TmaSwap { mt, splits } => format!("augur_tma_swap_{mt}x128_k{splits}"),
            GemmKernel::TmaAuto => "augur_tma_auto".into(),
            GemmKernel::CublasLt => "cublaslt".into(),
        }
    }

    /// A TMA kernel's tile and split count, the split always said (`128x256_k1`,
    /// `swap_32x128_k4`); None for the other kernels (and the auto kernel before it picked).
    pub fn tma_label(self) -> Option<String> {
        match self {
            GemmKernel::Tma { bn, splits } => Some(format!("128x{bn}_k{splits}")),
            GemmKernel::TmaTail { bn, splits } => Some(format!("128x{bn}_t{splits}")),
            GemmKernel::TmaSwap { mt, splits } => Some(format!("swap_{mt}x128_k{splits}")),
            _ => None,
        }
    }

    /// A TMA kernel's tiles of C for an m x n product (None for the other kernels and the auto
    /// kernel before it picked): 128 x bn tiles, or mt x 128 for the swapped kernel.
    pub fn tma_tiles(self, m: usize, n: usize) -> Option<usize> {
        match self {
            GemmKernel::Tma { bn, .. } | GemmKernel::TmaTail { bn, .. } => {
                Some(m.div_ceil(128) * n.div_ceil(bn))
            }
            GemmKernel::TmaSwap { mt, .. } => Some(m.div_ceil(mt) * n.div_ceil(128)),
            _ => None,
        }
    }

    /// The kernel of a [`GemmKernel::name`]: `augur_128x128`, `augur_64x128`,
    /// `augur_wgmma_128x{128,256}`, `augur_tma_128x{128,192,256}[_k<splits>]`,
    /// `augur_tma_128x{128,192,256}_t<splits>` (the tail split, 2 to 16),
    /// `augur_tma_swap_{32,64}x128[_k<splits>]`, `augur_tma_auto`, `cublaslt`.
    pub fn parse(name: &str) -> Result<GemmKernel, KernelError> {
        let bad = || {
            KernelError::Invalid(format!(
                "unknown GEMM kernel `{name}`: augur_128x128, augur_64x128, augur_wgmma_128x128, \
                 augur_wgmma_128x256, augur_tma_128x256, augur_tma_128x192, augur_tma_128x128, \
                 augur_tma_swap_32x128, augur_tma_swap_64x128 (each with _k2 .. _k16 for a split \
                 k; the 128-row ones with _t2 .. _t16 for the tail split), augur_tma_auto or \
                 cublaslt"
            ))
        };
        let k = match name {
            "augur_128x128" => GemmKernel::Augur { bm: 128 },
            "augur_64x128" => GemmKernel::Augur { bm: 64 },
            "augur_wgmma_128x128" => GemmKernel::Wgmma { bn: 128 },
            "augur_wgmma_128x256" => GemmKernel::Wgmma { bn: 256 },
            "augur_tma_auto" => GemmKernel::TmaAuto,
            "cublaslt" => GemmKernel::CublasLt,
            t => {
                // The tile's free side (bn of 128 x bn, mt of mt x 128) and the split.
                let tile_split = |rest: &str, sizes: &[usize]| {
                    let (size, splits) = match rest.split_once("_k") {
                        Some((b, s)) => (b, s.parse::<usize>().map_err(|_| bad())?),
                        None => (rest, 1),
                    };
                    let size = size.parse::<usize>().map_err(|_| bad())?;
                    if !sizes.contains(&size) || !(1..=MAX_SPLITS).contains(&splits) {
                        return Err(bad());
                    }
                    Ok((size, splits))
                };
                if let Some(rest) = t.strip_prefix("augur_tma_swap_") {
                    let (mt, rest) = rest.split_once("x128").ok_or_else(bad)?;
                    let (mt, splits) = tile_split(&format!("{mt}{rest}"), &SWAP_TILES)?;
                    GemmKernel::TmaSwap { mt, splits }
                } else {
                    let rest = t.strip_prefix("augur_tma_128x").ok_or_else(bad)?;
                    match rest.split_once("_t") {
                        Some((bn, splits)) => {
                            let (bn, splits) = tile_split(&format!("{bn}_k{splits}"), &TMA_WIDTHS)?;
                            if splits < 2 {
                                return Err(bad());
                            }
                            GemmKernel::TmaTail { bn, splits }
                        }
                        None => {
                            let (bn, splits) = tile_split(rest, &TMA_WIDTHS)?;
                            GemmKernel::Tma { bn, splits }
                        }
                    }
                }
            }
        };
        Ok(k)
    }
}

/// The TMA kernel's tile widths (its tiles are 128 x bn): gemm_tma.cu's `gemm_tma_*_{256,192,128}`.
pub const TMA_WIDTHS: [usize; 3] = [256, 192, 128];

/// The swapped TMA kernel's token tiles (its tiles are mt x 128): gemm_tma.cu's
/// `gemm_tma_swap_*_{32,64}` (`AUGUR_TMA_SWAP_INSTANCES`).
pub const SWAP_TILES: [usize; 2] = [32, 64];

/// The most ranges the TMA kernel cuts k into.
pub const MAX_SPLITS: usize = 16;

/// The TMA kernel (any) for `shape` on `sms` multiprocessors. The swapped kernel where M is
/// small: up to 64 rows (in token tiles of 32 rows up to M = 32, of 64 above), and beyond where
/// its unsplit 64-row tiles fit in one wave (ceil(M / 64) x ceil(N / 128) <= sms), with the split
/// [`tma_swap_choice`] picks; otherwise [`tma_choice`]'s tile and split, or the tail split
/// [`tma_tail_choice`] picks where its estimate is [`TAIL_MARGIN`] lower. Measured on an H200
/// (bench/results/small-m-gemm-h200-2026-11-29): at M 16-64 the swapped kernel ran at 0.85-1.14
/// of cuBLASLt where the 128-row tiles ran at 0.50-0.79; at M 128 and 160 it was faster on the
/// shapes whose tiles fit in one wave and slower on those whose tiles did not (56.5 against
/// 48.7 us at 128 x 10240 x 7168). The rule first stopped at M 128; the held-out shapes at M 160
/// moved it, and `validate.csv`'s shapes, new to both, check it. [`tma_auto_explained`] says why.
pub fn tma_auto(shape: GemmShape, sms: usize) -> GemmKernel {
    tma_auto_explained(shape, sms).kernel
}

/// [`tma_auto`]'s pick, its estimated time and why: the rule that took it and the estimates of
/// the candidates it was weighed against, one line each (`augur overlap gemm-plan`).
#[derive(Debug, Clone, PartialEq)]
pub struct TmaPick {
    pub kernel: GemmKernel,
    /// Microseconds, by the estimate of the pick's kind (None only for a shape so small that
    /// no candidate qualifies; the pick is then the unsplit kernel).
    pub estimate_us: Option<f64>,
    pub why: Vec<String>,
}

/// [`tma_auto`] with its reasons.
pub fn tma_auto_explained(shape: GemmShape, sms: usize) -> TmaPick {
    let GemmShape { m, n, .. } = shape;
    let sms = sms.max(1);
    let swap_tiles = m.div_ceil(64) * n.div_ceil(128);
    let us = |t: Option<f64>| t.map_or("-".to_string(), |t| format!("{t:.1} us"));
    if m <= 64 || swap_tiles <= sms {
        let mt = swap_token_tile(m);
        let splits = tma_swap_choice(shape, mt, sms);
        let estimate_us = tma_swap_estimate_us(shape, mt, splits, sms);
        let rule = if m <= 64 {
            format!(
                "M {m} <= 64: the weight on the tensor cores' M side, the tokens on their N side"
            )
        } else {
            format!("its {swap_tiles} tiles of 64 rows x 128 fit in one wave of {sms} SMs")
        };
        return TmaPick {
            kernel: GemmKernel::TmaSwap { mt, splits },
            estimate_us,
            why: vec![
                format!("operands swapped: {rule}"),
                format!(
                    "token tiles of {mt} rows; k in {splits} (the least of 1-{MAX_SPLITS} by \
                     tma_swap_estimate_us: {})",
                    us(estimate_us)
                ),
            ],
        };
    }
    let mut why = vec![format!(
        "128-row tiles: M {m} > 64 and the swapped kernel's {swap_tiles} tiles of 64 rows \
         would not fit in one wave of {sms} SMs"
    )];
    // Each width's best split, as tma_choice weighs them.
    let widths: Vec<String> = TMA_WIDTHS
        .into_iter()
        .map(|bn| {
            let (t, s) = tma_width_best(shape, bn, sms);
            let tiles = m.div_ceil(128) * n.div_ceil(bn);
            format!(
                "128 x {bn}: {tiles} tiles, k in {s}: {t:.1} us ({:.2} waves)",
                (tiles * s) as f64 / sms as f64
            )
        })
        .collect();
    why.push(format!(
        "whole tiles by tma_estimate_us: {}",
        widths.join("; ")
    ));
    let (whole_t, bn, splits) = tma_whole_choice(shape, sms);
    let whole = Some(whole_t);
    match tma_tail_choice(shape, sms) {
        Some((t, tb, ts)) if t < (1.0 - TAIL_MARGIN) * whole_t => {
            why.push(format!(
                "tail split taken: 128 x {tb}, the last wave's tiles cut in {ts}: {t:.1} us, \
                 more than {:.0}% below the whole tiles' {}",
                TAIL_MARGIN * 100.0,
                us(whole)
            ));
            TmaPick {
                kernel: GemmKernel::TmaTail { bn: tb, splits: ts },
                estimate_us: Some(t),
                why,
            }
        }
        tail => {
            why.push(match tail {
                Some((t, tb, ts)) => format!(
                    "tail split not taken: 128 x {tb} cut in {ts}, {t:.1} us, not {:.0}% below \
                     {}",
                    TAIL_MARGIN * 100.0,
                    us(whole)
                ),
                None => "no tail split: every width fills whole waves, or k is too short to \
                         cut"
                .to_string(),
            });
            TmaPick {
                kernel: GemmKernel::Tma { bn, splits },
                estimate_us: whole,
                why,
            }
        }
    }
}

/// How much faster than the whole tiles' estimate [`tma_tail_estimate_us`] must say a tail split
/// is for [`tma_auto`] to take it. Fitted on an H200's measurements of every width's whole-tile
/// and tail-split candidates on 48 mid-band shapes (bench/results/tail-split-h200-2026-11-29,
/// fit.csv): taking the tail split wherever its estimate was lower chose at 0.986 of the best
/// candidate (0.79 at worst); with 5% at 0.994 (0.94), without the tail split at 0.991. On 35
/// other shapes (validate.csv): cuBLASLt over the choice 0.925 without the tail split, 0.916
/// with no margin, 0.935 with 5%.
pub const TAIL_MARGIN: f64 = 0.05;

/// The tail splits [`tma_tail_choice`] weighs (those measured for [`TAIL_MARGIN`]).
pub const TAIL_SPLITS: [usize; 5] = [2, 3, 4, 6, 8];

/// The tail split with the least [`tma_tail_estimate_us`] for `shape` (its estimate, tile width
/// and split count, one of [`TAIL_SPLITS`]), None where no width leaves a part-filled wave.
pub fn tma_tail_choice(shape: GemmShape, sms: usize) -> Option<(f64, usize, usize)> {
    let mut best: Option<(f64, usize, usize)> = None;
    for bn in TMA_WIDTHS {
        for splits in TAIL_SPLITS {
            if let Some(t) = tma_tail_estimate_us(shape, bn, splits, sms) {
                if best.is_none_or(|b| t < b.0) {
                    best = Some((t, bn, splits));
                }
            }
        }
    }
    best
}

/// The tail split's estimated time (microseconds) on `sms` multiprocessors, as
/// [`tma_estimate_us`] but for whole tiles first, whole waves of them, then the tiles of the
/// last, part-filled wave each cut in `splits` ranges (their partials written and read at 3 TB/s
/// and 2 us for the sum). None where the tiles fill whole waves, or for a split count that would
/// leave a range empty or under 4 steps of 64.
pub fn tma_tail_estimate_us(shape: GemmShape, bn: usize, splits: usize, sms: usize) -> Option<f64> {
    let GemmShape { m, n, k } = shape;
    let sms = sms.max(1);
    let tiles = m.div_ceil(128) * n.div_ceil(bn);
    let whole = tail_from(tiles, sms);
    let tail = tiles - whole;
    let (kt_per, used) = split_steps(k, splits);
    if tail == 0 || splits < 2 || used != splits || kt_per < 4 {
        return None;
    }
    let kt_all = k.div_ceil(64).max(1) as f64;
    let step = tma_step_us(m, bn);
    let sm = (whole / sms) as f64 * (kt_all * step + 3.0)
        + (tail * splits).div_ceil(sms) as f64 * (kt_per as f64 * step + 3.0);
    let t = sm.hypot(tma_dram_us(shape));
    Some(t + 2.0 + 8.0 * (splits * tail * 128 * bn) as f64 / 3.0e6)
}

/// The tail split's first cut tile: after the whole waves of `tiles` tiles on `sms` SMs (all of
/// them where they fill whole waves: nothing to cut).
pub(super) fn tail_from(tiles: usize, sms: usize) -> usize {
    tiles / sms.max(1) * sms.max(1)
}

/// One k step of 64 of a 128 x bn tile (microseconds): the longer of its products and loads
/// ([`tma_estimate_us`]).
fn tma_step_us(m: usize, bn: usize) -> f64 {
    let products = (128 * bn * 64 * 2) as f64 / 7.5e6 * width_factor(bn);
    let loads = ((bn + m.min(128)) * 64 * 2) as f64 / 80e3;
    products.max(loads)
}

/// Moving A, B and C once at 3 TB/s (microseconds; [`tma_estimate_us`]).
fn tma_dram_us(GemmShape { m, n, k }: GemmShape) -> f64 {
    ((m * k + n * k + m * n) * 2) as f64 / 3.0e6
}

/// The swapped TMA kernel's token tile for M rows: 32 up to M 32, 64 above.
pub fn swap_token_tile(m: usize) -> usize {
    if m <= 32 {
        32
    } else {
        64
    }
}

/// The swapped TMA kernel's split count for `shape` with token tiles `mt` rows high: the one of
/// 1 to [`MAX_SPLITS`] with the least [`tma_swap_estimate_us`].
pub fn tma_swap_choice(shape: GemmShape, mt: usize, sms: usize) -> usize {
    let mut best = (f64::INFINITY, 1);
    for splits in 1..=MAX_SPLITS {
        if let Some(t) = tma_swap_estimate_us(shape, mt, splits, sms) {
            if t < best.0 {
                best = (t, splits);
            }
        }
    }
    best.1
}

/// The swapped TMA kernel's estimated time (microseconds), None for a split count that would
/// leave a range empty or under 4 steps of 64. The weight streams: a unit costs its k steps, each
/// moving a 128 x 64 tile of B and an mt x 64 tile of A into an SM at 100 GB/s, and each SM runs
/// its share of the units one after the other; that and moving A, B and C once at 4.2 TB/s are
/// combined as sqrt(a² + b²), and a split adds the partials written and read at 3 TB/s and 1 us
/// for the summing kernel. Fitted on an H200's measurements of every split on 20 shapes (M 16 to
/// 128; bench/results/small-m-gemm-h200-2026-11-29/first-build/sweep.csv): the split it picks ran
/// at 0.99 of the best split there (geomean), 0.95 at worst. On layer shapes it was not fitted on
/// (`validate.csv.gz` there, M 8-256), [`tma_auto`]'s pick ran at 0.98 of the best TMA candidate
/// (geomean), 0.88 at worst.
pub fn tma_swap_estimate_us(shape: GemmShape, mt: usize, splits: usize, sms: usize) -> Option<f64> {
    let GemmShape { m, n, k } = shape;
    let (kt_per, used) = split_steps(k, splits);
    if used != splits || (splits > 1 && kt_per < 4) {
        return None;
    }
    let units = m.div_ceil(mt.max(1)) * n.div_ceil(128) * splits;
    let per_sm = units.div_ceil(sms.max(1)) as f64;
    let step = ((128 + mt) * 64 * 2) as f64 / 100e3;
    let sm = per_sm * kt_per as f64 * step;
    let dram = ((m * k + n * k + m * n) * 2) as f64 / 4.2e6;
    let mut t = sm.hypot(dram);
    if splits > 1 {
        t += 1.0 + 8.0 * splits as f64 * m as f64 * n as f64 / 3.0e6;
    }
    Some(t)
}

/// The TMA kernel's tile width and split count for `shape` on `sms` multiprocessors: the
/// candidate (128 x bn tiles, bn one of [`TMA_WIDTHS`]; k cut in 1, 2, 4, 8 or 16 ranges of at
/// least 4 steps of 64) with the least estimated time ([`tma_estimate_us`]).
pub fn tma_choice(shape: GemmShape, sms: usize) -> (usize, usize) {
    let (_, bn, splits) = tma_whole_choice(shape, sms);
    (bn, splits)
}

/// [`tma_choice`]'s pick with its estimate (microseconds, width, split): the least of each
/// width's best ([`tma_width_best`]), the first width on a tie.
fn tma_whole_choice(shape: GemmShape, sms: usize) -> (f64, usize, usize) {
    TMA_WIDTHS
        .into_iter()
        .map(|bn| {
            let (t, splits) = tma_width_best(shape, bn, sms);
            (t, bn, splits)
        })
        .fold((f64::INFINITY, TMA_WIDTHS[0], 1), |best, c| {
            if c.0 < best.0 {
                c
            } else {
                best
            }
        })
}

/// Tiles `bn` wide: the split of 1, 2, 4, 8 or 16 with the least [`tma_estimate_us`] and that
/// estimate, the fewest splits on a tie (1 always qualifies).
fn tma_width_best(shape: GemmShape, bn: usize, sms: usize) -> (f64, usize) {
    [1usize, 2, 4, 8, 16]
        .into_iter()
        .filter_map(|s| tma_estimate_us(shape, bn, s, sms).map(|t| (t, s)))
        .fold(
            (f64::INFINITY, 1),
            |best, c| if c.0 < best.0 { c } else { best },
        )
}

/// k in `splits` equal ranges of whole steps of 64: the steps per range, and how many ranges
/// that makes (fewer than asked where the last would be empty).
pub(super) fn split_steps(k: usize, splits: usize) -> (usize, usize) {
    let kt_all = k.div_ceil(64).max(1);
    let kt_per = kt_all.div_ceil(splits.max(1));
    (kt_per, kt_all.div_ceil(kt_per))
}

/// The TMA kernel's estimated time (microseconds) on a Hopper GPU with `sms` multiprocessors,
/// None for a split count that would leave a range empty or under 4 steps. Each SM runs its
/// share of the work units one after the other; a unit costs its k steps plus 3 us of filling
/// and storing, and a step the longer of its products (128 x bn x 64 at 7.5 TFLOP/s per SM, a
/// 128-wide step at 0.7 of a 256-wide one's cost: the same pipeline for half the products) and
/// its loads (the B tile and the A tile's rows inside the matrix at 80 GB/s per SM). That and the
/// time to move A, B and C once at 3 TB/s are combined as sqrt(a² + b²) (neither hides the
/// other entirely), and a split adds the partials written and read at 3 TB/s and 2 us for the
/// summing kernel. The constants were fitted on an H100's measurements of every candidate on 34
/// shapes (bench/results/gemm-splitk-h100-2026-11-25/sweep) with max(a, b); on the final build's
/// sweeps of both GPUs (tma-store-sweep, ../gemm-splitk-h200-2026-11-25/sweep) max(a, b) chose at
/// 0.98 (H100) and 0.97 (H200) of the best candidate, 0.55 at worst (M = 16 on the H200, where it
/// took 128-wide tiles with fewer splits), and sqrt(a² + b²) at 0.996-1.0, 0.94 at worst.
pub fn tma_estimate_us(shape: GemmShape, bn: usize, splits: usize, sms: usize) -> Option<f64> {
    let GemmShape { m, n, k } = shape;
    let (kt_per, used) = split_steps(k, splits);
    if used != splits || (splits > 1 && kt_per < 4) {
        return None;
    }
    let units = m.div_ceil(128) * n.div_ceil(bn) * splits;
    let per_sm = units.div_ceil(sms.max(1)) as f64;
    let sm = per_sm * (kt_per as f64 * tma_step_us(m, bn) + 3.0);
    let mut t = sm.hypot(tma_dram_us(shape));
    if splits > 1 {
        t += 2.0 + 8.0 * splits as f64 * m as f64 * n as f64 / 3.0e6;
    }
    Some(t)
}

/// A step's products at tile width `bn`, relative to their cost at the 7.5 TFLOP/s per SM of a
/// 256-wide step: a narrower step keeps the same pipeline for fewer products. A 128-wide step
/// costs 0.7 of a 256-wide one (fitted with the estimate above). A 192-wide one costs 1.15 x 0.75
/// = 0.86 of it: on an H200's measurements of every width and split of 1, 2, 4 and 8 on 48 mid-band
/// shapes (one GPU's share of the 4-GPU layers at M 256-4096;
/// bench/results/tile-192-h200-2026-11-29/fit.csv), any factor from 1.0 to 1.2 chose at 0.995 of
/// the best candidate (geomean), 0.93 at worst; 1.25 and above gave up shapes where 192 wins.
fn width_factor(bn: usize) -> f64 {
    match bn {
        128 => 1.4,
        192 => 1.15,
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_round_trip() {
        let mut all: Vec<GemmKernel> = GemmKernel::all().to_vec();
        all.extend([
            GemmKernel::Augur { bm: 128 },
            GemmKernel::Augur { bm: 64 },
            GemmKernel::Wgmma { bn: 128 },
            GemmKernel::Wgmma { bn: 256 },
            GemmKernel::Tma { bn: 256, splits: 4 },
            GemmKernel::Tma { bn: 192, splits: 3 },
            GemmKernel::TmaTail { bn: 256, splits: 2 },
            GemmKernel::TmaTail {
                bn: 192,
                splits: 16,
            },
            GemmKernel::Tma {
                bn: 128,
                splits: 16,
            },
            GemmKernel::TmaSwap { mt: 32, splits: 1 },
            GemmKernel::TmaSwap { mt: 64, splits: 7 },
        ]);
        for k in all {
            assert_eq!(GemmKernel::parse(&k.name()).unwrap(), k, "{}", k.name());
        }
        for bad in [
            "augur_tma_128x64",
            "augur_tma_128x160",
            "augur_tma_128x256_t1",
            "augur_tma_128x256_t17",
            "augur_tma_128x160_t2",
            "augur_tma_128x256_t",
            "augur_tma_128x256_k0",
            "augur_tma_128x256_k17",
            "augur_tma_128x256_kx",
            "augur_tma_swap_16x128",
            "augur_tma_swap_32x256",
            "augur_tma_swap_32x128_k0",
            "augur_tma_swap_32x128_k17",
            "augur_tma_swap_x128",
            "cublas",
        ] {
            let e = GemmKernel::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn tma_auto_swaps_the_operands_only_at_small_m() {
        let sh = |m, n, k| GemmShape { m, n, k };
        let swap = |m, n, k| match tma_auto(sh(m, n, k), 132) {
            GemmKernel::TmaSwap { mt, splits } => Some((mt, splits)),
            GemmKernel::Tma { .. } => None,
            other => panic!("{other:?}"),
        };
        // Decode-sized M: token tiles of 32, then 64 rows; an N of 80 tiles is left unsplit,
        // one of 16 tiles cut so that the units fill the SMs without a second wave.
        assert_eq!(swap(32, 10240, 7168), Some((32, 1)));
        let (mt, s) = swap(16, 2048, 3584).unwrap();
        assert_eq!(mt, 32);
        assert!((4..=8).contains(&s), "{s}");
        assert_eq!(swap(64, 10240, 7168).map(|t| t.0), Some(64));
        // M 128: swapped while its 64-row tiles fit in one wave, not when they would not.
        assert!(swap(128, 7168, 5120).is_some());
        assert_eq!(swap(128, 10240, 7168), None);
        // Larger M: swapped only while the 64-row tiles fit in one wave.
        assert!(swap(160, 4096, 3584).is_some());
        assert_eq!(swap(160, 7168, 4096), None);
        assert_eq!(swap(1024, 2048, 3584), None);
        assert_eq!(
            tma_auto(sh(8192, 8192, 8192), 132),
            GemmKernel::Tma { bn: 256, splits: 1 }
        );
        // Tiles of C: 128 x bn, or mt x 128 swapped; none for the other kernels.
        let tiles = |k: GemmKernel| k.tma_tiles(33, 257);
        assert_eq!(tiles(GemmKernel::Tma { bn: 256, splits: 1 }), Some(2));
        assert_eq!(
            tiles(GemmKernel::TmaSwap { mt: 32, splits: 4 }),
            Some(2 * 3)
        );
        assert_eq!(tiles(GemmKernel::TmaSwap { mt: 64, splits: 1 }), Some(3));
        assert_eq!(tiles(GemmKernel::CublasLt), None);
        assert_eq!((swap_token_tile(32), swap_token_tile(33)), (32, 64));
        // Every choice is a valid kernel whose split leaves no range empty.
        for m in [1, 16, 33, 64, 100, 128] {
            for (n, k) in [(1536, 4096), (4096, 1024), (8, 8), (10240, 64)] {
                let kernel = tma_auto(sh(m, n, k), 132);
                assert_eq!(GemmKernel::parse(&kernel.name()).unwrap(), kernel);
                if let GemmKernel::TmaSwap { splits, .. } = kernel {
                    assert_eq!(split_steps(k, splits).1, splits, "{m} {n} {k}");
                }
            }
        }
    }

    #[test]
    fn the_largest_shape_a_gemm_takes_is_estimated_without_overflow() {
        // GemmShape::parse's bounds: m and n below 2^31, k at most 131072. 8 x splits x m x n
        // bytes of partials is past 2^64 there; in integers it overflowed (a panic in a build
        // with overflow checks, `augur overlap gemm-plan` on that shape).
        let sh = GemmShape {
            m: (1 << 31) - 8,
            n: (1 << 31) - 8,
            k: 131072,
        };
        for (bn, splits) in [(256, 16), (128, 2)] {
            let t = tma_estimate_us(sh, bn, splits, 132).unwrap();
            assert!(t.is_finite() && t > 0.0, "{t}");
        }
        for (mt, splits) in [(32, 16), (64, 1)] {
            let t = tma_swap_estimate_us(sh, mt, splits, 132).unwrap();
            assert!(t.is_finite() && t > 0.0, "{t}");
        }
        let p = tma_auto_explained(sh, 132);
        assert!(p.estimate_us.is_some_and(|t| t.is_finite()), "{p:?}");
    }

    #[test]
    fn the_tail_split_is_taken_only_where_its_estimate_is_clearly_lower() {
        let sh = |m, n, k| GemmShape { m, n, k };
        // 20 x 20 tiles of 128 x 256: 3 waves of 132 and 4 tiles; cut in 8, they take one SM
        // each for an eighth of a tile instead of a fourth wave.
        assert_eq!(
            tma_auto(sh(2560, 5120, 3584), 132),
            GemmKernel::TmaTail { bn: 256, splits: 8 }
        );
        // Where the tail split's estimate is higher, the whole tiles.
        assert!(matches!(
            tma_auto(sh(512, 14336, 8192), 132),
            GemmKernel::Tma { .. }
        ));
        // No tail where the tiles fill whole waves: 11 x 12 tiles of 128 x 256 on 132 SMs (11
        // x 16 of 128 x 192 leave 44).
        assert_eq!(
            tma_tail_estimate_us(sh(1408, 3072, 4096), 256, 2, 132),
            None
        );
        assert!(tma_tail_estimate_us(sh(1408, 3072, 4096), 192, 2, 132).is_some());
        // A split of fewer than 4 steps per range is not weighed.
        assert_eq!(tma_tail_estimate_us(sh(2560, 5120, 384), 256, 2, 132), None);
        // Every tail split chosen is one of TAIL_SPLITS and a valid kernel.
        for m in [1024, 2048, 2560, 3072, 4096, 6144] {
            for (n, k) in [(1536, 4096), (2560, 8192), (5120, 3584), (10240, 7168)] {
                if let GemmKernel::TmaTail { bn, splits } = tma_auto(sh(m, n, k), 132) {
                    assert!(TAIL_SPLITS.contains(&splits) && TMA_WIDTHS.contains(&bn));
                    let kernel = GemmKernel::TmaTail { bn, splits };
                    assert_eq!(GemmKernel::parse(&kernel.name()).unwrap(), kernel);
                }
            }
        }
    }

    #[test]
    fn the_explained_pick_is_tma_autos_and_says_which_rule_took_it() {
        let sh = |m, n, k| GemmShape { m, n, k };
        for m in [1, 16, 64, 100, 384, 1024, 2048, 2560, 8192] {
            for (n, k) in [(1536, 4096), (5120, 3584), (14336, 8192), (8, 8)] {
                let p = tma_auto_explained(sh(m, n, k), 132);
                assert_eq!(p.kernel, tma_auto(sh(m, n, k), 132), "{m} {n} {k}");
                assert!(p.estimate_us.is_some_and(|t| t > 0.0), "{m} {n} {k}");
                let why = p.why.join("\n");
                let rule = match p.kernel {
                    GemmKernel::TmaSwap { .. } => "operands swapped",
                    GemmKernel::TmaTail { .. } => "tail split taken",
                    _ => "tail split not taken",
                };
                assert!(
                    why.contains(rule) || why.contains("no tail split"),
                    "{m} {n} {k}: {why}"
                );
            }
        }
        let p = tma_auto_explained(sh(2560, 5120, 3584), 132);
        assert_eq!(p.kernel, GemmKernel::TmaTail { bn: 256, splits: 8 });
        assert!(p.why[1].contains("128 x 192: 540 tiles"), "{:?}", p.why);
    }

    #[test]
    fn tma_choice_splits_only_where_tiles_leave_sms_idle() {
        let sh = |m, n, k| GemmShape { m, n, k };
        // Plenty of tiles: 128 x 256, no split.
        assert_eq!(tma_choice(sh(8192, 8192, 8192), 132), (256, 1));
        // Decode-sized M on a narrow N: 6 tiles of 128 x 256 for 132 SMs, k cut.
        let (_, s) = tma_choice(sh(16, 1536, 4096), 132);
        assert!(s >= 8, "{s}");
        // 192-wide tiles where they fill the SMs and the others leave a wave part-empty:
        // 2048 x 1536 is 128 tiles of 128 x 192 (96 of 128 x 256, 192 of 128 x 128).
        assert_eq!(tma_choice(sh(2048, 1536, 4096), 132), (192, 1));
        assert_eq!(tma_choice(sh(3072, 1536, 4096), 132).0, 192);
        assert_eq!(tma_choice(sh(4096, 4096, 3584), 132), (256, 1));
        // Short k is never cut below 4 steps of 64.
        let (_, s) = tma_choice(sh(16, 1536, 256), 132);
        assert_eq!(s, 1);
        // Every choice is a valid kernel.
        for m in [1, 16, 128, 512, 2048, 16384] {
            for (n, k) in [(1536, 4096), (4096, 1024), (8192, 8192), (8, 8)] {
                let (bn, s) = tma_choice(sh(m, n, k), 132);
                assert!(GemmKernel::parse(&GemmKernel::Tma { bn, splits: s }.name()).is_ok());
                assert!(k.div_ceil(64).div_ceil(k.div_ceil(64).div_ceil(s)) == s);
            }
        }
    }
}
