//! # augur-models
//!
//! Fourth stage of augur's data flow (datasets -> features -> kernels -> **models** -> selector):
//!
//! - [`runs`]: the runs table `augur collect` writes (features, gathering cost, every kernel's
//!   setup and per-iteration medians per matrix), read back with file:line errors;
//! - [`train`]: samples labelled by the cheapest kernel for k iterations and weighted by regret,
//!   trees grown by a deterministic CART with linfa-trees' rules (`cart`), hyper-parameters
//!   chosen by cross-validation grouped by family;
//! - [`model`]: the model file (two selectors, the gathering policy, training record) and
//!   allocation-free inference;
//! - [`guard`]: the long-row guard, a measured floor that overrules a pick the features prove
//!   slow;
//! - [`tree`]: augur's flat tree form;
//! - [`export`]: text rules, Graphviz DOT, a Rust `select` function, JSON;
//! - [`any`]: one loader for the model files of every domain, by their `format` field;
//! - [`eval`]: selected vs oracle, best single kernel, cuSPARSE ALG1 and a hand rule, per size
//!   bucket, with an SVG plot.

pub mod any;
pub mod attention;
mod cart;
pub mod comm;
mod costs;
pub mod eval;
pub mod export;
pub mod guard;
pub mod model;
pub mod overlap;
pub mod runs;
mod tier_cost;
pub mod train;
pub mod tree;

pub use any::{AnyModel, ExportFormat, ModelFile};
pub use model::{Choice, Model};
pub use runs::Runs;
pub use train::TrainParams;

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{path}: {msg}")]
    Io { path: PathBuf, msg: String },
    #[error("{path}:{line}: {msg}")]
    Runs {
        path: PathBuf,
        line: u64,
        msg: String,
    },
    #[error("model {origin}: {msg}")]
    Model { origin: String, msg: String },
    #[error("training parameters: {0}")]
    Params(String),
    #[error("training: {0}")]
    Train(String),
    #[error("evaluation: {0}")]
    Eval(String),
}

/// A file's text, or an I/O error naming it.
pub(crate) fn read_text(path: &std::path::Path) -> Result<String, ModelError> {
    let io = |msg: String| ModelError::Io {
        path: path.to_path_buf(),
        msg,
    };
    let len = std::fs::metadata(path)
        .map_err(|e| io(e.to_string()))?
        .len();
    if len > MAX_MODEL_BYTES {
        return Err(io(format!(
            "{len} bytes: a model file is at most {MAX_MODEL_BYTES} (trained ones are under 100 \
             KB); not a model, or damaged"
        )));
    }
    std::fs::read_to_string(path).map_err(|e| io(e.to_string()))
}

/// The largest model file read.
pub const MAX_MODEL_BYTES: u64 = 16 << 20;

/// Write `text` to `path` through `<path>.json.tmp` and a rename: an existing file is replaced
/// only by a complete one.
pub(crate) fn write_atomic(path: &std::path::Path, text: &str) -> Result<(), ModelError> {
    let io = |e: std::io::Error| ModelError::Io {
        path: path.to_path_buf(),
        msg: e.to_string(),
    };
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests;

/// Parse a model file's JSON and validate it; errors name `origin` and what was expected.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
    what: &str,
    validate: impl Fn(&T) -> Result<(), String>,
) -> Result<T, ModelError> {
    let m: T = serde_json::from_str(text).map_err(|e| ModelError::Model {
        origin: origin.to_string(),
        msg: format!("not a valid {what} file: {e}"),
    })?;
    validate(&m).map_err(|msg| ModelError::Model {
        origin: origin.to_string(),
        msg,
    })?;
    Ok(m)
}

/// A model file's header against what this augur reads: its format and version, and the feature
/// schema it was trained with (`this`, the current one). The error says which differs.
pub(crate) fn check_header(
    (format, version): (&str, u32),
    (want_format, want_version): (&str, u32),
    schema: &augur_features::FeatureSchema,
    this: &augur_features::FeatureSchema,
) -> Result<(), String> {
    if format != want_format || version != want_version {
        return Err(format!(
            "format `{format}` v{version}, this augur reads `{want_format}` v{want_version}: retrain the model with this augur"
        ));
    }
    this.check_same(schema)
        .map_err(|e| format!("{e}; retrain the model with this augur"))
}

/// One trained tree of a model file against its schema (`schema_len` features): its `classes`
/// (named `noun` in the error: patterns, schedules) not empty, one input name per feature index,
/// every index inside the schema, and the tree itself ([`tree::Tree::validate`]). The error
/// starts with `label` (which tree of the file) where there is one.
pub(crate) fn check_tree(
    label: Option<&str>,
    tree: &tree::Tree,
    (features, inputs): (&[usize], &[String]),
    (classes, noun): (usize, &str),
    schema_len: usize,
) -> Result<(), String> {
    let at = |e: String| match label {
        Some(l) => format!("{l}: {e}"),
        None => e,
    };
    if classes == 0 || inputs.len() != features.len() {
        return Err(at(format!("no {noun}, or inputs unlike features")));
    }
    if let Some(f) = features.iter().find(|&&f| f >= schema_len) {
        return Err(at(format!("feature index {f} beyond the schema")));
    }
    tree.validate(features.len(), classes).map_err(at)
}
