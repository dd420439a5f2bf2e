//! The GEMM + collective of a tensor-parallel layer on the GPUs of one process (issue 24), in
//! two operations, each with its patterns on the same buffers and cuBLASLt:
//!
//! - **all-gather + GEMM** (column-parallel, [`ag`]): A (M x K) cut by rows over P GPUs, B (the
//!   weight, N x K) by rows too; every GPU needs all of A to make its N / P columns of C = A Bᵀ.
//! - **GEMM + reduce-scatter** (row-parallel, [`rs`]): A and B cut by columns (K / P each); every
//!   GPU makes a partial M x N product, and the sum's rows are scattered, M / P to each GPU.
//!
//! Patterns: `bulk` (the GEMM and NCCL's collective one after the other on one stream: what a
//! framework does with NCCL and cuBLAS), and `chunked:C` (the work cut in pieces; the collective
//! of one piece runs on a communication stream while the GEMM of another runs on the compute
//! stream, ordered by events: async-TP's pipeline, with NCCL for the transfers); the copy
//! engines' pulls and pushes and the producer/consumer patterns (augur's copy or reduce kernel
//! on S SMs of comm.cu beside cuBLASLt GEMMs told to target the other SMs) are in [`ag`] and
//! [`rs`], and so are the fused ones (one launch per GPU of augur's TMA GEMM in gemm_fused.cu
//! whose other blocks move the rows or sum the tiles: `fused-push:C:S`, `fused-pull:C:S`,
//! `fused-reduce:S`; Hopper only, run on 2 H200s, `bench/results/fused-h200-2026-11-28/`; and
//! `fused-reduce:0`, the tiles added into their owners' rows by tensor-memory reductions, no
//! summing blocks: run on 1 and 2 H200s, `bench/results/fused-add-h200-2026-11-28/`; and
//! `fused-reduce:0:K`, k split in K ranges whose partials are added in f32 into the owners' f32
//! sums, rounded once after the launch: run on 1 and 2 H200s,
//! `bench/results/held-start-h200-2026-11-28/split-k/`). `ll-bulk` (the `ll` module) is bulk
//! with augur's LL collective in place of NCCL's, for small M (run on 2 and 4 H200s, bf16 and
//! f16, `bench/results/ll-bulk-h200-2026-11-28/`).
//! Beside them the parts alone, `gemm` and `comm`: max of the two is the perfect overlap's time.
//!
//! Every GPU runs the same calls in the same order (NCCL needs it), on its own thread; a GPU
//! that fails to set up stops every GPU before the communicators open. Each pattern is checked
//! exactly on sampled rows, the inputs the GPU has not received poisoned (NaN) before the run;
//! then timed on every GPU with events over a fixed batch of calls after a barrier (an
//! all-reduce of one value), and the slowest GPU's median is its time. By default each sample
//! starts held ([`TpStart::Held`]): the GPUs wait on a host word while the host enqueues, and
//! start together, so the host's launch cost is not in the time (`--start barrier`: it is;
//! `bench/results/held-start-h200-2026-11-28/`).
//!
//! Run on H200s (2026-11-27, `bench/results/tp-h200-2026-11-27/`): every pattern checked on 2
//! and 4 GPUs, bf16 and f16. Back to back (calls queued without a barrier between them) on 4
//! GPUs, the pull patterns hung: every GPU's warm-up unfinished after 60 s (2 GPUs ran back to
//! back, and so did the push patterns on 4). Not diagnosed; measured from a barrier per call
//! (`batch` 1) there, which [`Gpu::time`] does for its warm-up too. The producer/consumer
//! patterns ran (and passed their checks) on 2 and 4 H200s the same day
//! (`bench/results/tp-grid-h200-2026-11-27/`), from a barrier per call.

pub mod ag;
mod fence;
mod hold;
mod ll;
mod pattern;
mod trace;
use trace::{busy_after_wait, read_words};
use trace::{step, tracing};
pub mod plan;
pub mod rs;

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use cudarc::nccl::{result as nccl, sys as nccl_sys};

use super::{drv, CudaGemm};
use crate::cuda::comm::NcclComm;
use crate::gemm::GemmShape;
use crate::KernelError;

pub use ag::all_gather_gemm;
pub use hold::{TpStart, TpTiming};
pub use pattern::TpPattern;
pub use rs::{gemm_all_reduce, gemm_reduce_scatter};

/// The two operations (the features' [`OverlapOp`](augur_features::overlap::OverlapOp): the
/// same enum, one name).
pub use augur_features::overlap::OverlapOp as TpOp;

/// What one pattern did on a shape.
#[derive(Debug, Clone)]
pub struct TpResult {
    pub pattern: TpPattern,
    /// The worst error over every GPU's checked rows, relative to the bound (<= 1 passes);
    /// None for the collective alone.
    pub max_err: Option<f64>,
    /// Seconds per call: the slowest GPU's median.
    pub per_call_s: f64,
}

