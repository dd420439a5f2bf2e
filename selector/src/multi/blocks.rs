//! One shard's halo product on its GPU: the local block's plan, the remote block's plan, and the
//! buffers of the exchange ([`super::halo_plan`] cuts the blocks on the host).
//!
//! Per product: `pack` gathers the x entries every other shard reads into one send buffer (in
//! rank order); the exchange fills the halo buffer (NCCL send/recv between processes or GPUs, or
//! plain device copies when every shard lives on one GPU: [`halo_check`]); the local block
//! multiplies the shard's own x meanwhile; then the remote block multiplies the halo and
//! `scatter_add` adds its rows into y. The kernels of the two blocks are selected separately
//! (each plan has its own features and decision): the local block keeps the matrix's structure,
//! the remote one is short, scattered rows.

use std::ops::Range;
use std::sync::Arc;

use augur_datasets::Csr;
use augur_kernels::cuda::vector::{DevPtr, VectorKernels};
use augur_kernels::cuda::GpuScalar;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

use super::shard::cuda_err;
use super::HaloShard;
use crate::{AugurError, Backend, PlanOptions, SpmvPlan};

/// A device address of a slice (streams are ordered by the callers' events; see
/// `augur_kernels::cuda::own_stream`).
pub(super) fn addr<T>(s: &CudaSlice<T>, st: &CudaStream) -> DevPtr {
    s.device_ptr(st).0
}

/// The blocks of one shard on the host: moved into its GPU's thread, borrowed by its plans.
pub(super) struct HostBlocks<T> {
    pub(super) local: Csr<T>,
    pub(super) remote: Csr<T>,
    pub(super) remote_rows: Vec<usize>,
    /// Offsets into the shard's x, every receiver's list in rank order.
    pub(super) send_idx: Vec<usize>,
    /// `send_off[q]..send_off[q + 1]`: what rank q gets from the send buffer.
    pub(super) send_off: Vec<usize>,
    /// `recv[q]`: the halo slots rank q fills.
    pub(super) recv: Vec<Range<usize>>,
}

impl<T> From<HaloShard<T>> for HostBlocks<T> {
    fn from(h: HaloShard<T>) -> Self {
        let mut send_off = vec![0];
        let mut send_idx = Vec::new();
        for list in &h.send {
            send_idx.extend_from_slice(list);
            send_off.push(send_idx.len());
        }
        HostBlocks {
            local: h.local,
            remote: h.remote,
            remote_rows: h.remote_rows,
            send_idx,
            send_off,
            recv: h.recv,
        }
    }
}

/// The remote part of a shard on its GPU (the local block is the shard's first plan).
pub(super) struct DeviceHalo<'a, T: GpuScalar> {
    /// None without remote entries.
    pub(super) remote: Option<SpmvPlan<'a, T>>,
    remote_rows: CudaSlice<i32>,
    send_idx: CudaSlice<i32>,
    pub(super) send_off: Vec<usize>,
    pub(super) send_buf: CudaSlice<T>,
    pub(super) halo: CudaSlice<T>,
    pub(super) recv: Vec<Range<usize>>,
    pub(super) kernels: VectorKernels,
}

fn ints(v: &[usize], what: &str) -> Result<Vec<i32>, AugurError> {
    v.iter()
        .map(|&i| {
            i32::try_from(i)
                .map_err(|_| AugurError::Invalid(format!("{what} {i} does not fit in an int")))
        })
        .collect()
}

