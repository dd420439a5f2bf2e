//! The trained models built into augur (`models/trained/`), used when no model file is given:
//! CUDA ones trained on an H100 and an H200 (shared SuiteSparse matrices, the same grown,
//! permuted and reordered, and the generated training set up to 1e8 nonzeros), chosen by the
//! GPU's name; the CPU one on the 2-core development VM. Their runs CSVs are under
//! `datasets/runs/`; their evaluation is in `docs/BENCHMARKS.md`. The communication-pattern model
//! was trained on H200 groups of 2 and 4 GPUs (runs under `bench/results/comm-*`), and so was the
//! GEMM + collective overlap model (each call timed from a held start, every pattern including
//! `ll-bulk`: `bench/results/ll-bulk-h200-2026-11-28/`).

use std::sync::{Arc, OnceLock};

use augur_models::attention::AttentionModel;
use augur_models::comm::CommModel;
use augur_models::overlap::OverlapModel;
use augur_models::{Model, ModelError, ModelFile};

/// The communication-pattern model's JSON (H200 groups of 2 and 4 GPUs, NVLink).
pub const COMM_MODEL: &str = include_str!("../../models/trained/comm-h200.json");

/// The built-in communication-pattern model, parsed once.
pub fn comm_model() -> Result<Arc<CommModel>, ModelError> {
    static M: OnceLock<Result<Arc<CommModel>, String>> = OnceLock::new();
    parsed_once(&M, "comm", "comm-h200.json", |origin| {
        CommModel::from_json(COMM_MODEL, origin)
    })
}

/// A built-in model from `models/trained/<file>`, parsed on first use into `cell`; errors
/// name it `built-in <name> model`.
fn parsed_once<T>(
    cell: &OnceLock<Result<Arc<T>, String>>,
    name: &str,
    file: &str,
    parse: impl FnOnce(&str) -> Result<T, ModelError>,
) -> Result<Arc<T>, ModelError> {
    cell.get_or_init(|| {
        parse(&format!("built-in {name} model (models/trained/{file})"))
            .map(Arc::new)
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|msg| ModelError::Model {
        origin: format!("built-in {name} model"),
        msg,
    })
}

/// The decode-attention schedule model's JSON (one H200; the grid of `augur collect attention`,
/// runs under `bench/results/attention-grid-h200-2026-11-24/`, throughput timing).
pub const ATTENTION_MODEL: &str = include_str!("../../models/trained/attention-h200.json");

/// The built-in decode-attention schedule model, parsed once.
pub fn attention_model() -> Result<Arc<AttentionModel>, ModelError> {
    static M: OnceLock<Result<Arc<AttentionModel>, String>> = OnceLock::new();
    parsed_once(&M, "attention", "attention-h200.json", |origin| {
        AttentionModel::from_json(ATTENTION_MODEL, origin)
    })
}

/// The overlap-pattern model's JSON (H200 groups of 2 and 4 GPUs, NVLink; three sets of weights
/// of `bench/tp-grid.sh`'s grid, 24 in all, each call timed from a held start, runs under
/// `bench/results/ll-bulk-h200-2026-11-28/` and `bench/results/third-weights-h200-2026-11-28/`).
pub const OVERLAP_MODEL: &str = include_str!("../../models/trained/overlap-h200.json");

/// The built-in overlap-pattern model, parsed once.
pub fn overlap_model() -> Result<Arc<OverlapModel>, ModelError> {
    static M: OnceLock<Result<Arc<OverlapModel>, String>> = OnceLock::new();
    parsed_once(&M, "overlap", "overlap-h200.json", |origin| {
        OverlapModel::from_json(OVERLAP_MODEL, origin)
    })
}

/// The built-in CUDA models: (the GPU name they are for, a key found in that name, JSON, file).
pub const CUDA_MODELS: [(&str, &str, &str, &str); 2] = [
    (
        "NVIDIA H100 80GB HBM3",
        "H100",
        include_str!("../../models/trained/spmv-cuda-f32-h100.json"),
        "spmv-cuda-f32-h100.json",
    ),
    (
        "NVIDIA H200",
        "H200",
        include_str!("../../models/trained/spmv-cuda-f32-h200.json"),
        "spmv-cuda-f32-h200.json",
    ),
];
/// The CUDA model `default-cuda` names, and the one used on a GPU no built-in model is for.
pub const CUDA_MODEL: &str = CUDA_MODELS[0].2;
/// The CPU model's JSON.
pub const CPU_MODEL: &str = include_str!("../../models/trained/spmv-cpu-f32-vm.json");

/// Which built-in CUDA model serves a GPU of this name (an index into [`CUDA_MODELS`]), and a
/// note when none is for it (the H100's is used: the nearest in kind of those shipped).
pub fn cuda_model_index(device: &str) -> (usize, Option<String>) {
    match CUDA_MODELS.iter().position(|m| device.contains(m.1)) {
        Some(i) => (i, None),
        None => (
            0,
            Some(format!(
                "no built-in model was trained on a {device}: the {}'s is used (built-in: {}); \
                 collect runs there and `augur train` one for this GPU",
                CUDA_MODELS[0].1,
                CUDA_MODELS.map(|m| m.1).join(", ")
            )),
        ),
    }
}

/// The built-in CUDA model of index `i` of [`CUDA_MODELS`].
pub fn cuda_model(i: usize) -> Result<Model, ModelError> {
    let (_, key, json, file) = CUDA_MODELS[i];
    Model::from_json(
        json,
        &format!(
            "default-cuda-{} (models/trained/{file})",
            key.to_lowercase()
        ),
    )
}

/// The built-in model for `backend` (`cpu` or `cuda`; `cuda-h100`, `cuda-h200` for one GPU's),
/// parsed and validated.
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
        other => match CUDA_MODELS
            .iter()
            .position(|m| other == format!("cuda-{}", m.1.to_lowercase()))
        {
            Some(i) => cuda_model(i),
            None => Err(ModelError::Model {
                origin: format!("default-{other}"),
                msg: "no built-in model for this backend: there are default-cpu, default-cuda, \
                      default-cuda-h100 and default-cuda-h200"
                    .into(),
            }),
        },
    }
}

