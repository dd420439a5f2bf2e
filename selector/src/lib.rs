//! # augur
//!
//! augur picks the fastest GPU kernel for an irregular input at run time, and explains why.
//! Data flows through its crates in one direction:
//!
//! ```text
//! datasets -> features -> kernels (timings) -> models -> selector
//! ```
//!
//! This crate is the last stage: the library API and the `augur` command-line tool.
//!
//! - [`Selector`]: a trained model (a file, or the one built in for the backend), checked
//!   against the device it runs on; [`Selector::select`] gives a [`Decision`]: the kernel and
//!   the path through the trees (feature = value vs threshold at each node).
//! - [`SpmvPlan`]: select once, upload and set up once, [`SpmvPlan::run`] many times, on one
//!   GPU or on the rayon CPU kernels ([`Backend`]); [`Dispatcher`] caches plans by matrix
//!   identity.
//! - [`MultiGpuSpmv`]: rows split across N GPUs by equal nonzeros, each shard with its own
//!   features and kernel, y shards all-gathered (the pattern the comm model picks) so the
//!   product can be iterated.
//! - [`attention::AttentionPlan`]: a decode-attention shape (ragged KV lengths, GQA, paged or
//!   not) planned once: the attention model picks the schedule and says why; batches of that
//!   shape run on one GPU.
//!
//! It also re-exports the stages below so that a program needs one dependency. Examples:
//! `cargo run --release -p augur --example cg`, `--example power_iteration`.

pub use augur_datasets as datasets;
pub use augur_features as features;
pub use augur_kernels as kernels;
pub use augur_models as models;

pub mod attention;
pub mod bench;
mod beside;
pub mod collect;
pub mod defaults;
mod error;
pub mod multi;
pub mod overlap;
pub mod owned;
pub mod plan;
pub mod select;

pub use error::AugurError;
pub use multi::{GatherMode, MultiGpuSpmv, MultiOptions, ShardInfo};
pub use owned::{OwnedPlan, PlanScalar};
pub use plan::{Backend, Dispatcher, GatherPolicy, MatrixKey, PlanOptions, SetupCost, SpmvPlan};
pub use select::{Decision, GuardVeto, Selector, Step};

#[cfg(test)]
mod tests;