impl<'a, T: GpuScalar> DeviceHalo<'a, T> {
    pub(super) fn new(
        host: &'a HostBlocks<T>,
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<Self, AugurError> {
        let g = backend
            .as_device()
            .as_cuda()
            .ok_or_else(|| AugurError::Invalid("a halo exchange runs on GPUs".into()))?;
        let remote = if host.remote.nnz() > 0 {
            Some(SpmvPlan::new(&host.remote, backend, opts)?)
        } else {
            None
        };
        let kernels = VectorKernels::new(g.context(), g.device.compute_capability)?;
        let zeros = |n: usize| g.htod(&vec![T::zero(); n.max(1)]);
        Ok(DeviceHalo {
            remote,
            remote_rows: g.htod(&ints(&host.remote_rows, "remote row")?)?,
            send_idx: g.htod(&ints(&host.send_idx, "send offset")?)?,
            send_off: host.send_off.clone(),
            send_buf: zeros(host.send_idx.len())?,
            halo: zeros(host.remote.cols())?,
            recv: host.recv.clone(),
            kernels,
        })
    }

    /// Enqueue on `s`: the send buffer from the shard's x (`x` holds its rows).
    pub(super) fn pack(&self, s: &CudaStream, x: DevPtr) -> Result<(), AugurError> {
        let n = *self.send_off.last().expect("starts with 0");
        // SAFETY: send_idx holds n offsets below the shard's rows (halo_plan), x the shard's
        // rows, send_buf room for n (at least one) values.
        unsafe {
            self.kernels
                .pack::<T>(s, n, addr(&self.send_idx, s), x, addr(&self.send_buf, s))
        }
        .map_err(AugurError::Kernel)
    }

    /// Enqueue on the remote plan's stream: `y[remote_rows] += remote · halo` (`y` the local
    /// plan's y on the same stream).
    pub(super) fn remote_add(&mut self, y: &CudaSlice<T>) -> Result<(), AugurError> {
        let Some(s) = self.remote_product()? else {
            return Ok(());
        };
        self.scatter(&s, y)
    }

    /// Enqueue the remote block's product `remote · halo` on the remote plan's stream (which it
    /// returns; None without remote entries).
    pub(super) fn remote_product(&mut self) -> Result<Option<Arc<CudaStream>>, AugurError> {
        let Some(plan) = self.remote.as_mut() else {
            return Ok(None);
        };
        plan.launch_from_cuda(&self.halo)?;
        Ok(Some(
            plan.device()
                .as_cuda()
                .expect("a CUDA plan")
                .stream()
                .clone(),
        ))
    }

    /// Enqueue on `s`: `y[remote_rows] +=` the remote block's products (`y` the local plan's y;
    /// `s` ordered after both products).
    pub(super) fn scatter(&mut self, s: &CudaStream, y: &CudaSlice<T>) -> Result<(), AugurError> {
        let Some(plan) = self.remote.as_mut() else {
            return Ok(());
        };
        let n = plan.shape().0;
        let v = super::shard::cuda_y(plan);
        // SAFETY: remote_rows holds n distinct rows of the shard (halo_plan), v the remote
        // block's n products, y the shard's rows; all on this GPU, in this stream's order.
        unsafe {
            self.kernels
                .scatter_add::<T>(s, n, addr(&self.remote_rows, s), addr(v, s), addr(y, s))
        }
        .map_err(AugurError::Kernel)
    }
}

/// `a` cut into `n` shards (their row bounds and host blocks) for `what`, all on the CUDA GPU of
/// `backend`.
#[allow(clippy::type_complexity)]
fn on_one_gpu<'b, T: GpuScalar>(
    a: &Csr<T>,
    n: usize,
    backend: &'b Backend,
    what: &str,
) -> Result<
    (
        Vec<usize>,
        Vec<HostBlocks<T>>,
        &'b augur_kernels::cuda::CudaSpmv,
    ),
    AugurError,
> {
    let bounds = super::partition_rows(a, n);
    let host = super::halo_plan(a, &bounds)?
        .into_iter()
        .map(HostBlocks::from)
        .collect();
    let g = backend
        .as_device()
        .as_cuda()
        .ok_or_else(|| AugurError::Invalid(format!("{what} runs on a CUDA GPU")))?;
    Ok((bounds, host, g))
}

