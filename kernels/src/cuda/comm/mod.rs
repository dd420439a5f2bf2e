//! Collectives between the GPUs of one process: NCCL and peer-access patterns (`kernels/cuda/comm.cu`
//! and copy engines), for augur's communication-pattern selector.
//!
//! [`CommGroup::new`] opens the GPUs, allocates every rank's registered buffers with `cuMemAlloc`
//! (not from the stream-ordered pool, which context peer access does not open), enables peer access
//! between every pair, tells every rank every rank's addresses, and (optionally) creates NCCL
//! communicators. It returns one [`RankComm`] per GPU; each is `Send` and is driven by its own
//! thread. Every rank must make the same calls in the same order (as with NCCL): the patterns meet
//! through flags in peer memory, and a rank that skips a call leaves the others waiting.
//!
//! Conventions follow nccl-tests: an all-reduce sums every rank's `buf[..n]` into each rank's
//! `out`; an all-gather is in place: rank q's piece already sits in its own `buf` at
//! `[off[q], off[q + 1])` bytes, and afterwards every rank's `buf` holds every piece.

use std::sync::Arc;

use augur_features::attention::Dtype;
use augur_features::message::Collective;
use cudarc::driver::{sys, CudaContext, CudaFunction, DeviceRepr};
use cudarc::nccl::{result as nccl, sys as nccl_sys};

use super::drv;
use crate::KernelError;

/// Ranks a group may have (MAX_RANKS in comm.cu).
pub const MAX_RANKS: usize = 8;
/// Blocks a custom kernel may have (MAX_BLOCKS in comm.cu): its flags are per block.
pub const MAX_BLOCKS: usize = 256;

/// The entry points of comm.cu that the patterns launch.
pub const ENTRY_POINTS: [&str; 16] = [
    "all_reduce_one_shot_f32",
    "all_reduce_one_shot_bf16",
    "all_reduce_two_shot_f32",
    "all_reduce_two_shot_bf16",
    "all_gather_pull",
    "all_gather_push",
    "spin_ns",
    "all_reduce_ll_f32",
    "all_reduce_ll_bf16",
    "all_gather_ll",
    // A tensor-parallel layer's collective beside its GEMM (gemm::tp), not a group's patterns.
    "tp_copy_pieces",
    "tp_reduce_piece_bf16",
    "tp_reduce_piece_f16",
    "tp_all_gather_ll",
    "tp_reduce_scatter_ll_bf16",
    "tp_reduce_scatter_ll_f16",
];
const THREADS: u32 = 512;
/// u32 signal words per rank: flags MAX_BLOCKS x MAX_RANKS for the kernels, 2 x MAX_RANKS for
/// the copy-engine pattern, then the kernels' block counters (see comm.cu).
const SIG_WORDS: usize = MAX_BLOCKS * MAX_RANKS + 2 * MAX_RANKS + MAX_BLOCKS;

/// A way to run a collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// `ncclAllReduce` / `ncclAllGather`.
    Nccl,
    /// All-reduce: each rank reads every rank's buffer over peer access and sums locally.
    OneShot,
    /// All-reduce: reduce-scatter then all-gather, both by peer loads.
    TwoShot,
    /// All-gather: each rank reads every other rank's piece (one kernel, peer loads).
    Pull,
    /// All-gather: each rank writes its piece into every other rank's buffer (peer stores).
    Push,
    /// Low-latency (NCCL's LL protocol, both collectives): every 4-byte word is stored with the
    /// call's epoch as one 8-byte pair into each peer's staging buffer, and receivers poll for
    /// the epoch: no barrier, one one-way trip; twice the bytes on the wire. Messages up to the
    /// group's `ll_bytes`; all-gather pieces at 4-byte aligned offsets.
    Ll,
    /// All-gather: each rank's piece copied to every other rank by the copy engines
    /// (`cuMemcpyAsync` between peers), ordered by flags written and waited on by the streams
    /// (`cuStreamWriteValue32` / `cuStreamWaitValue32`): no kernel, no host round trip.
    CopyEngine,
}

impl Pattern {
    pub const ALL: [Pattern; 7] = [
        Pattern::Nccl,
        Pattern::Ll,
        Pattern::OneShot,
        Pattern::TwoShot,
        Pattern::Pull,
        Pattern::Push,
        Pattern::CopyEngine,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Pattern::Nccl => "nccl",
            Pattern::Ll => "ll",
            Pattern::OneShot => "one-shot",
            Pattern::TwoShot => "two-shot",
            Pattern::Pull => "pull",
            Pattern::Push => "push",
            Pattern::CopyEngine => "copy-engine",
        }
    }

    pub fn parse(s: &str) -> Option<Pattern> {
        Pattern::ALL.into_iter().find(|p| p.name() == s)
    }

    /// The patterns of a collective (NCCL first).
    pub fn of(c: Collective) -> &'static [Pattern] {
        match c {
            Collective::AllReduce => &[
                Pattern::Nccl,
                Pattern::Ll,
                Pattern::OneShot,
                Pattern::TwoShot,
            ],
            Collective::AllGather => &[
                Pattern::Nccl,
                Pattern::Ll,
                Pattern::Pull,
                Pattern::Push,
                Pattern::CopyEngine,
            ],
            Collective::ReduceScatter => &[Pattern::Nccl],
        }
    }
}

