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
//! [`GatherMode::Halo`] exchanges only what each shard reads (issue 23): every shard splits its
//! rows into a local block (its own columns) and a remote block (the others'), sends the x
//! entries its neighbours read with NCCL send/recv on a second stream while the local block is
//! multiplied, then multiplies the remote block and adds it in (`blocks.rs`). x and y are then
//! kept by rows: each GPU holds its own. [`GatherMode::Auto`] takes it when the busiest shard's
//! halo is well under a large enough all-gather ([`HALO_SHARE`], [`HALO_MIN_BYTES`]).
//!
//! [`MultiGpuSpmv::cg`] runs Jacobi-preconditioned conjugate gradients on the GPUs, with no host
//! round trip per iteration (`shard/cg.rs`).
//!
//! One thread per GPU, as NCCL recommends: each owns its GPU, its plan and its communicator
//! (`ncclCommInitRank` with a shared unique id) and waits for commands from the caller.

use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;

use augur_datasets::Csr;

use augur_kernels::cuda::comm::{CommGroup, GroupOptions, Pattern, RankComm};
use augur_kernels::cuda::{self, GpuScalar};
use augur_models::comm::CommModel;

use cudarc::nccl::{result as nccl, sys as nccl_sys, NcclType};
use serde::Serialize;

use crate::plan::check_size;
use crate::{AugurError, Decision, PlanOptions, SetupCost};

mod blocks;
mod cut;
mod gather;
mod halo;
pub mod launch;
mod partition;
mod scatter;
mod shard;

pub use blocks::{halo_check, halo_timing, HaloCheck, HaloTiming};
use cut::Cut;
use gather::choose_gather;
pub use gather::{gather_choice, GatherChoice, GatherMode, HALO_MIN_BYTES, HALO_SHARE};
pub use halo::{halo_plan, halo_plan_of, HaloShard, HaloTraffic};
pub use partition::{partition_rows, shard, shard_traffic, ShardTraffic, MAX_SHARDS};
pub use scatter::RankShare;
use shard::{worker, Parts, WorkerCtx};

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
    /// Every rank's GPU idle and past the same point (an all-reduce of one value).
    Barrier,
    Profile {
        warmup: usize,
        reps: usize,
    },
    Cg(Arc<CgRequest<T>>),
}

/// What every GPU needs to run CG.
struct CgRequest<T> {
    b: Vec<T>,
    tol: f64,
    max_iter: usize,
    check_every: usize,
    /// For the modes without an NCCL communicator (opened for CG's sums).
    id: Option<nccl_sys::ncclUniqueId>,
}

/// One GPU's share of a CG run.
struct CgPart<T> {
    x: Vec<T>,
    /// r.r after each iteration (summed over the GPUs), the first before any.
    rr: Vec<f64>,
    bb: f64,
    converged_at: Option<usize>,
    enqueued: usize,
    setup_s: f64,
    solve_s: f64,
}

/// How [`MultiGpuSpmv::cg`] ended.
#[derive(Debug, Clone, Serialize)]
pub struct CgReport<T> {
    /// The solution.
    #[serde(skip)]
    pub x: Vec<T>,
    /// Iterations until ||r|| <= tol ||b|| (None: not within the limit).
    pub iterations: Option<usize>,
    /// Iterations enqueued (checked every `check_every`; those past convergence change nothing).
    pub enqueued: usize,
    /// ||r|| / ||b|| after each iteration, the first before any.
    pub relative_residuals: Vec<f64>,
    /// Seconds (host clock, the first GPU's thread) to upload b and 1 / diag(A), allocate the
    /// vectors and reach r, z, p of x0 = 0; then for the enqueued iterations, until the GPU
    /// finished them (without reading x back).
    pub setup_s: f64,
    pub solve_s: f64,
}

enum Reply<T> {
    Done,
    Vector(Vec<T>),
    Profile(ShardProfile),
    Cg(CgPart<T>),
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
    /// Each GPU's rows (x and y are split by them in the halo mode).
    bounds: Vec<usize>,
    /// Whether the workers lack an NCCL communicator (CG then opens one).
    nccl_less: bool,
    /// GPUs in the group (of every process), and the ranks of this process's workers.
    world: usize,
    local_ranks: Vec<usize>,
}

