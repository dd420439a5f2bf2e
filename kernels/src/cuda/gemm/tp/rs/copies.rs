//! The copy-engine reduce-scatter patterns' calls (`pc-reduce:C:S`, `pc-reduce-sm:C:S`,
//! `push-reduce:C`; see the module above): partials pushed into the owners' staging as the
//! GEMMs make them, each followed by a word, and summed by the reduce kernel or added in the
//! owners' GEMM epilogues. Split from `rs.rs`, whose buffers and set-up they use.

use cudarc::driver::{sys, LaunchConfig, PushKernelArg};

use super::super::{plan_for, wait_word, write_word, Gpu};
use super::{computed, ready, set_up, Rs, TpReduce, PUBLISHED_FLAGS, PUBLISHED_STAGING};
use crate::cuda::gemm::drv;
use crate::KernelError;

/// `push-reduce`'s diagnostics (environment variables, read when its GPU's part is set up).
pub(super) struct PushDiagnostics {
    /// AUGUR_TP_PR_WAIT=comm: on two GPUs the compute stream waits for the peer's words through
    /// the communication stream and an event, not by its own wait.
    wait_via_comm: bool,
    /// AUGUR_TP_PR_SERIAL: one GPU's thread at a time enqueues a call (a process-wide lock held
    /// over the whole enqueue): whether the hang is two threads' driver calls blocking each
    /// other. Leaves the meetings below out.
    serial: bool,
    /// The GPUs' threads meet (a host barrier) once each has enqueued its call's ready words,
    /// and again once each has enqueued its pushes, so that no GPU waits on a word whose writer
    /// a peer's host has not yet enqueued while this host makes a call that may wait for its
    /// GPU: a kernel's first launch under lazy loading loads its module under the context's
    /// lock and waits there for the GPU to drain, and a peer's push into this GPU's memory may
    /// need that lock (the likeliest cause of the hang on two H200s, not yet confirmed: see
    /// `tp::check`). On by default on more than one GPU since the thirty-fourth session;
    /// AUGUR_TP_PR_FENCE=0 leaves it out (a diagnostic: the hang's cases as they were). Bounded
    /// (60 s, an error naming the GPU), as the harness's GPU waits are.
    fence: bool,
}

/// The lock `AUGUR_TP_PR_SERIAL` takes.
static PR_SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl PushDiagnostics {
    pub(super) fn from_env() -> PushDiagnostics {
        let serial = std::env::var_os("AUGUR_TP_PR_SERIAL").is_some();
        PushDiagnostics {
            wait_via_comm: std::env::var("AUGUR_TP_PR_WAIT").is_ok_and(|v| v == "comm"),
            serial,
            // Never with the lock: its holder would wait at the fence for the others, which
            // wait for the lock.
            fence: !serial && std::env::var("AUGUR_TP_PR_FENCE").map_or(true, |v| v != "0"),
        }
    }
}

/// Blocks of `push-reduce`'s reduce kernel (more than two GPUs), beside the GEMMs.
const PUSH_REDUCE_BLOCKS: u32 = 16;

