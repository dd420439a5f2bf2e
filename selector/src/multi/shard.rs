//! One GPU's worker: its shard's plans, buffers and communicator, and the commands it serves.

use super::blocks::{addr, DeviceHalo, HostBlocks};
use super::{nccl_err, Answer, Cmd, GatherMode, Layout, Reply, ShardInfo, ShardProfile};
use crate::{AugurError, Backend, PlanOptions, SpmvPlan};
use augur_datasets::Csr;
use augur_features::attention::Dtype;
use augur_kernels::cuda::comm::{NcclComm, Pattern, RankComm};
use augur_kernels::cuda::{GpuScalar, TimingPlan};
use augur_kernels::{median, KernelError};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError};
use cudarc::nccl::{result as nccl, sys as nccl_sys, NcclType};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::launch::RankEnv;

mod cg;

pub(super) struct WorkerCtx {
    pub(super) rank: usize,
    pub(super) world: usize,
    pub(super) ordinal: usize,
    pub(super) id: Option<nccl_sys::ncclUniqueId>,
    pub(super) layout: Arc<Layout>,
    pub(super) total_rows: usize,
    pub(super) cols: usize,
    pub(super) opts: PlanOptions,
    pub(super) gather: GatherMode,
    /// This GPU's rank of augur's collectives (their modes, more than one GPU).
    pub(super) rc: Option<RankComm>,
    pub(super) barrier: Arc<Barrier>,
    pub(super) failed: Arc<AtomicBool>,
    /// Across processes: this rank and how long it waits for the others (NCCL's communicator
    /// then opened without blocking and split into a blocking one once all joined
    /// (`launch::open_comm`), every wait for the GPU bounded).
    pub(super) process: Option<(RankEnv, Duration)>,
}

/// A shard's matrix on the host: its chunks (all-gather modes) or its halo blocks.
pub(super) enum Parts<T> {
    Chunks(Vec<Csr<T>>),
    Halo(Box<HostBlocks<T>>),
}

