//! [`MultiGpuSpmv`]: `y = A x` on N GPUs of one host.
//!
//! Rows are cut into N shards of (nearly) equal nonzeros. Each shard is planned on its own GPU
//! like any [`SpmvPlan`]: its own features, its own kernel choice and setup. x is replicated on
//! every GPU; after each product the y shards are all-gathered on every GPU with NCCL, so y can
//! be the next x (power iteration, CG) without leaving the devices.
//!
//! Equal-nnz shards have unequal row counts, and `ncclAllGather` takes equal counts. The
//! default ([`GatherMode::AllGather`]) copies each shard's y into a send buffer padded to the
//! longest shard, all-gathers those, and copies the rows out of the padding on each GPU (two
//! device-local copies, cheap next to the link). [`GatherMode::Broadcasts`] is NCCL's
//! all-gather-v idiom instead: one `ncclBroadcast` per shard, rooted at its GPU, into its rows
//! of y, in one group; measured much slower on H200s (see docs/BENCHMARKS.md), kept to compare.
//!
//! With `chunks` > 1 each shard is cut further into chunks (each planned on its own): chunk c's
//! all-gather runs on a second stream while chunk c + 1's product runs. On H200s this measured
//! slower than one chunk (every collective pays NCCL's ~50 us floor again); kept to compare.
//! The other modes exchange y without NCCL, through augur's collectives
//! (`augur_kernels::cuda::comm`): x and the whole y live in two registered buffers on every
//! GPU that take turns; after its product each shard copies its y rows into the whole y at
//! their place and the pattern (LL, pull, push or copy engines) brings every other shard's rows.
//! [`GatherMode::Auto`] (the default) asks the communication-pattern model which of these (or
//! NCCL) is fastest for this all-gather: its bytes and the number of GPUs.
//!
//! One thread per GPU, as NCCL recommends: each owns its GPU, its plan and its communicator
//! (`ncclCommInitRank` with a shared unique id) and waits for commands from the caller.

use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;

use augur_datasets::Csr;

use augur_kernels::cpu::split_rows_by_nnz;
use augur_kernels::cuda::comm::{CommGroup, GroupOptions, Pattern, RankComm};
use augur_kernels::cuda::{self, GpuScalar};
use augur_models::comm::CommModel;

use cudarc::nccl::{result as nccl, sys as nccl_sys, NcclType};
use serde::Serialize;

use crate::plan::check_size;
use crate::{AugurError, Decision, PlanOptions, SetupCost};

mod gather;
mod halo;
pub mod launch;
mod partition;
mod shard;

use gather::choose_gather;
pub use gather::{gather_choice, GatherChoice, GatherMode};
pub use halo::{halo_plan, HaloShard, HaloTraffic};
use partition::shard;
pub use partition::{partition_rows, shard_traffic, ShardTraffic, MAX_SHARDS};
use shard::{worker, WorkerCtx};

/// One shard as planned on its GPU.
#[derive(Debug, Clone, Serialize)]
pub struct ShardInfo {
    pub rank: usize,
    /// Chunk of the shard (0 without chunks).
    pub chunk: usize,
    pub gpu: usize,
    pub device: String,
    pub rows: Range<usize>,
    pub nnz: usize,
    pub decision: Decision,
    pub setup: SetupCost,
}

/// Device times of one shard (medians of event-timed repetitions, seconds).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ShardProfile {
    pub rank: usize,
    /// The shard's product alone.
    pub kernel_s: f64,
    /// The all-gather alone (0 on one GPU).
    pub gather_s: f64,
    /// Product then all-gather, as one iteration runs them.
    pub step_s: f64,
}

/// How a [`MultiGpuSpmv`] is made.
#[derive(Clone)]
#[non_exhaustive]
pub struct MultiOptions {
    /// How each shard (chunk) is planned.
    pub plan: PlanOptions,
    /// Chunks per shard, each all-gathered while the next is computed (1: no overlap).
    pub chunks: usize,
    pub gather: GatherMode,
    /// The communication-pattern model for [`GatherMode::Auto`] (default: the built-in one).
    pub comm_model: Option<Arc<CommModel>>,
}

/// Builder-style setters (the struct is `#[non_exhaustive]`: start from the default and set
/// what differs, so new options do not break callers).
impl MultiOptions {
    /// Sets [`MultiOptions::plan`].
    pub fn plan(mut self, v: PlanOptions) -> Self {
        self.plan = v;
        self
    }

    /// Sets [`MultiOptions::chunks`].
    pub fn chunks(mut self, v: usize) -> Self {
        self.chunks = v;
        self
    }