/// The element types of the collectives.
pub fn check_dtype(d: Dtype) -> Result<(), KernelError> {
    match d {
        Dtype::F32 | Dtype::Bf16 => Ok(()),
        other => Err(KernelError::Invalid(format!(
            "collectives run on f32 and bf16, not {other:?}"
        ))),
    }
}

fn nccl_type(d: Dtype) -> nccl_sys::ncclDataType_t {
    match d {
        Dtype::Bf16 => nccl_sys::ncclDataType_t::ncclBfloat16,
        Dtype::F16 => nccl_sys::ncclDataType_t::ncclFloat16,
        Dtype::F32 => nccl_sys::ncclDataType_t::ncclFloat32,
    }
}

use super::check;

fn nccl_err(what: &'static str) -> impl Fn(nccl::NcclError) -> KernelError {
    move |e| KernelError::Cuda(format!("{what}: {e:?}"))
}

/// Every rank's addresses, as the kernels take them (struct Peers in comm.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Peers {
    pub buf: [u64; MAX_RANKS],
    pub tmp: [u64; MAX_RANKS],
    pub sig: [u64; MAX_RANKS],
    pub ll: [u64; MAX_RANKS],
    pub off: [u64; MAX_RANKS + 1],
}

// SAFETY: plain old data laid out as the C struct.
unsafe impl DeviceRepr for Peers {}

/// A `cuMemAlloc` allocation in one context, freed on drop.
#[derive(Debug)]
pub struct DeviceBuffer {
    ctx: Arc<CudaContext>,
    ptr: u64,
    bytes: usize,
}

impl DeviceBuffer {
    pub fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<DeviceBuffer, KernelError> {
        ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: out-pointer; the context is current.
        // 16 bytes of slack: the LL all-reduce reads whole words (half a word past an odd
        // count of bf16 values).
        check("cuMemAlloc", unsafe {
            sys::cuMemAlloc_v2(&mut ptr, (bytes + 16).max(256))
        })?;
        Ok(DeviceBuffer {
            ctx: ctx.clone(),
            ptr,
            bytes,
        })
    }

    /// [`DeviceBuffer::new`] with every byte zero (flags and counters that start unset).
    pub fn zeroed(ctx: &Arc<CudaContext>, bytes: usize) -> Result<DeviceBuffer, KernelError> {
        let b = DeviceBuffer::new(ctx, bytes)?;
        // SAFETY: `bytes` bytes of the live allocation just made in this (current) context.
        check("cuMemsetD8", unsafe { sys::cuMemsetD8_v2(b.ptr, 0, bytes) })?;
        Ok(b)
    }

    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by cuMemAlloc in this context, freed once.
            unsafe {
                let _ = sys::cuMemFree_v2(self.ptr);
            }
        }
    }
}

/// An NCCL communicator, destroyed on drop (the raw handle is `.0`; whoever wraps one must not
/// destroy it elsewhere).
pub struct NcclComm(pub nccl_sys::ncclComm_t);

// SAFETY: an NCCL communicator may be used from any one thread at a time; its owner holds it.
unsafe impl Send for NcclComm {}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // SAFETY: created by ncclCommInitAll, destroyed once.
        unsafe {
            let _ = nccl::comm_destroy(self.0);
        }
    }
}

struct Funcs {
    one_shot_f32: CudaFunction,
    one_shot_bf16: CudaFunction,
    two_shot_f32: CudaFunction,
    two_shot_bf16: CudaFunction,
    pull: CudaFunction,
    push: CudaFunction,
    spin: CudaFunction,
    ll_f32: CudaFunction,
    ll_bf16: CudaFunction,
    ll_gather: CudaFunction,
}

/// Options of [`CommGroup::new`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GroupOptions {
    /// Bytes of each rank's registered buffer.
    pub capacity: usize,
    /// Also a scratch buffer of `capacity` bytes per rank (two-shot all-reduce).
    pub scratch: bool,
    /// NCCL communicators too (needs libnccl).
    pub nccl: bool,
    /// Registered data buffers per rank (at least 1): an all-gather names the one it runs in,
    /// so that two can take turns (e.g. x and y of an iterated product).
    pub slots: usize,
    /// Largest all-reduce (and all-gather piece) of the LL pattern, bytes (0: no LL; its
    /// staging buffer takes 4 x world x this per rank).
    pub ll_bytes: usize,
}