pub(super) fn worker<T: GpuScalar + NcclType>(
    mut ctx: WorkerCtx,
    parts: Parts<T>,
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
            if let Some(g) = backend.as_device().as_cuda() {
                let _ = g.context().bind_to_thread();
            }
            let r = match &ctx.process {
                // Across processes: joined without blocking (aborted after the deadline), then
                // a blocking split of it for the data path.
                Some((env, timeout)) => {
                    super::launch::open_comm(id, env, Instant::now() + *timeout)
                        .map(|(c, j)| (NcclComm(c), Some(NcclComm(j))))
                }
                None => {
                    let mut c = std::ptr::null_mut();
                    // SAFETY: out-pointer to a communicator; every rank calls with the same id
                    // and world size (on its own thread, its GPU's context current).
                    unsafe { nccl::comm_init_rank(&mut c, ctx.world as i32, id, rank as i32) }
                        .map(|_| (NcclComm(c), None))
                        .map_err(nccl_err("ncclCommInitRank"))
                }
            };
            Some(r)
        }
    };
    // Every worker reaches the second barrier once, with its set-up done or failed: the
    // warm-up exchange after it waits in NCCL for every rank of this process.
    let shard = match comm {
        Some(Err(e)) => Err(e),
        Some(Ok((c, j))) => Shard::new(&mut ctx, &parts, &backend, (Some(c), j)),
        None => Shard::new(&mut ctx, &parts, &backend, (None, None)),
    };
    if shard.is_err() {
        ctx.failed.store(true, Ordering::SeqCst);
    }
    ctx.barrier.wait();
    let shard = shard.and_then(|s| {
        if ctx.failed.load(Ordering::SeqCst) {
            Err(AugurError::Invalid("another GPU failed to set up".into()))
        } else {
            Ok(s)
        }
    });
    let rows_of = |c: usize| match &parts {
        Parts::Halo(_) => ctx.layout.pieces[0][rank].clone(),
        Parts::Chunks(_) => ctx.layout.pieces[c][rank].clone(),
    };
    let mut shard = match shard.and_then(|mut s| s.warm_up().map(|_| s)) {
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
            rows: rows_of(c),
            nnz: p.shape().2,
            decision: p.decision().clone(),
            setup: p.setup().clone(),
        })
        .chain(
            shard
                .halo
                .iter()
                .filter_map(|h| h.remote.as_ref())
                .map(|p| ShardInfo {
                    rank,
                    chunk: 1,
                    gpu: ctx.ordinal,
                    device: backend.device(),
                    rows: rows_of(0),
                    nnz: p.shape().2,
                    decision: p.decision().clone(),
                    setup: p.setup().clone(),
                }),
        )
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
pub(super) struct Shard<'a, T: GpuScalar + NcclType> {
    /// One plan per chunk; in the halo mode the local block's.
    plans: Vec<SpmvPlan<'a, T>>,
    /// The halo mode: the remote block and the exchange's buffers.
    halo: Option<DeviceHalo<'a, T>>,
    /// The shard's x: the whole x (all-gather modes) or its own rows (halo mode).
    x: Buf<T>,
    /// The whole y (more than one GPU), gathered from every shard.
    full: Option<Buf<T>>,
    /// Padded send and receive buffers per chunk (GatherMode::AllGather).
    send: Vec<CudaSlice<T>>,
    recv: Vec<CudaSlice<T>>,
    comm: Option<NcclComm>,
    /// augur's collectives, and which registered buffer holds the whole y now.
    rc: Option<RankComm>,
    /// NCCL for CG's sums where the exchange has no communicator (opened on first use).
    cg_comm: Option<NcclComm>,
    /// One value, all-reduced by [`Cmd::Barrier`].
    tick: CudaSlice<T>,
    full_slot: usize,
    compute: Arc<CudaStream>,
    comm_stream: Arc<CudaStream>,
    rank: usize,
    layout: Arc<Layout>,
    gather: GatherMode,
    world: usize,
    process: Option<(RankEnv, Duration)>,
    /// Across processes: the communicator `comm` was split from, freed after it (the last
    /// field: dropped last).
    joined: Option<NcclComm>,
}

