//! The manifest of the shared SuiteSparse matrices (`../shared/matrices/MANIFEST.tsv`): one row per
//! file with its sizes, storage and a family key for grouped train/validation splits.

use std::path::{Path, PathBuf};

use crate::DatasetError;

/// One row of `MANIFEST.tsv`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
pub struct ManifestEntry {
    pub name: String,
    pub group: String,
    pub rows: usize,
    pub cols: usize,
    /// Entries stored in the file.
    pub nnz: usize,
    /// Entries with both triangles expanded, explicit zeros kept.
    pub nnz_full: usize,
    /// As `nnz_full` without explicit zeros (the collection's own count).
    pub nnz_nonzero: usize,
    pub symmetry: String,
    pub field: String,
    pub kind: String,
    pub ss_id: u32,
    pub md5: String,
    /// Group plus name stem: near-identical members of one family share it.
    pub family: String,
}

impl ManifestEntry {
    /// The file of this entry under the matrices directory.
    pub fn path(&self, matrices_dir: &Path) -> PathBuf {
        matrices_dir
            .join("suitesparse")
            .join(format!("{}.mtx.gz", self.name))
    }
}

/// Read a manifest TSV (header line, tab-separated).
pub fn read_manifest(path: impl AsRef<Path>) -> Result<Vec<ManifestEntry>, DatasetError> {
    let path = path.as_ref();
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(b'\t')
        .quoting(false)
        .from_path(path)
        .map_err(|e| DatasetError::Manifest {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?;
    rdr.deserialize()
        .map(|r| {
            r.map_err(|e| DatasetError::Manifest {
                path: path.to_path_buf(),
                msg: e.to_string(),
            })
        })
        .collect()
}

/// Where the shared matrices are: `$AUGUR_SHARED_MATRICES` if set, else the first `shared/matrices`
/// folder found beside the current directory or one of its ancestors (`../shared/matrices` from
/// the repository root).
pub fn find_shared_matrices() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("AUGUR_SHARED_MATRICES") {
        let dir = PathBuf::from(dir);
        return dir.is_dir().then_some(dir);
    }
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors()
        .map(|a| a.join("shared").join("matrices"))
        .find(|p| p.join("MANIFEST.tsv").is_file())
}
