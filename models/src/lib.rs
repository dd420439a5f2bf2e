//! # augur-models
//!
//! Fourth stage of augur's data flow (datasets -> features -> kernels -> **models** -> selector):
//! decision-tree training with linfa-trees, the model file format, export (text, DOT, Rust) and
//! evaluation. Empty until the Training issue lands; the crate exists now so that the workspace
//! has the layout of the design card.
