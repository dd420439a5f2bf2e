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
use std::ffi::c_void;

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

    /// Sum `count` device scalars at `at` over every GPU, in place, on the compute stream.
    fn sum_over_gpus(
        &self,
        comm: Option<nccl_sys::ncclComm_t>,
        at: u64,
        count: usize,
    ) -> Result<(), AugurError> {
        let Some(comm) = comm else {
            return Ok(());
        };
        let raw = self.compute.cu_stream() as nccl_sys::cudaStream_t;
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
                raw,
            )
        }
        .map_err(nccl_err("ncclAllReduce"))?;
        super::settle(self.process.as_ref(), comm, "CG's sums")
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
        let mut done = 0;
        while !stop && done < req.max_iter {
            let it = done;
            let (o, nw) = (it % 2, 1 - it % 2);
            // The halo mode exchanges p before its product; the all-gather modes exchanged it
            // after cg_p (publish_p).
            let exchange_first = self.halo.is_some();
            self.products(exchange_first)?;
            let (p, p_out) = self.p_addrs();
            let ap = addr(cuda_y(&mut self.plans[0]), &s);
            unsafe { kernels.dot::<T>(&s, n, p, ap, partial, at(PAP)) }?;
            self.sum_over_gpus(comm, at(PAP), 1)?;
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
            self.sum_over_gpus(comm, at(2 * nw), 2)?;
            let h = hist + (it as u64 + 1) * size;
            unsafe {
                kernels.cg_p::<T>(&s, n, at(2 * nw), at(2 * o), at(2 * nw + 1), h, z, p, p_out)
            }?;
            self.publish_p()?;
            done += 1;
            if done % req.check_every.max(1) == 0 || done == req.max_iter {
                self.wait()?;
                stop = threshold(read(done)?, bb);
            }
        }
        self.wait()?;
        let solve_s = t1.elapsed().as_secs_f64();
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
