//! The trained models built into augur (`models/trained/`), used when no model file is given:
//! the CUDA one trained on an H100 (shared SuiteSparse matrices plus the generated training set up
//! to 1e8 nonzeros), the CPU one on the 2-core development VM. Their runs CSVs are under
//! `datasets/runs/`; their evaluation is in `docs/BENCHMARKS.md`.

use augur_models::{Model, ModelError};

/// The CUDA model's JSON.
pub const CUDA_MODEL: &str = include_str!("../../models/trained/spmv-cuda-f32-h100.json");
/// The CPU model's JSON.
pub const CPU_MODEL: &str = include_str!("../../models/trained/spmv-cpu-f32-vm.json");

/// The built-in model for `backend` (`cpu` or `cuda`), parsed and validated.
pub fn model(backend: &str) -> Result<Model, ModelError> {
    match backend {
        "cuda" => Model::from_json(
            CUDA_MODEL,
            "default-cuda (models/trained/spmv-cuda-f32-h100.json)",
        ),
        "cpu" => Model::from_json(
            CPU_MODEL,
            "default-cpu (models/trained/spmv-cpu-f32-vm.json)",
        ),
        other => Err(ModelError::Model {
            origin: format!("default-{other}"),
            msg: "no built-in model for this backend: there are default-cpu and default-cuda"
                .into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn built_in_models_parse_validate_and_choose() {
        for b in ["cpu", "cuda"] {
            let m = super::model(b).unwrap();
            assert_eq!(m.backend, b);
            let f = augur_features::spmv::SpmvFeatures::from_values(&[1000.0; 22]).unwrap();
            let c = m.choose(&f, 10);
            assert!(c.kernel < m.kernels.len());
        }
        assert!(super::model("tpu").is_err());
    }
}
