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

use std::ffi::c_void;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;

use augur_datasets::Csr;
use augur_features::attention::Dtype;
use augur_features::message::{Collective, LinkProbe, LinkType, MessageShape};
use augur_kernels::cpu::split_rows_by_nnz;
use augur_kernels::cuda::comm::{CommGroup, GroupOptions, NcclComm, Pattern, RankComm};
use augur_kernels::cuda::{self, DriverLinkProbe, GpuScalar, TimingPlan};
use augur_kernels::{median, KernelError};
use augur_models::comm::CommModel;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use cudarc::nccl::{result as nccl, sys as nccl_sys, NcclType};
use serde::Serialize;

use crate::plan::check_size;
use crate::{AugurError, Backend, Decision, PlanOptions, SetupCost, SpmvPlan};

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

/// How the y shards reach every GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GatherMode {
    /// The communication-pattern model's pick for this all-gather (bytes of y, GPUs, link):
    /// one of the modes below; NCCL (all-gather) with chunks > 1.
    #[default]
    Auto,
    /// Padded `ncclAllGather` plus local copies.
    AllGather,
    /// One grouped `ncclBroadcast` per shard (all-gather-v).
    Broadcasts,
    /// augur's LL all-gather (data and flag in one 8-byte store; no barrier).
    Ll,
    /// augur's pull all-gather (each GPU reads the other shards' rows over peer access).
    Pull,
    /// augur's push all-gather (each GPU writes its rows into every other GPU's y).
    Push,
    /// Copy engines (`cuMemcpyAsync` between peers), ordered by stream flag writes and waits,
    /// on the group's own stream joined to the products' stream by events. (While the products
    /// ran on the legacy default stream, this hung in 8 of 16 checks on H200 x2; on their own
    /// non-blocking stream, 0 of 16: `bench/results/comm-h200x2-ll-2026-11-22/ce-hang.csv`.)
    CopyEngine,
}

impl GatherMode {
    pub fn name(self) -> &'static str {
        match self {
            GatherMode::Auto => "auto",
            GatherMode::AllGather => "all-gather",
            GatherMode::Broadcasts => "broadcasts",
            GatherMode::Ll => "ll",
            GatherMode::Pull => "pull",
            GatherMode::Push => "push",
            GatherMode::CopyEngine => "copy-engine",
        }
    }

    /// The comm pattern of an augur mode (None for the NCCL modes and Auto).
    pub fn pattern(self) -> Option<Pattern> {
        match self {
            GatherMode::Ll => Some(Pattern::Ll),
            GatherMode::Pull => Some(Pattern::Pull),
            GatherMode::Push => Some(Pattern::Push),
            GatherMode::CopyEngine => Some(Pattern::CopyEngine),
            _ => None,
        }
    }

    /// The mode of a comm model's all-gather pattern.
    pub fn from_pattern(name: &str) -> Option<GatherMode> {
        match Pattern::parse(name)? {
            Pattern::Nccl => Some(GatherMode::AllGather),
            Pattern::Ll => Some(GatherMode::Ll),
            Pattern::Pull => Some(GatherMode::Pull),
            Pattern::Push => Some(GatherMode::Push),
            Pattern::CopyEngine => Some(GatherMode::CopyEngine),
            Pattern::OneShot | Pattern::TwoShot => None,
        }
    }
}

/// How the gather mode was chosen.
#[derive(Debug, Clone, Serialize)]
pub struct GatherChoice {
    pub mode: GatherMode,
    /// The all-gather as the comm model saw it.
    pub bytes: usize,
    pub gpus: usize,
    /// The model's path: `feature = value </>= threshold` per split (empty when not asked).
    pub path: Vec<String>,
    pub notes: Vec<String>,
}

