//! A tensor-parallel layer planned once and run on the caller's buffers (issue 24): the
//! all-gather + GEMM of [`super::ag`] or the GEMM + reduce-scatter or all-reduce of [`super::rs`]
//! with one pattern, on device buffers the caller registers at plan time (as TransformerEngine's
//! userbuffers are), bf16 or f16 ([`TpBuffers`] says which per operation). The reduce-scatter's
//! partial product (M x N per GPU) and `pc-reduce`'s staging are the plan's own, and so are the
//! all-reduce's rows of the sum before its all-gather.
//!
//! The plan keeps one thread per GPU for its life, each holding that GPU's context, streams,
//! NCCL communicator, cuBLASLt plans and flags (opened as the harness opens them: every GPU
//! at once, peer access where the pattern copies between peers). [`TpPlan::run`] enqueues the
//! calls on every GPU and returns once every GPU has finished them; the buffers' contents are
//! the caller's to write between calls (a call reads A's own rows and B, writes A's other rows
//! and C).
//!
//! The buffers must come from cuMemAlloc or cudaMalloc in each GPU's primary context (PyTorch's
//! caching allocator's blocks do): the copy patterns read and write A across GPUs through peer
//! access, which memory from a stream-ordered pool (cuMemAllocAsync) does not get. Every GPU
//! must have the same shape and pattern; the plan checks the shape's split before any GPU
//! work.
//!
//! The pull patterns on more than 2 GPUs hung when their calls were queued back to back
//! (H200s; see the module above): a plan of one waits for a barrier between calls there.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::ag::Ag;
use super::rs::Rs;
use super::{check, open_gpu, Opening, TpOp, TpPattern};
use crate::gemm::GemmShape;
use crate::KernelError;

/// One GPU's buffers of a layer: device addresses in that GPU's primary context (see the
/// module docs for where they may come from), halves, row-major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpBuffers {
    /// All-gather + GEMM: all of A, M x K, this GPU's rows at `rank x M / P` written by the
    /// caller, the others by the call. GEMM + reduce-scatter or all-reduce: this GPU's columns
    /// of A, M x K / P.
    pub a: u64,
    /// All-gather: this GPU's rows of B, N / P x K. Reduce-scatter, all-reduce: its columns of
    /// B, N x K / P.
    pub b: u64,
    /// All-gather: this GPU's columns of C, M x N / P. Reduce-scatter: its rows of the sum,
    /// M / P x N. All-reduce: the whole sum, M x N.
    pub c: u64,
}

/// One GPU's part of the layer (its thread's).
enum Layer {
    Ag(Box<Ag>),
    Rs(Box<Rs>),
}

impl Layer {
    fn enqueue(&self, gpu: &super::Gpu, p: TpPattern) -> Result<(), KernelError> {
        match self {
            Layer::Ag(a) => a.enqueue(gpu, p),
            Layer::Rs(r) => r.enqueue(gpu, p),
        }
    }
}

enum Command {
    /// Enqueue this many calls, then wait for them.
    Run(usize),
    /// [`super::Gpu::time`]'s measurement.
    Time(super::TpTiming),
}

struct Worker {
    commands: mpsc::Sender<Command>,
    replies: mpsc::Receiver<Result<f64, KernelError>>,
    thread: Option<JoinHandle<()>>,
}

/// A layer's pattern on a group of GPUs and the caller's buffers (see the module docs).
pub struct TpPlan {
    op: TpOp,
    shape: GemmShape,
    dtype: augur_features::attention::Dtype,
    pattern: TpPattern,
    ordinals: Vec<usize>,
    /// The caller's buffers, by rank (live until the plan is dropped: `new`'s contract).
    buffers: Vec<TpBuffers>,
    workers: Vec<Worker>,
}

impl std::fmt::Debug for TpPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TpPlan")
            .field("op", &self.op.name())
            .field("shape", &self.shape)
            .field("pattern", &self.pattern.name())
            .field("gpus", &self.ordinals)
            .finish()
    }
}

