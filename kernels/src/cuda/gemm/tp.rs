//! All-gather + GEMM of a column-parallel linear layer on the GPUs of one process (issue 24):
//! A is M x K, cut by rows over P GPUs (M / P rows each); B (the weight, N x K) by rows, N / P
//! each; every GPU needs all of A to make its N / P columns of C = A Bᵀ. Patterns, every one
//! on the same buffers and cuBLASLt:
//!
//! - `bulk`: NCCL's all-gather of A (in place), then one GEMM over all M rows (what a framework
//!   does with NCCL and cuBLAS);
//! - `chunked:c`: each GPU's rows cut into `c` pieces, every piece broadcast by its owner on a
//!   communication stream (NCCL, one call per piece, the same order on every GPU) while the
//!   compute stream multiplies the rows already there: its own rows first (nothing to wait for),
//!   then each piece once its broadcast is done (an event), so the GEMM of one piece overlaps
//!   the transfer of the next (async-TP's pipeline, with NCCL's broadcasts for its copies).
//!
//! Beside them, the parts alone: the GEMM over M rows with A already gathered (`gemm`), and the
//! all-gather alone (`all-gather`); max of the two is the perfect overlap's time. Every GPU runs
//! the same calls in the same order (NCCL needs it), on its own thread; each call is timed on
//! every GPU with events over a fixed batch after a barrier (an all-reduce of one value), and
//! the slowest GPU's median is the pattern's time.
//!
//! Written on a machine without GPUs and compile-checked; not yet run on GPUs (2026-11-27).

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use cudarc::nccl::{result as nccl, sys as nccl_sys};

use super::lt_plan::LtPlan;
use super::{drv, CudaGemm};
use crate::cuda::comm::NcclComm;
use crate::gemm::GemmShape;
use crate::gemm::{check_rows, from_half_bits, reference_rows, to_half_bits, GemmProblem};
use crate::KernelError;

/// A way to run the all-gather + GEMM (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpPattern {
    /// The GEMM alone over all M rows, A already gathered (not a pattern: its time).
    GemmAlone,
    /// NCCL's all-gather of A alone (not a pattern: its time).
    GatherAlone,
    Bulk,
    Chunked(usize),
}

impl TpPattern {
    pub fn name(self) -> String {
        match self {
            TpPattern::GemmAlone => "gemm".into(),
            TpPattern::GatherAlone => "all-gather".into(),
            TpPattern::Bulk => "bulk".into(),
            TpPattern::Chunked(c) => format!("chunked:{c}"),
        }
    }

    pub fn parse(s: &str) -> Result<TpPattern, KernelError> {
        match s {
            "gemm" => Ok(TpPattern::GemmAlone),
            "all-gather" => Ok(TpPattern::GatherAlone),
            "bulk" => Ok(TpPattern::Bulk),
            _ => match s.strip_prefix("chunked:").map(str::parse::<usize>) {
                Some(Ok(c)) if c >= 1 => Ok(TpPattern::Chunked(c)),
                _ => Err(KernelError::Invalid(format!(
                    "pattern `{s}`: one of gemm, all-gather, bulk, chunked:C (C >= 1 pieces per GPU)"
                ))),
            },
        }
    }

    /// Whether it computes C (and so is checked).
    fn computes(self) -> bool {
        !matches!(self, TpPattern::GatherAlone)
    }
}

/// What one pattern did on a shape.
#[derive(Debug, Clone)]
pub struct TpResult {
    pub pattern: TpPattern,
    /// Every GPU's check (None for the all-gather alone): the worst error over the rounding
    /// bound (<= 1 passes).
    pub max_err: Option<f64>,
    /// Seconds per call: the slowest GPU's median.
    pub per_call_s: f64,
}

/// The shape's split over `world` GPUs: rows of A per GPU and rows of B (columns of C) per GPU.
pub fn split(shape: GemmShape, world: usize) -> Result<(usize, usize), KernelError> {
    let GemmShape { m, n, .. } = shape;
    if world == 0 || m % world != 0 || n % world != 0 || !(n / world).is_multiple_of(8) {
        return Err(KernelError::Invalid(format!(
            "{shape} on {world} GPUs: M and N must split evenly, N / {world} a multiple of 8"
        )));
    }
    Ok((m / world, n / world))
}