/// How a [`MultiGpuSpmv`] is made.
#[derive(Clone)]
pub struct MultiOptions {
    /// How each shard (chunk) is planned.
    pub plan: PlanOptions,
    /// Chunks per shard, each all-gathered while the next is computed (1: no overlap).
    pub chunks: usize,
    pub gather: GatherMode,
    /// The communication-pattern model for [`GatherMode::Auto`] (default: the built-in one).
    pub comm_model: Option<Arc<CommModel>>,
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

/// Resolve [`GatherMode::Auto`] with the comm model: the all-gather of y (rows x value bytes)
/// on these GPUs (probes the link and the device, then [`gather_choice`]).
fn choose_gather<T>(
    a: &Csr<T>,
    ordinals: &[usize],
    opts: &MultiOptions,
) -> Result<GatherChoice, AugurError> {
    let bytes = a.rows() * std::mem::size_of::<T>();
    let n = ordinals.len();
    if opts.gather != GatherMode::Auto || n < 2 || opts.chunks > 1 {
        // The model is not asked: nothing to probe.
        return Ok(gather_choice(
            None,
            opts.gather,
            bytes,
            n,
            opts.chunks,
            LinkType::Nvlink,
            "",
        ));
    }
    let model = match &opts.comm_model {
        Some(m) => m.clone(),
        None => crate::defaults::comm_model()?,
    };
    let link = DriverLinkProbe
        .group_link(ordinals)
        .map_err(|e| AugurError::Invalid(format!("GPU links: {e}")))?;
    let device = cuda::devices()?
        .get(ordinals[0])
        .map(|d| d.name.clone())
        .unwrap_or_default();
    Ok(gather_choice(
        Some(&model),
        GatherMode::Auto,
        bytes,
        n,
        opts.chunks,
        link,
        &device,
    ))
}

/// How y of `bytes` is exchanged on `n` GPUs of `device` joined by `link` when `mode` is asked
/// for: a mode other than Auto as it is; Auto as the comm model picks it (NCCL's padded
/// all-gather on one GPU, with chunks > 1 or without a model).
pub fn gather_choice(
    model: Option<&CommModel>,
    mode: GatherMode,
    bytes: usize,
    n: usize,
    chunks: usize,
    link: LinkType,
    device: &str,
) -> GatherChoice {
    let mut c = GatherChoice {
        mode,
        bytes,
        gpus: n,
        path: Vec::new(),
        notes: Vec::new(),
    };
    if mode != GatherMode::Auto {
        return c;
    }
    c.mode = GatherMode::AllGather;
    if n < 2 {
        return c;
    }
    if chunks > 1 {
        c.notes
            .push("chunks > 1: NCCL's padded all-gather (augur's patterns take one chunk)".into());
        return c;
    }
    let Some(model) = model else {
        c.notes
            .push("no comm model: NCCL's padded all-gather".into());
        return c;
    };
    // The all-gather moves bytes; the model was trained on f32 and bf16 elements: ask for f32
    // elements of the same bytes.
    let shape = MessageShape {
        collective: Collective::AllGather,
        dtype: Dtype::F32,
        bytes: bytes.next_multiple_of(4),
        world_size: n,
        link,
        gemm: None,
    };
    if device != model.device {
        c.notes.push(format!(
            "the comm model was trained on {}, this is {device}",
            model.device
        ));
    }
    match model.choose(&shape).and_then(GatherMode::from_pattern) {
        Some(m) => {
            c.mode = m;
            c.path = model
                .path(&shape)
                .into_iter()
                .map(|(f, v, t, left)| format!("{f} = {v} {} {t}", if left { "<" } else { ">=" }))
                .collect();
        }
        None => c
            .notes
            .push("the comm model has no all-gather tree: NCCL's padded all-gather".into()),
    }
    c
}

/// Row boundaries cutting `a` into `n` shards of nearly equal nonzeros.
pub fn partition_rows<T>(a: &Csr<T>, n: usize) -> Vec<usize> {
    split_rows_by_nnz(a.indptr().raw_storage(), 0..a.rows(), n)
}

/// What one shard of a square matrix needs from the others each product: the distinct x
/// entries its rows read that other shards own (what a halo exchange would move to it), against
/// the rows of the other shards (what the all-gather moves to it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShardTraffic {
    pub rank: usize,
    pub rows: Range<usize>,
    pub nnz: usize,
    pub halo_entries: usize,
    pub allgather_entries: usize,
}