/// Where the ranks of a [`MultiGpuSpmv`] run.
#[derive(Clone, Copy)]
enum Ranks<'e> {
    /// Every rank a thread of this process, rank i on GPU `ordinals[i]`.
    Local(&'e [usize]),
    /// This process is one rank of a group of processes.
    Process(&'e Group),
}

impl Ranks<'_> {
    /// This process's GPU ordinals, and the GPUs of the group.
    fn gpus(&self) -> (Vec<usize>, usize) {
        match self {
            Ranks::Local(o) => (o.to_vec(), o.len()),
            Ranks::Process(g) => (vec![g.env.local_rank], g.env.world),
        }
    }

    /// The ranks that run here: (rank, GPU ordinal).
    fn here(&self) -> Vec<(usize, usize)> {
        match self {
            Ranks::Local(o) => o.iter().copied().enumerate().collect(),
            Ranks::Process(g) => vec![(g.env.rank, g.env.local_rank)],
        }
    }
}

/// The options and this process's GPUs (`ordinals`, of a group of `n`) are usable.
fn check_gpus(ordinals: &[usize], n: usize, opts: &MultiOptions) -> Result<(), AugurError> {
    if opts.chunks == 0 {
        return Err(AugurError::Invalid("chunks must be at least 1".into()));
    }
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
    if ordinals.len() > present {
        return Err(AugurError::NotEnoughGpus {
            asked: ordinals.len(),
            present,
        });
    }
    let mut seen = ordinals.to_vec();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != ordinals.len() {
        return Err(AugurError::Invalid(format!(
            "GPU ordinals {ordinals:?} name a GPU twice"
        )));
    }
    Ok(())
}

/// This process's place in a group of processes, one GPU each (see
/// [`MultiGpuSpmv::distributed`]).
#[derive(Debug, Clone)]
pub struct Group {
    pub env: launch::RankEnv,
    /// NCCL's unique id, the same on every rank ([`launch::share_nccl_id`]).
    pub id: nccl_sys::ncclUniqueId,
    /// Where the ranks met (rank 0 sends each rank its part of a matrix there:
    /// [`MultiGpuSpmv::distributed_from_root`]).
    pub meeting: launch::Meeting,
    /// How long any rank waits for the others, at any step.
    pub timeout: std::time::Duration,
}

