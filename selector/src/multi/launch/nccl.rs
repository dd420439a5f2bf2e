//! NCCL over the rendezvous: its unique id shared by rank 0, the group's communicator opened
//! with deadlines, and the check of a launch (`augur distributed check`).

use std::time::{Duration, Instant};

use super::{share, Meeting, RankEnv};
use crate::AugurError;

/// NCCL's unique id made by rank 0 and given to every rank by [`share`] (128 bytes).
pub fn share_nccl_id(
    env: &RankEnv,
    meeting: &Meeting,
    timeout: Duration,
) -> Result<cudarc::nccl::sys::ncclUniqueId, AugurError> {
    if !crate::multi::nccl_available() {
        return Err(AugurError::Nccl(
            "libnccl cannot be loaded here (install NCCL, or put it on LD_LIBRARY_PATH)".into(),
        ));
    }
    let bytes = share(
        env,
        meeting,
        || {
            let id = cudarc::nccl::Id::new().map_err(crate::multi::nccl_err("ncclGetUniqueId"))?;
            Ok(id.internal().iter().map(|&c| c as u8).collect())
        },
        timeout,
    )?;
    let mut id = cudarc::nccl::sys::ncclUniqueId { internal: [0; 128] };
    if bytes.len() != id.internal.len() {
        return Err(AugurError::Invalid(format!(
            "rank {}: rank 0 shared {} bytes, not an NCCL unique id (128)",
            env.rank,
            bytes.len()
        )));
    }
    for (d, &b) in id.internal.iter_mut().zip(&bytes) {
        *d = b as std::ffi::c_char;
    }
    Ok(id)
}

/// `ncclConfig_t` as NCCL 2.17 laid it out (NCCL reads a caller's config by its `size` and
/// `version`, so this older layout is valid with later libraries); unset fields as
/// `NCCL_CONFIG_INITIALIZER` leaves them.
#[repr(C)]
struct NcclConfig217 {
    size: usize,
    magic: std::ffi::c_uint,
    version: std::ffi::c_uint,
    blocking: std::ffi::c_int,
    cga_cluster_size: std::ffi::c_int,
    min_ctas: std::ffi::c_int,
    max_ctas: std::ffi::c_int,
    net_name: *const std::ffi::c_char,
    split_share: std::ffi::c_int,
}

impl NcclConfig217 {
    fn new(blocking: bool) -> NcclConfig217 {
        let undef = i32::MIN; // NCCL_CONFIG_UNDEF_INT
        NcclConfig217 {
            size: std::mem::size_of::<NcclConfig217>(),
            magic: 0xcafe_beef,
            version: 21700,
            blocking: blocking.into(),
            cga_cluster_size: undef,
            min_ctas: undef,
            max_ctas: undef,
            net_name: std::ptr::null(),
            split_share: undef,
        }
    }
}

/// The communicator of a group of processes. It is opened without blocking, so that a rank that
/// never comes is an error after `deadline` (the communicator aborted), not a hang. Once every
/// rank has joined, the data path gets a blocking one split from it: NCCL runs every call of a
/// non-blocking communicator on a thread it starts for that call, which cost 16-46% of an
/// iteration of the 4-GPU halo product (2026-11-27, 4 x H200). A rank that stops later is
/// still found by the polling waits (`Shard::wait`, which aborts the communicator after the
/// timeout). Returns (the blocking communicator, the first one): the first must outlive the
/// split one (NCCL aborts a communicator's splits with it), so free it after. The calling
/// thread's current CUDA context is the rank's GPU.
pub(in crate::multi) fn open_comm(
    id: cudarc::nccl::sys::ncclUniqueId,
    env: &RankEnv,
    deadline: Instant,
) -> Result<(cudarc::nccl::sys::ncclComm_t, cudarc::nccl::sys::ncclComm_t), AugurError> {
    use cudarc::nccl::sys;
    let parent = open_nonblocking(id, env, deadline)?;
    let mut cfg = NcclConfig217::new(true);
    let mut comm: sys::ncclComm_t = std::ptr::null_mut();
    // SAFETY: a live communicator every rank splits now, right after all of them joined it
    // (color 0 and key = rank: the same group in the same order), an out-pointer, and a config
    // NCCL reads up to its `size`.
    let r = unsafe {
        sys::ncclCommSplit(
            parent,
            0,
            env.rank as i32,
            &mut comm,
            (&mut cfg as *mut NcclConfig217).cast(),
        )
    };
    // The split of a non-blocking communicator is done (and `comm` filled) when the parent is
    // no longer in progress (NVIDIA/nccl#1472); bounded like the rest of joining.
    wait_comm(parent, r, env, deadline, "splitting the communicator")?;
    if comm.is_null() {
        // SAFETY: a communicator NCCL handed out; abort frees it without the other ranks.
        unsafe { sys::ncclCommAbort(parent) };
        return Err(AugurError::Nccl(format!(
            "rank {}: ncclCommSplit gave no communicator (communicator aborted)",
            env.rank
        )));
    }
    Ok((comm, parent))
}