/// The most shards [`shard_traffic`] analyses: far above any GPU count, far below what would
/// make the per-shard column sets a problem.
pub const MAX_SHARDS: usize = 4096;

/// [`ShardTraffic`] of each of `n` equal-nonzero shards of the square matrix `a` (1 <= n <=
/// rows, n <= [`MAX_SHARDS`]).
pub fn shard_traffic<T: Sync>(a: &Csr<T>, n: usize) -> Result<Vec<ShardTraffic>, AugurError> {
    use rayon::prelude::*;
    if a.rows() != a.cols() {
        return Err(AugurError::Invalid(format!(
            "shard traffic needs a square matrix (x indexed like y); this one is {} x {}",
            a.rows(),
            a.cols()
        )));
    }
    if n == 0 {
        return Err(AugurError::Invalid("at least one shard".into()));
    }
    if n > MAX_SHARDS || n > a.rows().max(1) {
        return Err(AugurError::Invalid(format!(
            "{n} shards of a matrix of {} rows: at most one shard per row and at most \
             {MAX_SHARDS} (each shard is one GPU)",
            a.rows()
        )));
    }
    let bounds = partition_rows(a, n);
    let ptr = a.indptr();
    let ptr = ptr.raw_storage();
    let idx = a.indices();
    Ok((0..n)
        .into_par_iter()
        .map(|s| {
            let own = bounds[s]..bounds[s + 1];
            let (lo, hi) = (ptr[own.start] as usize, ptr[own.end] as usize);
            let mut seen = vec![0u64; a.cols().div_ceil(64)];
            let mut halo = 0;
            for &j in &idx[lo..hi] {
                let j = j as usize;
                if own.contains(&j) {
                    continue;
                }
                let (w, b) = (j / 64, 1u64 << (j % 64));
                if seen[w] & b == 0 {
                    seen[w] |= b;
                    halo += 1;
                }
            }
            ShardTraffic {
                rank: s,
                nnz: hi - lo,
                halo_entries: halo,
                allgather_entries: a.rows() - own.len(),
                rows: own,
            }
        })
        .collect())
}