    /// Sets [`MultiOptions::gather`].
    pub fn gather(mut self, v: GatherMode) -> Self {
        self.gather = v;
        self
    }

    /// Sets [`MultiOptions::comm_model`].
    pub fn comm_model(mut self, v: Arc<CommModel>) -> Self {
        self.comm_model = Some(v);
        self
    }
}

impl Default for MultiOptions {
    fn default() -> Self {
        MultiOptions {
            plan: PlanOptions::default(),
            chunks: 1,
            gather: GatherMode::Auto,
            comm_model: None,
        }
    }
}

/// Which rows every (chunk, shard) piece holds: `pieces[c][s]`.
struct Layout {
    pieces: Vec<Vec<Range<usize>>>,
    /// Longest piece of each chunk over shards (the padded all-gather count).
    maxc: Vec<usize>,
}

enum Cmd<T> {
    /// Copy x in, one product, all-gather; rank 0 sends y back when `want_y`.
    Run {
        x: Arc<Vec<T>>,
        want_y: bool,
    },
    /// `steps` times: product, all-gather, y becomes x (square matrices).
    Iterate {
        steps: usize,
    },
    SetX(Arc<Vec<T>>),
    GetX,
    Profile {
        warmup: usize,
        reps: usize,
    },
}

enum Reply<T> {
    Done,
    Vector(Vec<T>),
    Profile(ShardProfile),
}

type Answer<T> = (usize, Result<Reply<T>, AugurError>);

struct Worker<T> {
    tx: Sender<Cmd<T>>,
    handle: Option<JoinHandle<()>>,
}

/// SpMV on N GPUs with replicated x and all-gathered y.
pub struct MultiGpuSpmv<T: GpuScalar + NcclType> {
    rows: usize,
    cols: usize,
    shards: Vec<ShardInfo>,
    workers: Vec<Worker<T>>,
    answers: Receiver<Answer<T>>,
    /// A worker failed mid-collective: the others may be blocked in NCCL.
    poisoned: bool,
    gather: GatherChoice,
}

fn nccl_err(what: &'static str) -> impl Fn(nccl::NcclError) -> AugurError {
    move |e| AugurError::Nccl(format!("{what}: {e:?}"))
}

/// Whether libnccl can be loaded (checked before cudarc would panic).
pub fn nccl_available() -> bool {
    // SAFETY: only tries to dlopen libnccl by its usual names.
    unsafe { nccl_sys::is_culib_present() }
}

impl<T: GpuScalar + NcclType> MultiGpuSpmv<T> {
    /// Plan `a` on GPUs `0..gpus`, one chunk per shard, padded all-gather.
    pub fn new(a: &Csr<T>, gpus: usize, plan: PlanOptions) -> Result<Self, AugurError> {
        let ordinals: Vec<usize> = (0..gpus).collect();
        Self::on_devices(
            a,
            &ordinals,
            MultiOptions {
                plan,
                ..MultiOptions::default()
            },
        )
    }