/// [`split`], and every chunked pattern's pieces of a GPU's rows whole (said before any GPU
/// work).
pub fn check(
    shape: GemmShape,
    world: usize,
    patterns: &[TpPattern],
) -> Result<(usize, usize), KernelError> {
    let (rows, n_r) = split(shape, world)?;
    for pat in patterns {
        if let TpPattern::Chunked(c) = pat {
            if rows % c != 0 {
                return Err(KernelError::Invalid(format!(
                    "{shape}, chunked:{c}: the {rows} rows per GPU do not split in {c} pieces"
                )));
            }
        }
    }
    Ok((rows, n_r))
}

/// One GPU's part: its GEMM (context, compute stream), communication stream, communicator and
/// buffers.
struct Rank {
    rank: usize,
    world: usize,
    g: CudaGemm,
    comm_stream: Arc<CudaStream>,
    comm: NcclComm,
    /// All of A (M x K); this GPU's rows are `rank * rows..`.
    a: CudaSlice<u16>,
    /// This GPU's rows of B (N / P x K) and columns of C (M x N / P).
    b: CudaSlice<u16>,
    c: CudaSlice<u16>,
    tick: CudaSlice<f32>,
    rows: usize,
    n_r: usize,
    k: usize,
    full: LtPlan,
    /// (pieces, plan for rows / pieces rows, events one per (owner, piece)).
    pieces: Vec<(usize, LtPlan, Vec<cudarc::driver::CudaEvent>)>,
}

fn nccl_err(what: &'static str) -> impl Fn(nccl::NcclError) -> KernelError {
    move |e| KernelError::Cuda(format!("{what}: {e:?}"))
}

impl Rank {
    fn ptr<T>(s: &CudaSlice<T>, st: &CudaStream) -> u64 {
        s.device_ptr(st).0
    }

    /// Everything done on every stream: the compute stream waits for the communication one.
    fn join(&self) -> Result<(), KernelError> {
        self.g.stream.join(&self.comm_stream).map_err(drv("join"))
    }

    fn barrier(&mut self) -> Result<(), KernelError> {
        let s = self.g.stream.clone();
        let t = Rank::ptr(&self.tick, &s);
        // SAFETY: `tick` holds one f32 on this GPU; every rank enqueues it alike.
        unsafe {
            nccl::all_reduce(
                t as *const c_void,
                t as *mut c_void,
                1,
                nccl_sys::ncclDataType_t::ncclFloat32,
                nccl_sys::ncclRedOp_t::ncclSum,
                self.comm.0,
                s.cu_stream() as nccl_sys::cudaStream_t,
            )
        }
        .map_err(nccl_err("ncclAllReduce"))?;
        s.synchronize().map_err(drv("synchronize"))
    }

