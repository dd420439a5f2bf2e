//! All-gather + GEMM (column-parallel; see the module above). GPU r holds rows
//! `[r * M / P, (r + 1) * M / P)` of A in place in a buffer of all of A, and rows
//! `[r * N / P, ...)` of B; it makes C's columns of those rows of B.
//!
//! - `bulk`: NCCL's in-place all-gather of A, then one cuBLASLt GEMM over all M rows.
//! - `chunked:C`: every GPU's rows cut in C pieces, each broadcast by its owner (NCCL, piece by
//!   piece, owners in order) on the communication stream, an event after each; the compute
//!   stream multiplies its own rows first, then each piece once its event has fired.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut};
use cudarc::nccl::{result as nccl, sys as nccl_sys};
use std::ffi::c_void;

use super::{check, nccl_err, piece_plans, pieces_of, plan_for, ptr, run_group, Gpu, PiecePlans};
use super::{TpOp, TpPattern, TpResult};
use crate::cuda::gemm::lt_plan::LtPlan;
use crate::cuda::gemm::{drv, CudaGemm};
use crate::gemm::{check_rows, from_half_bits, reference_rows, to_half_bits};
use crate::gemm::{GemmProblem, GemmShape};
use crate::KernelError;

/// One GPU's buffers and plans.
struct Ag {
    /// All of A (M x k); this GPU's rows at `rank * rows`.
    a: CudaSlice<u16>,
    /// This GPU's rows of B (n_r x k) and columns of C (M x n_r).
    b: CudaSlice<u16>,
    c: CudaSlice<u16>,
    rows: usize,
    n_r: usize,
    k: usize,
    full: LtPlan,
    /// Per count of pieces: the plan for rows / pieces rows, an event per (owner, piece).
    pieces: PiecePlans,
}

impl Ag {
    fn gather(&self, gpu: &Gpu, st: &CudaStream) -> Result<(), KernelError> {
        let a = ptr(&self.a, st);
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

    /// Enqueue one call of `p`, ordered after everything before it on both streams.
    fn enqueue(&self, gpu: &Gpu, p: TpPattern) -> Result<(), KernelError> {
        let s = gpu.stream();
        let cs = &gpu.comm_stream;
        let (a, b, c) = (ptr(&self.a, &s), ptr(&self.b, &s), ptr(&self.c, &s));
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
            TpPattern::Chunked(pieces) => {
                let (plan, events) = plan_for(&self.pieces, pieces)?;
                let piece = self.rows / pieces;
                // The broadcasts overwrite rows the last call's GEMMs read.
                cs.join(&s).map_err(drv("join"))?;
                for j in 0..pieces {
                    for q in 0..gpu.world {
                        let at = a + ((q * self.rows + j * piece) as u64) * row;
                        // SAFETY: `piece` rows of `a` at `at`, on this GPU; q sends, every GPU
                        // receives, in this order everywhere.
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
                let gemm = |r0: usize| unsafe {
                    plan.run_on(a + r0 as u64 * row, b, c + r0 as u64 * c_row, &s)
                };
                for j in 0..pieces {
                    gemm(gpu.rank * self.rows + j * piece)?;
                }
                for j in 0..pieces {
                    for q in (0..gpu.world).filter(|&q| q != gpu.rank) {
                        s.wait(&events[q * pieces + j]).map_err(drv("wait"))?;
                        gemm(q * self.rows + j * piece)?;
                    }
                }
                gpu.join()
            }
        }
    }

    /// The rows of A that are not this GPU's, and all of C, to NaN (0xFFFF).
    fn poison(&mut self, gpu: &Gpu) -> Result<(), KernelError> {
        let s = gpu.stream();
        let shard = self.rows * self.k * 2;
        let total = gpu.world * shard;
        let c_bytes = self.c.len() * 2;
        let (a, _ga) = self.a.device_ptr_mut(&s);
        let (c, _gc) = self.c.device_ptr_mut(&s);
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

/// Run, check and time every pattern of the all-gather + GEMM on the GPUs `ordinals` for the
/// layer `p` (A M x K, B N x K), in the same order on every GPU.
pub fn all_gather_gemm(
    ordinals: &[usize],
    p: &GemmProblem,
    patterns: &[TpPattern],
    warmup: usize,
    batch: usize,
    samples: usize,
) -> Result<Vec<TpResult>, KernelError> {
    let world = ordinals.len();
    let (rows, n_r) = check(TpOp::AllGatherGemm, p.shape, world, patterns)?;
    let k = p.shape.k;
    let m = world * rows;
    let at = p.check_rows(256, 24);
    let want = reference_rows(p, &at);
    let bits = |v: &[f32]| -> Vec<u16> { v.iter().map(|&x| to_half_bits(p.dtype, x)).collect() };
    let pieces = pieces_of(patterns);
    let setup = |rank: usize, g: &CudaGemm| -> Result<Ag, KernelError> {
        let s = &g.stream;
        let mut a_host = vec![0xFFFFu16; m * k];
        let mine = rank * rows * k..(rank + 1) * rows * k;
        a_host[mine.clone()].copy_from_slice(&bits(&p.a[mine]));
        let a = s.clone_htod(&a_host).map_err(drv("upload"))?;
        let b = s
            .clone_htod(&bits(&p.b[rank * n_r * k..(rank + 1) * n_r * k]))
            .map_err(drv("upload"))?;
        let c = s.alloc_zeros::<u16>(m * n_r).map_err(drv("alloc"))?;
        let full = LtPlan::for_shape(s, GemmShape { m, n: n_r, k }, p.dtype)?;
        let plans = piece_plans(
            g,
            &pieces,
            p.dtype,
            |c| GemmShape {
                m: rows / c,
                n: n_r,
                k,
            },
            |c| world * c,
        )?;
        Ok(Ag {
            a,
            b,
            c,
            rows,
            n_r,
            k,
            full,
            pieces: plans,
        })
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
            let err = if pat.computes() {
                st.poison(gpu)?;
                if pat == TpPattern::GemmAlone {
                    // The GEMM alone reads a gathered A.
                    st.enqueue(gpu, TpPattern::CommAlone)?;
                }
                st.enqueue(gpu, pat)?;
                let s = gpu.stream();
                let mut got = Vec::with_capacity(at.len() * n_r);
                for &r in &at {
                    let v = s
                        .clone_dtoh(&st.c.slice(r * n_r..(r + 1) * n_r))
                        .map_err(drv("download"))?;
                    got.extend(v.into_iter().map(|h| from_half_bits(p.dtype, h)));
                }
                Some(check_rows(&view, &at, &mine, &got).0)
            } else {
                None
            };
            let t = gpu.time(warmup, batch, samples, || st.enqueue(gpu, pat))?;
            out.push((err, t));
        }
        Ok(out)
    };
    run_group(ordinals, patterns, setup, body)
}