impl<'a, T: GpuScalar + NcclType> Shard<'a, T> {
    fn new(
        ctx: &mut WorkerCtx,
        parts: &'a Parts<T>,
        backend: &Backend,
        // (the data path's communicator, the one it was split from): a tuple drops its fields
        // in order, so on an early error too the split one goes first.
        comms: (Option<NcclComm>, Option<NcclComm>),
    ) -> Result<Self, AugurError> {
        let s = backend
            .as_device()
            .as_cuda()
            .ok_or_else(|| AugurError::Invalid("MultiGpuSpmv runs on GPUs".into()))?;
        let compute = s.stream().clone();
        let comm_stream = comm_stream_of(&compute).map_err(cuda_err)?;
        let (plans, halo) = match parts {
            Parts::Chunks(parts) => (
                parts
                    .iter()
                    .map(|p| SpmvPlan::new(p, backend, ctx.opts.clone()))
                    .collect::<Result<Vec<_>, _>>()?,
                None,
            ),
            Parts::Halo(h) => {
                // The remote block's plan runs on the communication stream, right after the
                // exchange that fills its halo, beside the local block's product.
                let beside = Backend::from_device(augur_kernels::device::Device::from_cuda(
                    std::rc::Rc::new(s.on_stream(comm_stream.clone())),
                ));
                (
                    vec![SpmvPlan::new(&h.local, backend, ctx.opts.clone())?],
                    Some(DeviceHalo::new(h, &beside, ctx.opts.clone())?),
                )
            }
        };
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
                Buf::Own(s.htod(&vec![T::zero(); plans[0].shape().1.max(1)])?),
                None,
                Vec::new(),
                Vec::new(),
            ),
        };
        if comms.0.is_some() && halo.is_none() {
            full = Some(Buf::Own(s.htod(&vec![T::zero(); ctx.total_rows])?));
            if ctx.gather == GatherMode::AllGather {
                for &m in &ctx.layout.maxc {
                    send.push(s.htod(&vec![T::zero(); m.max(1)])?);
                    recv.push(s.htod(&vec![T::zero(); (m * ctx.world).max(1)])?);
                }
            }
        }
        let tick = compute.alloc_zeros::<T>(1).map_err(cuda_err)?;
        compute.synchronize().map_err(cuda_err)?;
        comm_stream.synchronize().map_err(cuda_err)?;
        Ok(Shard {
            tick,
            plans,
            halo,
            x,
            full,
            send,
            recv,
            comm: comms.0,
            rc,
            cg_comm: None,
            full_slot: 1,
            compute,
            comm_stream,
            rank: ctx.rank,
            layout: ctx.layout.clone(),
            gather: ctx.gather,
            world: ctx.world,
            process: ctx.process,
            joined: comms.1,
        })
    }

    /// One exchange through NCCL, waited for, before the first product: NCCL connects a
    /// communicator's peers at their first transfer, which cost the first product about 60 ms
    /// in one process driving 4 H200s and 0.5 s across 4 processes: a CG of 60 iterations on
    /// the GPUs averaged 1.3 and 9.6 ms per iteration, 0.21 and 0.22-0.25 ms with this
    /// (bench/cg-phases.sh, bench/results/cg-np-h200-2026-11-27). The exchange moves whatever
    /// x holds; every product sets x first.
    fn warm_up(&mut self) -> Result<(), AugurError> {
        if self.comm.is_none() {
            return Ok(());
        }
        self.gathers()?;
        self.wait()
    }

    /// The shard's rows of the matrix.
    fn own_rows(&self) -> std::ops::Range<usize> {
        self.layout.pieces[0][self.rank].clone()
    }

    /// Enqueue the halo exchange: pack on the compute stream, then NCCL's send/recv pairs on the
    /// communication stream (one group); the local product may run meanwhile.
    fn halo_exchange(&mut self) -> Result<(), AugurError> {
        let Some(h) = self.halo.as_ref() else {
            return Ok(());
        };
        let Some(comm) = self.comm.as_ref() else {
            // One GPU: nothing to receive.
            return Ok(());
        };
        // The pack, too, runs on the communication stream (after x is ready on the compute
        // stream), so the local product starts at once and the exchange's first kernel need
        // not wait behind it for SMs.
        let cs = &self.comm_stream;
        cs.join(&self.compute).map_err(cuda_err)?;
        h.pack(cs, addr(&self.x, cs))?;
        let ty = T::as_nccl_type();
        let raw = cs.cu_stream() as nccl_sys::cudaStream_t;
        let size = std::mem::size_of::<T>() as u64;
        let (send, halo) = (addr(&h.send_buf, cs), addr(&h.halo, cs));
        // SAFETY: the send buffer holds send_off's last count of values and the halo buffer
        // every recv slot; every rank enqueues the same pairs (what q sends to r is what r
        // receives from q: halo_plan's transpose) in one group, in the same order.
        unsafe {
            nccl::group_start().map_err(nccl_err("ncclGroupStart"))?;
            for q in 0..self.world {
                let out = h.send_off[q]..h.send_off[q + 1];
                let res = if !out.is_empty() {
                    nccl::send(
                        (send + out.start as u64 * size) as *const c_void,
                        out.len(),
                        ty,
                        q as i32,
                        comm.0,
                        raw,
                    )
                    .map(|_| ())
                } else {
                    Ok(())
                };
                let res = res.and_then(|_| {
                    let slots = h.recv[q].clone();
                    if slots.is_empty() {
                        return Ok(());
                    }
                    nccl::recv(
                        (halo + slots.start as u64 * size) as *mut c_void,
                        slots.len(),
                        ty,
                        q as i32,
                        comm.0,
                        raw,
                    )
                    .map(|_| ())
                });
                if let Err(e) = res {
                    let _ = nccl::group_end();
                    return Err(nccl_err("ncclSend/ncclRecv")(e));
                }
            }
            nccl::group_end().map_err(nccl_err("ncclGroupEnd"))?;
        }
        self.settle("the halo exchange")
    }

    /// The halo mode's product: on the communication stream the exchange, then the remote
    /// block's product; on the compute stream the local block's product meanwhile; then the
    /// remote products added into y (without `exchange`: the halo as it is, for profiles).
    ///
    /// `mark(step)` is called after the exchange (0) and the local product (1) are enqueued,
    /// when there is an exchange (CG's phase timing, `AUGUR_CG_PHASES`).
    fn halo_products(
        &mut self,
        exchange: bool,
        mark: &mut dyn FnMut(usize) -> Result<(), AugurError>,
    ) -> Result<(), AugurError> {
        let exchanged = exchange && self.comm.is_some();
        if exchanged {
            self.halo_exchange()?;
            mark(0)?;
        } else {
            // Ordered after the compute stream's work all the same (the remote plan's y and
            // the halo are read there by the last scatter).
            self.comm_stream.join(&self.compute).map_err(cuda_err)?;
        }
        self.plans[0].launch_from_cuda(&self.x)?;
        if exchanged {
            mark(1)?;
        }
        let h = self.halo.as_mut().expect("the halo mode");
        if h.remote_product()?.is_some() {
            self.compute.join(&self.comm_stream).map_err(cuda_err)?;
        }
        let y = cuda_y(&mut self.plans[0]);
        h.scatter(&self.compute, y)
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
                settle(self.process.as_ref(), comm.0, "the all-gather")?;
                for (s, r) in pieces.iter().enumerate() {
                    if r.is_empty() {
                        continue;
                    }
                    let src = recv.slice(s * maxc..s * maxc + r.len());
                    cs.memcpy_dtod(&src, &mut full.slice_mut(r.clone()))
                        .map_err(cuda_err)?;
                }
            }
            // No communicator in these modes: returned above (the halo mode never gathers).
            GatherMode::Halo
            | GatherMode::Auto
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
                settle(self.process.as_ref(), comm.0, "the broadcasts")?;
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

    /// Whether products are followed (or, halo mode, preceded) by an exchange between GPUs.
    fn exchanges(&self) -> bool {
        self.comm.is_some() || self.rc.is_some()
    }

    /// Every chunk's product; with more than one GPU, chunk c's all-gather on the
    /// communication stream after its product, overlapping chunk c + 1's product.
    fn products(&mut self, gather: bool) -> Result<(), AugurError> {
        if self.halo.is_some() {
            return self.halo_products(gather, &mut |_| Ok(()));
        }
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
        if self.halo.is_some() {
            self.halo_exchange()?;
            if self.comm.is_some() {
                self.compute.join(&self.comm_stream).map_err(cuda_err)?;
            }
            return Ok(());
        }
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
            self.swap_in();
        }
        Ok(())
    }

    /// y (the whole, gathered y; or this shard's rows without an all-gather) becomes x.
    fn swap_in(&mut self) {
        self.full_slot = 1 - self.full_slot;
        match self.full.as_mut() {
            Some(full) => std::mem::swap(&mut self.x, full),
            None => std::mem::swap(&mut *self.x, cuda_y(&mut self.plans[0])),
        }
    }

    /// The whole y after a step without swap (halo mode: the shard's rows).
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
                self.set_x(&x)?;
                self.step(false)?;
                let out = if want_y {
                    self.wait()?;
                    let v = stream.clone_dtoh(self.y()).map_err(cuda_err)?;
                    Reply::Vector(v)
                } else {
                    Reply::Done
                };
                self.wait()?;
                Ok(out)
            }
            Cmd::Iterate { steps } => {
                for _ in 0..steps {
                    self.step(true)?;
                }
                self.wait()?;
                Ok(Reply::Done)
            }
            Cmd::Barrier => {
                if let Some(c) = self.comm.as_ref().map(|c| c.0) {
                    let at = addr(&self.tick, &self.comm_stream);
                    self.sum_in_place(c, at, 1, "the barrier")?;
                }
                self.wait()?;
                Ok(Reply::Done)
            }
            Cmd::SetX(x) => {
                self.set_x(&x)?;
                self.wait()?;
                Ok(Reply::Done)
            }
            Cmd::Cg(cg) => self.cg(&cg).map(Reply::Cg),
            Cmd::GetX => {
                let own = if self.halo.is_some() {
                    0..self.own_rows().len()
                } else {
                    0..self.x.len()
                };
                self.wait()?;
                let v = if own.is_empty() {
                    Vec::new()
                } else {
                    stream.clone_dtoh(&self.x.slice(own)).map_err(cuda_err)?
                };
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

/// The shard's communication stream: the GPU's highest stream priority, so that the blocks of
/// an exchange (NCCL's send/recv or all-gather kernels, the halo's pack) are scheduled ahead of
/// the product's waiting blocks as SMs free up, instead of after the whole product grid (which
/// fills the GPU): the exchange then runs beside the product rather than after it. Ordered after
/// `compute`'s work so far.
fn comm_stream_of(compute: &Arc<CudaStream>) -> Result<Arc<CudaStream>, DriverError> {
    let ctx = compute.context();
    ctx.bind_to_thread()?;
    let (_, greatest) = cudarc::driver::result::stream::get_priority_range()?;
    let s = ctx.new_stream_with_priority(greatest)?;
    s.join(compute)?;
    Ok(s)
}

/// Across processes: wait until NCCL has taken the call just made (a blocking communicator's
/// has when the call returns), at most the group's timeout; a failure or a late peer aborts
/// the communicator.
pub(super) fn settle(
    process: Option<&(RankEnv, Duration)>,
    comm: nccl_sys::ncclComm_t,
    what: &str,
) -> Result<(), AugurError> {
    let Some((env, timeout)) = process else {
        return Ok(());
    };
    let deadline = Instant::now() + *timeout;
    loop {
        let mut state = nccl_sys::ncclResult_t::ncclSuccess;
        // SAFETY: a live communicator of this shard.
        let r = unsafe { nccl_sys::ncclCommGetAsyncError(comm, &mut state) };
        use nccl_sys::ncclResult_t::{ncclInProgress, ncclSuccess};
        match (r, state) {
            (ncclSuccess, ncclSuccess) => return Ok(()),
            (ncclSuccess, ncclInProgress) if Instant::now() < deadline => std::thread::yield_now(),
            (ncclSuccess, ncclInProgress) => {
                return Err(AugurError::Nccl(format!(
                    "rank {}: {what}: NCCL did not take it within {timeout:?}: a rank of the {} \
                     stopped or is stuck",
                    env.rank, env.world
                )))
            }
            (ncclSuccess, e) | (e, _) => {
                return Err(AugurError::Nccl(format!(
                    "rank {}: {what}: {e:?}",
                    env.rank
                )))
            }
        }
    }
}

impl<T: GpuScalar + NcclType> Shard<'_, T> {
    /// Wait for the GPU's work: in one process, `cuStreamSynchronize`; across processes, poll
    /// the stream and the communicator for at most the group's timeout, so that a rank that
    /// stopped makes this one fail (its communicator aborted) instead of waiting forever in
    /// NCCL.
    pub(super) fn wait(&mut self) -> Result<(), AugurError> {
        let Some((env, timeout)) = self.process else {
            return self.compute.synchronize().map_err(cuda_err);
        };
        use cudarc::driver::sys::{cuStreamQuery, CUresult};
        let deadline = Instant::now() + timeout;
        let mut spins = 0u32;
        loop {
            // SAFETY: the shard's live stream.
            match unsafe { cuStreamQuery(self.compute.cu_stream()) } {
                CUresult::CUDA_SUCCESS => return Ok(()),
                CUresult::CUDA_ERROR_NOT_READY => {}
                e => {
                    return Err(AugurError::Kernel(KernelError::Cuda(format!(
                        "rank {}: cuStreamQuery: {e:?}",
                        env.rank
                    ))))
                }
            }
            let mut failed = None;
            if let Some(c) = self.comm.as_ref().or(self.cg_comm.as_ref()) {
                let mut state = nccl_sys::ncclResult_t::ncclSuccess;
                // SAFETY: a live communicator of this shard.
                let r = unsafe { nccl_sys::ncclCommGetAsyncError(c.0, &mut state) };
                use nccl_sys::ncclResult_t::{ncclInProgress, ncclSuccess};
                match (r, state) {
                    (ncclSuccess, ncclSuccess | ncclInProgress) => {}
                    (ncclSuccess, e) | (e, _) => failed = Some(format!("NCCL: {e:?}")),
                }
            }
            if failed.is_none() && Instant::now() >= deadline {
                failed = Some(format!(
                    "the GPU's work (with NCCL between the {} ranks) not done within {timeout:?}: \
                     a rank stopped or is stuck",
                    env.world
                ));
            }
            if let Some(why) = failed {
                // Abort (frees) the communicators so NCCL's kernels end; never destroyed again.
                for c in [self.comm.take(), self.cg_comm.take(), self.joined.take()]
                    .into_iter()
                    .flatten()
                {
                    // SAFETY: a live communicator; abort frees it without the other ranks.
                    unsafe { nccl_sys::ncclCommAbort(c.0) };
                    std::mem::forget(c);
                }
                return Err(AugurError::Nccl(format!(
                    "rank {}: {why} (communicator aborted)",
                    env.rank
                )));
            }
            spins += 1;
            if spins < 1000 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    /// Sum `count` values of T at `at` (this GPU's memory) over every rank through `comm`, in
    /// place, in order with the compute stream. It runs on the communication stream, with the
    /// exchanges: each communicator is used on one stream.
    fn sum_in_place(
        &self,
        comm: nccl_sys::ncclComm_t,
        at: u64,
        count: usize,
        what: &str,
    ) -> Result<(), AugurError> {
        let cs = &self.comm_stream;
        cs.join(&self.compute).map_err(cuda_err)?;
        // SAFETY: `at` holds `count` values of T on this GPU; every rank enqueues the same sums
        // in the same order.
        unsafe {
            nccl::all_reduce(
                at as *const c_void,
                at as *mut c_void,
                count,
                T::as_nccl_type(),
                nccl_sys::ncclRedOp_t::ncclSum,
                comm,
                cs.cu_stream() as nccl_sys::cudaStream_t,
            )
        }
        .map_err(nccl_err("ncclAllReduce"))?;
        settle(self.process.as_ref(), comm, what)?;
        self.compute.join(cs).map_err(cuda_err)
    }

    /// Across processes, after an NCCL call of this shard's communicator.
    fn settle(&self, what: &str) -> Result<(), AugurError> {
        match self.comm.as_ref() {
            Some(c) => settle(self.process.as_ref(), c.0, what),
            None => Ok(()),
        }
    }

    /// x from the host's whole vector: all of it, or (halo mode) the shard's rows.
    fn set_x(&mut self, x: &[T]) -> Result<(), AugurError> {
        let part = if self.halo.is_some() {
            &x[self.own_rows()]
        } else {
            x
        };
        if !part.is_empty() {
            self.compute
                .memcpy_htod(part, &mut self.x.slice_mut(0..part.len()))
                .map_err(cuda_err)?;
        }
        Ok(())
    }
}

/// The device y of a shard's plan (made on its GPU by `Shard::new`).
pub(super) fn cuda_y<'p, T: GpuScalar>(plan: &'p mut SpmvPlan<'_, T>) -> &'p mut CudaSlice<T> {
    plan.vectors().1.as_cuda_mut().expect("a CUDA plan")
}

pub(super) fn cuda_err(e: cudarc::driver::DriverError) -> AugurError {
    AugurError::Kernel(KernelError::Cuda(e.to_string()))
}