/// A layer's split over `world` GPUs for `op`: (rows of A per GPU, its share of the cut
/// dimension: N / P columns of C for the all-gather, K / P for the reduce-scatter).
pub fn split(op: TpOp, shape: GemmShape, world: usize) -> Result<(usize, usize), KernelError> {
    op.split(shape.m, shape.n, shape.k, world)
        .map_err(KernelError::Invalid)
}

/// [`split`], and every chunked pattern's pieces whole (said before any GPU work): the
/// all-gather cuts each GPU's M / P rows in C pieces, the reduce-scatter each GPU's M / P rows
/// of the output likewise.
pub fn check(
    op: TpOp,
    shape: GemmShape,
    world: usize,
    patterns: &[TpPattern],
) -> Result<(usize, usize), KernelError> {
    let (rows, cut) = split(op, shape, world)?;
    for pat in patterns {
        if !pat.applies(op) {
            return Err(KernelError::Invalid(format!(
                "pattern {}: for the {} only",
                pat.name(),
                match [TpOp::AllGatherGemm, TpOp::GemmReduceScatter].map(|o| pat.applies(o)) {
                    [true, _] => "all-gather + GEMM",
                    [_, true] => "GEMM + reduce-scatter or all-reduce",
                    _ => "GEMM + all-reduce",
                }
            )));
        }
        let c = pat.pieces().unwrap_or(1);
        let flagged = matches!(
            pat,
            TpPattern::Push(_)
                | TpPattern::Pc { .. }
                | TpPattern::PcReduce { .. }
                | TpPattern::PushReduce(_)
                | TpPattern::Fused { .. }
        );
        if flagged && c > ag::MAX_PIECES {
            return Err(KernelError::Invalid(format!(
                "{}: at most {} pieces",
                pat.name(),
                ag::MAX_PIECES
            )));
        }
        if !rows.is_multiple_of(c) {
            return Err(KernelError::Invalid(format!(
                "{shape}, {}: the {rows} rows per GPU do not split in {c} pieces",
                pat.name()
            )));
        }
        // The fused kernels' tensor maps: rows of 16-byte multiples (the GEMM's k and n, and
        // the reduce-scatter's sums in 16-byte vectors).
        if let TpPattern::Fused { .. }
        | TpPattern::FusedReduce { .. }
        | TpPattern::FusedAll { .. } = pat
        {
            let (gk, gn) = match op {
                TpOp::AllGatherGemm => (shape.k, cut),
                TpOp::GemmReduceScatter | TpOp::GemmAllReduce => (cut, shape.n),
            };
            if !gk.is_multiple_of(8) || !gn.is_multiple_of(8) {
                return Err(KernelError::Invalid(format!(
                    "{shape}, {}: each GPU's GEMM is {gn} x {gk} (n x k); the fused kernel needs \
                     both multiples of 8",
                    pat.name()
                )));
            }
        }
        // fused-all: on the GPU counts where its sums were checked (see rs::fused::all_counts).
        if matches!(pat, TpPattern::FusedAll { .. }) && !rs::all_counts(world) {
            return Err(KernelError::Invalid(format!(
                "{} on {world} GPUs: checked on one and two only (on more it adds each GPU's \
                 partials into planes of their own, which no run there has checked yet); \
                 AUGUR_TP_UNVERIFIED=1 runs it",
                pat.name()
            )));
        }
        // push-reduce: on one GPU only until it runs reliably on more. On two H200s its checks
        // passed where it ran, but processes hung in it on a later layer or pattern, the GPUs'
        // threads blocked inside its driver calls (not yet diagnosed; the likeliest cause, a
        // kernel's first launch loading its module under the context's lock while the GPU waits
        // on a peer's word that the peer's host cannot enqueue, is what the threads' meetings,
        // on by default since, rule out; not yet run: push-reduce-h200-2026-11-30/gdb-diag.sh); on
        // more than two its own
        // rows add the reduce kernel's sum of the peers' partials, which no run there has
        // checked.
        if matches!(pat, TpPattern::PushReduce(_)) && !checked_on(world, &[1]) {
            return Err(KernelError::Invalid(format!(
                "{} on {world} GPUs: not yet reliable (on two H200s processes hung in it on a \
                 later layer or pattern, inside driver calls, not diagnosed: \
                 bench/results/push-reduce-h200-2026-11-30/); AUGUR_TP_UNVERIFIED=1 runs it",
                pat.name()
            )));
        }
        if let TpPattern::FusedReduce { sms, splits } = *pat {
            if splits == 0 || (sms > 0 && splits > 1) {
                return Err(KernelError::Invalid(format!(
                    "{}: k splits (at least 1) only with 0 summing blocks (fused-reduce:0:K)",
                    pat.name()
                )));
            }
        }
        // fused-reduce:0:K and fused-all:K (`fused-all`, 0, splits by itself where it may): k / P
        // in K ranges of whole 64-steps, none empty.
        let k_ranges = match *pat {
            TpPattern::FusedReduce { splits, .. } => Some(splits),
            TpPattern::FusedAll { splits } if splits > 0 => Some(splits),
            _ => None,
        };
        if let Some(splits) = k_ranges.filter(|_| op.row_parallel()) {
            split_ranges(cut, splits)
                .map_err(|e| KernelError::Invalid(format!("{shape}, {}: {e}", pat.name())))?;
        }
        if let TpPattern::Pc { sms, .. }
        | TpPattern::PcReduce { sms, .. }
        | TpPattern::PcLl { sms, .. } = pat
        {
            if *sms > crate::cuda::comm::MAX_BLOCKS {
                return Err(KernelError::Invalid(format!(
                    "{}: at most {} SMs for the copy kernel",
                    pat.name(),
                    crate::cuda::comm::MAX_BLOCKS
                )));
            }
        }
        // The LL kernels move 4-byte words: a GPU's share (its rows of A, or of the sum), or a
        // piece of it, must be whole ones.
        if matches!(pat, TpPattern::LlBulk | TpPattern::PcLl { .. }) {
            let (cols, what) = match op {
                TpOp::AllGatherGemm => (shape.k, "K"),
                TpOp::GemmReduceScatter | TpOp::GemmAllReduce => (shape.n, "N"),
            };
            if !(rows / c * cols).is_multiple_of(2) {
                return Err(KernelError::Invalid(format!(
                    "{shape}, {}: {} rows x {what} {cols} per GPU and piece is not a whole \
                     number of 4-byte words (an even {what} is)",
                    pat.name(),
                    rows / c
                )));
            }
        }
        // The copy kernel moves 16-byte vectors: a piece of a GPU's rows must be whole ones.
        if pat.sm_copies() && !(rows / c * shape.k * 2).is_multiple_of(16) {
            return Err(KernelError::Invalid(format!(
                "{shape}, {}: a piece of {} rows x K {} is not a whole number of 16-byte \
                 vectors (K a multiple of 8 is)",
                pat.name(),
                rows / c,
                shape.k
            )));
        }
        // The reduce kernel sums 16-byte vectors of 8 values: a piece of output rows whole ones
        // (push-reduce runs it on more than two GPUs).
        let summed = matches!(pat, TpPattern::PcReduce { .. })
            || (matches!(pat, TpPattern::PushReduce(_)) && world > 2);
        if summed && !(rows / c * shape.n).is_multiple_of(8) {
            return Err(KernelError::Invalid(format!(
                "{shape}, {}: a piece of {} rows x N {} is not a whole number of 16-byte vectors \
                 (N a multiple of 8 is)",
                pat.name(),
                rows / c,
                shape.n
            )));
        }
    }
    Ok((rows, cut))
}