impl TpPlan {
    /// Plan `op` on layer `shape` (A M x K, B N x K, C = A Bᵀ; the all-gather cuts A and B by
    /// rows, the reduce-scatter both along K and GPU r receives rows `[r M / P, (r + 1) M / P)`
    /// of the sum) on the GPUs `ordinals` with `pattern`, on `buffers[rank]` for GPU
    /// `ordinals[rank]`. Refuses a pattern of the other operation, a shape that does not split,
    /// or a count of buffers other than of GPUs before any GPU work; a GPU that fails to open
    /// stops them all.
    ///
    /// # Safety
    /// Each buffer must be a live allocation of the sizes in [`TpBuffers`] for `op`, in its
    /// GPU's primary context, from cuMemAlloc or cudaMalloc, and stay live (and not be written
    /// by anything else during a call) until the plan is dropped.
    pub unsafe fn new(
        op: TpOp,
        ordinals: &[usize],
        shape: GemmShape,
        dtype: augur_features::attention::Dtype,
        pattern: TpPattern,
        buffers: &[TpBuffers],
    ) -> Result<TpPlan, KernelError> {
        if matches!(pattern, TpPattern::GemmAlone | TpPattern::CommAlone) {
            return Err(KernelError::Invalid(format!(
                "`{}` is a part of a layer, not a way to run one",
                pattern.name()
            )));
        }
        let world = ordinals.len();
        if buffers.len() != world {
            return Err(KernelError::Invalid(format!(
                "{} GPUs but buffers for {}",
                world,
                buffers.len()
            )));
        }
        // Rows per GPU, and the cut dimension's share (all-gather: N / P; reduce-scatter: K / P).
        let (rows, cut) = check(op, shape, world, &[pattern])?;
        // The pulls on more than 2 GPUs: a barrier between calls (see the module docs; the
        // fused kernel's pulls, not yet run on more than 2 GPUs, are treated alike until they
        // are).
        let barrier_between = world > 2
            && matches!(
                pattern,
                TpPattern::Pull(_)
                    | TpPattern::PullBulk
                    | TpPattern::Pc { push: false, .. }
                    | TpPattern::Fused { push: false, .. }
            );
        let opening = Arc::new(Opening::new(world)?);
        let ordinals_v = ordinals.to_vec();
        let mut workers = Vec::with_capacity(world);
        for (rank, buf) in buffers.iter().copied().enumerate() {
            let (tx, rx) = mpsc::channel::<Command>();
            let (reply_tx, reply_rx) = mpsc::channel();
            let (opening, ordinals) = (opening.clone(), ordinals_v.clone());
            let thread = std::thread::Builder::new()
                .name(format!("augur-tp-gpu{}", ordinals[rank]))
                .spawn(move || {
                    let opened = open_gpu(&ordinals, rank, &opening, |rank, g| {
                        let bufs = [buf.a, buf.b, buf.c];
                        // SAFETY: the caller's buffers, as the plan's contract says.
                        unsafe {
                            Ok(match op {
                                TpOp::AllGatherGemm => {
                                    let dims = (rows, cut, shape.k);
                                    let (ag, published) = Ag::new(
                                        g,
                                        rank,
                                        world,
                                        dims,
                                        dtype,
                                        &[pattern],
                                        bufs,
                                        None,
                                    )?;
                                    (Layer::Ag(Box::new(ag)), published)
                                }
                                TpOp::GemmReduceScatter | TpOp::GemmAllReduce => {
                                    let dims = (rows, shape.n, cut);
                                    // The all-reduce's rows of the sum are the plan's own
                                    // (cuMemAlloc: peers add into them); the caller's C is
                                    // the whole sum.
                                    let (bufs, all, own) = if op == TpOp::GemmAllReduce {
                                        let own = crate::cuda::comm::DeviceBuffer::zeroed(
                                            &g.ctx,
                                            rows * shape.n * 2,
                                        )?;
                                        ([buf.a, buf.b, own.ptr()], Some(buf.c), Some(own))
                                    } else {
                                        (bufs, None, None)
                                    };
                                    let (mut rs, published) = Rs::new(
                                        g,
                                        rank,
                                        world,
                                        dims,
                                        dtype,
                                        &[pattern],
                                        bufs,
                                        all,
                                        None,
                                    )?;
                                    if let Some(own) = own {
                                        rs.keep(own);
                                    }
                                    (Layer::Rs(Box::new(rs)), published)
                                }
                            })
                        }
                    });
                    let (gpu, layer) = match opened {
                        Ok(v) => {
                            let _ = reply_tx.send(Ok(0.0));
                            v
                        }
                        Err(e) => {
                            let _ = reply_tx.send(Err(e));
                            return;
                        }
                    };
                    let s = gpu.stream();
                    for c in rx {
                        let r = match c {
                            Command::Run(calls) => (|| {
                                for _ in 0..calls {
                                    layer.enqueue(&gpu, pattern)?;
                                    if barrier_between {
                                        gpu.barrier()?;
                                    }
                                }
                                gpu.settle(&s, "a planned call").map(|_| 0.0)
                            })(),
                            Command::Time(t) => {
                                let batch = if barrier_between { 1 } else { t.batch };
                                let t = super::TpTiming { batch, ..t };
                                gpu.time(t, || layer.enqueue(&gpu, pattern))
                            }
                        };
                        if reply_tx.send(r).is_err() {
                            break;
                        }
                    }
                    // Dropped here on this thread: the GPU's work finished (each command
                    // waited for it), then its plans, flags and communicator.
                    drop(layer);
                    drop(gpu);
                })
                .map_err(|e| KernelError::Invalid(format!("spawn a GPU's thread: {e}")))?;
            workers.push(Worker {
                commands: tx,
                replies: reply_rx,
                thread: Some(thread),
            });
        }
        let plan = TpPlan {
            op,
            shape,
            dtype,
            pattern,
            ordinals: ordinals_v,
            buffers: buffers.to_vec(),
            workers,
        };
        plan.replies().map(|_| plan)
    }

