//! One loader for the model files of every domain: [`AnyModel`] reads a file's `format` field
//! and parses the rest as that domain's model (SpMV, collectives, attention). The three files
//! share their header: `format`, `format_version`, `task`, `schema` (the feature schema they
//! read), `device`, `augur_version` and a `training` record.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::attention::{AttentionModel, ATTENTION_FORMAT};
use crate::comm::{CommModel, COMM_FORMAT};
use crate::model::{Model, FORMAT};
use crate::overlap::{OverlapModel, OVERLAP_FORMAT};
use crate::ModelError;

/// What the three domains' model files share: pretty JSON with the common header, validated when
/// read (errors name the file and what was expected), written through a temporary file and a
/// rename (an existing file is replaced only by a complete one).
pub trait ModelFile: Serialize + DeserializeOwned {
    /// What the file is called in errors (`model`, `comm model`, `attention model`).
    const WHAT: &'static str;

    /// Structure and header checks: a damaged file, another format or version, or another
    /// feature schema is refused with what differs.
    fn check(&self) -> Result<(), String>;

    /// Parse and validate from JSON text; `origin` names it in errors.
    fn from_json(text: &str, origin: &str) -> Result<Self, ModelError> {
        crate::parse_json(text, origin, Self::WHAT, Self::check)
    }

    /// Read and validate a model file.
    fn read(path: &Path) -> Result<Self, ModelError> {
        Self::from_json(&crate::read_text(path)?, &path.display().to_string())
    }

    /// Write as pretty JSON through a temporary file and a rename.
    fn write(&self, path: &Path) -> Result<(), ModelError> {
        crate::write_atomic(path, &self.to_json())
    }

    fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a model always serializes")
    }
}

impl ModelFile for Model {
    const WHAT: &'static str = "model";
    fn check(&self) -> Result<(), String> {
        self.validate()
    }
}

impl ModelFile for CommModel {
    const WHAT: &'static str = "comm model";
    fn check(&self) -> Result<(), String> {
        self.validate()
    }
}

impl ModelFile for OverlapModel {
    const WHAT: &'static str = "overlap model";
    fn check(&self) -> Result<(), String> {
        self.validate()
    }
}

impl ModelFile for AttentionModel {
    const WHAT: &'static str = "attention model";
    fn check(&self) -> Result<(), String> {
        self.validate()
    }
}

/// A model of one of augur's domains, told apart by the file's `format` field.
#[derive(Debug, Clone)]
pub enum AnyModel {
    Spmv(Box<Model>),
    Comm(Box<CommModel>),
    Attention(Box<AttentionModel>),
    Overlap(Box<OverlapModel>),
}

/// The domains' `format` values, in the order [`AnyModel`] lists them.
pub const FORMATS: [&str; 4] = [FORMAT, COMM_FORMAT, ATTENTION_FORMAT, OVERLAP_FORMAT];

impl AnyModel {
    /// Parse and validate a model file's JSON text of any domain; `origin` names it in errors.
    /// Only the `format` field decides the domain: a file without one, or with one augur does
    /// not know, is an error naming what was found and what is read.
    pub fn from_json(text: &str, origin: &str) -> Result<AnyModel, ModelError> {
        // A typed probe: other fields are skipped, not built.
        #[derive(Deserialize)]
        struct Probe {
            format: Option<serde_json::Value>,
        }
        let err = |msg: String| ModelError::Model {
            origin: origin.to_string(),
            msg,
        };
        let known = FORMATS.map(|f| format!("`{f}`")).join(", ");
        let probe: Probe = serde_json::from_str(text).map_err(|e| {
            err(format!(
                "not a model file (JSON with a `format` field): {e}"
            ))
        })?;
        let format = match probe.format {
            Some(serde_json::Value::String(s)) => s,
            Some(other) => return Err(err(format!("`format` is {other}, not one of {known}"))),
            None => {
                return Err(err(format!(
                    "no `format` field: not an augur model file (augur writes {known})"
                )))
            }
        };
        Ok(match format.as_str() {
            FORMAT => AnyModel::Spmv(Box::new(Model::from_json(text, origin)?)),
            COMM_FORMAT => AnyModel::Comm(Box::new(CommModel::from_json(text, origin)?)),
            ATTENTION_FORMAT => {
                AnyModel::Attention(Box::new(AttentionModel::from_json(text, origin)?))
            }
            OVERLAP_FORMAT => AnyModel::Overlap(Box::new(OverlapModel::from_json(text, origin)?)),
            other => {
                return Err(err(format!(
                    "format `{other}` is not one augur reads ({known})"
                )))
            }
        })
    }