/// `fused-reduce:0:K`'s k steps per range: each GPU's k (`kp`) cut in `splits` ranges of whole
/// 64-steps, none empty (the launch waits for every range's counts); why not otherwise.
fn split_ranges(kp: usize, splits: usize) -> Result<usize, String> {
    let (kt_per, used) = super::kernels::split_steps(kp, splits);
    if used != splits {
        return Err(format!(
            "k / P = {kp} is {} steps of 64, not {splits} ranges of them",
            kp.div_ceil(64)
        ));
    }
    Ok(kt_per)
}

fn nccl_err(what: &'static str) -> impl Fn(nccl::NcclError) -> KernelError {
    move |e| KernelError::Cuda(format!("{what}: {e:?}"))
}

/// The 16-bit NCCL type of `dtype`.
fn nccl_half(dtype: augur_features::attention::Dtype) -> nccl_sys::ncclDataType_t {
    match dtype {
        augur_features::attention::Dtype::Bf16 => nccl_sys::ncclDataType_t::ncclBfloat16,
        _ => nccl_sys::ncclDataType_t::ncclFloat16,
    }
}

fn ptr<T>(s: &CudaSlice<T>, st: &CudaStream) -> u64 {
    s.device_ptr(st).0
}

/// One GPU of the group: its GEMM (context, compute stream), a communication stream (of the
/// GPU's highest priority), its communicator and one value for barriers.
pub(super) struct Gpu {
    rank: usize,
    world: usize,
    g: CudaGemm,
    comm_stream: Arc<CudaStream>,
    comm: NcclComm,
    tick: CudaSlice<f32>,
    /// What every GPU of the group published at set-up (device addresses, by rank), each
    /// reachable from this GPU (peer access on between every pair that published any).
    peers: Vec<Vec<u64>>,
    /// The group's host word for held starts, its device address here (or why there is none),
    /// and this GPU's count of held samples (the same on every GPU: they make the same calls).
    hold: Arc<hold::Hold>,
    hold_word: Result<u64, String>,
    held: std::sync::atomic::AtomicU32,
    /// The group's threads' meeting on the host (`push-reduce`'s, rs/copies.rs).
    threads: Arc<fence::Fence>,
}