    /// Every worker's reply to the last command: the first error, else the largest value.
    fn replies(&self) -> Result<f64, KernelError> {
        let mut out: Result<f64, KernelError> = Ok(0.0);
        for w in &self.workers {
            let r = w
                .replies
                .recv()
                .unwrap_or_else(|_| Err(KernelError::Cuda("a GPU's thread ended early".into())));
            out = match (out, r) {
                (Err(e), _) | (Ok(_), Err(e)) => Err(e),
                (Ok(a), Ok(b)) => Ok(a.max(b)),
            };
        }
        out
    }

    fn send(&self, c: impl Fn() -> Command) -> Result<f64, KernelError> {
        for w in &self.workers {
            w.commands
                .send(c())
                .map_err(|_| KernelError::Cuda("a GPU's thread has ended".into()))?;
        }
        self.replies()
    }

    /// Run the layer `calls` times on every GPU, back to back; returns once every GPU has
    /// finished (a GPU that has not in 60 s is an error naming it).
    pub fn run(&self, calls: usize) -> Result<(), KernelError> {
        self.send(|| Command::Run(calls)).map(|_| ())
    }

    /// Seconds per call, measured as `augur overlap tp` measures the harness's patterns
    /// ([`TpTiming`](super::TpTiming)): the slowest GPU's median.
    pub fn time(&self, timing: super::TpTiming) -> Result<f64, KernelError> {
        self.send(|| Command::Time(timing))
    }

    pub fn op(&self) -> TpOp {
        self.op
    }

    pub fn shape(&self) -> GemmShape {
        self.shape
    }

    pub fn pattern(&self) -> TpPattern {
        self.pattern
    }

    pub fn gpus(&self) -> &[usize] {
        &self.ordinals
    }

    pub fn dtype(&self) -> augur_features::attention::Dtype {
        self.dtype
    }

