//! # augur-datasets
//!
//! The first stage of augur's data flow (datasets -> features -> kernels -> models -> selector):
//! sparse matrices come in here, from Matrix Market files or from generators, as CSR with `i32`
//! indices ([`Csr`]).
//!
//! - [`mtx`]: a streaming Matrix Market reader (`.mtx`, `.mtx.gz`) with line-accurate errors.
//! - [`generate`]: deterministic generators (stencils, R-MAT, power-law, ...) that build CSR
//!   directly and reach 1e8+ nonzeros; named by spec strings such as `rmat:scale=20,ef=16,seed=1`.
//! - [`source`]: "a file or a spec", the argument every augur command takes.
//! - [`manifest`]: the shared-matrix manifest (`MANIFEST.tsv`) with family keys.
//! - [`stats`]: row-length statistics for `augur matrix info`.

mod build;
pub use build::csr_from_arrays;
pub mod catalog;
pub mod error;
pub mod fetch;
pub mod generate;
pub mod manifest;
pub mod mtx;
pub mod reorder;
pub mod scalar;
pub mod source;
pub mod stats;

pub use error::DatasetError;
pub use scalar::Scalar;
pub use source::{LoadInfo, MatrixSource};

/// Compressed sparse row matrix with `i32` column indices and row pointers: the form every augur
/// kernel consumes (GPU kernels and cuSPARSE use 32-bit indices).
pub type Csr<T> = sprs::CsMatI<T, i32, i32>;

/// Largest row count, column count or number of stored entries a [`Csr`] can hold.
pub const MAX_INDEX: usize = i32::MAX as usize;
