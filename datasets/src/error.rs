//! Errors of the datasets crate. Every one names the file (or spec) and, where there is one, the
//! line, so that a user can open the file at the right place.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{path}: cannot open: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Reading failed part-way, typically a truncated or corrupt gzip stream.
    #[error("{path}:{line}: read failed: {source} (truncated or corrupt file?)")]
    Read {
        path: PathBuf,
        line: u64,
        #[source]
        source: std::io::Error,
    },

    /// The file's content is malformed at `line` (1-based).
    #[error("{path}:{line}: {msg}")]
    Parse {
        path: PathBuf,
        line: u64,
        msg: String,
    },

    /// A well-formed file of a kind augur does not read (complex values, dense `array` format).
    #[error("{path}:{line}: {what} is not supported: {why}")]
    Unsupported {
        path: PathBuf,
        line: u64,
        what: String,
        why: String,
    },

    /// A matrix too large for 32-bit indices.
    #[error("{name}: {what} = {value} is beyond the i32 limit ({max}) of augur's CSR indices")]
    TooLarge {
        name: String,
        what: &'static str,
        value: u128,
        max: usize,
    },

    /// A generator spec string that does not parse or names impossible parameters.
    #[error("matrix spec `{spec}`: {msg}")]
    Spec { spec: String, msg: String },

    /// Writing a matrix failed.
    #[error("{path}: cannot write: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The manifest (`MANIFEST.tsv`) is malformed.
    #[error("{path}: {msg}")]
    Manifest { path: PathBuf, msg: String },

    /// The collection index (`ssstats.csv`) is malformed at `line` (1-based).
    #[error("{origin}:{line}: {msg}")]
    Catalog {
        origin: String,
        line: u64,
        msg: String,
    },

    /// CSR arrays handed over by a caller (the Python and C bindings) that do not describe a
    /// matrix: `what` names the array and, where one is to blame, the entry.
    #[error("{name}: {what}")]
    Arrays { name: String, what: String },

    /// A download or its verification failed.
    #[error("{name}: {msg}")]
    Fetch { name: String, msg: String },
}

impl DatasetError {
    pub(crate) fn spec(spec: &str, msg: impl Into<String>) -> Self {
        DatasetError::Spec {
            spec: spec.to_string(),
            msg: msg.into(),
        }
    }
}