    /// The same layer, GPUs and buffers with another pattern: a second plan on this one's
    /// buffers (run one of the two at a time; the buffers must stay live until both are
    /// dropped, as `new`'s contract already asks of this one's).
    ///
    /// # Safety
    /// As [`TpPlan::new`], for the buffers this plan was made on, until the new plan is dropped
    /// too.
    pub unsafe fn with_pattern(&self, pattern: TpPattern) -> Result<TpPlan, KernelError> {
        // SAFETY: this plan's buffers, under the caller's promise above.
        unsafe {
            TpPlan::new(
                self.op,
                &self.ordinals,
                self.shape,
                self.dtype,
                pattern,
                &self.buffers,
            )
        }
    }
}

impl Drop for TpPlan {
    fn drop(&mut self) {
        // Closing the command channels ends each thread's loop; it frees its GPU's part.
        let threads: Vec<JoinHandle<()>> = self
            .workers
            .drain(..)
            .filter_map(|mut w| w.thread.take())
            .collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

impl AsRef<TpPlan> for TpPlan {
    fn as_ref(&self) -> &TpPlan {
        self
    }
}

/// A check's stand-in for a caller: three buffers on each GPU (cuMemAlloc in its primary
/// context, outside any plan), written and read synchronously between a plan's calls.
struct Caller {
    gpus: Vec<(
        Arc<cudarc::driver::CudaContext>,
        [crate::cuda::comm::DeviceBuffer; 3],
    )>,
}

impl Caller {
    /// `bytes[i]` bytes for buffer i on each GPU of `ordinals`.
    fn new(ordinals: &[usize], bytes: [usize; 3]) -> Result<Caller, KernelError> {
        use crate::cuda::comm::DeviceBuffer;
        let gpus = ordinals
            .iter()
            .map(|&o| {
                let ctx =
                    cudarc::driver::CudaContext::new(o).map_err(crate::cuda::drv("cuCtxCreate"))?;
                let [x, y, z] = bytes;
                let bufs = [
                    DeviceBuffer::new(&ctx, x)?,
                    DeviceBuffer::new(&ctx, y)?,
                    DeviceBuffer::new(&ctx, z)?,
                ];
                Ok((ctx, bufs))
            })
            .collect::<Result<Vec<_>, KernelError>>()?;
        Ok(Caller { gpus })
    }

    fn addresses(&self) -> Vec<TpBuffers> {
        self.gpus
            .iter()
            .map(|(_, [a, b, c])| TpBuffers {
                a: a.ptr(),
                b: b.ptr(),
                c: c.ptr(),
            })
            .collect()
    }

    /// `v` into buffer `i` of GPU `rank`, from its start.
    fn write(&self, rank: usize, i: usize, v: &[u16]) -> Result<(), KernelError> {
        let (ctx, bufs) = &self.gpus[rank];
        ctx.bind_to_thread()
            .map_err(crate::cuda::drv("cuCtxSetCurrent"))?;
        let n = (v.len() * 2).min(bufs[i].bytes());
        // SAFETY: n bytes of a live allocation of this (current) context, from `v`.
        crate::cuda::check("cuMemcpyHtoD", unsafe {
            cudarc::driver::sys::cuMemcpyHtoD_v2(bufs[i].ptr(), v.as_ptr() as *const _, n)
        })
    }

    /// Buffer `i` of GPU `rank` to NaN (0xFFFF).
    fn poison(&self, rank: usize, i: usize) -> Result<(), KernelError> {
        let (ctx, bufs) = &self.gpus[rank];
        ctx.bind_to_thread()
            .map_err(crate::cuda::drv("cuCtxSetCurrent"))?;
        // SAFETY: the whole of a live allocation of this (current) context.
        crate::cuda::check("cuMemsetD8", unsafe {
            cudarc::driver::sys::cuMemsetD8_v2(bufs[i].ptr(), 0xFF, bufs[i].bytes())
        })
    }

    /// `out.len()` halves of buffer `i` of GPU `rank`, from half `at`.
    fn read(&self, rank: usize, i: usize, at: usize, out: &mut [u16]) -> Result<(), KernelError> {
        let (ctx, bufs) = &self.gpus[rank];
        ctx.bind_to_thread()
            .map_err(crate::cuda::drv("cuCtxSetCurrent"))?;
        if 2 * (at + out.len()) > bufs[i].bytes() {
            return Err(KernelError::Invalid("a read past a check's buffer".into()));
        }
        // SAFETY: in bounds (above) of a live allocation of this (current) context.
        crate::cuda::check("cuMemcpyDtoH", unsafe {
            cudarc::driver::sys::cuMemcpyDtoH_v2(
                out.as_mut_ptr() as *mut _,
                bufs[i].ptr() + 2 * at as u64,
                out.len() * 2,
            )
        })
    }
}

/// Check and time the all-gather + GEMM of `p` through the plan `make` builds on buffers
/// allocated the way a caller allocates them ([`Caller`]): A's other rows and C poisoned (NaN)
/// before a call, the sampled rows of C checked against the f64 reference; once after the
/// first call and again after the timing (the plan's flags many calls on), each time
/// re-poisoned first. The plan's pattern, the worst check and the time as [`TpPlan::time`]
/// measures it.
pub fn check_all_gather_gemm<P: AsRef<TpPlan>>(
    ordinals: &[usize],
    p: &crate::gemm::GemmProblem,
    timing: super::TpTiming,
    make: impl FnOnce(&[TpBuffers]) -> Result<P, KernelError>,
) -> Result<super::TpResult, KernelError> {
    use crate::gemm::{check_rows, from_half_bits, reference_rows, to_half_bits};
    let world = ordinals.len();
    let (rows, n_r) = super::split(TpOp::AllGatherGemm, p.shape, world)?;
    let (m, k) = (world * rows, p.shape.k);
    let bits = |v: &[f32]| -> Vec<u16> { v.iter().map(|&x| to_half_bits(p.dtype, x)).collect() };
    let caller = Caller::new(ordinals, [m * k * 2, n_r * k * 2, m * n_r * 2])?;
    for rank in 0..world {
        caller.write(rank, 1, &bits(&p.b[rank * n_r * k..(rank + 1) * n_r * k]))?;
    }
    // The caller's writes before a call: its own rows of A, the rest of A and all of C NaN.
    let prepare = || -> Result<(), KernelError> {
        for rank in 0..world {
            let mut a_host = vec![0xFFFFu16; m * k];
            let mine = rank * rows * k..(rank + 1) * rows * k;
            a_host[mine.clone()].copy_from_slice(&bits(&p.a[mine]));
            caller.write(rank, 0, &a_host)?;
            caller.poison(rank, 2)?;
        }
        Ok(())
    };
    let at = p.check_rows(256, 24);
    let want = reference_rows(p, &at);
    let view = crate::gemm::GemmProblem {
        shape: GemmShape { m, n: n_r, k },
        dtype: p.dtype,
        a: Vec::new(),
        b: Vec::new(),
    };
    // The worst error over every GPU's checked rows of C.
    let checked = |_: TpPattern| -> Result<f64, KernelError> {
        let mut worst = 0.0f64;
        let mut row = vec![0u16; n_r];
        for rank in 0..world {
            let mut got = Vec::with_capacity(at.len() * n_r);
            for &r in &at {
                caller.read(rank, 2, r * n_r, &mut row)?;
                got.extend(row.iter().map(|&h| from_half_bits(p.dtype, h)));
            }
            let mine: Vec<Vec<f64>> = want
                .iter()
                .map(|w| w[rank * n_r..(rank + 1) * n_r].to_vec())
                .collect();
            worst = worst.max(check_rows(&view, &at, &mine, &got).0);
        }
        Ok(worst)
    };
    // The buffers live in `caller` until after the plan is dropped (in checked_plan).
    checked_plan(&caller.addresses(), make, prepare, checked, timing)
}

/// [`check_all_gather_gemm`] for the GEMM + reduce-scatter: each GPU's columns of A and B
/// written once, its rows of the sum poisoned before each checked call and compared, where the
/// sampled rows fall in them, with the exact sum within the reduce-scatter's rounding bound
/// (as `augur overlap tp` checks its own).
pub fn check_gemm_reduce_scatter<P: AsRef<TpPlan>>(
    ordinals: &[usize],
    p: &crate::gemm::GemmProblem,
    timing: super::TpTiming,
    make: impl FnOnce(&[TpBuffers]) -> Result<P, KernelError>,
) -> Result<super::TpResult, KernelError> {
    check_row_parallel(TpOp::GemmReduceScatter, ordinals, p, timing, make)
}

/// [`check_gemm_reduce_scatter`] for the GEMM + all-reduce: every GPU's whole sum poisoned and
/// every sampled row of it compared, and with the first GPU's bit for bit.
pub fn check_gemm_all_reduce<P: AsRef<TpPlan>>(
    ordinals: &[usize],
    p: &crate::gemm::GemmProblem,
    timing: super::TpTiming,
    make: impl FnOnce(&[TpBuffers]) -> Result<P, KernelError>,
) -> Result<super::TpResult, KernelError> {
    check_row_parallel(TpOp::GemmAllReduce, ordinals, p, timing, make)
}

fn check_row_parallel<P: AsRef<TpPlan>>(
    op: TpOp,
    ordinals: &[usize],
    p: &crate::gemm::GemmProblem,
    timing: super::TpTiming,
    make: impl FnOnce(&[TpBuffers]) -> Result<P, KernelError>,
) -> Result<super::TpResult, KernelError> {
    use super::rs::{columns, magnitudes, sum_error, sum_roundings};
    use crate::gemm::{from_half_bits, reference_rows, rounding_bound, to_half_bits};
    let world = ordinals.len();
    let (rows, kp) = super::split(op, p.shape, world)?;
    let GemmShape { m, n, k } = p.shape;
    let bits = |v: &[f32]| -> Vec<u16> { v.iter().map(|&x| to_half_bits(p.dtype, x)).collect() };
    // The all-reduce's C is the whole sum on every GPU.
    let c_rows = if op == TpOp::GemmAllReduce { m } else { rows };
    let caller = Caller::new(ordinals, [m * kp * 2, n * kp * 2, c_rows * n * 2])?;
    for rank in 0..world {
        let mine = rank * kp..(rank + 1) * kp;
        caller.write(rank, 0, &bits(&columns(&p.a, k, mine.clone())))?;
        caller.write(rank, 1, &bits(&columns(&p.b, k, mine)))?;
    }
    let poison = || (0..world).try_for_each(|rank| caller.poison(rank, 2));
    let at = p.check_rows(256, 24);
    let want = reference_rows(p, &at);
    let magnitude = magnitudes(p, &at, world, kp);
    let checked = |pattern: TpPattern| -> Result<f64, KernelError> {
        let bound = sum_roundings(pattern, world) as f64 * rounding_bound(p.dtype);
        let mut worst = 0.0f64;
        let mut row = vec![0u16; n];
        // The all-reduce: every GPU's sampled rows must be the first GPU's bits (one sum, not
        // P that may round apart; a difference fails the check, as `augur overlap tp`'s).
        let mut first = Vec::new();
        for rank in 0..world {
            let own = if c_rows == m {
                0..m
            } else {
                rank * rows..(rank + 1) * rows
            };
            let mut seen = Vec::new();
            for (ri, &i) in at.iter().enumerate().filter(|(_, i)| own.contains(i)) {
                caller.read(rank, 2, (i - own.start) * n, &mut row)?;
                for (c, &h) in row.iter().enumerate() {
                    let g = from_half_bits(p.dtype, h) as f64;
                    worst = worst.max(sum_error(g, want[ri][c], bound * magnitude[ri][c]));
                }
                if c_rows == m {
                    seen.extend_from_slice(&row);
                }
            }
            if rank == 0 {
                first = seen;
            } else if seen != first {
                worst = f64::INFINITY;
            }
        }
        Ok(worst)
    };
    checked_plan(&caller.addresses(), make, poison, checked, timing)
}

/// The plan `make` builds on `addresses`: `prepare` (the caller's writes), one call, `checked`
/// (given the plan's pattern); the timing; `prepare`, one call, `checked` again. The plan is
/// dropped before this returns.
fn checked_plan<P: AsRef<TpPlan>>(
    addresses: &[TpBuffers],
    make: impl FnOnce(&[TpBuffers]) -> Result<P, KernelError>,
    prepare: impl Fn() -> Result<(), KernelError>,
    checked: impl Fn(TpPattern) -> Result<f64, KernelError>,
    timing: super::TpTiming,
) -> Result<super::TpResult, KernelError> {
    let made = make(addresses)?;
    // Inputs and poison after the plan is made: a plan that runs calls as it is made
    // (`augur::overlap::LayerPlan::measured` times its candidates) must not leave the outputs
    // the check reads already written.
    prepare()?;
    let plan = made.as_ref();
    plan.run(1)?;
    let first = checked(plan.pattern())?;
    let per_call_s = plan.time(timing)?;
    prepare()?;
    plan.run(1)?;
    let again = checked(plan.pattern())?;
    Ok(super::TpResult {
        pattern: plan.pattern(),
        max_err: Some(first.max(again)),
        per_call_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use augur_features::attention::Dtype;

    #[test]
    fn a_plan_refuses_what_it_cannot_run_before_any_gpu_work() {
        let shape = GemmShape {
            m: 4096,
            n: 6144,
            k: 4096,
        };
        let buf = TpBuffers { a: 0, b: 0, c: 0 };
        let refuse = |shape, pattern, bufs: &[TpBuffers]| {
            // SAFETY: each is refused before a buffer or a GPU is touched.
            unsafe {
                TpPlan::new(
                    TpOp::AllGatherGemm,
                    &[0, 1],
                    shape,
                    Dtype::Bf16,
                    pattern,
                    bufs,
                )
            }
            .unwrap_err()
            .to_string()
        };
        let e = refuse(shape, TpPattern::GemmAlone, &[buf, buf]);
        assert!(e.contains("`gemm` is a part of a layer"), "{e}");
        let e = refuse(shape, TpPattern::Bulk, &[buf]);
        assert!(e.contains("2 GPUs but buffers for 1"), "{e}");
        let rs = TpPattern::parse("pc-reduce:2:8").unwrap();
        let e = refuse(shape, rs, &[buf, buf]);
        assert!(
            e.contains("for the GEMM + reduce-scatter or all-reduce only"),
            "{e}"
        );
        let odd = GemmShape { m: 4097, ..shape };
        let e = refuse(odd, TpPattern::Bulk, &[buf, buf]);
        assert!(e.contains("4097"), "{e}");
        let e = refuse(shape, TpPattern::Chunked(3), &[buf, buf]);
        assert!(e.contains("2048 rows per GPU do not split in 3"), "{e}");
        // The reduce-scatter refuses the all-gather's patterns, and its own checks apply.
        let rs_refuse = |shape, pattern| {
            // SAFETY: refused before a buffer or a GPU is touched.
            unsafe {
                let op = TpOp::GemmReduceScatter;
                TpPlan::new(op, &[0, 1], shape, Dtype::Bf16, pattern, &[buf, buf])
            }
            .unwrap_err()
            .to_string()
        };
        let e = rs_refuse(shape, TpPattern::Pull(1));
        assert!(e.contains("pull:1: for the all-gather + GEMM only"), "{e}");
        let e = rs_refuse(shape, TpPattern::CommAlone);
        assert!(e.contains("`comm` is a part of a layer"), "{e}");
    }
}
