//! Communication patterns: the comm runs table (`augur collect comm`), a per-collective tree
//! that picks a pattern from the message features, its export, and its evaluation against NCCL
//! alone, fixed size cutoffs and the per-size oracle, with bus bandwidth tables and an SVG plot.
//!
//! A comm run row is one (collective, dtype, world size, bytes, pattern) with the median
//! seconds per call. Sizes and bus bandwidth follow nccl-tests (see `augur_features::message`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use augur_features::attention::Dtype;
use augur_features::message::{Collective, LinkType, MessageFeatures, MessageShape};
use augur_features::FeatureSchema;
use serde::{Deserialize, Serialize};

use crate::costs::{cv_depth, fit_costs, CostSample};
use crate::runs::{bad, open_csv};
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
