//! A tensor-parallel layer planned once and run on the caller's buffers (issue 24): the
//! all-gather + GEMM of [`super::ag`] with one pattern, on device buffers the caller registers
//! at plan time (as TransformerEngine's userbuffers are): per GPU, all of A (M x K, its own
//! rows in place at `rank x M / P`, the others written by the call), its rows of B (N / P x K)
//! and its columns of C (M x N / P), bf16 or f16.
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
use super::{check, open_gpu, Opening, TpOp, TpPattern};
use crate::gemm::GemmShape;
use crate::KernelError;

/// One GPU's buffers of an all-gather + GEMM layer: device addresses in that GPU's primary
/// context (see the module docs for the sizes and where they may come from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgBuffers {
    /// All of A, M x K halves; this GPU's rows at `rank x M / P` written by the caller.
    pub a: u64,
    /// This GPU's rows of B, N / P x K halves.
    pub b: u64,
    /// This GPU's columns of C, M x N / P halves (row-major, N / P per row).
    pub c: u64,
}

enum Command {
    /// Enqueue this many calls, then wait for them.
    Run(usize),
    /// [`super::Gpu::time`]'s measurement: (warm-up, batch, samples).
    Time(usize, usize, usize),
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
    pattern: TpPattern,
    ordinals: Vec<usize>,
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
    /// Plan the all-gather + GEMM of layer `shape` (A M x K, B N x K, C = A Bᵀ) on the GPUs
    /// `ordinals` with `pattern`, on `buffers[rank]` for GPU `ordinals[rank]`. Refuses a
    /// pattern of the other operation, a shape that does not split, or a count of buffers
    /// other than of GPUs before any GPU work; a GPU that fails to open stops them all.
    ///
    /// # Safety
    /// Each buffer must be a live allocation of the sizes in [`AgBuffers`], in its GPU's
    /// primary context, from cuMemAlloc or cudaMalloc, and stay live (and not be written by
    /// anything else during a call) until the plan is dropped.
    pub unsafe fn all_gather_gemm(
        ordinals: &[usize],
        shape: GemmShape,
        dtype: augur_features::attention::Dtype,
        pattern: TpPattern,
        buffers: &[AgBuffers],
    ) -> Result<TpPlan, KernelError> {
        let op = TpOp::AllGatherGemm;
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
        let (rows, n_r) = check(op, shape, world, &[pattern])?;
        let k = shape.k;
        // The pulls on more than 2 GPUs: a barrier between calls (see the module docs).
        let barrier_between = world > 2
            && matches!(
                pattern,
                TpPattern::Pull(_) | TpPattern::PullBulk | TpPattern::Pc { push: false, .. }
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
                        // SAFETY: the caller's buffers, as all_gather_gemm's contract says.
                        unsafe {
                            Ag::new(
                                g,
                                rank,
                                world,
                                (rows, n_r, k),
                                dtype,
                                &[pattern],
                                [buf.a, buf.b, buf.c],
                                None,
                            )
                        }
                    });
                    let (gpu, ag) = match opened {
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
                                    ag.enqueue(&gpu, pattern)?;
                                    if barrier_between {
                                        gpu.barrier()?;
                                    }
                                }
                                gpu.settle(&s, "a planned call").map(|_| 0.0)
                            })(),
                            Command::Time(warmup, batch, samples) => {
                                let batch = if barrier_between { 1 } else { batch };
                                gpu.time(warmup, batch, samples, || ag.enqueue(&gpu, pattern))
                            }
                        };
                        if reply_tx.send(r).is_err() {
                            break;
                        }
                    }
                    // Dropped here on this thread: the GPU's work finished (each command
                    // waited for it), then its plans, flags and communicator.
                    drop(ag);
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
            pattern,
            ordinals: ordinals_v,
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

    /// Seconds per call, measured as `augur overlap tp` measures the harness's patterns:
    /// `warmup` calls, then `samples` times a barrier and `batch` calls between two events on
    /// every GPU; the slowest GPU's median.
    pub fn time(&self, warmup: usize, batch: usize, samples: usize) -> Result<f64, KernelError> {
        self.send(|| Command::Time(warmup, batch, samples))
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

/// Check and time the all-gather + GEMM of `p` through the plan `make` builds on buffers
/// allocated the way a caller allocates them (cuMemAlloc in each GPU's primary context, outside
/// the plan): A's other rows and C poisoned (NaN) before a call, the sampled rows of C checked
/// against the f64 reference; once after the first call and again after the timing (the
/// plan's flags many calls on), each time re-poisoned first. The plan's pattern, the worst
/// check and the time as [`TpPlan::time`] measures it.
pub fn check_all_gather_gemm<P: AsRef<TpPlan>>(
    ordinals: &[usize],
    p: &crate::gemm::GemmProblem,
    (warmup, batch, samples): (usize, usize, usize),
    make: impl FnOnce(&[AgBuffers]) -> Result<P, KernelError>,
) -> Result<super::TpResult, KernelError> {
    use crate::cuda::comm::DeviceBuffer;
    use crate::cuda::drv;
    use crate::gemm::{check_rows, from_half_bits, reference_rows, to_half_bits};
    use cudarc::driver::sys;
    use std::ffi::c_void;
    let world = ordinals.len();
    let (rows, n_r) = super::split(TpOp::AllGatherGemm, p.shape, world)?;
    let (m, k) = (world * rows, p.shape.k);
    let bits = |v: &[f32]| -> Vec<u16> { v.iter().map(|&x| to_half_bits(p.dtype, x)).collect() };
    // Per GPU: its context and the caller's three buffers.
    let mut held = Vec::with_capacity(world);
    for (rank, &o) in ordinals.iter().enumerate() {
        let ctx = cudarc::driver::CudaContext::new(o).map_err(drv("cuCtxCreate"))?;
        let a = DeviceBuffer::new(&ctx, m * k * 2)?;
        let b = DeviceBuffer::new(&ctx, n_r * k * 2)?;
        let c = DeviceBuffer::new(&ctx, m * n_r * 2)?;
        let b_host = bits(&p.b[rank * n_r * k..(rank + 1) * n_r * k]);
        // SAFETY: `b` holds n_r x k halves in this context (current: DeviceBuffer::new bound
        // it).
        crate::cuda::check("cuMemcpyHtoD", unsafe {
            sys::cuMemcpyHtoD_v2(b.ptr(), b_host.as_ptr() as *const c_void, n_r * k * 2)
        })?;
        held.push((ctx, a, b, c));
    }
    // The caller's writes before a call: its own rows of A, the rest of A and all of C NaN.
    let prepare = || -> Result<(), KernelError> {
        for (rank, (ctx, a, _, c)) in held.iter().enumerate() {
            ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
            let mut a_host = vec![0xFFFFu16; m * k];
            let mine = rank * rows * k..(rank + 1) * rows * k;
            a_host[mine.clone()].copy_from_slice(&bits(&p.a[mine]));
            // SAFETY: `a` holds m x k halves and `c` m x n_r, in this (current) context.
            unsafe {
                crate::cuda::check(
                    "cuMemcpyHtoD",
                    sys::cuMemcpyHtoD_v2(a.ptr(), a_host.as_ptr() as *const c_void, m * k * 2),
                )?;
                crate::cuda::check("cuMemsetD8", sys::cuMemsetD8_v2(c.ptr(), 0xFF, m * n_r * 2))?;
            }
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
    let checked = || -> Result<f64, KernelError> {
        let mut worst = 0.0f64;
        for (rank, (ctx, _, _, c)) in held.iter().enumerate() {
            ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
            let mut got = Vec::with_capacity(at.len() * n_r);
            let mut row = vec![0u16; n_r];
            for &r in &at {
                // SAFETY: row r of C (n_r halves) lies in `c`; `row` holds as many.
                crate::cuda::check("cuMemcpyDtoH", unsafe {
                    sys::cuMemcpyDtoH_v2(
                        row.as_mut_ptr() as *mut c_void,
                        c.ptr() + (r * n_r * 2) as u64,
                        n_r * 2,
                    )
                })?;
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
    let addresses: Vec<AgBuffers> = held
        .iter()
        .map(|(_, a, b, c)| AgBuffers {
            a: a.ptr(),
            b: b.ptr(),
            c: c.ptr(),
        })
        .collect();
    prepare()?;
    // The buffers above, of the sizes AgBuffers says, from cuMemAlloc in each GPU's primary
    // context, live in `held` until after the plan is dropped (below).
    let made = make(&addresses)?;
    let plan = made.as_ref();
    let pattern = plan.pattern();
    plan.run(1)?;
    let first = checked()?;
    let per_call_s = plan.time(warmup, batch, samples)?;
    prepare()?;
    plan.run(1)?;
    let again = checked()?;
    drop(made);
    drop(held);
    Ok(super::TpResult {
        pattern,
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
        let buf = AgBuffers { a: 0, b: 0, c: 0 };
        let refuse = |shape, pattern, bufs: &[AgBuffers]| {
            // SAFETY: each is refused before a buffer or a GPU is touched.
            unsafe { TpPlan::all_gather_gemm(&[0, 1], shape, Dtype::Bf16, pattern, bufs) }
                .unwrap_err()
                .to_string()
        };
        let e = refuse(shape, TpPattern::GemmAlone, &[buf, buf]);
        assert!(e.contains("`gemm` is a part of a layer"), "{e}");
        let e = refuse(shape, TpPattern::Bulk, &[buf]);
        assert!(e.contains("2 GPUs but buffers for 1"), "{e}");
        let rs = TpPattern::parse("pc-reduce:2:8").unwrap();
        let e = refuse(shape, rs, &[buf, buf]);
        assert!(e.contains("for the GEMM + reduce-scatter only"), "{e}");
        let odd = GemmShape { m: 4097, ..shape };
        let e = refuse(odd, TpPattern::Bulk, &[buf, buf]);
        assert!(e.contains("4097"), "{e}");
        let e = refuse(shape, TpPattern::Chunked(3), &[buf, buf]);
        assert!(e.contains("2048 rows per GPU do not split in 3"), "{e}");
    }
}