impl Group {
    /// Join the group the launcher started (torchrun, mpirun, srun or RANK/WORLD_SIZE): read
    /// this process's rank, meet at MASTER_ADDR:MASTER_PORT (or AUGUR_RENDEZVOUS) and share
    /// NCCL's unique id, waiting at most `timeout` for every rank. None without a launcher.
    pub fn join(timeout: std::time::Duration) -> Result<Option<Group>, AugurError> {
        let Some(env) = launch::RankEnv::from_env()? else {
            return Ok(None);
        };
        let meeting = launch::Meeting::from_vars(|k| std::env::var(k).ok())?.ok_or_else(|| {
            AugurError::Invalid(
                "no meeting place: set MASTER_ADDR and MASTER_PORT (rank 0's host and a free \
                 port), or AUGUR_RENDEZVOUS=host:port or file:PATH"
                    .into(),
            )
        })?;
        let id = launch::share_nccl_id(&env, &meeting, timeout)?;
        Ok(Some(Group {
            env,
            id,
            meeting,
            timeout,
        }))
    }
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
        Self::build(a, Ranks::Local(ordinals), opts)
    }

    /// This process's part of a `MultiGpuSpmv` across processes, one GPU each (issue 23): rank
    /// `group.env.rank` of `group.env.world`, on GPU `local_rank` of this host, its shard's
    /// rows of `a` only (every rank passes the same matrix and cuts it the same way). The
    /// exchange is NCCL's: the halo (send/recv) or the padded all-gather; [`GatherMode::Auto`]
    /// takes the halo by the traffic rule ([`HALO_SHARE`]), else the all-gather. Every NCCL
    /// step and every wait for the GPU has `group.timeout`: a rank that stops makes the others
    /// fail with an error after it, not hang.
    ///
    /// Every rank makes the same calls in the same order. `run`, `x` and `cg` fill only this
    /// rank's rows in the halo mode (the all-gather modes: every row).
    pub fn distributed(a: &Csr<T>, group: &Group, opts: MultiOptions) -> Result<Self, AugurError> {
        Self::build(a, Ranks::Process(group), opts)
    }

    fn build(a: &Csr<T>, ranks_at: Ranks<'_>, opts: MultiOptions) -> Result<Self, AugurError> {
        check_size(a)?;
        let (ordinals, n) = ranks_at.gpus();
        check_gpus(&ordinals, n, &opts)?;
        let gather = |bounds: &[usize]| match ranks_at {
            Ranks::Local(o) => choose_gather(a, o, &opts, bounds),
            Ranks::Process(_) => process_gather(a, n, &opts, bounds),
        };
        let cut = Cut::new(a, n, opts.chunks, gather)?;
        let here = ranks_at.here();
        let mine: Vec<usize> = here.iter().map(|h| h.0).collect();
        let parts = cut.parts_of(a, &mine)?.into_iter().map(|p| p.0).collect();
        Self::spawn(cut, parts, ranks_at, opts)
    }

    /// Start the workers of the ranks that run here on their parts (`parts[i]` for the i-th of
    /// `ranks_at.here()`), cut by `cut`, and wait for their set-up. The caller checked the GPUs
    /// and options first ([`check_gpus`], before the matrix was cut).
    fn spawn(
        cut: Cut,
        parts: Vec<Parts<T>>,
        ranks_at: Ranks<'_>,
        opts: MultiOptions,
    ) -> Result<Self, AugurError> {
        let (ordinals, n) = ranks_at.gpus();
        let Cut {
            rows,
            cols,
            bounds,
            gather,
            layout,
            chunks: _,
            ..
        } = cut;
        let mode = gather.mode;
        let use_nccl = n > 1
            && matches!(
                mode,
                GatherMode::AllGather | GatherMode::Broadcasts | GatherMode::Halo
            );
        if use_nccl && !nccl_available() {
            return Err(AugurError::Nccl(
                "libnccl is not installed (or not on LD_LIBRARY_PATH); use one GPU".into(),
            ));
        }
        let id = match (use_nccl, ranks_at) {
            (false, _) => None,
            (true, Ranks::Local(_)) => {
                Some(nccl::get_uniqueid().map_err(nccl_err("ncclGetUniqueId"))?)
            }
            (true, Ranks::Process(g)) => Some(g.id),
        };
        // The ranks that run here: (rank, GPU ordinal).
        let here = ranks_at.here();
        if parts.len() != here.len() {
            return Err(AugurError::Invalid(format!(
                "{} parts for the {} ranks of this process",
                parts.len(),
                here.len()
            )));
        }
        let process = match ranks_at {
            Ranks::Local(_) => None,
            Ranks::Process(g) => Some((g.env, g.timeout)),
        };
        let layout = Arc::new(layout);
        let barrier = Arc::new(Barrier::new(here.len()));
        let failed = Arc::new(AtomicBool::new(false));
        // augur's patterns: x and the whole y in two registered buffers per GPU.
        let mut ranks: Vec<Option<RankComm>> = (0..here.len()).map(|_| None).collect();
        if let (true, Some(p), None) = (n > 1, mode.pattern(), process) {
            let size = std::mem::size_of::<T>();
            let total = rows * size;
            let group = CommGroup::new(
                &ordinals,
                &GroupOptions::new(rows.max(cols) * size)
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
        let mut workers = Vec::with_capacity(here.len());
        for ((&(rank, ordinal), rc), parts) in here.iter().zip(ranks).zip(parts) {
            let (tx, rx) = channel::<Cmd<T>>();
            let ctx = WorkerCtx {
                rank,
                world: n,
                ordinal,
                id,
                layout: layout.clone(),
                total_rows: rows,
                cols,
                opts: opts.plan.clone(),
                gather: mode,
                barrier: barrier.clone(),
                failed: failed.clone(),
                rc,
                process,
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
        let local_ranks: Vec<usize> = here.iter().map(|h| h.0).collect();
        let at = |r: usize| {
            local_ranks
                .iter()
                .position(|&q| q == r)
                .expect("a rank of here")
        };
        let mut shards: Vec<Option<Vec<ShardInfo>>> = vec![None; here.len()];
        let mut first_err = None;
        for _ in 0..here.len() {
            match setup_rx.recv() {
                Ok((r, Ok(info))) => shards[at(r)] = Some(info),
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
            rows,
            cols,
            shards: Vec::new(),
            workers,
            answers,
            poisoned: false,
            gather,
            bounds,
            nccl_less: n > 1 && !use_nccl,
            world: n,
            local_ranks,
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

    /// GPUs in the group (with [`MultiGpuSpmv::distributed`]: of every process).
    pub fn gpus(&self) -> usize {
        self.world
    }

    /// The rows each GPU holds: rank r's are `row_bounds()[r]..row_bounds()[r + 1]`.
    pub fn row_bounds(&self) -> &[usize] {
        &self.bounds
    }

    /// The ranks whose GPUs this process drives (all of them, except across processes).
    pub fn local_ranks(&self) -> &[usize] {
        &self.local_ranks
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
        for (i, w) in self.workers.iter().enumerate() {
            let r = self.local_ranks[i];
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
                Ok((r, Ok(reply))) => {
                    let i = self.local_ranks.iter().position(|&q| q == r);
                    out[i.expect("a rank of this process")] = Some(reply)
                }
                Ok((r, Err(e))) => {
                    self.poisoned = self.world > 1;
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

    /// Whether x and y are split by rows over the GPUs (the halo mode).
    fn by_rows(&self) -> bool {
        self.gather.mode == GatherMode::Halo
    }

    /// One whole vector from every GPU's reply: the first's, or (by rows) each one's rows.
    fn assemble(
        &self,
        replies: Vec<Reply<T>>,
        out: &mut [T],
        what: &str,
    ) -> Result<(), AugurError> {
        let by_rows = self.by_rows();
        for (i, reply) in replies.into_iter().enumerate() {
            if i > 0 && !by_rows {
                break;
            }
            let r = self.local_ranks[i];
            let Reply::Vector(v) = reply else {
                return Err(AugurError::Invalid(format!("GPU shard {r} sent no {what}")));
            };
            let at = if by_rows {
                self.bounds[r]..self.bounds[r + 1]
            } else {
                0..out.len()
            };
            if v.len() != at.len() {
                return Err(AugurError::Invalid(format!(
                    "GPU shard {r} sent {} values of {what} for {} rows",
                    v.len(),
                    at.len()
                )));
            }
            out[at].copy_from_slice(&v);
        }
        Ok(())
    }

    /// `y = A x` with host vectors (x copied to every GPU, or its rows to each in the halo
    /// mode; y read from the first, or from each).
    pub fn run(&mut self, x: &[T], y: &mut [T]) -> Result<(), AugurError> {
        augur_kernels::error::check_dims(self.rows, self.cols, x.len(), y.len())?;
        let x = Arc::new(x.to_vec());
        let by_rows = self.by_rows();
        // The whole y from the first GPU of this process (rank 0's only in one process; across
        // processes each rank's own), or every GPU's rows.
        let first = self.local_ranks[0];
        let replies = self.all(|r| Cmd::Run {
            x: x.clone(),
            want_y: r == first || by_rows,
        })?;
        self.assemble(replies, y, "y")
    }

    /// Set the iterate x on every GPU (square matrices).
    pub fn set_x(&mut self, x: &[T]) -> Result<(), AugurError> {
        self.square("set_x")?;
        augur_kernels::error::check_dims(self.rows, self.cols, x.len(), self.rows)?;
        let x = Arc::new(x.to_vec());
        self.all(|_| Cmd::SetX(x.clone())).map(|_| ())
    }

    /// Return once every GPU of the group is idle and every rank has reached this call: across
    /// processes an all-reduce of one value through NCCL (bounded by the group's timeout), so
    /// that a clock started after it starts with the other ranks' (time across processes from
    /// here, not from a rank's own start).
    pub fn barrier(&mut self) -> Result<(), AugurError> {
        self.all(|_| Cmd::Barrier).map(|_| ())
    }

    /// `steps` times `x = A x`, all on the GPUs (square matrices); returns when done.
    pub fn iterate(&mut self, steps: usize) -> Result<(), AugurError> {
        self.square("iterate")?;
        self.all(|_| Cmd::Iterate { steps }).map(|_| ())
    }

    /// The current iterate x (from the first GPU, or each GPU's rows in the halo mode).
    pub fn x(&mut self) -> Result<Vec<T>, AugurError> {
        let replies = self.all(|_| Cmd::GetX)?;
        let mut x = vec![T::zero(); self.cols];
        self.assemble(replies, &mut x, "x")?;
        Ok(x)
    }

    /// Solve `A x = b` by Jacobi-preconditioned conjugate gradients on the GPUs (A symmetric
    /// positive definite; x0 = 0) until `||r|| <= tol ||b||` or `max_iter` iterations. Every
    /// vector and scalar stays in device memory; the host reads one scalar every `check_every`
    /// iterations (more iterations may be enqueued past convergence: they change nothing).
    /// Leaves the GPUs' x (the product's input) as the last search direction.
    pub fn cg(
        &mut self,
        b: &[T],
        tol: f64,
        max_iter: usize,
        check_every: usize,
    ) -> Result<CgReport<T>, AugurError> {
        self.square("cg")?;
        augur_kernels::error::check_dims(self.rows, self.cols, self.cols, b.len())?;
        if !(tol.is_finite() && tol >= 0.0) {
            return Err(AugurError::Invalid(format!(
                "CG tolerance {tol}: not a finite >= 0"
            )));
        }
        let id = if self.nccl_less {
            if !nccl_available() {
                return Err(AugurError::Nccl(
                    "CG on more than one GPU sums its dot products with NCCL, which is not \
                     installed"
                        .into(),
                ));
            }
            Some(nccl::get_uniqueid().map_err(nccl_err("ncclGetUniqueId"))?)
        } else {
            None
        };
        let req = Arc::new(CgRequest {
            b: b.to_vec(),
            tol,
            max_iter,
            check_every: check_every.max(1),
            id,
        });
        let replies = self.all(|_| Cmd::Cg(req.clone()))?;
        self.nccl_less = false;
        let mut x = vec![T::zero(); self.rows];
        let mut first: Option<CgPart<T>> = None;
        for (i, reply) in replies.into_iter().enumerate() {
            let r = self.local_ranks[i];
            let Reply::Cg(part) = reply else {
                return Err(AugurError::Invalid(format!(
                    "GPU shard {r} sent no CG result"
                )));
            };
            let at = self.bounds[r]..self.bounds[r + 1];
            if part.x.len() != at.len() {
                return Err(AugurError::Invalid(format!(
                    "GPU shard {r} sent {} values of x for {} rows",
                    part.x.len(),
                    at.len()
                )));
            }
            x[at].copy_from_slice(&part.x);
            first.get_or_insert(part);
        }
        let p = first.ok_or_else(|| AugurError::Invalid("no GPU answered".into()))?;
        let bnorm = p.bb.sqrt();
        Ok(CgReport {
            x,
            iterations: p.converged_at,
            enqueued: p.enqueued,
            setup_s: p.setup_s,
            solve_s: p.solve_s,
            relative_residuals: p
                .rr
                .iter()
                .map(|rr| if bnorm > 0.0 { rr.sqrt() / bnorm } else { 0.0 })
                .collect(),
        })
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

/// The exchange across processes: NCCL's (augur's patterns need every GPU in one process);
/// Auto: the halo by the traffic rule, else the padded all-gather.
fn process_gather<T: Sync>(
    a: &Csr<T>,
    n: usize,
    opts: &MultiOptions,
    bounds: &[usize],
) -> Result<GatherChoice, AugurError> {
    if opts.gather.pattern().is_some() {
        return Err(AugurError::Invalid(format!(
            "the {} exchange reads peers' memory, which needs every GPU in one process; across \
             processes use halo, all-gather or broadcasts",
            opts.gather.name()
        )));
    }
    let mut c = gather_choice(
        None,
        opts.gather,
        a.rows() * std::mem::size_of::<T>(),
        n,
        opts.chunks,
        augur_features::message::LinkType::Nvlink,
        "",
    );
    if opts.gather == GatherMode::Auto && n >= 2 && opts.chunks == 1 && a.rows() == a.cols() {
        c.notes.clear();
        let (take, halo_bytes, note) = gather::halo_rule(a, bounds, "across processes: NCCL; ");
        c.notes.push(note);
        if take {
            c.mode = GatherMode::Halo;
            c.bytes = halo_bytes;
        }
    }
    Ok(c)
}

/// 1 / a_ii per row of `a`, rows `first..` of a square matrix (row r's diagonal in column
/// `first + r`; 1 where it is 0 or absent): CG's Jacobi preconditioner.
fn inverse_diagonal<T: GpuScalar>(a: augur_datasets::CsrRef<'_, T>, first: usize) -> Vec<T> {
    use rayon::prelude::*;
    let (ptr, idx, val) = (a.indptr(), a.indices(), a.data());
    (0..a.rows())
        .into_par_iter()
        .map(|r| {
            let (s, e) = (ptr[r] as usize, ptr[r + 1] as usize);
            match idx[s..e].binary_search(&((first + r) as i32)) {
                Ok(k) if val[s + k] != T::zero() => T::one() / val[s + k],
                _ => T::one(),
            }
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jacobi_diagonal_is_one_where_the_diagonal_is_missing_or_zero() {
        let a = Csr::new(
            (3, 3),
            vec![0, 2, 3, 4],
            vec![0, 2, 0, 2],
            vec![4.0f64, 1.0, 5.0, 0.0],
        );
        assert_eq!(inverse_diagonal((&a).into(), 0), vec![0.25, 1.0, 1.0]);
        // A shard: rows 1 and 2 of a 3 x 3 matrix, their diagonals in columns 1 and 2.
        let t = Csr::new((2, 3), vec![0, 1, 2], vec![1, 2], vec![2.0f64, 8.0]);
        assert_eq!(inverse_diagonal((&t).into(), 1), vec![0.5, 0.125]);
    }

    /// Across processes only NCCL's exchanges exist; auto picks the halo or the all-gather by
    /// the traffic rule and says so.
    #[test]
    fn processes_exchange_through_nccl_only() {
        use augur_datasets::generate::Generator;
        let a: Csr<f64> = Generator::parse("stencil3d:nx=120,points=7")
            .unwrap()
            .generate()
            .unwrap();
        let bounds = partition_rows(&a, 2);
        for mode in [
            GatherMode::Ll,
            GatherMode::Pull,
            GatherMode::Push,
            GatherMode::CopyEngine,
        ] {
            let opts = MultiOptions::default().gather(mode);
            let e = process_gather(&a, 2, &opts, &bounds)
                .unwrap_err()
                .to_string();
            assert!(e.contains("needs every GPU in one process"), "{e}");
        }
        let c = process_gather(&a, 2, &MultiOptions::default(), &bounds).unwrap();
        assert_eq!(c.mode, GatherMode::Halo);
        assert!(
            c.notes[0].starts_with("across processes: NCCL"),
            "{:?}",
            c.notes
        );
        let small: Csr<f64> = Generator::parse("stencil2d:nx=30")
            .unwrap()
            .generate()
            .unwrap();
        let b = partition_rows(&small, 2);
        let c = process_gather(&small, 2, &MultiOptions::default(), &b).unwrap();
        assert_eq!(c.mode, GatherMode::AllGather);
        let opts = MultiOptions::default().gather(GatherMode::Halo);
        assert_eq!(
            process_gather(&small, 2, &opts, &b).unwrap().mode,
            GatherMode::Halo
        );
    }
}
