//! # augur-features
//!
//! Second stage of augur's data flow (datasets -> **features** -> kernels -> models -> selector).
//!
//! - [`schema`]: ordered, named, versioned feature lists with units. Every model records the schema
//!   it was trained on and refuses another one.
//! - [`spmv`]: the SpMV matrix features (known ones for free from the shape, gathered ones from
//!   one pass over row pointers and column indices), the [`spmv::SpmvGatherer`] interface and
//!   its CPU (rayon) implementation, with the cost of gathering recorded beside the features.
//! - [`attention`]: decode-attention shapes (live KV lengths, q vs kv heads, GQA, paging).
//! - [`message`]: collective messages (size, collective, world size, link, fused GEMM), with the
//!   [`message::LinkProbe`] interface the CUDA backend implements from the driver.
//! - [`overlap`]: a tensor-parallel layer's GEMM + collective (operation, M/N/K, GPUs, link,
//!   bytes moved per flop, tile waves).

pub mod attention;
pub mod message;
pub mod overlap;
pub mod schema;
mod spec;
pub use spec::parse_count;
pub mod spmv;

pub use schema::{FeatureDef, FeatureError, FeatureKind, FeatureSchema};
