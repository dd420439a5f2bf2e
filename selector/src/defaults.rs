//! The trained models built into augur (`models/trained/`), used when no model file is given.

use augur_models::{Model, ModelError};

/// The built-in model for `backend` (`cpu` or `cuda`).
pub fn model(backend: &str) -> Result<Model, ModelError> {
    Err(ModelError::Model {
        origin: format!("default-{backend}"),
        msg: "no built-in model yet".into(),
    })
}