/// A model file of any domain (its `format` field says which), or a built-in one by name:
/// `default-cpu`, `default-cuda` (the H100's), `default-cuda-h100`, `default-cuda-h200`,
/// `default-comm`, `default-attention`, `default-overlap`.
pub fn load_any(arg: &str) -> Result<augur_models::AnyModel, ModelError> {
    use augur_models::AnyModel;
    Ok(match arg {
        "default-cpu" | "default-cuda" | "default-cuda-h100" | "default-cuda-h200" => {
            AnyModel::Spmv(Box::new(model(&arg[8..])?))
        }
        "default-comm" => AnyModel::Comm(Box::new((*comm_model()?).clone())),
        "default-attention" => AnyModel::Attention(Box::new((*attention_model()?).clone())),
        "default-overlap" => AnyModel::Overlap(Box::new((*overlap_model()?).clone())),
        _ => AnyModel::read(std::path::Path::new(arg))?,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn built_in_models_parse_validate_and_choose() {
        use augur_features::spmv::{CpuGatherer, CsrPattern, SpmvGatherer};
        let small = augur_datasets::MatrixSource::parse("stencil2d:nx=20")
            .unwrap()
            .load::<f32>()
            .unwrap()
            .0;
        let big = augur_datasets::MatrixSource::parse("banded:n=200000,bw=16")
            .unwrap()
            .load::<f32>()
            .unwrap()
            .0;
        let f = |a: &augur_datasets::Csr<f32>| CpuGatherer.gather(CsrPattern::of(a)).unwrap();
        // The shipped CPU model (2-core VM): sequential for small matrices, merge-path for
        // large ones (its rule: nnz < 79.6k).
        let cpu = super::model("cpu").unwrap();
        assert_eq!(cpu.backend, "cpu");
        let name = |m: &augur_models::Model, a: &augur_datasets::Csr<f32>, k: u32| {
            m.kernels[m.choose(&f(a), k).kernel].clone()
        };
        assert_eq!(name(&cpu, &small, 10), "sequential");
        assert_eq!(name(&cpu, &big, 10), "merge-path");
        // The shipped CUDA model (H100) picks a GPU kernel of its pool, not a CPU one.
        let cuda = super::model("cuda").unwrap();
        assert_eq!(cuda.backend, "cuda");
        assert!(cuda.device.contains("H100"), "{}", cuda.device);
        let k = name(&cuda, &big, 100);
        assert!(augur_kernels::cuda::GpuKernel::from_name(&k).is_ok(), "{k}");
        assert!(super::model("tpu").is_err());
        // One per GPU, chosen by its name; another GPU gets the H100's with a note.
        assert!(super::model("cuda-h200").unwrap().device.contains("H200"));
        assert_eq!(super::cuda_model_index("NVIDIA H200").0, 1);
        assert_eq!(super::cuda_model_index("NVIDIA H100 80GB HBM3"), (0, None));
        let (i, note) = super::cuda_model_index("NVIDIA A100-SXM4-80GB");
        assert_eq!(i, 0);
        assert!(note.unwrap().contains("A100"));
    }

    #[test]
    fn built_in_comm_model_parses_and_picks_an_all_gather_pattern() {
        use augur_features::message::MessageShape;
        let m = super::comm_model().unwrap();
        for bytes in ["4KiB", "1MiB", "256MiB"] {
            for world in [2, 4] {
                let s = MessageShape::parse(&format!(
                    "message:collective=all-gather,bytes={bytes},world={world}"
                ))
                .unwrap();
                let p = m.choose(&s).unwrap();
                assert!(crate::multi::GatherMode::from_pattern(p).is_some(), "{p}");
            }
        }
    }
}
