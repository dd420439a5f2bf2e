//! Opening a group of GPUs: registered buffers, peer access, every rank's addresses, NCCL.

use cudarc::driver::{sys, CudaContext};
use cudarc::nccl::{result as nccl, sys as nccl_sys};

use super::super::{drv, module};
use super::{
    check, nccl_err, DeviceBuffer, Funcs, GroupOptions, NcclComm, Peers, RankComm, ENTRY_POINTS,
    MAX_BLOCKS, MAX_RANKS, SIG_WORDS,
};
use crate::KernelError;

/// Opens a group of GPUs; see the module docs.
pub struct CommGroup;

impl CommGroup {
    /// One [`RankComm`] per GPU in `ordinals` (rank = position), or the first error.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(ordinals: &[usize], opts: &GroupOptions) -> Result<Vec<RankComm>, KernelError> {
        let world = ordinals.len();
        if world == 0 || world > MAX_RANKS {
            return Err(KernelError::Invalid(format!(
                "a group has 1 to {MAX_RANKS} GPUs, not {world}"
            )));
        }
        let n = super::super::available()?;
        for (i, &o) in ordinals.iter().enumerate() {
            if o >= n {
                return Err(KernelError::NotAvailable {
                    backend: "cuda".into(),
                    why: format!("GPU {o} asked for, but only {n} present"),
                });
            }
            if ordinals[..i].contains(&o) {
                return Err(KernelError::Invalid(format!(
                    "GPU {o} named twice in the group"
                )));
            }
        }
        let devices = super::super::devices()?;
        let mut ctxs = Vec::with_capacity(world);
        for &o in ordinals {
            ctxs.push(CudaContext::new(o).map_err(drv("cuCtxCreate"))?);
        }
        // Peer access between every pair (both directions).
        for (a, ca) in ctxs.iter().enumerate() {
            ca.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
            for (b, cb) in ctxs.iter().enumerate() {
                if a == b {
                    continue;
                }
                let info = super::super::peer(ordinals[a], ordinals[b])?;
                if !info.access {
                    return Err(KernelError::Cuda(format!(
                        "GPU {} cannot access GPU {} (no peer access)",
                        ordinals[a], ordinals[b]
                    )));
                }
                // SAFETY: both contexts are live primary contexts of this process.
                let r = unsafe { sys::cuCtxEnablePeerAccess(cb.cu_ctx(), 0) };
                if r != sys::CUresult::CUDA_SUCCESS
                    && r != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                {
                    check("cuCtxEnablePeerAccess", r)?;
                }
            }
        }
        let mut peers = Peers::default();
        let mut parts = Vec::with_capacity(world);
        for (r, ctx) in ctxs.iter().enumerate() {
            let dev = &devices[ordinals[r]];
            let (ptx, _) = module::ptx(module::COMM, dev.compute_capability)?;
            let m = ctx.load_module(ptx).map_err(drv("cuModuleLoadData"))?;
            let f = |name: &str| m.load_function(name).map_err(drv("cuModuleGetFunction"));
            // In the order of ENTRY_POINTS, the one list (the HIP compile check reads it too).
            let [one_shot_f32, one_shot_bf16, two_shot_f32, two_shot_bf16, pull, push, spin, ll_f32, ll_bf16, ll_gather, ..] =
                ENTRY_POINTS.map(f);
            let funcs = Funcs {
                one_shot_f32: one_shot_f32?,
                one_shot_bf16: one_shot_bf16?,
                two_shot_f32: two_shot_f32?,
                two_shot_bf16: two_shot_bf16?,
                pull: pull?,
                push: push?,
                spin: spin?,
                ll_f32: ll_f32?,
                ll_bf16: ll_bf16?,
                ll_gather: ll_gather?,
            };
            let bufs = (0..opts.slots.max(1))
                .map(|_| DeviceBuffer::new(ctx, opts.capacity))
                .collect::<Result<Vec<_>, _>>()?;
            let tmp = if opts.scratch {
                Some(DeviceBuffer::new(ctx, opts.capacity)?)
            } else {
                None
            };
            let ll_words = opts.ll_bytes.div_ceil(4) as u64;
            let ll = if ll_words > 0 {
                Some(DeviceBuffer::zeroed(
                    ctx,
                    2 * world * ll_words as usize * 8,
                )?)
            } else {
                None
            };
            let sig = DeviceBuffer::new(ctx, SIG_WORDS * 4)?;
            // SAFETY: SIG_WORDS u32 in a live allocation of this (current) context.
            check("cuMemsetD32", unsafe {
                sys::cuMemsetD32_v2(sig.ptr(), 0, SIG_WORDS)
            })?;
            peers.buf[r] = bufs[0].ptr();
            peers.tmp[r] = tmp.as_ref().map_or(0, |t| t.ptr());
            peers.sig[r] = sig.ptr();
            peers.ll[r] = ll.as_ref().map_or(0, |b| b.ptr());
            let stream = ctx.new_stream().map_err(drv("cuStreamCreate"))?;
            let max_blocks = (dev.multiprocessors.max(1) as usize).min(MAX_BLOCKS);
            parts.push((
                ctx.clone(),
                stream,
                bufs,
                tmp,
                sig,
                ll,
                ll_words,
                funcs,
                max_blocks,
            ));
        }
        let mut comms: Vec<Option<NcclComm>> = (0..world).map(|_| None).collect();
        if opts.nccl {
            // SAFETY: only tries to dlopen libnccl.
            if !unsafe { nccl_sys::is_culib_present() } {
                return Err(KernelError::NotAvailable {
                    backend: "nccl".into(),
                    why: "libnccl.so is not installed".into(),
                });
            }
            let mut raw = vec![std::ptr::null_mut(); world];
            let devs: Vec<i32> = ordinals.iter().map(|&o| o as i32).collect();
            // SAFETY: `world` out-pointers and device ordinals.
            unsafe { nccl::comm_init_all(raw.as_mut_ptr(), world as i32, devs.as_ptr()) }
                .map_err(nccl_err("ncclCommInitAll"))?;
            for (c, r) in comms.iter_mut().zip(raw) {
                *c = Some(NcclComm(r));
            }
        }
        let mut slot_ptrs = vec![[0u64; MAX_RANKS]; opts.slots.max(1)];
        for (r, part) in parts.iter().enumerate() {
            for (s, b) in part.2.iter().enumerate() {
                slot_ptrs[s][r] = b.ptr();
            }
        }
        let mut out = Vec::with_capacity(world);
        for (rank, ((ctx, stream, bufs, tmp, sig, ll, ll_words, funcs, max_blocks), nccl)) in
            parts.into_iter().zip(comms).enumerate()
        {
            out.push(RankComm {
                rank,
                world,
                ordinal: ordinals[rank],
                ctx,
                stream,
                bufs,
                slot_ptrs: slot_ptrs.clone(),
                tmp,
                _sig: sig,
                _ll: ll,
                ll_words,
                ll_epoch: 0,
                peers,
                funcs,
                nccl,
                calls: 0,
                max_blocks,
            });
        }
        Ok(out)
    }
}
