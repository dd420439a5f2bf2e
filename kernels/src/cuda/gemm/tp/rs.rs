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
//!
//! The check: the sum of P rounded partials is not exact, so an element passes within
//! (P + 1) half-units of the 16-bit type of the sum of the partials' magnitudes (each partial
//! rounded once, each of the reduction's P - 1 additions once); NaN (a row that never arrived,
//! poisoned) fails.

use cudarc::driver::{CudaSlice, DevicePtrMut};
use cudarc::nccl::{result as nccl, sys as nccl_sys};
use std::ffi::c_void;

use super::{check, nccl_err, nccl_half, piece_plans, pieces_of, plan_for, ptr, run_group};
use super::{Gpu, PiecePlans, TpOp, TpPattern, TpResult};
use crate::cuda::gemm::lt_plan::LtPlan;
use crate::cuda::gemm::{drv, CudaGemm};
use crate::gemm::{from_half_bits, reference_rows, rounding_bound, to_half_bits};
use crate::gemm::{GemmProblem, GemmShape};
use crate::KernelError;

/// One GPU's buffers and plans.
struct Rs {
    /// Its columns of A (M x kp) and of B (N x kp).
    a: CudaSlice<u16>,
    b: CudaSlice<u16>,
    /// Its partial product (M x N), in A's row order (bulk) or the staging order (chunked).
    part: CudaSlice<u16>,
    /// Its rows of the sum (rows x N).
    out: CudaSlice<u16>,
    rows: usize,
    n: usize,
    kp: usize,
    full: LtPlan,
    /// Per count of pieces: the plan for rows / pieces rows, an event per piece.
    pieces: PiecePlans,
}

impl Rs {
    /// Reduce-scatter `count` values per GPU from `src` (world x count) into `dst`.
    fn reduce_scatter(
        &self,
        gpu: &Gpu,
        src: u64,
        dst: u64,
        count: usize,
        st: &cudarc::driver::CudaStream,
        dtype: augur_features::attention::Dtype,
    ) -> Result<(), KernelError> {
        // SAFETY: `src` holds world x count values and `dst` count, on this GPU; every GPU
        // enqueues the same collectives in the same order.
        unsafe {
            nccl::reduce_scatter(
                src as *const c_void,
                dst as *mut c_void,
                count,
                nccl_half(dtype),
                nccl_sys::ncclRedOp_t::ncclSum,
                gpu.comm.0,
                st.cu_stream() as nccl_sys::cudaStream_t,
            )
        }
        .map_err(nccl_err("ncclReduceScatter"))
        .map(|_| ())
    }

    fn enqueue(
        &self,
        gpu: &Gpu,
        p: TpPattern,
        dtype: augur_features::attention::Dtype,
    ) -> Result<(), KernelError> {
        let s = gpu.stream();
        let cs = &gpu.comm_stream;
        let (a, b) = (ptr(&self.a, &s), ptr(&self.b, &s));
        let (part, out) = (ptr(&self.part, &s), ptr(&self.out, &s));
        let (a_row, c_row) = ((self.kp * 2) as u64, (self.n * 2) as u64);
        let count = self.rows * self.n;
        // SAFETY (every GEMM below): `a` is M x kp, `b` n x kp, `part` M x n halves on this
        // GPU; a plan for m rows reads rows [r0, r0 + m) of `a` and writes m rows of `part`.
        match p {
            TpPattern::GemmAlone => unsafe { self.full.run_on(a, b, part, &s) },
            TpPattern::CommAlone => self.reduce_scatter(gpu, part, out, count, &s, dtype),
            TpPattern::Bulk => {
                unsafe { self.full.run_on(a, b, part, &s) }?;
                self.reduce_scatter(gpu, part, out, count, &s, dtype)
            }
            TpPattern::Chunked(pieces) => {
                let (plan, events) = plan_for(&self.pieces, pieces, 0)?;
                let piece = self.rows / pieces;
                for (j, ev) in events.iter().enumerate() {
                    for q in 0..gpu.world {
                        let src = (q * self.rows + j * piece) as u64;
                        let dst = ((j * gpu.world + q) * piece) as u64;
                        unsafe { plan.run_on(a + src * a_row, b, part + dst * c_row, &s) }?;
                    }
                    ev.record(&s).map_err(drv("record"))?;
                    cs.wait(ev).map_err(drv("wait"))?;
                    let staged = part + ((j * gpu.world * piece) as u64) * c_row;
                    let mine = out + ((j * piece) as u64) * c_row;
                    self.reduce_scatter(gpu, staged, mine, piece * self.n, cs, dtype)?;
                }
                gpu.join()
            }
            TpPattern::Pull(_)
            | TpPattern::PullBulk
            | TpPattern::Push(_)
            | TpPattern::Pc { .. }
            | TpPattern::OwnBulk => Err(KernelError::Invalid(format!(
                "{}: the all-gather + GEMM's pattern (refused by tp::check)",
                p.name()
            ))),
        }
    }

