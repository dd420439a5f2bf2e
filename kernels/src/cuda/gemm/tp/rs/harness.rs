//! The GEMM + reduce-scatter's and GEMM + all-reduce's harness: every pattern run on the
//! GPUs of this process, checked on sampled rows against the exact sum (within the roundings
//! [`sum_roundings`] allows; the all-reduce's GPUs' rows bit for bit alike) and timed.

use cudarc::driver::sys;
use std::ffi::c_void;

use super::super::{check, ptr, run_group, Gpu, TpOp, TpPattern, TpResult};
use super::{Rs, RsOwned};
use crate::cuda::comm::DeviceBuffer;
use crate::cuda::gemm::{drv, CudaGemm};
use crate::gemm::{from_half_bits, reference_rows, rounding_bound, to_half_bits};
use crate::gemm::{GemmProblem, GemmShape};
use crate::KernelError;

/// How many roundings, each at most half a unit of the 16-bit type of the sum of the partials'
/// magnitudes, the sum of `world` partials by `pattern` may be off by: each partial rounded once
/// and the f32 sum once (P + 1), or, where the partials are added into the sum one by one in the
/// 16-bit type (`fused-reduce:0`, and NCCL's collectives in `bulk`, `chunked` and `comm`, whose
/// steps each store their sum in the 16-bit type), each partial once and each addition but the
/// first (onto zero) once (2P - 1; on 2 GPUs the same P + 1). `fused-reduce:0:K` adds the
/// partials in f32 and rounds once (its f32 additions' error is far under a 16-bit unit): P + 1
/// bounds it. The all-reduce's all-gather copies the sums exactly: the same counts.
pub(in crate::cuda::gemm::tp) fn sum_roundings(pattern: TpPattern, world: usize) -> usize {
    match pattern {
        TpPattern::FusedReduce { sms: 0, splits: 1 }
        | TpPattern::FusedAll { splits: 0 | 1 }
        | TpPattern::Bulk
        | TpPattern::Chunked(_)
        | TpPattern::CommAlone => (2 * world).saturating_sub(1).max(world + 1),
        _ => world + 1,
    }
}

/// Per row of `at` and column: the sum over the `world` GPUs (each `kp` columns of A and B) of
/// |partial product|, the scale of the reduce-scatter's rounding.
pub(in crate::cuda::gemm::tp) fn magnitudes(
    p: &GemmProblem,
    at: &[usize],
    world: usize,
    kp: usize,
) -> Vec<Vec<f64>> {
    use rayon::prelude::*;
    let GemmShape { n, k, .. } = p.shape;
    at.par_iter()
        .map(|&i| {
            let a = &p.a[i * k..(i + 1) * k];
            (0..n)
                .map(|c| {
                    let b = &p.b[c * k..(c + 1) * k];
                    (0..world)
                        .map(|q| {
                            let r = q * kp..(q + 1) * kp;
                            a[r.clone()]
                                .iter()
                                .zip(&b[r])
                                .map(|(&x, &y)| x as f64 * y as f64)
                                .sum::<f64>()
                                .abs()
                        })
                        .sum()
                })
                .collect()
        })
        .collect()
}

/// A summed element `got` against its exact value, relative to the tolerance `tol` (<= 1
/// passes; NaN, or any error where the tolerance is 0, fails).
pub(in crate::cuda::gemm::tp) fn sum_error(got: f64, want: f64, tol: f64) -> f64 {
    let e = (got - want).abs();
    if e == 0.0 {
        0.0
    } else if e.is_nan() || tol == 0.0 {
        f64::INFINITY
    } else {
        e / tol
    }
}

/// Columns `cols` of a row-major matrix of `width` columns, as a new matrix.
pub(in crate::cuda::gemm::tp) fn columns(
    v: &[f32],
    width: usize,
    cols: std::ops::Range<usize>,
) -> Vec<f32> {
    v.chunks(width)
        .flat_map(|row| row[cols.clone()].iter().copied())
        .collect()
}

/// Run, check and time every pattern of the GEMM + reduce-scatter on the GPUs `ordinals` for
/// the layer `p` (A M x K, B N x K), in the same order on every GPU, each timed as `timing` says.
pub fn gemm_reduce_scatter(
    ordinals: &[usize],
    p: &GemmProblem,
    patterns: &[TpPattern],
    timing: super::super::TpTiming,
) -> Result<Vec<TpResult>, KernelError> {
    row_parallel(TpOp::GemmReduceScatter, ordinals, p, patterns, timing)
}

