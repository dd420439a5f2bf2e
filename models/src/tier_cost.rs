//! What the SpMV feature tiers cost a plan ([`GatherCost`]: where the matrix is when the plan is
//! made) and the per-matrix figures the trainer and the evaluation charge for them
//! ([`GatherCosts`]), from the runs' timings.

use serde::{Deserialize, Serialize};

use crate::runs::{MatrixRuns, Runs};

/// What gathering the exact features costs a plan, i.e. where the matrix is when the plan is
/// made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GatherCost {
    /// The plan is made from a host matrix (what `SpmvPlan::new` takes): it has to upload it,
    /// and on a GPU it gathers during the upload, so gathering costs what it adds to the upload.
    /// Pooled per decade of nonzeros: the median of `upload_gather_s - upload_s` over the runs'
    /// matrices of that decade (each matrix's own difference of two uploads is mostly the
    /// uploads' jitter: re-measured three times on an H100, the 16 largest per-matrix figures,
    /// 0.5-15 ms, came back as 0 in most runs and as 0.2-6 ms spikes in others, on uploads of
    /// 15-100 ms). The device pass `gather_s` where no upload was timed, and on the CPU, which
    /// uploads nothing. What `augur eval` charges by default.
    Upload,
    /// Each matrix's own measured difference of the two uploads (noisy; to compare).
    UploadRaw,
    /// The matrix is already on the device: gathering costs the device pass and the copy back
    /// (`gather_s`). What policies are trained on by default.
    #[default]
    Device,
    /// The gathered tier's trees read the row-length statistics only (no
    /// [`augur_features::spmv::COLUMN_FEATURES`]), which a plan from a host matrix computes
    /// from the row pointers on the host beside the upload (issue 18; the shipped GPU models):
    /// it costs what `gather_upload_s` records, where the runs timed it (else as
    /// [`GatherCost::Upload`]). The sampled tier as with `Upload`.
    HostRows,
}

impl GatherCost {
    /// Seconds the gathered tier costs on this matrix, by its own figures ([`GatherCost::Upload`]
    /// as [`GatherCost::UploadRaw`]: the pooled figure needs the other matrices, see
    /// [`GatherCosts`]).
    pub fn of(self, info: &crate::runs::MatrixInfo) -> f64 {
        match self {
            GatherCost::Upload | GatherCost::UploadRaw => {
                info.gather_during_upload_s().unwrap_or(info.gather_s)
            }
            GatherCost::HostRows => info
                .gather_upload_s
                .or_else(|| info.gather_during_upload_s())
                .unwrap_or(info.gather_s),
            GatherCost::Device => info.gather_s,
        }
    }
}

/// [`GatherCost`] resolved over a set of matrices: for [`GatherCost::Upload`], the median of
/// what gathering adds to the upload per decade of nonzeros.
#[derive(Debug, Clone)]
pub struct GatherCosts {
    kind: GatherCost,
    /// Median per decade (index: floor(log10 nnz), 0 for nnz < 10), where any was timed.
    by_decade: Vec<Option<f64>>,
}

fn decade(nnz: usize) -> usize {
    (nnz.max(1) as f64).log10().floor() as usize
}

impl GatherCosts {
    /// Pooled over the matrices of `runs` that `keep` admits.
    pub fn new(kind: GatherCost, runs: &Runs, keep: impl Fn(&MatrixRuns) -> bool) -> GatherCosts {
        let mut per: Vec<Vec<f64>> = Vec::new();
        if matches!(kind, GatherCost::Upload | GatherCost::HostRows) {
            for m in runs.matrices.iter().filter(|m| keep(m)) {
                if let Some(d) = m.info.gather_during_upload_s() {
                    let b = decade(m.info.nnz);
                    if per.len() <= b {
                        per.resize(b + 1, Vec::new());
                    }
                    per[b].push(d);
                }
            }
        }
        GatherCosts {
            kind,
            by_decade: per
                .into_iter()
                .map(|v| (!v.is_empty()).then(|| median_of(v)))
                .collect(),
        }
    }

    /// Seconds the sampled tier costs on `info`: for a plan from a host matrix ([`GatherCost::Upload`]
    /// and [`GatherCost::UploadRaw`]) what the plan's thread pays with the sample beside the upload
    /// (`sample_upload_s`, where the runs timed it); else the sample alone (`sample_s`).
    pub fn sample_of(&self, info: &crate::runs::MatrixInfo) -> f64 {
        match self.kind {
            GatherCost::Upload | GatherCost::UploadRaw | GatherCost::HostRows => {
                info.sample_upload_s.unwrap_or(info.sample_s)
            }
            GatherCost::Device => info.sample_s,
        }
    }

    /// Seconds the gathered tier costs on `info`.
    pub fn of(&self, info: &crate::runs::MatrixInfo) -> f64 {
        match self.kind {
            GatherCost::HostRows if info.gather_upload_s.is_some() => {
                info.gather_upload_s.expect("checked")
            }
            GatherCost::Upload | GatherCost::HostRows
                if info.gather_during_upload_s().is_some() =>
            {
                self.by_decade
                    .get(decade(info.nnz))
                    .copied()
                    .flatten()
                    .unwrap_or(info.gather_s)
            }
            k => k.of(info),
        }
    }
}

fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