/// Builder-style setters (the struct is `#[non_exhaustive]`: start from the default and set
/// what differs, so new options do not break callers).
impl GroupOptions {
    /// Buffers of `capacity` bytes, one slot, no scratch, no NCCL, no LL staging.
    pub fn new(capacity: usize) -> GroupOptions {
        GroupOptions {
            capacity,
            scratch: false,
            nccl: false,
            slots: 1,
            ll_bytes: 0,
        }
    }

    /// Sets [`GroupOptions::capacity`].
    pub fn capacity(mut self, v: usize) -> Self {
        self.capacity = v;
        self
    }

    /// Sets [`GroupOptions::scratch`].
    pub fn scratch(mut self, v: bool) -> Self {
        self.scratch = v;
        self
    }

    /// Sets [`GroupOptions::nccl`].
    pub fn nccl(mut self, v: bool) -> Self {
        self.nccl = v;
        self
    }

    /// Sets [`GroupOptions::slots`].
    pub fn slots(mut self, v: usize) -> Self {
        self.slots = v;
        self
    }

    /// Sets [`GroupOptions::ll_bytes`].
    pub fn ll_bytes(mut self, v: usize) -> Self {
        self.ll_bytes = v;
        self
    }
}

mod group;
mod rank;
mod sweep;

pub use group::CommGroup;
pub use rank::RankComm;
pub use sweep::{sweep, Case, CaseResult, SweepPlan};

#[cfg(test)]
mod tests {
    use super::sweep::{encode, value};
    use super::*;

    #[test]
    fn pattern_names_round_trip_and_belong_to_collectives() {
        for p in Pattern::ALL {
            assert_eq!(Pattern::parse(p.name()), Some(p));
        }
        assert_eq!(Pattern::parse("ring"), None);
        assert!(Pattern::of(Collective::AllReduce).contains(&Pattern::TwoShot));
        assert!(!Pattern::of(Collective::AllReduce).contains(&Pattern::Push));
        assert!(Pattern::of(Collective::AllGather).contains(&Pattern::CopyEngine));
        assert!(Pattern::of(Collective::AllGather).contains(&Pattern::Ll));
    }

    #[test]
    fn cases_round_down_to_whole_elements_per_rank() {
        let c = Case {
            collective: Collective::AllGather,
            dtype: Dtype::Bf16,
            bytes: 1028,
            pattern: Pattern::Push,
        };
        // 1028 bytes over 4 ranks: 257 bytes each, 128 bf16 values.
        assert_eq!(c.elements(4), 128);
        assert_eq!(c.real_bytes(4), 1024);
        let r = Case {
            collective: Collective::AllReduce,
            dtype: Dtype::F32,
            bytes: 18,
            pattern: Pattern::OneShot,
        };
        assert_eq!((r.elements(2), r.real_bytes(2)), (4, 16));
    }

    /// The check compares bits: every input and every sum of up to 8 inputs must be exact in
    /// bf16 (and f32), so that any correct order of summation gives the host's bits.
    #[test]
    fn check_values_and_their_sums_are_exact_in_bf16() {
        let mut bytes = Vec::new();
        for i in 0..2000 {
            for world in 1..=MAX_RANKS {
                let s: f32 = (0..world).map(|r| value(i, r)).sum();
                encode(Dtype::Bf16, 1, |_| s, &mut bytes);
                let back = f32::from_bits((u16::from_le_bytes([bytes[0], bytes[1]]) as u32) << 16);
                assert_eq!(back, s, "i {i} world {world}");
            }
        }
        // Not all zero, and not all equal.
        assert!((0..64).any(|i| value(i, 0) != 0.0));
        assert!((0..64).any(|i| value(i, 0) != value(i, 1)));
    }

    #[test]
    fn groups_refuse_bad_sizes_and_missing_gpus_clearly() {
        let opts = GroupOptions {
            capacity: 1 << 20,
            scratch: true,
            nccl: false,
            slots: 1,
            ll_bytes: 0,
        };
        let e = CommGroup::new(&[], &opts).err().unwrap().to_string();
        assert!(e.contains("1 to 8 GPUs"), "{e}");
        let e = CommGroup::new(&[0; 9], &opts).err().unwrap().to_string();
        assert!(e.contains("1 to 8 GPUs"), "{e}");
        if super::super::available().is_err() {
            let e = CommGroup::new(&[0, 1], &opts).err().unwrap();
            assert!(matches!(e, KernelError::NotAvailable { .. }), "{e}");
        }
    }
}