    /// Read and validate a model file of any domain.
    pub fn read(path: &Path) -> Result<AnyModel, ModelError> {
        AnyModel::from_json(&crate::read_text(path)?, &path.display().to_string())
    }

    /// `spmv`, `comm` or `attention`.
    pub fn domain(&self) -> &'static str {
        match self {
            AnyModel::Spmv(_) => "spmv",
            AnyModel::Comm(_) => "comm",
            AnyModel::Attention(_) => "attention",
            AnyModel::Overlap(_) => "overlap",
        }
    }

    /// The file's `format` value.
    pub fn format(&self) -> &str {
        match self {
            AnyModel::Spmv(m) => &m.format,
            AnyModel::Comm(m) => &m.format,
            AnyModel::Attention(m) => &m.format,
            AnyModel::Overlap(m) => &m.format,
        }
    }

    /// The SpMV model, or an error naming the domain the file holds (`origin` names it).
    pub fn into_spmv(self, origin: &str) -> Result<Model, ModelError> {
        match self {
            AnyModel::Spmv(m) => Ok(*m),
            other => Err(ModelError::Model {
                origin: origin.to_string(),
                msg: format!(
                    "a {} model (`{}`), not an SpMV one (`{FORMAT}`)",
                    other.domain(),
                    other.format()
                ),
            }),
        }
    }
}

/// The forms a model can be exported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Indented if/else text a person reads.
    Text,
    /// Graphviz DOT.
    Dot,
    /// Rust source of the same decisions.
    Rust,
    /// The model file itself (for the SpMV model: with its schema spelled out).
    Json,
}

impl std::str::FromStr for ExportFormat {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<ExportFormat, ModelError> {
        Ok(match s {
            "text" => ExportFormat::Text,
            "dot" => ExportFormat::Dot,
            "rust" => ExportFormat::Rust,
            "json" => ExportFormat::Json,
            _ => {
                return Err(ModelError::Model {
                    origin: "export".into(),
                    msg: format!("unknown format `{s}`: text, dot, rust or json"),
                })
            }
        })
    }
}

impl AnyModel {
    /// The model in `format`, whatever its domain.
    pub fn export(&self, format: ExportFormat) -> String {
        use crate::{attention, comm, export};
        match self {
            AnyModel::Comm(m) => match format {
                ExportFormat::Text => comm::export_text(m),
                ExportFormat::Dot => comm::export_dot(m),
                ExportFormat::Rust => comm::export_rust(m),
                ExportFormat::Json => m.to_json(),
            },
            AnyModel::Attention(m) => match format {
                ExportFormat::Text => attention::export_text(m),
                ExportFormat::Dot => attention::export_dot(m),
                ExportFormat::Rust => attention::export_rust(m),
                ExportFormat::Json => m.to_json(),
            },
            AnyModel::Overlap(m) => match format {
                ExportFormat::Text => m.export_text(),
                ExportFormat::Dot => m.export_dot(),
                ExportFormat::Rust => m.export_rust(),
                ExportFormat::Json => m.to_json(),
            },
            AnyModel::Spmv(m) => match format {
                ExportFormat::Text => export::text(m),
                ExportFormat::Dot => export::dot(m),
                ExportFormat::Rust => export::rust(m),
                ExportFormat::Json => export::json(m),
            },
        }
    }
}
