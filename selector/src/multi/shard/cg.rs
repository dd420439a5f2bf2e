//! Jacobi-preconditioned conjugate gradients on a shard's GPU, every vector and scalar in device
//! memory (issue 23, Must 2): each GPU holds its rows of x, r, z, b and 1 / diag(A), the product's
//! exchange brings the p entries it reads (all-gather or halo), and the dot products are summed
//! over the GPUs by an NCCL all-reduce of one or two scalars. The host enqueues and, every
//! `check_every` iterations, reads one scalar to see whether to stop.
//!
//! Device scalars (`sc`): `[rz_0, rr_0, rz_1, rr_1, pAp, bb]`; iteration `it` reads r.z and r.r of
//! slot `it % 2` and writes slot `(it + 1) % 2`, so no kernel overwrites what another block of it
//! reads. Once r.r <= tol² b.b (read on the device by every block alike) the updates stop, so
//! iterations enqueued past convergence leave x as it was.

use super::{cuda_err, cuda_y, Shard};
use crate::multi::blocks::addr;
use crate::multi::{nccl_err, CgPart, CgRequest};
use crate::AugurError;
use augur_datasets::Scalar;
use augur_kernels::cuda::vector::{CgScalars, VectorKernels, DOT_BLOCKS};
use augur_kernels::cuda::{comm::NcclComm, GpuScalar};
use cudarc::driver::CudaSlice;
use cudarc::nccl::{result as nccl, sys as nccl_sys, NcclType};

/// A CG run's device vectors on one GPU (its rows).
struct Vectors<T> {
    b_r: CudaSlice<T>,
    x: CudaSlice<T>,
    z: CudaSlice<T>,
    inv_diag: CudaSlice<T>,
    sc: CudaSlice<T>,
    partial: CudaSlice<T>,
    hist: CudaSlice<T>,
}

/// Where an iteration's time goes, when `AUGUR_CG_PHASES` is set (a diagnostic): an event on
/// the compute stream after each phase of every iteration, and the host's clock when each phase
/// was enqueued; printed per rank on stderr at the end (per phase: the mean, median and first
/// of its times, in microseconds).
struct Phases {
    marks: Vec<(usize, cudarc::driver::CudaEvent, std::time::Instant)>,
}

const PHASES: [&str; 9] = [
    "halo exchange (pack, send/recv)",
    "local product",
    "remote product and scatter (the whole product without a halo)",
    "p.Ap",
    "sum p.Ap",
    "x, r, z update",
    "sum r.z, r.r",
    "p update",
    "every check_every: wait, read r.r",
];

impl Phases {
    fn new() -> Option<Phases> {
        std::env::var_os("AUGUR_CG_PHASES").map(|_| Phases { marks: Vec::new() })
    }

    fn mark(
        this: &mut Option<Phases>,
        phase: usize,
        s: &std::sync::Arc<cudarc::driver::CudaStream>,
    ) -> Result<(), AugurError> {
        if let Some(p) = this {
            let e = s
                .context()
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda_err)?;
            e.record(s).map_err(cuda_err)?;
            p.marks.push((phase, e, std::time::Instant::now()));
        }
        Ok(())
    }

    /// After the stream is idle: the GPU's and the host's times per phase.
    fn report(self, rank: usize) -> Result<(), AugurError> {
        let mut gpu = vec![Vec::new(); PHASES.len()];
        let mut host = vec![Vec::new(); PHASES.len()];
        for w in self.marks.windows(2) {
            let (phase, ref e1, t1) = w[1];
            gpu[phase].push(w[0].1.elapsed_ms(e1).map_err(cuda_err)? as f64 * 1e3);
            host[phase].push((t1 - w[0].2).as_secs_f64() * 1e6);
        }
        let stats = |v: &[f64]| {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            let mean = s.iter().sum::<f64>() / s.len().max(1) as f64;
            let median = s.get(s.len() / 2).copied().unwrap_or(0.0);
            let first = v.first().copied().unwrap_or(0.0);
            format!("mean {mean:.1}, median {median:.1}, first {first:.1}")
        };
        for (i, name) in PHASES.iter().enumerate() {
            eprintln!(
                "CG phases, rank {rank}: {name} (us, {} times): GPU {}; host {}",
                gpu[i].len(),
                stats(&gpu[i]),
                stats(&host[i])
            );
        }
        Ok(())
    }
}

const SC: usize = 6;
const PAP: usize = 4;
const BB: usize = 5;