    /// Plan `a` on the GPUs `ordinals` (shard i on `ordinals[i]`).
    pub fn on_devices(
        a: &Csr<T>,
        ordinals: &[usize],
        opts: MultiOptions,
    ) -> Result<Self, AugurError> {
        check_size(a)?;
        if opts.chunks == 0 {
            return Err(AugurError::Invalid("chunks must be at least 1".into()));
        }
        let n = ordinals.len();
        if n == 0 {
            return Err(AugurError::Invalid(
                "MultiGpuSpmv needs at least one GPU".into(),
            ));
        }
        let present = cuda::available()?;
        if let Some(&o) = ordinals.iter().find(|&&o| o >= present) {
            return Err(AugurError::NotEnoughGpus {
                asked: o.max(n - 1) + 1,
                present,
            });
        }
        if n > present {
            return Err(AugurError::NotEnoughGpus { asked: n, present });
        }
        let mut seen = ordinals.to_vec();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != n {
            return Err(AugurError::Invalid(format!(
                "GPU ordinals {ordinals:?} name a GPU twice"
            )));
        }
        let gather = choose_gather(a, ordinals, &opts)?;
        let mode = gather.mode;
        if opts.chunks > 1 && n > 1 && mode.pattern().is_some() {
            return Err(AugurError::Invalid(format!(
                "the {} exchange takes one chunk per shard",
                mode.name()
            )));
        }
        let use_nccl = n > 1 && matches!(mode, GatherMode::AllGather | GatherMode::Broadcasts);
        if use_nccl && !nccl_available() {
            return Err(AugurError::Nccl(
                "libnccl is not installed (or not on LD_LIBRARY_PATH); use one GPU".into(),
            ));
        }
        let id = if use_nccl {
            Some(nccl::get_uniqueid().map_err(nccl_err("ncclGetUniqueId"))?)
        } else {
            None
        };
        let bounds = partition_rows(a, n);
        // One GPU has nothing to overlap: one chunk.
        let chunks = if n == 1 { 1 } else { opts.chunks };
        let ptr = a.indptr();
        let ptr = ptr.raw_storage();
        let cuts: Vec<Vec<usize>> = (0..n)
            .map(|s| split_rows_by_nnz(ptr, bounds[s]..bounds[s + 1], chunks))
            .collect();
        let pieces: Vec<Vec<Range<usize>>> = (0..chunks)
            .map(|c| (0..n).map(|s| cuts[s][c]..cuts[s][c + 1]).collect())
            .collect();
        let maxc = pieces
            .iter()
            .map(|p| p.iter().map(|r| r.len()).max().unwrap_or(0))
            .collect();
        let layout = Arc::new(Layout { pieces, maxc });
        let barrier = Arc::new(Barrier::new(n));
        let failed = Arc::new(AtomicBool::new(false));
        // augur's patterns: x and the whole y in two registered buffers per GPU.
        let mut ranks: Vec<Option<RankComm>> = (0..n).map(|_| None).collect();
        if let (true, Some(p)) = (n > 1, mode.pattern()) {
            let size = std::mem::size_of::<T>();
            let total = a.rows() * size;
            let group = CommGroup::new(
                ordinals,
                &GroupOptions::new(a.rows().max(a.cols()) * size)
                    .slots(2)
                    .ll_bytes(if p == Pattern::Ll {
                        total.div_ceil(n).next_multiple_of(4) + 16
                    } else {
                        0
                    }),
            )
            .map_err(AugurError::Kernel)?;
            for (slot, rc) in ranks.iter_mut().zip(group) {
                *slot = Some(rc);
            }
        }
        let (answer_tx, answers) = channel::<Answer<T>>();
        let (setup_tx, setup_rx) = channel::<(usize, Result<Vec<ShardInfo>, AugurError>)>();
        let mut workers = Vec::with_capacity(n);
        for ((rank, &ordinal), rc) in ordinals.iter().enumerate().zip(ranks) {
            let parts = (0..chunks)
                .map(|c| shard(a, layout.pieces[c][rank].clone()))
                .collect::<Result<Vec<_>, _>>()?;
            let (tx, rx) = channel::<Cmd<T>>();
            let ctx = WorkerCtx {
                rank,
                world: n,
                ordinal,
                id,
                layout: layout.clone(),
                total_rows: a.rows(),
                cols: a.cols(),
                opts: opts.plan.clone(),
                gather: mode,
                barrier: barrier.clone(),
                failed: failed.clone(),
                rc,
            };
            let (answer_tx, setup_tx) = (answer_tx.clone(), setup_tx.clone());
            let handle = std::thread::Builder::new()
                .name(format!("augur-gpu{ordinal}"))
                .spawn(move || worker(ctx, parts, rx, setup_tx, answer_tx))
                .map_err(|e| AugurError::Invalid(format!("spawning a GPU thread: {e}")))?;
            workers.push(Worker {
                tx,
                handle: Some(handle),
            });
        }
        drop(setup_tx);
        let mut shards: Vec<Option<Vec<ShardInfo>>> = vec![None; n];
        let mut first_err = None;
        for _ in 0..n {
            match setup_rx.recv() {
                Ok((r, Ok(info))) => shards[r] = Some(info),
                Ok((_, Err(e))) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(AugurError::Invalid(
                        "a GPU thread stopped during setup".into(),
                    ));
                    break;
                }
            }
        }
        let mut me = MultiGpuSpmv {
            rows: a.rows(),
            cols: a.cols(),
            shards: Vec::new(),
            workers,
            answers,
            poisoned: false,
            gather,
        };
        if let Some(e) = first_err {
            return Err(e);
        }
        me.shards = shards
            .into_iter()
            .flat_map(|s| s.expect("every shard answered"))
            .collect();
        Ok(me)
    }

    /// How y is exchanged, and why.
    pub fn gather(&self) -> &GatherChoice {
        &self.gather
    }

    /// Every planned piece: shard by shard, chunk by chunk.
    pub fn shards(&self) -> &[ShardInfo] {
        &self.shards
    }

    pub fn gpus(&self) -> usize {
        self.workers.len()
    }

    /// Send `cmd(rank)` to every worker and collect the answers in rank order.
    fn all(&mut self, cmd: impl Fn(usize) -> Cmd<T>) -> Result<Vec<Reply<T>>, AugurError> {
        if self.poisoned {
            return Err(AugurError::Invalid(
                "an earlier failure on one GPU left the others waiting in NCCL; make a new \
                 MultiGpuSpmv"
                    .into(),
            ));
        }
        let n = self.workers.len();
        for (r, w) in self.workers.iter().enumerate() {
            if w.tx.send(cmd(r)).is_err() {
                self.poisoned = true;
                return Err(AugurError::Invalid(format!(
                    "the thread of GPU shard {r} stopped"
                )));
            }
        }
        let mut out: Vec<Option<Reply<T>>> = (0..n).map(|_| None).collect();
        for _ in 0..n {
            match self.answers.recv() {
                Ok((r, Ok(reply))) => out[r] = Some(reply),
                Ok((r, Err(e))) => {
                    self.poisoned = n > 1;
                    return Err(AugurError::Invalid(format!("GPU shard {r}: {e}")));
                }
                Err(_) => {
                    self.poisoned = true;
                    return Err(AugurError::Invalid("a GPU thread stopped".into()));
                }
            }
        }
        Ok(out.into_iter().map(|r| r.expect("answered")).collect())
    }

    fn square(&self, what: &str) -> Result<(), AugurError> {
        if self.rows != self.cols {
            return Err(AugurError::Invalid(format!(
                "{what} makes y the next x, which needs a square matrix; this one is {} x {}",
                self.rows, self.cols
            )));
        }
        Ok(())
    }

    /// `y = A x` with host vectors (x copied to every GPU; y read from the first).
    pub fn run(&mut self, x: &[T], y: &mut [T]) -> Result<(), AugurError> {
        augur_kernels::error::check_dims(self.rows, self.cols, x.len(), y.len())?;
        let x = Arc::new(x.to_vec());
        let replies = self.all(|r| Cmd::Run {
            x: x.clone(),
            want_y: r == 0,
        })?;
        match replies.into_iter().next() {
            Some(Reply::Vector(v)) => {
                y.copy_from_slice(&v);
                Ok(())
            }
            _ => Err(AugurError::Invalid("GPU shard 0 sent no y".into())),
        }
    }

    /// Set the iterate x on every GPU (square matrices).
    pub fn set_x(&mut self, x: &[T]) -> Result<(), AugurError> {
        self.square("set_x")?;
        augur_kernels::error::check_dims(self.rows, self.cols, x.len(), self.rows)?;
        let x = Arc::new(x.to_vec());
        self.all(|_| Cmd::SetX(x.clone())).map(|_| ())
    }

    /// `steps` times `x = A x`, all on the GPUs (square matrices); returns when done.
    pub fn iterate(&mut self, steps: usize) -> Result<(), AugurError> {
        self.square("iterate")?;
        self.all(|_| Cmd::Iterate { steps }).map(|_| ())
    }

    /// The current iterate x (from the first GPU).
    pub fn x(&mut self) -> Result<Vec<T>, AugurError> {
        let replies = self.all(|_| Cmd::GetX)?;
        match replies.into_iter().next() {
            Some(Reply::Vector(v)) => Ok(v),
            _ => Err(AugurError::Invalid("GPU shard 0 sent no x".into())),
        }
    }

    /// Event-timed medians per shard: the product alone, the all-gather alone, both.
    pub fn profile(&mut self, warmup: usize, reps: usize) -> Result<Vec<ShardProfile>, AugurError> {
        self.all(|_| Cmd::Profile { warmup, reps })?
            .into_iter()
            .map(|r| match r {
                Reply::Profile(p) => Ok(p),
                _ => Err(AugurError::Invalid("a GPU shard sent no profile".into())),
            })
            .collect()
    }
}

impl<T: GpuScalar + NcclType> Drop for MultiGpuSpmv<T> {
    fn drop(&mut self) {
        let handles: Vec<_> = self
            .workers
            .iter_mut()
            .filter_map(|w| w.handle.take())
            .collect();
        // Closing the channels ends the workers' loops.
        self.workers.clear();
        if !self.poisoned {
            for h in handles {
                let _ = h.join();
            }
        }
        // Poisoned: a worker may be blocked in NCCL forever; leave it to the process's exit.
    }
}