/// Rows `r` of `a` as a matrix of their own (all columns).
fn shard<T: GpuScalar>(a: &Csr<T>, r: Range<usize>) -> Result<Csr<T>, AugurError> {
    let ptr = a.indptr();
    let ptr = ptr.raw_storage();
    let (s, e) = (ptr[r.start] as usize, ptr[r.end] as usize);
    let indptr: Vec<i32> = ptr[r.start..=r.end].iter().map(|&p| p - s as i32).collect();
    Csr::try_new(
        (r.len(), a.cols()),
        indptr,
        a.indices()[s..e].to_vec(),
        a.data()[s..e].to_vec(),
    )
    .map_err(|(_, _, _, e)| AugurError::Invalid(format!("shard rows {r:?}: {e}")))
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
                &GroupOptions {
                    capacity: a.rows().max(a.cols()) * size,
                    scratch: false,
                    nccl: false,
                    slots: 2,
                    ll_bytes: if p == Pattern::Ll {
                        total.div_ceil(n).next_multiple_of(4) + 16
                    } else {
                        0
                    },
                },
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

struct WorkerCtx {
    rank: usize,
    world: usize,
    ordinal: usize,
    id: Option<nccl_sys::ncclUniqueId>,
    layout: Arc<Layout>,
    total_rows: usize,
    cols: usize,
    opts: PlanOptions,
    gather: GatherMode,
    /// This GPU's rank of augur's collectives (their modes, more than one GPU).
    rc: Option<RankComm>,
    barrier: Arc<Barrier>,
    failed: Arc<AtomicBool>,
}

fn worker<T: GpuScalar + NcclType>(
    mut ctx: WorkerCtx,
    parts: Vec<Csr<T>>,
    rx: Receiver<Cmd<T>>,
    setup_tx: Sender<(usize, Result<Vec<ShardInfo>, AugurError>)>,
    answer_tx: Sender<Answer<T>>,
) {
    let rank = ctx.rank;
    // Open the GPU; if any GPU fails, every worker stops before NCCL's init, which would wait
    // for all ranks forever.
    let backend = Backend::cuda(ctx.ordinal);
    if backend.is_err() {
        ctx.failed.store(true, Ordering::SeqCst);
    }
    ctx.barrier.wait();
    let backend = match backend {
        Ok(b) => b,
        Err(e) => {
            let _ = setup_tx.send((rank, Err(e)));
            return;
        }
    };
    if ctx.failed.load(Ordering::SeqCst) {
        let _ = setup_tx.send((
            rank,
            Err(AugurError::Invalid("another GPU failed to open".into())),
        ));
        return;
    }
    let comm = match ctx.id {
        None => None,
        Some(id) => {
            let mut c = std::ptr::null_mut();
            // SAFETY: out-pointer to a communicator; every rank calls with the same id and
            // world size (on its own thread, its GPU's context current from Backend::cuda).
            let r = unsafe {
                if let Some(g) = backend.as_device().as_cuda() {
                    let _ = g.context().bind_to_thread();
                }
                nccl::comm_init_rank(&mut c, ctx.world as i32, id, rank as i32)
            };
            match r {
                Ok(_) => Some(NcclComm(c)),
                Err(e) => {
                    let _ = setup_tx.send((rank, Err(nccl_err("ncclCommInitRank")(e))));
                    return;
                }
            }
        }
    };
    let shard = Shard::new(&mut ctx, &parts, &backend, comm);
    let mut shard = match shard {
        Ok(s) => s,
        Err(e) => {
            let _ = setup_tx.send((rank, Err(e)));
            return;
        }
    };
    let info = shard
        .plans
        .iter()
        .enumerate()
        .map(|(c, p)| ShardInfo {
            rank,
            chunk: c,
            gpu: ctx.ordinal,
            device: backend.device(),
            rows: ctx.layout.pieces[c][rank].clone(),
            nnz: p.matrix().nnz(),
            decision: p.decision().clone(),
            setup: p.setup().clone(),
        })
        .collect();
    let _ = setup_tx.send((rank, Ok(info)));
    drop(setup_tx);
    while let Ok(cmd) = rx.recv() {
        let r = shard.handle(cmd);
        if answer_tx.send((rank, r)).is_err() {
            break;
        }
    }
}

/// A device vector of a shard: its own allocation, or a view of a registered buffer of augur's
/// collectives (owned by the RankComm, so the view never frees it).
enum Buf<T> {
    Own(CudaSlice<T>),
    Registered(std::mem::ManuallyDrop<CudaSlice<T>>),
}

impl<T> std::ops::Deref for Buf<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        match self {
            Buf::Own(s) => s,
            Buf::Registered(s) => s,
        }
    }
}

impl<T> std::ops::DerefMut for Buf<T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        match self {
            Buf::Own(s) => s,
            Buf::Registered(s) => s,
        }
    }
}

impl<T> Drop for Buf<T> {
    fn drop(&mut self) {
        if let Buf::Registered(s) = self {
            // SAFETY: taken once, here; the memory belongs to the RankComm's buffer.
            let s = unsafe { std::mem::ManuallyDrop::take(s) };
            let _ = s.leak();
        }
    }
}

/// One worker's state: a plan per chunk of its shard, x, and with more than one GPU the whole
/// y, the buffers of the all-gather, a stream for it and the communicator.
struct Shard<'a, T: GpuScalar + NcclType> {
    plans: Vec<SpmvPlan<'a, T>>,
    x: Buf<T>,
    /// The whole y (more than one GPU), gathered from every shard.
    full: Option<Buf<T>>,
    /// Padded send and receive buffers per chunk (GatherMode::AllGather).
    send: Vec<CudaSlice<T>>,
    recv: Vec<CudaSlice<T>>,
    comm: Option<NcclComm>,
    /// augur's collectives, and which registered buffer holds the whole y now.
    rc: Option<RankComm>,
    full_slot: usize,
    compute: Arc<CudaStream>,
    comm_stream: Arc<CudaStream>,
    rank: usize,
    layout: Arc<Layout>,
    gather: GatherMode,
}