/// [`open_comm`]'s first communicator: without blocking, every step bounded by `deadline`.
fn open_nonblocking(
    id: cudarc::nccl::sys::ncclUniqueId,
    env: &RankEnv,
    deadline: Instant,
) -> Result<cudarc::nccl::sys::ncclComm_t, AugurError> {
    use cudarc::nccl::sys;
    let mut cfg = NcclConfig217::new(false);
    let mut comm: sys::ncclComm_t = std::ptr::null_mut();
    // SAFETY: out-pointer, a valid id, and a config NCCL reads up to its `size`.
    let r = unsafe {
        sys::ncclCommInitRankConfig(
            &mut comm,
            env.world as i32,
            id,
            env.rank as i32,
            (&mut cfg as *mut NcclConfig217).cast(),
        )
    };
    if comm.is_null() {
        return Err(AugurError::Nccl(format!(
            "rank {}: ncclCommInitRankConfig: {r:?} (no communicator)",
            env.rank
        )));
    }
    wait_comm(comm, r, env, deadline, "opening the communicator")?;
    Ok(comm)
}

/// Finish a call on a non-blocking communicator that returned `called`: poll until it is done;
/// when it failed, failed later or is not done by `deadline`, abort the communicator.
fn wait_comm(
    comm: cudarc::nccl::sys::ncclComm_t,
    called: cudarc::nccl::sys::ncclResult_t,
    env: &RankEnv,
    deadline: Instant,
    what: &str,
) -> Result<(), AugurError> {
    use cudarc::nccl::sys::{self, ncclResult_t};
    if !matches!(
        called,
        ncclResult_t::ncclSuccess | ncclResult_t::ncclInProgress
    ) {
        // SAFETY: a communicator NCCL handed out; abort frees it.
        unsafe { sys::ncclCommAbort(comm) };
        return Err(AugurError::Nccl(format!(
            "rank {}: {what}: {called:?} (communicator aborted)",
            env.rank
        )));
    }
    loop {
        let mut state = ncclResult_t::ncclSuccess;
        // SAFETY: a communicator NCCL handed out, not yet destroyed.
        let r = unsafe { sys::ncclCommGetAsyncError(comm, &mut state) };
        let failed = match (r, state) {
            (ncclResult_t::ncclSuccess, ncclResult_t::ncclSuccess) => return Ok(()),
            (ncclResult_t::ncclSuccess, ncclResult_t::ncclInProgress) => {
                if Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                format!(
                    "not done by the deadline: a rank of the {} did not join or stopped \
                     (communicator aborted)",
                    env.world
                )
            }
            (ncclResult_t::ncclSuccess, e) | (e, _) => format!("{e:?} (communicator aborted)"),
        };
        // SAFETY: as above; abort frees it without waiting for the other ranks.
        unsafe { sys::ncclCommAbort(comm) };
        return Err(AugurError::Nccl(format!(
            "rank {}: {what}: {failed}",
            env.rank
        )));
    }
}

/// NCCL across processes, checked: with the id from [`share_nccl_id`], each rank opens its
/// communicator on its local GPU (`local_rank`) and all-reduces rank + 1. Returns the sum every
/// rank read, which must be world (world + 1) / 2 (else an error), and the GPU's name. Joining
/// has `timeout` (a non-blocking communicator, aborted when late; see [`open_comm`]). What `augur
/// distributed check --nccl` runs.
pub fn nccl_check(
    env: &RankEnv,
    id: cudarc::nccl::sys::ncclUniqueId,
    timeout: Duration,
) -> Result<(f64, String), AugurError> {
    use cudarc::nccl::sys;
    let deadline = Instant::now() + timeout;
    let backend = crate::Backend::cuda(env.local_rank)?;
    let g = backend
        .as_device()
        .as_cuda()
        .ok_or_else(|| AugurError::Invalid(format!("rank {}: not a CUDA backend", env.rank)))?;
    let drv = |what: &'static str| {
        move |e: cudarc::driver::DriverError| AugurError::Invalid(format!("{what}: {e}"))
    };
    g.context()
        .bind_to_thread()
        .map_err(drv("cuCtxSetCurrent"))?;
    let (comm, joined) = open_comm(id, env, deadline)?;
    let stream = g.stream().clone();
    let run = || -> Result<f64, AugurError> {
        let mut buf = stream
            .clone_htod(&[(env.rank + 1) as f32])
            .map_err(drv("cuMemcpyHtoD"))?;
        {
            use cudarc::driver::DevicePtrMut;
            let (ptr, _sync) = buf.device_ptr_mut(&stream);
            // SAFETY: one f32 of device memory of this GPU, in place, on its stream.
            let r = unsafe {
                sys::ncclAllReduce(
                    ptr as *const std::ffi::c_void,
                    ptr as *mut std::ffi::c_void,
                    1,
                    sys::ncclDataType_t::ncclFloat32,
                    sys::ncclRedOp_t::ncclSum,
                    comm,
                    stream.cu_stream() as sys::cudaStream_t,
                )
            };
            wait_comm(comm, r, env, deadline, "the all-reduce")?;
        }
        Ok(stream.clone_dtoh(&buf).map_err(drv("cuMemcpyDtoH"))?[0] as f64)
    };
    let got = run();
    // SAFETY: done with them, the split one first (after an NCCL error wait_comm already
    // aborted it; after a copy's error it is still open).
    unsafe {
        match &got {
            Ok(_) => {
                sys::ncclCommDestroy(comm);
                sys::ncclCommDestroy(joined);
            }
            Err(AugurError::Nccl(_)) => {
                sys::ncclCommAbort(joined);
            }
            Err(_) => {
                sys::ncclCommAbort(comm);
                sys::ncclCommAbort(joined);
            }
        }
    };
    let got = got?;
    let want = (env.world * (env.world + 1) / 2) as f64;
    if got != want {
        return Err(AugurError::Nccl(format!(
            "rank {}: the all-reduce of rank + 1 over {} ranks gave {got}, not {want}",
            env.rank, env.world
        )));
    }
    Ok((got, backend.device()))
}
