//! # augur-kernels
//!
//! Third stage of augur's data flow (datasets -> features -> **kernels** -> models -> selector).
//!
//! - [`reference`](mod@reference): the plain sequential SpMV in f64, the oracle every kernel is checked against.
//! - [`cpu`]: rayon kernels (static row split, nnz-balanced rows, merge-path), each with a setup
//!   step (its partition) apart from the per-call product.
//! - [`cuda`]: the CUDA backend (driver probe, devices, GPU link probe so far); on a machine
//!   without CUDA every call is a clear "not available" error.
//! - `hip` (feature `hip`): the HIP backend for AMD GPUs, from the same kernel sources (compiled
//!   by hiprtc; not yet run on AMD hardware).
//! - [`device`]: the one SpMV device interface ([`device::SpmvDevice`], implemented by the CPU
//!   and CUDA backends) and [`device::Device`], which picks one at run time behind opaque
//!   matrix, vector and kernel types.
//! - [`suite`]: the one correctness suite every backend runs (every [`device::SpmvDevice`] is a
//!   [`suite::SpmvBackend`]).
//! - [`check`]: poisoning, test vectors, and the per-row error bound a kernel must meet.

pub mod attention;
pub mod check;
pub mod cpu;
pub mod cuda;
pub mod device;
pub mod error;
pub mod gemm;
#[cfg(feature = "hip")]
pub mod hip;
pub mod reference;
pub mod suite;

pub use error::KernelError;

/// The median of timings (the upper one of an even count), as every timing here reports.
/// Panics on no timings: callers time at least once.
pub fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Bytes one SpMV `y = A x` must move at least once: values, column indices and row pointers of
/// A, then x and y. Effective bandwidth is this over the time.
pub fn spmv_bytes(rows: usize, cols: usize, nnz: usize, value_bytes: usize) -> u64 {
    let index = std::mem::size_of::<i32>() as u64;
    nnz as u64 * (value_bytes as u64 + index)
        + (rows as u64 + 1) * index
        + cols as u64 * value_bytes as u64
        + rows as u64 * value_bytes as u64
}