impl<T: GpuScalar + NcclType> Shard<'_, T> {
    /// The communicator for CG's sums: the shard's own, or one opened now from `req.id` (the
    /// modes that exchange through augur's patterns have none).
    fn cg_comm(&mut self, req: &CgRequest<T>) -> Result<Option<nccl_sys::ncclComm_t>, AugurError> {
        if self.world == 1 {
            return Ok(None);
        }
        if self.comm.is_none() && self.cg_comm.is_none() {
            let id = req.id.ok_or_else(|| {
                AugurError::Nccl("CG on more than one GPU needs NCCL for its dot products".into())
            })?;
            let mut c = std::ptr::null_mut();
            // SAFETY: every rank's thread calls this with the same id and world size, its GPU's
            // context current.
            unsafe {
                let _ = self.compute.context().bind_to_thread();
                nccl::comm_init_rank(&mut c, self.world as i32, id, self.rank as i32)
            }
            .map_err(nccl_err("ncclCommInitRank"))?;
            self.cg_comm = Some(NcclComm(c));
        }
        Ok(self.comm.as_ref().or(self.cg_comm.as_ref()).map(|c| c.0))
    }

    /// Sum `count` device scalars at `at` over every GPU ([`Shard::sum_in_place`]); nothing
    /// on one GPU.
    fn sum_over_gpus(
        &self,
        comm: Option<nccl_sys::ncclComm_t>,
        at: u64,
        count: usize,
    ) -> Result<(), AugurError> {
        match comm {
            Some(c) => self.sum_in_place(c, at, count, "CG's sums"),
            None => Ok(()),
        }
    }

    /// Where p (this shard's rows) is, and where the next p goes: in place in the halo mode;
    /// through the plan's y (then exchanged into the whole x) otherwise.
    fn p_addrs(&mut self) -> (u64, u64) {
        let s = self.compute.clone();
        let off = if self.halo.is_some() {
            0
        } else {
            self.own_rows().start
        };
        let p = addr(&*self.x, &s) + (off * std::mem::size_of::<T>()) as u64;
        let out = if self.halo.is_some() {
            p
        } else {
            addr(cuda_y(&mut self.plans[0]), &s)
        };
        (p, out)
    }

    /// After `cg_p` wrote the next p: bring it to where the next product reads it.
    fn publish_p(&mut self) -> Result<(), AugurError> {
        if self.halo.is_some() {
            return Ok(());
        }
        self.gathers()?;
        self.swap_in();
        Ok(())
    }

    pub(super) fn cg(&mut self, req: &CgRequest<T>) -> Result<CgPart<T>, AugurError> {
        if self.plans.len() != 1 {
            return Err(AugurError::Invalid(
                "CG on GPUs takes one chunk per shard".into(),
            ));
        }
        let own = self.own_rows();
        let n = own.len();
        if req.b.len() < own.end {
            return Err(AugurError::Invalid(
                "CG needs b of the matrix's rows".into(),
            ));
        }
        // The shard's rows as its plan holds them: the local block (its own columns, from 0)
        // in the halo mode, else the rows with every column.
        let a = self.plans[0]
            .matrix()
            .ok_or_else(|| AugurError::Invalid("CG needs the shard's rows on the host".into()))?;
        let first = if self.halo.is_some() { 0 } else { own.start };
        let inv_diag = crate::multi::inverse_diagonal(a, first);
        let t0 = std::time::Instant::now();
        let g = self.plans[0]
            .device()
            .as_cuda()
            .expect("a CUDA plan")
            .clone();
        let kernels = VectorKernels::new(g.context(), g.device.compute_capability)?;
        let s = self.compute.clone();
        let zeros = |len: usize| s.alloc_zeros::<T>(len.max(1)).map_err(cuda_err);
        let mut v = Vectors {
            b_r: zeros(n)?,
            x: zeros(n)?,
            z: zeros(n)?,
            inv_diag: zeros(n)?,
            sc: zeros(SC)?,
            partial: zeros(2 * DOT_BLOCKS)?,
            hist: zeros(req.max_iter + 1)?,
        };
        if n > 0 {
            s.memcpy_htod(&req.b[own.clone()], &mut v.b_r.slice_mut(0..n))
                .map_err(cuda_err)?;
            s.memcpy_htod(&inv_diag, &mut v.inv_diag.slice_mut(0..n))
                .map_err(cuda_err)?;
        }
        // Borrowed from the shard, which keeps (and finally destroys) the communicator.
        let comm = self.cg_comm(req)?;
        let size = std::mem::size_of::<T>() as u64;
        let sc = addr(&v.sc, &s);
        let at = |i: usize| sc + i as u64 * size;
        let (r, z, xs, inv, partial, hist) = (
            addr(&v.b_r, &s),
            addr(&v.z, &s),
            addr(&v.x, &s),
            addr(&v.inv_diag, &s),
            addr(&v.partial, &s),
            addr(&v.hist, &s),
        );
        let tol2 = <T as Scalar>::from_f64(req.tol * req.tol);
        // b.b; then z = r / diag, r.z, r.r of r = b (rr_prev = 0: no update); p = z.
        // SAFETY (every launch below): the vectors hold n values of T on this GPU, `sc` SC
        // scalars, `partial` 2 DOT_BLOCKS, `hist` max_iter + 1; all on the compute stream.
        unsafe { kernels.dot::<T>(&s, n, r, r, partial, at(BB)) }?;
        self.sum_over_gpus(comm, at(BB), 1)?;
        let first = CgScalars {
            num: at(PAP),
            den: at(PAP),
            rr_prev: at(PAP),
            bb: at(BB),
        };
        unsafe { kernels.cg_xr::<T>(&s, n, first, tol2, r, r, inv, xs, r, z, partial, at(0)) }?;
        self.sum_over_gpus(comm, at(0), 2)?;
        let (_, p_out) = self.p_addrs();
        unsafe { kernels.cg_p::<T>(&s, n, at(PAP), at(PAP), at(1), hist, z, z, p_out) }?;
        self.publish_p()?;
        let threshold = |rr: T, bb: T| rr <= tol2 * bb;
        // Across processes the waits are bounded (Shard::wait) before any read.
        self.wait()?;
        let read = |i: usize| -> Result<T, AugurError> {
            let h = s.clone_dtoh(&v.hist.slice(i..i + 1)).map_err(cuda_err)?;
            Ok(h[0])
        };
        let bb = s.clone_dtoh(&v.sc.slice(BB..BB + 1)).map_err(cuda_err)?[0];
        let mut stop = threshold(read(0)?, bb);
        // read() waited for the set-up: the iterations are timed from here.
        let setup_s = t0.elapsed().as_secs_f64();
        let t1 = std::time::Instant::now();
        let mut phases = Phases::new();
        Phases::mark(&mut phases, 7, &s)?;
        let mut done = 0;
        while !stop && done < req.max_iter {
            let it = done;
            let (o, nw) = (it % 2, 1 - it % 2);
            // The halo mode exchanges p before its product; the all-gather modes exchanged it
            // after cg_p (publish_p).
            let exchange_first = self.halo.is_some();
            if self.halo.is_some() {
                self.halo_products(exchange_first, &mut |i| Phases::mark(&mut phases, i, &s))?;
            } else {
                self.products(exchange_first)?;
            }
            Phases::mark(&mut phases, 2, &s)?;
            let (p, p_out) = self.p_addrs();
            let ap = addr(cuda_y(&mut self.plans[0]), &s);
            unsafe { kernels.dot::<T>(&s, n, p, ap, partial, at(PAP)) }?;
            Phases::mark(&mut phases, 3, &s)?;
            self.sum_over_gpus(comm, at(PAP), 1)?;
            Phases::mark(&mut phases, 4, &s)?;
            let sc_it = CgScalars {
                num: at(2 * o),
                den: at(PAP),
                rr_prev: at(2 * o + 1),
                bb: at(BB),
            };
            unsafe {
                kernels.cg_xr::<T>(
                    &s,
                    n,
                    sc_it,
                    tol2,
                    p,
                    ap,
                    inv,
                    xs,
                    r,
                    z,
                    partial,
                    at(2 * nw),
                )
            }?;
            Phases::mark(&mut phases, 5, &s)?;
            self.sum_over_gpus(comm, at(2 * nw), 2)?;
            Phases::mark(&mut phases, 6, &s)?;
            let h = hist + (it as u64 + 1) * size;
            unsafe {
                kernels.cg_p::<T>(&s, n, at(2 * nw), at(2 * o), at(2 * nw + 1), h, z, p, p_out)
            }?;
            self.publish_p()?;
            Phases::mark(&mut phases, 7, &s)?;
            done += 1;
            if done % req.check_every.max(1) == 0 || done == req.max_iter {
                self.wait()?;
                stop = threshold(read(done)?, bb);
                Phases::mark(&mut phases, 8, &s)?;
            }
        }
        self.wait()?;
        let solve_s = t1.elapsed().as_secs_f64();
        if let Some(p) = phases {
            p.report(self.rank)?;
        }
        let hist = s.clone_dtoh(&v.hist.slice(0..done + 1)).map_err(cuda_err)?;
        let x = if n > 0 {
            s.clone_dtoh(&v.x.slice(0..n)).map_err(cuda_err)?
        } else {
            Vec::new()
        };
        s.synchronize().map_err(cuda_err)?;
        // The first iteration whose r.r met the tolerance (later ones changed nothing).
        let iterations = hist.iter().position(|&rr| threshold(rr, bb));
        Ok(CgPart {
            x,
            rr: hist.iter().map(|v| v.as_f64()).collect(),
            bb: bb.as_f64(),
            converged_at: iterations,
            enqueued: done,
            setup_s,
            solve_s,
        })
    }
}