impl Rs {
    /// Enqueue one call of `pc-reduce:pieces:sms` (see the module docs).
    pub(super) fn pc_reduce(
        &self,
        gpu: &Gpu,
        pieces: usize,
        sms: usize,
        sm_push: bool,
    ) -> Result<(), KernelError> {
        let r = set_up(&self.reduce, "pc-reduce")?;
        let (plan, events) = plan_for(&self.pieces, pieces, sms)?;
        // This GPU's staging may be pushed into (see `ready`).
        let e = r.announce(gpu)?;
        let (s, cs, me, world) = (gpu.stream(), &gpu.comm_stream, gpu.rank, gpu.world);
        let (a, b, out) = (self.a, self.b, self.out);
        let (own, staging, flags) = (r.own.ptr(), r.staging.ptr(), r.flags.ptr());
        let (a_row, c_row) = ((self.kp * 2) as u64, (self.n * 2) as u64);
        let piece = self.rows / pieces;
        let copy = |q: usize| r.copy_stream(q, "pc-reduce");
        // The reductions write `out` after whatever came before on the compute stream.
        cs.join(&s).map_err(drv("join"))?;
        // The copies read partials the GEMMs of this call write, after whatever came before;
        // each peer's first push once that peer is ready for this call (the copy kernel's on
        // the communication stream, the copy engines' on their own).
        for q in (0..world).filter(|&q| q != me) {
            let st = if sm_push { cs } else { copy(q)? };
            if !sm_push {
                st.join(&s).map_err(drv("join"))?;
            }
            wait_word(st, flags + 4 * ready(q), e)?;
        }
        let cfg = LaunchConfig {
            grid_dim: (sms as u32, 1, 1),
            block_dim: (512, 1, 1),
            shared_mem_bytes: 0,
        };
        let nv = (piece * self.n / 8) as u64;
        let (rank, world_i) = (me as i32, world as i32);
        let bytes = piece * self.n * 2;
        for j in 0..pieces {
            for i in 1..=world {
                let q = (me + i) % world;
                let r0 = (q * self.rows + j * piece) as u64;
                // SAFETY: `a` is M x kp, `b` n x kp halves on this GPU, `own` M x n; the plan
                // for `piece` rows reads rows r0.. of `a` and writes rows r0.. of `own`.
                unsafe { plan.run_on(a + r0 * a_row, b, own + r0 * c_row, &s) }?;
                if q == me {
                    write_word(&s, flags + 4 * computed(me, j), e)?;
                    continue;
                }
                if sm_push {
                    continue;
                }
                let ev = &events[q * pieces + j];
                ev.record(&s).map_err(drv("record"))?;
                let st = copy(q)?;
                st.wait(ev).map_err(drv("wait"))?;
                let to =
                    gpu.peers[q][PUBLISHED_STAGING] + ((me * self.rows + j * piece) as u64) * c_row;
                // SAFETY: `piece` rows of this GPU's partial, into slot `me` of peer q's
                // staging (world x rows x n halves, live while the group runs; peer access on).
                crate::cuda::check("cuMemcpyAsync", unsafe {
                    sys::cuMemcpyAsync(to, own + r0 * c_row, bytes, st.cu_stream())
                })?;
                write_word(st, gpu.peers[q][PUBLISHED_FLAGS] + 4 * computed(me, j), e)?;
            }
            if sm_push {
                // Piece j's partials for every peer, pushed by the copy kernel once this
                // GPU's GEMMs of piece j are done; each peer's arrival word written by the
                // kernel's last block.
                let (f, counters) = r.copy.as_ref().ok_or_else(|| {
                    KernelError::Invalid("pc-reduce-sm run without its copy kernel".into())
                })?;
                let ev = &events[me * pieces + j];
                ev.record(&s).map_err(drv("record"))?;
                cs.wait(ev).map_err(drv("wait"))?;
                let mut t = super::super::ag::TpPieces {
                    counters: counters.ptr(),
                    ..Default::default()
                };
                for q in (0..world).filter(|&q| q != me) {
                    t.src[q] = own + ((q * self.rows + j * piece) as u64) * c_row;
                    t.dst[q] = gpu.peers[q][PUBLISHED_STAGING]
                        + ((me * self.rows + j * piece) as u64) * c_row;
                    t.flag[q] = gpu.peers[q][PUBLISHED_FLAGS] + 4 * computed(me, j);
                }
                let (one, local) = (1i32, 0i32);
                let b64 = bytes as u64;
                let mut l = cs.launch_builder(f);
                l.arg(&t)
                    .arg(&rank)
                    .arg(&world_i)
                    .arg(&b64)
                    .arg(&one)
                    .arg(&e)
                    .arg(&local);
                // SAFETY: the arguments match tp_copy_pieces; the sources are `piece` rows of
                // this GPU's partial (its GEMMs done: the event), the destinations slot `me`
                // of each peer's staging (ready for this call: waited for above), the words in
                // the peers' flags; whole 16-byte vectors (tp::check).
                unsafe { l.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
            }
            let mut t = TpReduce::default();
            for q in 0..world {
                wait_word(cs, flags + 4 * computed(q, j), e)?;
                let r0 = (q * self.rows + j * piece) as u64;
                t.src[q] = if q == me {
                    own + ((me * self.rows + j * piece) as u64) * c_row
                } else {
                    staging + r0 * c_row
                };
            }
            let dst = out + (j * piece) as u64 * c_row;
            let mut l = cs.launch_builder(&r.kernel);
            l.arg(&t).arg(&rank).arg(&world_i).arg(&nv).arg(&dst);
            // SAFETY: the arguments match tp_reduce_piece_*; every source is `piece` rows on
            // this GPU (its own partial, or a peer's pushed into its staging, both waited for
            // above); `dst` is `piece` rows of `out`; nv whole vectors (tp::check).
            unsafe { l.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
        }
        gpu.join()?;
        for st in r.copy_streams.iter().flatten() {
            s.join(st).map_err(drv("join"))?;
        }
        Ok(())
    }

    /// Enqueue one call of `push-reduce:pieces` (see the module docs).
    pub(super) fn push_reduce(&self, gpu: &Gpu, pieces: usize) -> Result<(), KernelError> {
        let r = set_up(&self.reduce, "push-reduce")?;
        // AUGUR_TP_TRACE: the process's first calls said on stderr as they are enqueued (a
        // host blocked in one shows) and traced after (`Reduce::trace`).
        static TRACED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let traced = super::super::tracing()
            && TRACED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 2 * gpu.world;
        if traced {
            super::super::step(gpu.rank, || format!("push-reduce:{pieces}: enqueueing"));
        }
        let (plan, events) = plan_for(&self.pieces, pieces, 0)?;
        let _serial = r
            .diagnostics
            .serial
            .then(|| PR_SERIAL.lock().unwrap_or_else(|e| e.into_inner()));
        let (s, cs, me, world) = (gpu.stream(), &gpu.comm_stream, gpu.rank, gpu.world);
        let (a, b, out) = (self.a, self.b, self.out);
        let (own, staging, flags) = (r.own.ptr(), r.staging.ptr(), r.flags.ptr());
        let (a_row, c_row) = ((self.kp * 2) as u64, (self.n * 2) as u64);
        let piece = self.rows / pieces;
        // Row r0 of A, of this GPU's partials (`own`, A's row order) and of its staging (slot q
        // holds GPU q's partial of this GPU's rows): byte offsets.
        let at = |rows: usize| (rows as u64 * a_row, rows as u64 * c_row);
        if world == 1 {
            for j in 0..pieces {
                let (ao, co) = at(j * piece);
                // SAFETY: `a` is M x kp, `b` n x kp, `out` M x n halves on this GPU (M = rows).
                unsafe { plan.run_on(a + ao, b, out + co, &s) }?;
            }
            return Ok(());
        }
        // This GPU's staging may be pushed into (see `ready`).
        let e = r.announce(gpu)?;
        if r.diagnostics.fence {
            gpu.meet("push-reduce's ready words")?;
        }
        let copy = |q: usize| r.copy_stream(q, "push-reduce");
        // The copies read partials this call's GEMMs write, after whatever came before; each
        // peer's first push once that peer is ready for this call.
        for q in (0..world).filter(|&q| q != me) {
            let st = copy(q)?;
            st.join(&s).map_err(drv("join"))?;
            wait_word(st, flags + 4 * ready(q), e)?;
        }
        let via_comm = r.diagnostics.wait_via_comm;
        if world > 2 || via_comm {
            // The reduce kernel's sums of the peers' partials come after whatever came before.
            cs.join(&s).map_err(drv("join"))?;
        }
        let bytes = piece * self.n * 2;
        // The peers' rows first: GPU me + 1's, me + 2's, ..., each piece pushed once made.
        for i in 1..world {
            let q = (me + i) % world;
            for j in 0..pieces {
                let (ao, co) = at(q * self.rows + j * piece);
                // SAFETY: the plan for `piece` rows reads rows r0.. of `a` (M x kp) and
                // writes rows r0.. of `own` (M x n), r0 + piece <= M.
                unsafe { plan.run_on(a + ao, b, own + co, &s) }?;
                let ev = &events[q * pieces + j];
                ev.record(&s).map_err(drv("record"))?;
                let st = copy(q)?;
                st.wait(ev).map_err(drv("wait"))?;
                let to = gpu.peers[q][PUBLISHED_STAGING] + at(me * self.rows + j * piece).1;
                // SAFETY: `piece` rows of this GPU's partial, into slot `me` of peer q's
                // staging (world x rows x n halves, live while the group runs; peer access on).
                crate::cuda::check("cuMemcpyAsync", unsafe {
                    sys::cuMemcpyAsync(to, own + co, bytes, st.cu_stream())
                })?;
                write_word(st, gpu.peers[q][PUBLISHED_FLAGS] + 4 * computed(me, j), e)?;
            }
        }
        if r.diagnostics.fence {
            gpu.meet("push-reduce's pushes")?;
        }
        // Then this GPU's rows, each piece adding the peers' partials of it.
        let (rank, nv) = (-1i32, (piece * self.n / 8) as u64);
        for j in 0..pieces {
            let (ao, co) = at(me * self.rows + j * piece);
            let added = if world == 2 {
                let q = 1 - me;
                if via_comm {
                    wait_word(cs, flags + 4 * computed(q, j), e)?;
                    let ev = &events[me * pieces + j];
                    ev.record(cs).map_err(drv("record"))?;
                    s.wait(ev).map_err(drv("wait"))?;
                } else {
                    wait_word(&s, flags + 4 * computed(q, j), e)?;
                }
                staging + at(q * self.rows + j * piece).1
            } else {
                // The peers' partials of piece j summed (f32, rounded once) into this GPU's
                // own rows of `own`, which its GEMMs leave unwritten, as they arrive.
                let mut t = TpReduce::default();
                for (i, q) in (0..world).filter(|&q| q != me).enumerate() {
                    wait_word(cs, flags + 4 * computed(q, j), e)?;
                    t.src[i] = staging + at(q * self.rows + j * piece).1;
                }
                let (peers, dst) = ((world - 1) as i32, own + co);
                let mut l = cs.launch_builder(&r.kernel);
                l.arg(&t).arg(&rank).arg(&peers).arg(&nv).arg(&dst);
                let cfg = LaunchConfig {
                    grid_dim: (PUSH_REDUCE_BLOCKS, 1, 1),
                    block_dim: (512, 1, 1),
                    shared_mem_bytes: 0,
                };
                // SAFETY: the arguments match tp_reduce_piece_* (rank -1: every source read
                // alike); each source is `piece` rows of this GPU's staging (a peer's partial,
                // its arrival waited for above), `dst` `piece` rows of `own` no GEMM of this
                // call writes; nv whole vectors (tp::check).
                unsafe { l.launch(cfg) }.map_err(drv("cuLaunchKernel"))?;
                let ev = &events[me * pieces + j];
                ev.record(cs).map_err(drv("record"))?;
                s.wait(ev).map_err(drv("wait"))?;
                own + co
            };
            // SAFETY: the plan for `piece` rows reads rows r0.. of `a`, `piece` rows at
            // `added` (on this GPU, there: waited for above) and writes `piece` rows of `out`.
            unsafe { plan.run_add_on(a + ao, b, added, out + at(j * piece).1, &s) }?;
        }
        for st in r.copy_streams.iter().flatten() {
            s.join(st).map_err(drv("join"))?;
        }
        if traced {
            r.trace(gpu, &format!("push-reduce:{pieces} epoch {e}"), pieces)?;
        }
        Ok(())
    }
}