    /// Enqueue one call of `p` (ordered after everything before it on both streams).
    fn enqueue(&mut self, p: TpPattern) -> Result<(), KernelError> {
        let s = self.g.stream.clone();
        let cs = self.comm_stream.clone();
        let (a, b, c) = (
            Rank::ptr(&self.a, &s),
            Rank::ptr(&self.b, &s),
            Rank::ptr(&self.c, &s),
        );
        let row_bytes = (self.k * 2) as u64;
        let c_row_bytes = (self.n_r * 2) as u64;
        let shard_bytes = self.rows * self.k * 2;
        let gather = |st: &CudaStream| {
            // SAFETY: in place: this rank's rows of `a` are at rank x shard_bytes; `a` holds
            // world x shard_bytes bytes; every rank enqueues the same collectives in order.
            unsafe {
                nccl::all_gather(
                    (a + self.rank as u64 * shard_bytes as u64) as *const c_void,
                    a as *mut c_void,
                    shard_bytes,
                    nccl_sys::ncclDataType_t::ncclUint8,
                    self.comm.0,
                    st.cu_stream() as nccl_sys::cudaStream_t,
                )
            }
            .map_err(nccl_err("ncclAllGather"))
            .map(|_| ())
        };
        match p {
            // SAFETY (the GEMMs below): `a` is M x k, `b` n_r x k, `c` M x n_r halves on this
            // GPU; a plan for m rows runs on rows [r0, r0 + m) of a and c.
            TpPattern::GemmAlone => unsafe { self.full.run_on(a, b, c, &s) },
            TpPattern::GatherAlone => gather(&s),
            TpPattern::Bulk => {
                gather(&s)?;
                unsafe { self.full.run_on(a, b, c, &s) }
            }
            TpPattern::Chunked(pieces) => {
                let i = self
                    .pieces
                    .iter()
                    .position(|p| p.0 == pieces)
                    .ok_or_else(|| KernelError::Invalid(format!("no plan for {pieces} pieces")))?;
                let (_, plan, events) = &self.pieces[i];
                let piece = self.rows / pieces;
                cs.join(&s).map_err(drv("join"))?;
                // The broadcasts, every owner's pieces in the same order on every GPU.
                for j in 0..pieces {
                    for q in 0..self.world {
                        let r0 = (q * self.rows + j * piece) as u64;
                        let at = a + r0 * row_bytes;
                        // SAFETY: rows [r0, r0 + piece) of `a`, on this GPU; q sends, all
                        // receive, in the same order everywhere.
                        unsafe {
                            nccl::broadcast(
                                at as *const c_void,
                                at as *mut c_void,
                                piece * self.k * 2,
                                nccl_sys::ncclDataType_t::ncclUint8,
                                q as i32,
                                self.comm.0,
                                cs.cu_stream() as nccl_sys::cudaStream_t,
                            )
                        }
                        .map_err(nccl_err("ncclBroadcast"))?;
                        events[q * pieces + j].record(&cs).map_err(drv("record"))?;
                    }
                }
                // The own rows at once, then each piece once it is there.
                let own = (self.rank * self.rows) as u64;
                for j in 0..pieces {
                    let r0 = own + (j * piece) as u64;
                    unsafe { plan.run_on(a + r0 * row_bytes, b, c + r0 * c_row_bytes, &s) }?;
                }
                for j in 0..pieces {
                    for q in (0..self.world).filter(|&q| q != self.rank) {
                        s.wait(&events[q * pieces + j]).map_err(drv("wait"))?;
                        let r0 = (q * self.rows + j * piece) as u64;
                        unsafe { plan.run_on(a + r0 * row_bytes, b, c + r0 * c_row_bytes, &s) }?;
                    }
                }
                self.join()
            }
        }
    }

    /// Rows of A that are not this GPU's, and all of C, back to NaN (0xFFFF).
    fn poison(&mut self) -> Result<(), KernelError> {
        let s = self.g.stream.clone();
        let shard = self.rows * self.k;
        let c_bytes = self.c.len() * 2;
        let (a, _ga) = self.a.device_ptr_mut(&s);
        let (c, _gc) = self.c.device_ptr_mut(&s);
        // SAFETY: the ranges lie in `a` (world x shard halves) and `c`, on this stream's GPU.
        unsafe {
            use cudarc::driver::result::memset_d8_async;
            let st = s.cu_stream();
            if self.rank > 0 {
                memset_d8_async(a, 0xFF, self.rank * shard * 2, st).map_err(drv("poison"))?;
            }
            let after = (self.rank + 1) * shard;
            let total = self.world * shard;
            if after < total {
                memset_d8_async(a + (after * 2) as u64, 0xFF, (total - after) * 2, st)
                    .map_err(drv("poison"))?;
            }
            memset_d8_async(c, 0xFF, c_bytes, st).map_err(drv("poison"))?;
        }
        Ok(())
    }

    /// Rows `rows` of this GPU's C, as f32.
    fn c_rows(
        &self,
        rows: &[usize],
        dtype: augur_features::attention::Dtype,
    ) -> Result<Vec<f32>, KernelError> {
        let s = &self.g.stream;
        let mut out = Vec::with_capacity(rows.len() * self.n_r);
        for &r in rows {
            let v = s
                .clone_dtoh(&self.c.slice(r * self.n_r..(r + 1) * self.n_r))
                .map_err(drv("download"))?;
            out.extend(v.into_iter().map(|h| from_half_bits(dtype, h)));
        }
        Ok(out)
    }

