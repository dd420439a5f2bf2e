//! Decode attention: the attention runs table (`augur collect attention`), one row per
//! (shape, schedule) with the median seconds per launch and the check against the f64
//! reference; a tree that picks a schedule from the attention-shape features; its export and
//! its evaluation against the per-shape oracle, FlashAttention-2's split rule, the best single
//! schedule and PyTorch SDPA. Rows of schedule `fa2` are FlashAttention-2's split rule run on
//! augur's split-KV kernel (the baseline of issue 8), with its split count in `fa2_splits`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use augur_features::attention::{AttentionFeatures, AttentionShape};
use augur_features::FeatureSchema;
use serde::{Deserialize, Serialize};

use crate::costs::{cv_depth, fit_costs, CostSample};
use crate::runs::{bad, open_csv};
use crate::train::geomean;
use crate::tree::{clean, Tree};
use crate::ModelError;

mod eval;
mod export;
mod model;
mod runs;
#[cfg(test)]
mod tests;
mod train;

pub use eval::*;
pub use export::*;
pub use model::*;
pub use runs::*;
pub use train::*;