/// [`gemm_reduce_scatter`] for the GEMM + all-reduce (every GPU receives the whole sum; the
/// patterns as [`Rs::enqueue`] says), every GPU's sampled rows of it checked.
pub fn gemm_all_reduce(
    ordinals: &[usize],
    p: &GemmProblem,
    patterns: &[TpPattern],
    timing: super::super::TpTiming,
) -> Result<Vec<TpResult>, KernelError> {
    row_parallel(TpOp::GemmAllReduce, ordinals, p, patterns, timing)
}

fn row_parallel(
    op: TpOp,
    ordinals: &[usize],
    p: &GemmProblem,
    patterns: &[TpPattern],
    timing: super::super::TpTiming,
) -> Result<Vec<TpResult>, KernelError> {
    let world = ordinals.len();
    let (rows, kp) = check(op, p.shape, world, patterns)?;
    let all_reduce = op == TpOp::GemmAllReduce;
    let GemmShape { n, k, .. } = p.shape;
    let at = p.check_rows(256, 24);
    let want = reference_rows(p, &at);
    let magnitude = magnitudes(p, &at, world, kp);
    let bits = |v: &[f32]| -> Vec<u16> { v.iter().map(|&x| to_half_bits(p.dtype, x)).collect() };
    let setup = |rank: usize, g: &CudaGemm| -> Result<(Rs, Vec<u64>), KernelError> {
        let s = &g.stream;
        let mine = rank * kp..(rank + 1) * kp;
        let a = s
            .clone_htod(&bits(&columns(&p.a, k, mine.clone())))
            .map_err(drv("upload"))?;
        let b = s
            .clone_htod(&bits(&columns(&p.b, k, mine)))
            .map_err(drv("upload"))?;
        let out = DeviceBuffer::zeroed(&g.ctx, rows * n * 2)?;
        let all = if all_reduce {
            Some(DeviceBuffer::zeroed(&g.ctx, world * rows * n * 2)?)
        } else {
            None
        };
        let (a_ptr, b_ptr, out_ptr) = (ptr(&a, s), ptr(&b, s), out.ptr());
        let all_ptr = all.as_ref().map(DeviceBuffer::ptr);
        let owned = RsOwned {
            _a: a,
            _b: b,
            out,
            all,
        };
        // SAFETY: the buffers just allocated, of the sizes Rs::new needs, live in `owned`.
        unsafe {
            Rs::new(
                g,
                rank,
                world,
                (rows, n, kp),
                p.dtype,
                patterns,
                [a_ptr, b_ptr, out_ptr],
                all_ptr,
                Some(owned),
            )
        }
    };
    // The GEMM + all-reduce: every GPU's sampled rows of a call must be the same bits (one
    // sum copied, not P sums that may round apart): per (pattern, check) the first GPU's kept,
    // every other's compared (a difference fails the check: error ratio infinite).
    let replicas: std::sync::Mutex<std::collections::HashMap<(usize, usize), Vec<u16>>> =
        Default::default();
    // One call of `pat` on poisoned outputs, its sampled rows checked: the worst error over
    // them relative to the bound.
    let check_call =
        |gpu: &Gpu, st: &mut Rs, pat: TpPattern, key: (usize, usize)| -> Result<f64, KernelError> {
            let own = gpu.rank * rows..(gpu.rank + 1) * rows;
            let bound = sum_roundings(pat, world) as f64 * rounding_bound(p.dtype);
            st.poison(gpu)?;
            st.enqueue(gpu, pat)?;
            let s = gpu.stream();
            gpu.settle(&s, "the checked call")?;
            super::super::step(gpu.rank, || format!("{}: checked call done", pat.name()));
            let mut worst = 0.0f64;
            let mut seen = Vec::new();
            // The GEMM alone leaves its partial in A's row order: checked against the
            // partial of this GPU's columns would need another reference, so it is checked
            // only for not being NaN where the sum is checked for its value.
            for (ri, &i) in at.iter().enumerate() {
                let v = if pat == TpPattern::GemmAlone {
                    s.clone_dtoh(&st.part.slice(i * n..(i + 1) * n))
                        .map_err(drv("download"))?
                } else if all_reduce || own.contains(&i) {
                    let owned = st.owned.as_ref().expect("the harness's own buffers");
                    let mut v = vec![0u16; n];
                    let at = match &owned.all {
                        Some(all) => all.ptr() + (i * n * 2) as u64,
                        None => owned.out.ptr() + ((i - own.start) * n * 2) as u64,
                    };
                    // SAFETY: row i of the whole sum (M x n halves) or row i - own.start of this
                    // GPU's rows of it (rows x n), cuMemAlloc'd, into a host buffer of n halves;
                    // the stream has settled.
                    unsafe { sys::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, at, n * 2) }
                        .result()
                        .map_err(drv("download"))?;
                    v
                } else {
                    continue;
                };
                if all_reduce {
                    seen.extend_from_slice(&v);
                }
                for (c, h) in v.into_iter().enumerate() {
                    let g = from_half_bits(p.dtype, h) as f64;
                    let ratio = if pat == TpPattern::GemmAlone {
                        if g.is_nan() {
                            f64::INFINITY
                        } else {
                            0.0
                        }
                    } else {
                        sum_error(g, want[ri][c], bound * magnitude[ri][c])
                    };
                    worst = worst.max(ratio);
                }
            }
            if all_reduce && pat != TpPattern::GemmAlone {
                let mut kept = replicas.lock().unwrap_or_else(|e| e.into_inner());
                match kept.entry(key) {
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(seen);
                    }
                    std::collections::hash_map::Entry::Occupied(e) if *e.get() != seen => {
                        worst = f64::INFINITY;
                    }
                    _ => {}
                }
            }
            Ok(worst)
        };
    let body = |gpu: &Gpu, st: &mut Rs| {
        let mut out = Vec::new();
        for (i, &pat) in patterns.iter().enumerate() {
            // Checked before its timed calls and again after them: a pattern that keeps state
            // from call to call (`fused-reduce:0:K`'s f32 sums, zeroed by the call two before)
            // must leave it right.
            super::super::step(gpu.rank, || format!("{}: checking", pat.name()));
            let before = pat
                .computes()
                .then(|| check_call(gpu, st, pat, (i, 0)))
                .transpose()?;
            super::super::step(gpu.rank, || format!("{}: timing", pat.name()));
            let t = gpu.time(timing, || st.enqueue(gpu, pat))?;
            super::super::step(gpu.rank, || format!("{}: checking again", pat.name()));
            let after = pat
                .computes()
                .then(|| check_call(gpu, st, pat, (i, 1)))
                .transpose()?;
            out.push((before.zip(after).map(|(b, a)| b.max(a)), t));
        }
        Ok(out)
    };
    run_group(ordinals, patterns, setup, body)
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_cut_a_row_major_matrix() {
        let v: Vec<f32> = (0..12).map(|x| x as f32).collect();
        assert_eq!(super::columns(&v, 4, 1..3), vec![1., 2., 5., 6., 9., 10.]);
    }

    #[test]
    fn the_sums_added_in_the_16_bit_type_are_allowed_their_roundings() {
        use super::{sum_roundings, TpPattern};
        let add = TpPattern::FusedReduce { sms: 0, splits: 1 };
        let summed = TpPattern::FusedReduce { sms: 16, splits: 1 };
        // Split: the partials in f32, rounded once.
        let split = TpPattern::FusedReduce { sms: 0, splits: 4 };
        assert_eq!(sum_roundings(split, 4), 5);
        assert_eq!(sum_roundings(add, 2), 3);
        assert_eq!(sum_roundings(summed, 2), 3);
        assert_eq!(sum_roundings(add, 4), 7);
        assert_eq!(sum_roundings(summed, 4), 5);
        // NCCL's collectives store each step's sum in the 16-bit type: as `add`.
        assert_eq!(sum_roundings(TpPattern::Bulk, 8), 15);
        assert_eq!(sum_roundings(TpPattern::Chunked(2), 4), 7);
        assert_eq!(sum_roundings(TpPattern::Bulk, 2), 3);
        assert_eq!(sum_roundings(TpPattern::LlBulk, 4), 5);
        assert_eq!(sum_roundings(add, 1), 2);
    }
}