impl<'a, T: GpuScalar + NcclType> Shard<'a, T> {
    fn new(
        ctx: &mut WorkerCtx,
        parts: &'a [Csr<T>],
        backend: &Backend,
        comm: Option<NcclComm>,
    ) -> Result<Self, AugurError> {
        let plans = parts
            .iter()
            .map(|p| SpmvPlan::new(p, backend, ctx.opts.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let s = backend
            .as_device()
            .as_cuda()
            .ok_or_else(|| AugurError::Invalid("MultiGpuSpmv runs on GPUs".into()))?;
        let compute = s.stream().clone();
        let comm_stream = compute.fork().map_err(cuda_err)?;
        let mut rc = ctx.rc.take();
        let (x, mut full, mut send, mut recv) = match rc.as_mut() {
            Some(rc) => {
                // The kernel patterns run on the compute stream, right after the product; the
                // copy engines on the group's own stream, joined to the compute stream by
                // events. Neither may be a legacy default stream: a peer copy can wait for it
                // while it waits for the copy's flag (measured: hangs; see GatherMode::CopyEngine).
                if ctx.gather != GatherMode::CopyEngine {
                    rc.use_stream(compute.clone());
                }
                // SAFETY: the group's registered buffers of this GPU, each with room for
                // max(rows, cols) values; they outlive the views (the RankComm is kept beside
                // them) and the views never free them (Buf::Registered leaks on drop).
                let view = |slot: usize, len: usize| -> Result<Buf<T>, AugurError> {
                    let p = rc.slot(slot).expect("two slots");
                    let mut v = unsafe { compute.upgrade_device_ptr::<T>(p, len) };
                    compute.memset_zeros(&mut v).map_err(cuda_err)?;
                    Ok(Buf::Registered(std::mem::ManuallyDrop::new(v)))
                };
                (
                    view(0, ctx.cols)?,
                    Some(view(1, ctx.total_rows)?),
                    Vec::new(),
                    Vec::new(),
                )
            }
            None => (
                Buf::Own(s.htod(&vec![T::zero(); ctx.cols])?),
                None,
                Vec::new(),
                Vec::new(),
            ),
        };
        if comm.is_some() {
            full = Some(Buf::Own(s.htod(&vec![T::zero(); ctx.total_rows])?));
            if ctx.gather == GatherMode::AllGather {
                for &m in &ctx.layout.maxc {
                    send.push(s.htod(&vec![T::zero(); m.max(1)])?);
                    recv.push(s.htod(&vec![T::zero(); (m * ctx.world).max(1)])?);
                }
            }
        }
        compute.synchronize().map_err(cuda_err)?;
        Ok(Shard {
            plans,
            x,
            full,
            send,
            recv,
            comm,
            rc,
            full_slot: 1,
            compute,
            comm_stream,
            rank: ctx.rank,
            layout: ctx.layout.clone(),
            gather: ctx.gather,
        })
    }

    /// Enqueue, on the communication stream, the all-gather of chunk `c` of every shard into
    /// the whole y.
    fn gather_chunk(&mut self, c: usize) -> Result<(), AugurError> {
        let (Some(comm), Some(full)) = (&self.comm, self.full.as_mut()) else {
            return Ok(());
        };
        let cs = &self.comm_stream;
        let pieces = &self.layout.pieces[c];
        let maxc = self.layout.maxc[c];
        if maxc == 0 {
            return Ok(());
        }
        let y = cuda_y(&mut self.plans[c]);
        let ty = T::as_nccl_type();
        let raw = cs.cu_stream() as nccl_sys::cudaStream_t;
        let size = std::mem::size_of::<T>() as u64;
        match self.gather {
            GatherMode::AllGather => {
                let (send, recv) = (&mut self.send[c], &mut self.recv[c]);
                let mine = pieces[self.rank].len();
                if mine > 0 {
                    cs.memcpy_dtod(&*y, &mut send.slice_mut(0..mine))
                        .map_err(cuda_err)?;
                }
                {
                    let (src, _g1) = send.device_ptr(cs);
                    let (dst, _g2) = recv.device_ptr_mut(cs);
                    // SAFETY: send holds maxc values, recv world x maxc; every rank enqueues the
                    // same collectives in the same order.
                    unsafe {
                        nccl::all_gather(
                            src as *const c_void,
                            dst as *mut c_void,
                            maxc,
                            ty,
                            comm.0,
                            raw,
                        )
                    }
                    .map_err(nccl_err("ncclAllGather"))?;
                }
                for (s, r) in pieces.iter().enumerate() {
                    if r.is_empty() {
                        continue;
                    }
                    let src = recv.slice(s * maxc..s * maxc + r.len());
                    cs.memcpy_dtod(&src, &mut full.slice_mut(r.clone()))
                        .map_err(cuda_err)?;
                }
            }
            // No communicator in these modes: returned above.
            GatherMode::Auto
            | GatherMode::Ll
            | GatherMode::Pull
            | GatherMode::Push
            | GatherMode::CopyEngine => {}
            GatherMode::Broadcasts => {
                let (dst, _g1) = full.device_ptr_mut(cs);
                let (src, _g2) = y.device_ptr(cs);
                // SAFETY: `src` holds this piece's rows; `dst` all rows; piece s of chunk c
                // starts at its first row. Every rank enqueues the same collectives in order.
                unsafe {
                    nccl::group_start().map_err(nccl_err("ncclGroupStart"))?;
                    for (root, r) in pieces.iter().enumerate() {
                        let send = if root == self.rank {
                            src as *const c_void
                        } else {
                            std::ptr::null()
                        };
                        let res = nccl::broadcast(
                            send,
                            (dst + r.start as u64 * size) as *mut c_void,
                            r.len(),
                            ty,
                            root as i32,
                            comm.0,
                            raw,
                        );
                        if let Err(e) = res {
                            let _ = nccl::group_end();
                            return Err(nccl_err("ncclBroadcast")(e));
                        }
                    }
                    nccl::group_end().map_err(nccl_err("ncclGroupEnd"))?;
                }
            }
        }
        Ok(())
    }

    /// augur's all-gather after this step's product: this shard's rows of y into the whole y
    /// at their place, then the pattern brings every other shard's rows (all on the compute
    /// stream, after the product).
    fn exchange(&mut self) -> Result<(), AugurError> {
        let (Some(rc), Some(full)) = (self.rc.as_mut(), self.full.as_mut()) else {
            return Ok(());
        };
        let pattern = self
            .gather
            .pattern()
            .expect("an augur mode with a RankComm");
        let rows = self.layout.pieces[0][self.rank].clone();
        if !rows.is_empty() {
            let y = cuda_y(&mut self.plans[0]);
            self.compute
                .memcpy_dtod(&*y, &mut full.slice_mut(rows))
                .map_err(cuda_err)?;
        }
        let size = std::mem::size_of::<T>() as u64;
        let mut offsets: Vec<u64> = self.layout.pieces[0]
            .iter()
            .map(|r| r.start as u64 * size)
            .collect();
        offsets.push(
            self.layout.pieces[0]
                .last()
                .map_or(0, |r| r.end as u64 * size),
        );
        // The patterns move bytes; F32 only names a 4-byte granularity (f64 rows are 8).
        let own = pattern == Pattern::CopyEngine;
        if own {
            rc.stream().join(&self.compute).map_err(cuda_err)?;
        }
        rc.all_gather_in(pattern, Dtype::F32, &offsets, self.full_slot)
            .map_err(AugurError::Kernel)?;
        if own {
            self.compute.join(rc.stream()).map_err(cuda_err)?;
        }
        Ok(())
    }

    /// Whether products are followed by an exchange between GPUs.
    fn exchanges(&self) -> bool {
        self.comm.is_some() || self.rc.is_some()
    }

    /// Every chunk's product; with more than one GPU, chunk c's all-gather on the
    /// communication stream after its product, overlapping chunk c + 1's product.
    fn products(&mut self, gather: bool) -> Result<(), AugurError> {
        for c in 0..self.plans.len() {
            self.plans[c].launch_from_cuda(&self.x)?;
            if gather && self.comm.is_some() {
                self.comm_stream.join(&self.compute).map_err(cuda_err)?;
                self.gather_chunk(c)?;
            }
        }
        if gather && self.comm.is_some() {
            self.compute.join(&self.comm_stream).map_err(cuda_err)?;
        }
        if gather {
            self.exchange()?;
        }
        Ok(())
    }

    /// The all-gathers alone (for profiles).
    fn gathers(&mut self) -> Result<(), AugurError> {
        if self.rc.is_some() {
            return self.exchange();
        }
        if self.comm.is_none() {
            return Ok(());
        }
        self.comm_stream.join(&self.compute).map_err(cuda_err)?;
        for c in 0..self.plans.len() {
            self.gather_chunk(c)?;
        }
        self.compute.join(&self.comm_stream).map_err(cuda_err)
    }

    /// One product and its all-gather; with `swap`, y becomes the next x.
    fn step(&mut self, swap: bool) -> Result<(), AugurError> {
        self.products(true)?;
        if swap {
            self.full_slot = 1 - self.full_slot;
            match self.full.as_mut() {
                Some(full) => std::mem::swap(&mut self.x, full),
                None => std::mem::swap(&mut *self.x, cuda_y(&mut self.plans[0])),
            }
        }
        Ok(())
    }

    /// The whole y after a step without swap.
    fn y(&mut self) -> &CudaSlice<T> {
        match self.full.as_ref() {
            Some(f) => f,
            None => cuda_y(&mut self.plans[0]),
        }
    }

    fn handle(&mut self, cmd: Cmd<T>) -> Result<Reply<T>, AugurError> {
        let stream = self.compute.clone();
        match cmd {
            Cmd::Run { x, want_y } => {
                if !x.is_empty() {
                    stream
                        .memcpy_htod(x.as_slice(), &mut *self.x)
                        .map_err(cuda_err)?;
                }
                self.step(false)?;
                let out = if want_y {
                    let v = stream.clone_dtoh(self.y()).map_err(cuda_err)?;
                    Reply::Vector(v)
                } else {
                    Reply::Done
                };
                stream.synchronize().map_err(cuda_err)?;
                Ok(out)
            }
            Cmd::Iterate { steps } => {
                for _ in 0..steps {
                    self.step(true)?;
                }
                stream.synchronize().map_err(cuda_err)?;
                Ok(Reply::Done)
            }
            Cmd::SetX(x) => {
                if !x.is_empty() {
                    stream
                        .memcpy_htod(x.as_slice(), &mut *self.x)
                        .map_err(cuda_err)?;
                }
                stream.synchronize().map_err(cuda_err)?;
                Ok(Reply::Done)
            }
            Cmd::GetX => {
                let v = stream.clone_dtoh(&*self.x).map_err(cuda_err)?;
                stream.synchronize().map_err(cuda_err)?;
                Ok(Reply::Vector(v))
            }
            Cmd::Profile { warmup, reps } => {
                let gpu = self.plans[0]
                    .device()
                    .as_cuda()
                    .expect("a CUDA plan")
                    .clone();
                let tp = TimingPlan {
                    warmup,
                    iterations: reps.max(1),
                };
                let k = |e: AugurError| KernelError::Cuda(e.to_string());
                let kernel_s =
                    median(gpu.time_events(tp, None, || self.products(false).map_err(k))?);
                let gather_s = if self.exchanges() {
                    median(gpu.time_events(tp, None, || self.gathers().map_err(k))?)
                } else {
                    0.0
                };
                let step_s = median(gpu.time_events(tp, None, || self.step(false).map_err(k))?);
                Ok(Reply::Profile(ShardProfile {
                    rank: self.rank,
                    kernel_s,
                    gather_s,
                    step_s,
                }))
            }
        }
    }
}

/// The device y of a shard's plan (made on its GPU by `Shard::new`).
fn cuda_y<'p, T: GpuScalar>(plan: &'p mut SpmvPlan<'_, T>) -> &'p mut CudaSlice<T> {
    plan.vectors().1.as_cuda_mut().expect("a CUDA plan")
}

fn cuda_err(e: cudarc::driver::DriverError) -> AugurError {
    AugurError::Kernel(KernelError::Cuda(e.to_string()))
}