    /// Seconds per call of `p`: `samples` medians of `batch` back-to-back calls between events,
    /// each after a barrier.
    fn time(
        &mut self,
        p: TpPattern,
        warmup: usize,
        batch: usize,
        samples: usize,
    ) -> Result<f64, KernelError> {
        for _ in 0..warmup {
            self.enqueue(p)?;
        }
        let s = self.g.stream.clone();
        let ev = || {
            s.context()
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(drv("cuEventCreate"))
        };
        let (e0, e1) = (ev()?, ev()?);
        let mut times = Vec::with_capacity(samples);
        for _ in 0..samples.max(1) {
            self.barrier()?;
            e0.record(&s).map_err(drv("record"))?;
            for _ in 0..batch.max(1) {
                self.enqueue(p)?;
            }
            e1.record(&s).map_err(drv("record"))?;
            e1.synchronize().map_err(drv("synchronize"))?;
            let ms = e0.elapsed_ms(&e1).map_err(drv("cuEventElapsedTime"))?;
            times.push(ms as f64 / 1e3 / batch.max(1) as f64);
        }
        Ok(crate::median(times))
    }
}

/// One GPU's (check, seconds per call) per pattern.
type GpuResults = Vec<(Option<f64>, f64)>;

/// Run and check every pattern in `patterns` on the GPUs `ordinals` for `p` (M x K A, N x K B
/// of the whole layer), in the same order on every GPU; the times as the slowest GPU's median
/// per call. A pattern whose GPUs disagree or fail makes the whole call an error.
pub fn all_gather_gemm(
    ordinals: &[usize],
    p: &GemmProblem,
    patterns: &[TpPattern],
    warmup: usize,
    batch: usize,
    samples: usize,
) -> Result<Vec<TpResult>, KernelError> {
    let world = ordinals.len();
    let (rows, n_r) = check(p.shape, world, patterns)?;
    // SAFETY: a query of the loader before any NCCL call.
    if !unsafe { nccl_sys::is_culib_present() } {
        return Err(KernelError::NotAvailable {
            backend: "nccl".into(),
            why: "libnccl could not be loaded".into(),
        });
    }
    let id = nccl::get_uniqueid().map_err(nccl_err("ncclGetUniqueId"))?;
    let check_at = p.check_rows(256, 24);
    let want = reference_rows(p, &check_at);
    let bits = |v: &[f32]| -> Vec<u16> { v.iter().map(|&x| to_half_bits(p.dtype, x)).collect() };
    let k = p.shape.k;
    let pieces: Vec<usize> = patterns
        .iter()
        .filter_map(|q| match q {
            TpPattern::Chunked(c) => Some(*c),
            _ => None,
        })
        .collect();
    let failed = std::sync::atomic::AtomicBool::new(false);
    let barrier = std::sync::Barrier::new(world);
    let per_gpu: Vec<Result<GpuResults, KernelError>> = std::thread::scope(|sc| {
        let handles: Vec<_> = ordinals
            .iter()
            .enumerate()
            .map(|(rank, &ordinal)| {
                let (bits, want, check_at, pieces) = (&bits, &want, &check_at, &pieces);
                let (failed, barrier) = (&failed, &barrier);
                sc.spawn(move || -> Result<GpuResults, KernelError> {
                    // Everything but the communicator first: a GPU that fails here must not
                    // leave the others waiting in ncclCommInitRank.
                    let setup = (|| {
                        let g = CudaGemm::new(ordinal)?;
                        g.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
                        let s = g.stream.clone();
                        let comm_stream = g.ctx.new_stream().map_err(drv("cuStreamCreate"))?;
                        let mut a_host = vec![0xFFFFu16; world * rows * k];
                        a_host[rank * rows * k..(rank + 1) * rows * k]
                            .copy_from_slice(&bits(&p.a[rank * rows * k..(rank + 1) * rows * k]));
                        let a = s.clone_htod(&a_host).map_err(drv("upload"))?;
                        let b = s
                            .clone_htod(&bits(&p.b[rank * n_r * k..(rank + 1) * n_r * k]))
                            .map_err(drv("upload"))?;
                        let cbuf = s
                            .alloc_zeros::<u16>(world * rows * n_r)
                            .map_err(drv("alloc"))?;
                        let tick = s.alloc_zeros::<f32>(1).map_err(drv("alloc"))?;
                        let m = world * rows;
                        let full = LtPlan::for_shape(&s, GemmShape { m, n: n_r, k }, p.dtype)?;
                        let mut plans = Vec::new();
                        for &c in pieces.iter() {
                            let shape = GemmShape {
                                m: rows / c,
                                n: n_r,
                                k,
                            };
                            let plan = LtPlan::for_shape(&s, shape, p.dtype)?;
                            let flags = cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING;
                            let events = (0..world * c)
                                .map(|_| {
                                    s.context()
                                        .new_event(Some(flags))
                                        .map_err(drv("cuEventCreate"))
                                })
                                .collect::<Result<Vec<_>, _>>()?;
                            plans.push((c, plan, events));
                        }
                        s.synchronize().map_err(drv("synchronize"))?;
                        Ok::<_, KernelError>((g, comm_stream, a, b, cbuf, tick, full, plans))
                    })();
                    if setup.is_err() {
                        failed.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                    barrier.wait();
                    let (g, comm_stream, a, b, cbuf, tick, full, plans) = setup?;
                    if failed.load(std::sync::atomic::Ordering::SeqCst) {
                        return Err(KernelError::Invalid("another GPU failed to set up".into()));
                    }
                    g.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
                    let mut c = std::ptr::null_mut();
                    // SAFETY: every GPU's thread calls this with the same id and world size.
                    unsafe { nccl::comm_init_rank(&mut c, world as i32, id, rank as i32) }
                        .map_err(nccl_err("ncclCommInitRank"))?;
                    let comm = NcclComm(c);
                    let mut r = Rank {
                        rank,
                        world,
                        g,
                        comm_stream,
                        comm,
                        a,
                        b,
                        c: cbuf,
                        tick,
                        rows,
                        n_r,
                        k,
                        full,
                        pieces: plans,
                    };
                    // This GPU's columns of the reference rows.
                    let mine: Vec<Vec<f64>> = want
                        .iter()
                        .map(|row| row[rank * n_r..(rank + 1) * n_r].to_vec())
                        .collect();
                    let view = GemmProblem {
                        shape: GemmShape {
                            m: world * rows,
                            n: n_r,
                            k,
                        },
                        dtype: p.dtype,
                        a: Vec::new(),
                        b: Vec::new(),
                    };
                    let mut out = Vec::new();
                    for &pat in patterns {
                        let err = if pat.computes() {
                            // The GEMM alone reads a gathered A: gather it first.
                            r.poison()?;
                            if pat == TpPattern::GemmAlone {
                                r.enqueue(TpPattern::GatherAlone)?;
                            }
                            r.enqueue(pat)?;
                            r.g.stream.synchronize().map_err(drv("synchronize"))?;
                            let got = r.c_rows(check_at, p.dtype)?;
                            Some(check_rows(&view, check_at, &mine, &got).0)
                        } else {
                            None
                        };
                        let t = r.time(pat, warmup, batch, samples)?;
                        out.push((err, t));
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(KernelError::Cuda("a GPU's thread panicked".into())))
            })
            .collect()
    });
    let per_gpu = per_gpu.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(patterns
        .iter()
        .enumerate()
        .map(|(i, &pattern)| TpResult {
            pattern,
            max_err: per_gpu
                .iter()
                .map(|g| g[i].0)
                .try_fold(0.0f64, |w, e| e.map(|e| w.max(e))),
            per_call_s: per_gpu.iter().map(|g| g[i].1).fold(0.0, f64::max),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_shapes_split() {
        for s in ["gemm", "all-gather", "bulk", "chunked:4"] {
            assert_eq!(TpPattern::parse(s).unwrap().name(), s);
        }
        for bad in ["chunked:0", "chunked:x", "fused"] {
            let e = TpPattern::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("chunked:C"), "{e}");
        }
        assert_eq!(
            split(
                GemmShape {
                    m: 4096,
                    n: 6144,
                    k: 4096
                },
                4
            )
            .unwrap(),
            (1024, 1536)
        );
        let e = split(
            GemmShape {
                m: 4096,
                n: 6144 + 8,
                k: 4096,
            },
            4,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("split evenly"), "{e}");
        assert!(split(
            GemmShape {
                m: 10,
                n: 64,
                k: 64
            },
            4
        )
        .is_err());
    }
}