/// The halo product of `a` cut into `n` shards, every shard planned on the one GPU of `backend`
/// and the exchange done by device copies from each owner's send buffer into the readers' halo
/// buffers: everything of the halo mode but NCCL, on one GPU.
pub fn halo_check<T: GpuScalar>(
    a: &Csr<T>,
    n: usize,
    x: &[T],
    backend: &Backend,
    opts: PlanOptions,
) -> Result<HaloCheck<T>, AugurError> {
    crate::plan::check_size(a)?;
    if x.len() != a.cols() {
        return Err(AugurError::Invalid(format!(
            "x has {} entries for {} columns",
            x.len(),
            a.cols()
        )));
    }
    let (bounds, host, g) = on_one_gpu(a, n, backend, "halo_check")?;
    let s = g.stream().clone();
    let mut locals = Vec::with_capacity(n);
    let mut halos = Vec::with_capacity(n);
    let mut xs = Vec::with_capacity(n);
    for (q, h) in host.iter().enumerate() {
        locals.push(SpmvPlan::new(&h.local, backend, opts.clone())?);
        halos.push(DeviceHalo::new(h, backend, opts.clone())?);
        xs.push(g.htod(&x[bounds[q]..bounds[q + 1]])?);
    }
    for (q, h) in halos.iter().enumerate() {
        h.pack(&s, addr(&xs[q], &s))?;
    }
    // The exchange: rank r's slots from q are q's send buffer at send_off[r].. (what NCCL's
    // send/recv pair moves).
    for r in 0..n {
        for q in 0..n {
            let slots = halos[r].recv[q].clone();
            if slots.is_empty() {
                continue;
            }
            let from = halos[q].send_off[r];
            let (src_all, dst_all) = if q < r {
                let (lo, hi) = halos.split_at_mut(r);
                (&lo[q].send_buf, &mut hi[0].halo)
            } else {
                let (lo, hi) = halos.split_at_mut(q);
                (&hi[0].send_buf, &mut lo[r].halo)
            };
            let src = src_all.slice(from..from + slots.len());
            s.memcpy_dtod(&src, &mut dst_all.slice_mut(slots))
                .map_err(cuda_err)?;
        }
    }
    let mut y = vec![T::zero(); a.rows()];
    let mut kernels = Vec::with_capacity(n);
    for (q, (local, halo)) in locals.iter_mut().zip(halos.iter_mut()).enumerate() {
        local.launch_from_cuda(&xs[q])?;
        halo.remote_add(super::shard::cuda_y(local))?;
        let part = s
            .clone_dtoh(super::shard::cuda_y(local))
            .map_err(cuda_err)?;
        y[bounds[q]..bounds[q + 1]].copy_from_slice(&part);
        kernels.push((
            local.decision().kernel.clone(),
            halo.remote.as_ref().map(|p| p.decision().kernel.clone()),
        ));
    }
    s.synchronize().map_err(cuda_err)?;
    Ok(HaloCheck { y, kernels })
}

/// What [`halo_check`] computed.
#[derive(Debug, Clone)]
pub struct HaloCheck<T> {
    /// `A x`.
    pub y: Vec<T>,
    /// Each shard's kernels: the local block's, and the remote block's (None: no remote
    /// entries).
    pub kernels: Vec<(String, Option<String>)>,
}

/// Device times of one shard's halo product, and of the same rows as one plan (what the
/// all-gather modes run), on one GPU: medians of back-to-back launches (throughput timing),
/// seconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HaloTiming {
    pub rank: usize,
    pub rows: usize,
    pub local_nnz: usize,
    pub remote_nnz: usize,
    pub remote_rows: usize,
    /// x entries sent to other shards.
    pub sent: usize,
    pub local_kernel: String,
    pub remote_kernel: Option<String>,
    pub whole_kernel: String,
    /// The shard's rows as one plan (all columns).
    pub whole_s: f64,
    pub local_s: f64,
    /// The remote block's product and its scatter-add.
    pub remote_s: f64,
    pub pack_s: f64,
}

