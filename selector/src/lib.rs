//! # augur
//!
//! augur picks the fastest GPU kernel for an irregular input at run time, and explains why.
//! Data flows through its crates in one direction:
//!
//! ```text
//! datasets -> features -> kernels (timings) -> models -> selector
//! ```
//!
//! This crate is the last stage: the library API (selector and dispatcher, to come with the
//! Runtime issue) and the `augur` command-line tool. Today it re-exports the stages below so that
//! a program needs one dependency.

pub use augur_datasets as datasets;
pub use augur_features as features;
pub use augur_kernels as kernels;
pub use augur_models as models;

pub mod defaults;