impl Gpu {
    fn stream(&self) -> Arc<CudaStream> {
        self.g.stream.clone()
    }

    /// The compute stream waits for the communication stream's work so far.
    fn join(&self) -> Result<(), KernelError> {
        self.g.stream.join(&self.comm_stream).map_err(drv("join"))
    }

    /// Every GPU's thread at the same point of its enqueue (`what`), bounded as the GPU waits
    /// are: a thread whose peers have not all come in 60 s (one failed or is blocked) errs.
    fn meet(&self, what: &str) -> Result<(), KernelError> {
        if self.threads.wait(std::time::Duration::from_secs(60)) {
            return Ok(());
        }
        let e = format!(
            "GPU rank {}: not every GPU's thread reached {what} in 60 s",
            self.rank
        );
        eprintln!("augur: {e}");
        Err(KernelError::Cuda(e))
    }

    /// Every GPU idle and past the same point.
    fn barrier(&self) -> Result<(), KernelError> {
        let s = self.stream();
        let t = ptr(&self.tick, &s);
        // SAFETY: `tick` holds one f32 on this GPU; every GPU enqueues it alike.
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
        self.settle(&s, "a barrier")
    }

    /// Wait for `st`'s work, bounded: a GPU whose stream has not finished in 60 s (a peer lost,
    /// a flag never written) is an error naming the GPU and `what`, not a hang.
    fn settle(&self, st: &CudaStream, what: &str) -> Result<(), KernelError> {
        use cudarc::driver::sys;
        let t0 = std::time::Instant::now();
        loop {
            // SAFETY: a live stream of this GPU's context.
            match unsafe { sys::cuStreamQuery(st.cu_stream()) } {
                sys::CUresult::CUDA_ERROR_NOT_READY => {}
                r => return crate::cuda::check("cuStreamQuery", r),
            }
            if t0.elapsed().as_secs() >= 60 {
                let e = format!(
                    "GPU rank {}: {what} has not finished in 60 s (a peer stopped, or waits on a \
                     flag nobody writes)",
                    self.rank
                );
                // Said now: freeing the group's buffers behind a hung stream may hang too.
                eprintln!("augur: {e}");
                return Err(KernelError::Cuda(e));
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }

    fn event(&self, timing: bool) -> Result<cudarc::driver::CudaEvent, KernelError> {
        use cudarc::driver::sys::CUevent_flags;
        let flags = if timing {
            CUevent_flags::CU_EVENT_DEFAULT
        } else {
            CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        self.g
            .ctx
            .new_event(Some(flags))
            .map_err(drv("cuEventCreate"))
    }

    /// Seconds per call of `enqueue` (which leaves all its work on the compute stream's
    /// order, its other streams forked from it): `t.warmup` calls, then `t.samples` times a
    /// barrier and `t.batch` calls between two events, started as `t.start` says; the median.
    /// Every GPU must make the same calls.
    fn time(
        &self,
        t: TpTiming,
        mut enqueue: impl FnMut() -> Result<(), KernelError>,
    ) -> Result<f64, KernelError> {
        let word = match t.start {
            TpStart::Held => Some(self.hold_word.clone().map_err(|e| {
                KernelError::NotAvailable {
                    backend: "cuda".into(),
                    why: format!("a held start (the host word GPUs wait on): {e}; time from a barrier instead"),
                }
            })?),
            TpStart::Barrier => None,
        };
        for _ in 0..t.warmup {
            enqueue()?;
            if t.batch <= 1 {
                self.barrier()?;
            }
        }
        let s = self.stream();
        step(self.rank, || "warm-up enqueued".into());
        self.settle(&s, "the warm-up")?;
        step(self.rank, || "warm-up done".into());
        let (e0, e1) = (self.event(true)?, self.event(true)?);
        let mut times = Vec::with_capacity(t.samples.max(1));
        for _ in 0..t.samples.max(1) {
            self.barrier()?;
            let seq = match word {
                Some(w) => {
                    let seq = self.held.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
                    wait_word(&s, w, seq)?;
                    Some(seq)
                }
                None => None,
            };
            let enqueued = (|| {
                e0.record(&s).map_err(drv("record"))?;
                for _ in 0..t.batch.max(1) {
                    enqueue()?;
                }
                e1.record(&s).map_err(drv("record"))
            })();
            if let Some(seq) = seq {
                self.release(seq, enqueued.is_err())?;
            }
            enqueued?;
            self.settle(&s, "a timed batch")?;
            let ms = e0.elapsed_ms(&e1).map_err(drv("cuEventElapsedTime"))?;
            times.push(ms as f64 / 1e3 / t.batch.max(1) as f64);
        }
        Ok(crate::median(times))
    }

    /// This GPU has enqueued its part of held sample `seq`. Rank 0 releases every GPU once all
    /// have (a GPU whose calls failed releases them at once, so that no stream waits forever).
    fn release(&self, seq: u32, failed: bool) -> Result<(), KernelError> {
        self.hold.arrive();
        if failed {
            self.hold.release(seq);
            return Ok(());
        }
        if self.rank == 0 {
            // Every GPU counts each of its held samples once: by the n-th, n x world parts.
            let all = self.held.load(Ordering::Relaxed) as u64 * self.world as u64;
            let arrived = self
                .hold
                .wait_arrivals(all, std::time::Duration::from_secs(60));
            self.hold.release(seq);
            if !arrived {
                return Err(KernelError::Cuda(
                    "a held start: not every GPU enqueued its calls in 60 s".into(),
                ));
            }
        }
        Ok(())
    }
}

/// One GPU's (check, seconds per call) per pattern.
type GpuResults = Vec<(Option<f64>, f64)>;

/// What the GPUs of a group share while they open ([`open_gpu`]): NCCL's id, whether one
/// failed to set up, a barrier, and what each published (its context, as an address, and the
/// device addresses its peers reach).
pub(super) struct Opening {
    id: nccl_sys::ncclUniqueId,
    failed: AtomicBool,
    barrier: Barrier,
    threads: Arc<fence::Fence>,
    table: Mutex<Vec<(usize, Vec<u64>)>>,
    hold: Arc<hold::Hold>,
}

impl Opening {
    pub(super) fn new(world: usize) -> Result<Opening, KernelError> {
        // SAFETY: a query of the loader before any NCCL call.
        if !unsafe { nccl_sys::is_culib_present() } {
            return Err(KernelError::NotAvailable {
                backend: "nccl".into(),
                why: "libnccl could not be loaded".into(),
            });
        }
        Ok(Opening {
            id: nccl::get_uniqueid().map_err(nccl_err("ncclGetUniqueId"))?,
            failed: AtomicBool::new(false),
            barrier: Barrier::new(world),
            threads: Arc::new(fence::Fence::new(world)),
            table: Mutex::new(vec![(0, Vec::new()); world]),
            hold: Arc::new(hold::Hold::new()?),
        })
    }
}

/// On this thread, GPU `ordinals[rank]`'s part of opening the group (every GPU's thread calls
/// it at once): its GEMM context and streams, `setup(rank, gemm)` (buffers and plans, before
/// any communicator: a GPU that fails there stops the others; with the device addresses it
/// publishes to the others, [`Gpu::peers`]), then peer access between the GPUs if any
/// published addresses, then the communicator.
pub(super) fn open_gpu<S>(
    ordinals: &[usize],
    rank: usize,
    o: &Opening,
    setup: impl FnOnce(usize, &CudaGemm) -> Result<(S, Vec<u64>), KernelError>,
) -> Result<(Gpu, S), KernelError> {
    let world = ordinals.len();
    step(rank, || "opening its GPU".into());
    let ready = CudaGemm::new(ordinals[rank]).and_then(|g| {
        g.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        // The GPU's highest priority: the collective's blocks go ahead of a GEMM's waiting
        // blocks as SMs free up (as the SpMV halo's do).
        let (_, top) = cudarc::driver::result::stream::get_priority_range()
            .map_err(drv("cuCtxGetStreamPriorityRange"))?;
        let comm_stream = g
            .ctx
            .new_stream_with_priority(top)
            .map_err(drv("cuStreamCreate"))?;
        let tick = g.stream.alloc_zeros::<f32>(1).map_err(drv("alloc"))?;
        step(rank, || "setting up".into());
        let (state, published) = setup(rank, &g)?;
        step(rank, || "set up".into());
        if rank == 0 {
            o.hold.register();
        }
        g.stream.synchronize().map_err(drv("synchronize"))?;
        let mut t = o.table.lock().unwrap_or_else(|p| p.into_inner());
        t[rank] = (g.ctx.cu_ctx() as usize, published);
        drop(t);
        Ok((g, comm_stream, tick, state))
    });
    if ready.is_err() {
        o.failed.store(true, Ordering::SeqCst);
    }
    o.barrier.wait();
    let (g, comm_stream, tick, state) = ready?;
    if o.failed.load(Ordering::SeqCst) {
        return Err(KernelError::Invalid("another GPU failed to set up".into()));
    }
    g.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
    let peers = o.table.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if peers.iter().any(|p| !p.1.is_empty()) {
        enable_peers(ordinals, rank, &peers)?;
    }
    let peers = peers.into_iter().map(|p| p.1).collect();
    let hold_word = o.hold.device_word();
    step(rank, || "opening NCCL".into());
    let mut c = std::ptr::null_mut();
    // SAFETY: every GPU's thread calls this with the same id and world size.
    unsafe { nccl::comm_init_rank(&mut c, world as i32, o.id, rank as i32) }
        .map_err(nccl_err("ncclCommInitRank"))?;
    let gpu = Gpu {
        rank,
        world,
        g,
        comm_stream,
        comm: NcclComm(c),
        tick,
        peers,
        hold: o.hold.clone(),
        threads: o.threads.clone(),
        hold_word,
        held: std::sync::atomic::AtomicU32::new(0),
    };
    Ok((gpu, state))
}

/// On every GPU of `ordinals`, its own thread: [`open_gpu`] with `setup`, then
/// `body(gpu, state)`; the patterns' results merged over the GPUs (worst check, slowest time).
fn run_group<S>(
    ordinals: &[usize],
    patterns: &[TpPattern],
    setup: impl Fn(usize, &CudaGemm) -> Result<(S, Vec<u64>), KernelError> + Sync,
    body: impl Fn(&Gpu, &mut S) -> Result<GpuResults, KernelError> + Sync,
) -> Result<Vec<TpResult>, KernelError> {
    let opening = Opening::new(ordinals.len())?;
    let per_gpu: Vec<Result<GpuResults, KernelError>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..ordinals.len())
            .map(|rank| {
                let (opening, setup, body) = (&opening, &setup, &body);
                sc.spawn(move || -> Result<GpuResults, KernelError> {
                    let (gpu, mut state) = open_gpu(ordinals, rank, opening, setup)?;
                    step(rank, || "opened".into());
                    let r = body(&gpu, &mut state);
                    step(rank, || "closing (its buffers, then NCCL)".into());
                    drop(state);
                    drop(gpu);
                    step(rank, || "closed".into());
                    r
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

/// Peer access from this thread's context (GPU `ordinals[rank]`) to every other GPU's context
/// (`peers[q].0`, a CUcontext as an address).
fn enable_peers(
    ordinals: &[usize],
    rank: usize,
    peers: &[(usize, Vec<u64>)],
) -> Result<(), KernelError> {
    use cudarc::driver::sys;
    for (q, (ctx, _)) in peers.iter().enumerate() {
        if q == rank {
            continue;
        }
        if !crate::cuda::peer(ordinals[rank], ordinals[q])?.access {
            return Err(KernelError::Cuda(format!(
                "GPU {} cannot access GPU {} (no peer access; the pull patterns need it)",
                ordinals[rank], ordinals[q]
            )));
        }
        // SAFETY: `ctx` is the live primary context of GPU ordinals[q] (held by its thread
        // until every thread has joined); this thread's context is current.
        let r = unsafe { sys::cuCtxEnablePeerAccess(*ctx as sys::CUcontext, 0) };
        if r != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            crate::cuda::check("cuCtxEnablePeerAccess", r)?;
        }
    }
    Ok(())
}

/// `st` waits until the u32 at `word` reaches `e` (wrap-aware).
pub(super) fn wait_word(st: &CudaStream, word: u64, e: u32) -> Result<(), KernelError> {
    // SAFETY: a word of a live cuMemAlloc buffer of this GPU, or the group's host word
    // (registered, mapped; it outlives the group's GPUs).
    crate::cuda::check("cuStreamWaitValue32", unsafe {
        cudarc::driver::sys::cuStreamWaitValue32_v2(
            st.cu_stream(),
            word,
            e,
            cudarc::driver::sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32,
        )
    })
}

/// `st` writes `e` to the u32 at `word` after everything before it (its writes visible first).
pub(super) fn write_word(st: &CudaStream, word: u64, e: u32) -> Result<(), KernelError> {
    // SAFETY: a word of a live cuMemAlloc buffer of this GPU or of a peer (peer access on).
    crate::cuda::check("cuStreamWriteValue32", unsafe {
        cudarc::driver::sys::cuStreamWriteValue32_v2(st.cu_stream(), word, e, 0)
    })
}

/// Whether a way of running that was checked on the GPU counts `counts` runs on `world` GPUs:
/// on those, or on any with `AUGUR_TP_UNVERIFIED` set (to check it on another count).
pub(super) fn checked_on(world: usize, counts: &[usize]) -> bool {
    counts.contains(&world) || std::env::var_os("AUGUR_TP_UNVERIFIED").is_some()
}

/// A pattern's next call's epoch (`epoch` advanced, wrapping): the same on every GPU, as they
/// make the same calls.
fn next_epoch(epoch: &std::cell::Cell<u32>) -> u32 {
    let e = epoch.get().wrapping_add(1);
    epoch.set(e);
    e
}

/// Start a call of a pattern whose peers wait for it: its epoch (`epoch`'s next, the same on
/// every GPU: they make the same calls), written on the compute stream, after everything before
/// it there, into this GPU's ready word of every peer: the word `ready` (an index) of the
/// buffer the peer published at `published`.
fn announce(
    gpu: &Gpu,
    epoch: &std::cell::Cell<u32>,
    published: usize,
    ready: u64,
) -> Result<u32, KernelError> {
    let e = next_epoch(epoch);
    let s = gpu.stream();
    for q in (0..gpu.world).filter(|&q| q != gpu.rank) {
        // Peer access on.
        write_word(&s, gpu.peers[q][published] + 4 * ready, e)?;
    }
    Ok(e)
}

/// comm.cu's module on `g`'s GPU: the copy and reduce kernels that run beside the GEMMs.
fn comm_module(g: &CudaGemm) -> Result<Arc<cudarc::driver::CudaModule>, KernelError> {
    let (ptx, _) = crate::cuda::module::ptx(crate::cuda::module::COMM, g.compute_capability)?;
    g.ctx.load_module(ptx).map_err(drv("cuModuleLoadData"))
}

/// The copy kernel of `module` (comm.cu's `tp_copy_pieces`) and its block counters
/// ([MAX_RANKS][MAX_PIECES] u32 in `g`'s context, zeroed: the kernel leaves them zero).
fn copy_kernel(
    g: &CudaGemm,
    module: &Arc<cudarc::driver::CudaModule>,
) -> Result<
    (
        cudarc::driver::CudaFunction,
        crate::cuda::comm::DeviceBuffer,
    ),
    KernelError,
> {
    use crate::cuda::comm::{DeviceBuffer, MAX_RANKS};
    let f = module
        .load_function("tp_copy_pieces")
        .map_err(drv("cuModuleGetFunction"))?;
    let counters = DeviceBuffer::zeroed(&g.ctx, 4 * MAX_RANKS * ag::MAX_PIECES)?;
    Ok((f, counters))
}

/// The SMs a fused kernel's GEMM gets on `g` beside `blocks` blocks of another role (`what`):
/// refused off Hopper, or where those blocks would leave the GEMM none.
fn fused_sms(g: &CudaGemm, blocks: usize, what: &str) -> Result<usize, KernelError> {
    if g.compute_capability.0 != 9 {
        return Err(KernelError::Unsupported {
            backend: "cuda".into(),
            what: format!(
                "the fused patterns' TMA GEMM (Hopper, sm_90; this GPU is sm_{}{})",
                g.compute_capability.0, g.compute_capability.1
            ),
        });
    }
    if blocks >= g.multiprocessors {
        return Err(KernelError::Invalid(format!(
            "{blocks} {what} blocks in the fused kernel: this GPU has {} SMs, and the GEMM needs \
             some",
            g.multiprocessors
        )));
    }
    Ok(g.multiprocessors - blocks)
}

/// The distinct counts of other-role blocks the fused patterns among `patterns` ask (`of`: a
/// pattern's count, None for the other patterns), in order.
fn fused_counts<K: Ord>(patterns: &[TpPattern], of: impl Fn(&TpPattern) -> Option<K>) -> Vec<K> {
    let mut counts: Vec<K> = patterns.iter().filter_map(of).collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// What a pattern's set-up made (`part`), or the pattern refused where there is none: `what`
/// run without its set-up.
fn set_up<'a, T>(part: &'a Option<T>, what: &str) -> Result<&'a T, KernelError> {
    part.as_ref()
        .ok_or_else(|| KernelError::Invalid(format!("{what} run without its set-up")))
}

/// The fused launch made ready for `blocks` other-role blocks (and, for the reduce-scatter, k
/// splits) among `launches` (`blocks_of` says a launch's), its index, and the kernel's words;
/// refused (`what` run without its set-up) where there is none.
fn fused_launch<'a, L, K: PartialEq>(
    launches: &'a [L],
    blocks_of: impl Fn(&L) -> K,
    blocks: K,
    words: Option<&'a crate::cuda::comm::DeviceBuffer>,
    what: &str,
) -> Result<(usize, &'a L, &'a crate::cuda::comm::DeviceBuffer), KernelError> {
    match (
        launches
            .iter()
            .enumerate()
            .find(|(_, l)| blocks_of(l) == blocks),
        words,
    ) {
        (Some((i, l)), Some(w)) => Ok((i, l, w)),
        _ => Err(KernelError::Invalid(format!(
            "{what} run without its set-up"
        ))),
    }
}

/// A fused kernel's launch: `grid` blocks of 384 threads (the TMA GEMM's), `smem` bytes of
/// dynamic shared memory.
fn fused_config(grid: u32, smem: u32) -> cudarc::driver::LaunchConfig {
    cudarc::driver::LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (384, 1, 1),
        shared_mem_bytes: smem,
    }
}

/// gemm_fused.cu's fused kernel `gemm_tma_{kind}_{type}_{bn}` on `g`, allowed the dynamic shared
/// memory it takes (returned, bytes).
fn fused_function(
    g: &CudaGemm,
    kind: &str,
    dtype: augur_features::attention::Dtype,
    bn: usize,
) -> Result<(cudarc::driver::CudaFunction, usize), KernelError> {
    fused_function_with(g, kind, dtype, bn, super::tma_smem(bn))
}

/// [`fused_function`] for a kernel taking `smem` bytes (`bn`: the size in its name: the swapped
/// kernels' token tile, `gemm_tma_ag_swap_{type}_{mt}`).
fn fused_function_with(
    g: &CudaGemm,
    kind: &str,
    dtype: augur_features::attention::Dtype,
    bn: usize,
    smem: usize,
) -> Result<(cudarc::driver::CudaFunction, usize), KernelError> {
    let ty = match dtype {
        augur_features::attention::Dtype::Bf16 => "bf16",
        _ => "f16",
    };
    let name = format!("gemm_tma_{kind}_{ty}_{bn}");
    let f = g
        .module
        .load_function(&name)
        .map_err(|e| KernelError::Cuda(format!("kernel {name}: {e}")))?;
    f.set_attribute(
        cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        smem as i32,
    )
    .map_err(drv("cuFuncSetAttribute"))?;
    Ok((f, smem))
}

/// The plans of the patterns that cut the work in pieces: per (count of pieces `c`, SMs `s`
/// left to the copy kernel) in `pieces`, cuBLASLt's plan for `shape_of(c)` (targeting the
/// other SMs when `s` > 0) and `events_of(c)` events (no timing) to order a piece's GEMM and
/// collective.
type PiecePlans = Vec<(
    (usize, usize),
    super::lt_plan::LtPlan,
    Vec<cudarc::driver::CudaEvent>,
)>;

fn piece_plans(
    g: &CudaGemm,
    pieces: &[(usize, usize)],
    dtype: augur_features::attention::Dtype,
    shape_of: impl Fn(usize) -> GemmShape,
    events_of: impl Fn(usize) -> usize,
) -> Result<PiecePlans, KernelError> {
    let flags = cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING;
    pieces
        .iter()
        .map(|&(c, s)| {
            if s >= g.multiprocessors {
                return Err(KernelError::Invalid(format!(
                    "{s} SMs for the copy kernel: this GPU has {}, and the GEMM needs some",
                    g.multiprocessors
                )));
            }
            let target = if s > 0 { g.multiprocessors - s } else { 0 };
            let plan = super::lt_plan::LtPlan::for_shape(&g.stream, shape_of(c), dtype, target)?;
            let events = (0..events_of(c))
                .map(|_| g.ctx.new_event(Some(flags)).map_err(drv("cuEventCreate")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(((c, s), plan, events))
        })
        .collect()
}

/// The plan and events for `pieces` pieces with `sms` SMs left to the copy kernel.
fn plan_for(
    plans: &PiecePlans,
    pieces: usize,
    sms: usize,
) -> Result<(&super::lt_plan::LtPlan, &[cudarc::driver::CudaEvent]), KernelError> {
    plans
        .iter()
        .find(|p| p.0 == (pieces, sms))
        .map(|p| (&p.1, &p.2[..]))
        .ok_or_else(|| KernelError::Invalid(format!("no plan for {pieces} pieces")))
}

/// (pieces, SMs left to the copy kernel) of every pattern in `patterns` that cuts the work in
/// pieces or moves it whole before a GEMM of its own (`pull-bulk`: (1, 0)); not `own-bulk`,
/// whose GEMM is the whole one, nor the fused patterns, whose GEMM is augur's own. With
/// `pc_tail` (`ag::pc_tail`), the all-gather's `pc-push` / `pc-pull` need (C, 0) too: the GEMMs
/// of their last piece run once the copy kernel is done, on every SM.
fn pieces_of(patterns: &[TpPattern], pc_tail: bool) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = patterns
        .iter()
        .filter(|q| **q != TpPattern::OwnBulk && !matches!(q, TpPattern::Fused { .. }))
        .filter_map(|q| q.pieces().map(|c| (c, q.kernel_sms())))
        .collect();
    if pc_tail {
        v.extend(patterns.iter().filter_map(|q| match q {
            TpPattern::Pc { pieces, .. } => Some((*pieces, 0)),
            _ => None,
        }));
    }
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests;