/// [`HaloTiming`] of each of the `n` shards of the square matrix `a`, all on the GPU of
/// `backend`: what the halo mode computes beside the exchange, against what the all-gather
/// modes compute.
pub fn halo_timing<T: GpuScalar>(
    a: &Csr<T>,
    n: usize,
    backend: &Backend,
    opts: PlanOptions,
    reps: usize,
) -> Result<Vec<HaloTiming>, AugurError> {
    use augur_kernels::cuda::{time_mode, TimingMode, TimingPlan};
    use augur_kernels::{median, KernelError};
    crate::plan::check_size(a)?;
    let (bounds, host, g) = on_one_gpu(a, n, backend, "halo_timing")?;
    let s = g.stream().clone();
    let tp = TimingPlan {
        warmup: 3,
        iterations: reps.max(1),
    };
    let time = |f: &mut dyn FnMut() -> Result<(), AugurError>| -> Result<f64, AugurError> {
        let k = |e: AugurError| KernelError::Cuda(e.to_string());
        Ok(median(time_mode(
            &s,
            TimingMode::Throughput,
            tp,
            10,
            None,
            || f().map_err(k),
        )?))
    };
    let x_all = g.htod(&vec![T::one(); a.cols().max(1)])?;
    let mut out = Vec::with_capacity(n);
    for (q, h) in host.iter().enumerate() {
        let rows = bounds[q]..bounds[q + 1];
        let whole_m = super::partition::shard(a, rows.clone())?;
        let mut whole = SpmvPlan::new(&whole_m, backend, opts.clone())?;
        let mut local = SpmvPlan::new(&h.local, backend, opts.clone())?;
        let mut halo = DeviceHalo::new(h, backend, opts.clone())?;
        let x_own = g.htod(&vec![T::one(); rows.len().max(1)])?;
        let whole_s = time(&mut || whole.launch_from_cuda(&x_all))?;
        let local_s = time(&mut || local.launch_from_cuda(&x_own))?;
        let remote_s = time(&mut || halo.remote_add(super::shard::cuda_y(&mut local)))?;
        let pack_s = time(&mut || halo.pack(&s, addr(&x_own, &s)))?;
        out.push(HaloTiming {
            rank: q,
            rows: rows.len(),
            local_nnz: h.local.nnz(),
            remote_nnz: h.remote.nnz(),
            remote_rows: h.remote_rows.len(),
            sent: h.send_idx.len(),
            local_kernel: local.decision().kernel.clone(),
            remote_kernel: halo.remote.as_ref().map(|p| p.decision().kernel.clone()),
            whole_kernel: whole.decision().kernel.clone(),
            whole_s,
            local_s,
            remote_s,
            pack_s,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use augur_datasets::generate::Generator;

    /// The send buffer's layout is every receiver's list in rank order, and what rank r reads
    /// from it at send_off[r] is the x entries behind r's halo slots from this shard.
    #[test]
    fn send_lists_concatenate_in_rank_order() {
        let a: Csr<f64> = Generator::parse("rmat:scale=10,ef=8,seed=5")
            .unwrap()
            .generate()
            .unwrap();
        let bounds = super::super::partition_rows(&a, 3);
        let plan = super::super::halo_plan(&a, &bounds).unwrap();
        let host: Vec<HostBlocks<f64>> = plan.iter().cloned().map(HostBlocks::from).collect();
        for (q, h) in host.iter().enumerate() {
            assert_eq!(h.send_off.len(), 4);
            assert_eq!(*h.send_off.last().unwrap(), h.send_idx.len());
            for r in 0..3 {
                let sent: Vec<usize> = h.send_idx[h.send_off[r]..h.send_off[r + 1]]
                    .iter()
                    .map(|&o| bounds[q] + o)
                    .collect();
                let wanted = &plan[r].halo_cols[host[r].recv[q].clone()];
                assert_eq!(sent, wanted, "{q} -> {r}");
            }
        }
    }
}
