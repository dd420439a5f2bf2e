//! Errors of the library API.

use augur_datasets::DatasetError;
use augur_features::FeatureError;
use augur_kernels::KernelError;
use augur_models::ModelError;

#[derive(Debug, thiserror::Error)]
pub enum AugurError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Feature(#[from] FeatureError),
    #[error(transparent)]
    Dataset(#[from] DatasetError),

    /// A matrix the 32-bit kernels cannot index.
    #[error(
        "the {rows} x {cols} matrix with {nnz} entries has {what} beyond i32::MAX ({}): \
         augur's kernels index with 32-bit integers",
        i32::MAX
    )]
    TooLarge {
        what: &'static str,
        rows: usize,
        cols: usize,
        nnz: usize,
    },

    /// CSR arrays that are not canonical (given to [`crate::SpmvPlan::from_arrays`]).
    #[error(
        "the {rows} x {cols} CSR arrays with {nnz} entries are not canonical CSR (row pointers \
         from 0 to nnz, non-decreasing; column indices below {cols}, strictly increasing in \
         each row): augur_datasets::csr_from_arrays sorts and sums unsorted or repeated \
         columns, or names the entry that is wrong"
    )]
    NotCanonical {
        rows: usize,
        cols: usize,
        nnz: usize,
    },

    /// A model for another backend.
    #[error("model {origin} selects `{model}` kernels, this plan runs on `{backend}`")]
    WrongBackend {
        origin: String,
        model: String,
        backend: String,
    },

    /// A model trained on another device or precision: its timings do not hold here.
    #[error(
        "model {origin} was trained for {model}, this plan runs on {here}: its timings need not \
         hold here; collect and train on this device, or accept it explicitly \
         (PlanOptions::allow_other_device, --any-device)"
    )]
    WrongDevice {
        origin: String,
        model: String,
        here: String,
    },

    /// More GPUs asked for than present.
    #[error("{asked} GPUs asked for, but {present} present")]
    NotEnoughGpus { asked: usize, present: usize },

    /// A collective call failed.
    #[error("NCCL: {0}")]
    Nccl(String),

    /// An argument the API cannot take (named in the message).
    #[error("{0}")]
    Invalid(String),
}