    /// The partial product and this GPU's rows of the sum to NaN (0xFFFF).
    fn poison(&mut self, gpu: &Gpu) -> Result<(), KernelError> {
        let s = gpu.stream();
        let (pb, ob) = (self.part.len() * 2, self.out.len() * 2);
        let (part, _gp) = self.part.device_ptr_mut(&s);
        let (out, _go) = self.out.device_ptr_mut(&s);
        // SAFETY: both buffers on this stream's GPU, of those sizes in bytes.
        unsafe {
            use cudarc::driver::result::memset_d8_async;
            memset_d8_async(part, 0xFF, pb, s.cu_stream()).map_err(drv("poison"))?;
            memset_d8_async(out, 0xFF, ob, s.cu_stream()).map_err(drv("poison"))?;
        }
        Ok(())
    }
}

/// Columns `cols` of a row-major matrix of `width` columns, as a new matrix.
fn columns(v: &[f32], width: usize, cols: std::ops::Range<usize>) -> Vec<f32> {
    v.chunks(width)
        .flat_map(|row| row[cols.clone()].iter().copied())
        .collect()
}

/// Run, check and time every pattern of the GEMM + reduce-scatter on the GPUs `ordinals` for
/// the layer `p` (A M x K, B N x K), in the same order on every GPU.
pub fn gemm_reduce_scatter(
    ordinals: &[usize],
    p: &GemmProblem,
    patterns: &[TpPattern],
    warmup: usize,
    batch: usize,
    samples: usize,
) -> Result<Vec<TpResult>, KernelError> {
    let world = ordinals.len();
    let (rows, kp) = check(TpOp::GemmReduceScatter, p.shape, world, patterns)?;
    let GemmShape { m, n, k } = p.shape;
    let at = p.check_rows(256, 24);
    let want = reference_rows(p, &at);
    // Per checked row and column: the sum over the GPUs of |partial product|.
    let magnitude: Vec<Vec<f64>> = {
        use rayon::prelude::*;
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
    };
    let bits = |v: &[f32]| -> Vec<u16> { v.iter().map(|&x| to_half_bits(p.dtype, x)).collect() };
    let pieces = pieces_of(patterns);
    let setup = |rank: usize, g: &CudaGemm| -> Result<(Rs, Vec<u64>), KernelError> {
        let s = &g.stream;
        let mine = rank * kp..(rank + 1) * kp;
        let a = s
            .clone_htod(&bits(&columns(&p.a, k, mine.clone())))
            .map_err(drv("upload"))?;
        let b = s
            .clone_htod(&bits(&columns(&p.b, k, mine)))
            .map_err(drv("upload"))?;
        let part = s.alloc_zeros::<u16>(m * n).map_err(drv("alloc"))?;
        let out = s.alloc_zeros::<u16>(rows * n).map_err(drv("alloc"))?;
        let full = LtPlan::for_shape(s, GemmShape { m, n, k: kp }, p.dtype, 0)?;
        let plans = piece_plans(
            g,
            &pieces,
            p.dtype,
            |c| GemmShape {
                m: rows / c,
                n,
                k: kp,
            },
            |c| c,
        )?;
        Ok((
            Rs {
                a,
                b,
                part,
                out,
                rows,
                n,
                kp,
                full,
                pieces: plans,
            },
            Vec::new(),
        ))
    };
    let bound = (world + 1) as f64 * rounding_bound(p.dtype);
    let body = |gpu: &Gpu, st: &mut Rs| {
        let own = gpu.rank * rows..(gpu.rank + 1) * rows;
        let mut out = Vec::new();
        for &pat in patterns {
            let err = if pat.computes() {
                st.poison(gpu)?;
                st.enqueue(gpu, pat, p.dtype)?;
                let s = gpu.stream();
                gpu.settle(&s, "the checked call")?;
                let mut worst = 0.0f64;
                // The GEMM alone leaves its partial in A's row order: checked against the
                // partial of this GPU's columns would need another reference, so it is checked
                // only for not being NaN where the sum is checked for its value.
                for (ri, &i) in at.iter().enumerate() {
                    let (src, whole) = if pat == TpPattern::GemmAlone {
                        (&st.part, i)
                    } else if own.contains(&i) {
                        (&st.out, i - own.start)
                    } else {
                        continue;
                    };
                    let v = s
                        .clone_dtoh(&src.slice(whole * n..(whole + 1) * n))
                        .map_err(drv("download"))?;
                    for (c, h) in v.into_iter().enumerate() {
                        let g = from_half_bits(p.dtype, h) as f64;
                        let ratio = if pat == TpPattern::GemmAlone {
                            if g.is_nan() {
                                f64::INFINITY
                            } else {
                                0.0
                            }
                        } else {
                            let e = (g - want[ri][c]).abs();
                            let tol = bound * magnitude[ri][c];
                            if e == 0.0 {
                                0.0
                            } else if e.is_nan() || tol == 0.0 {
                                f64::INFINITY
                            } else {
                                e / tol
                            }
                        };
                        worst = worst.max(ratio);
                    }
                }
                Some(worst)
            } else {
                None
            };
            let t = gpu.time(warmup, batch, samples, || st.enqueue(gpu, pat, p.dtype))?;
            out.push((err, t));
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
}
