//! "A file or a spec": the matrix argument every augur command takes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::generate::{Generator, KINDS};
use crate::mtx::{self, Header};
use crate::{Csr, DatasetError, Scalar};

/// Where a matrix comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum MatrixSource {
    File(PathBuf),
    Generated(Generator),
}

/// What loading a matrix cost and saw.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadInfo {
    /// Wall time to read or generate, seconds.
    pub seconds: f64,
    /// Size of the file on disk (files only).
    pub file_bytes: Option<u64>,
    /// Bytes of Matrix Market text parsed (files only; after decompression).
    pub text_bytes: Option<u64>,
    /// The file's banner and size line (files only).
    pub header: Option<Header>,
}

impl MatrixSource {
    /// An existing path is a file; otherwise `kind:key=value,...` with a known kind is a spec.
    pub fn parse(arg: &str) -> Result<MatrixSource, DatasetError> {
        let path = Path::new(arg);
        if path.exists() {
            return Ok(MatrixSource::File(path.to_path_buf()));
        }
        // A path that names something but does not resolve (a symbolic link to nothing, or a
        // loop of them): say that, not "no such file".
        if let Ok(meta) = path.symlink_metadata() {
            return Err(DatasetError::Open {
                path: path.to_path_buf(),
                source: match std::fs::metadata(path) {
                    Err(e) if meta.file_type().is_symlink() => std::io::Error::new(
                        e.kind(),
                        format!("a symbolic link that does not resolve ({e})"),
                    ),
                    Err(e) => e,
                    Ok(_) => std::io::Error::other("not readable"),
                },
            });
        }
        match arg.split_once(':') {
            Some((kind, _)) if KINDS.contains(&kind.trim()) || arg.contains('=') => {
                Generator::parse(arg).map(MatrixSource::Generated)
            }
            _ => Err(DatasetError::Open {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!(
                        "no such file, and not a generator spec (`kind:key=value,...` with kind one of {})",
                        KINDS.join(", ")
                    ),
                ),
            }),
        }
    }

    /// Short name: the file name without `.mtx`/`.mtx.gz`, or the canonical spec.
    pub fn name(&self) -> String {
        match self {
            MatrixSource::File(p) => {
                let n = p.file_name().unwrap_or_default().to_string_lossy();
                let n = n.strip_suffix(".gz").unwrap_or(&n);
                n.strip_suffix(".mtx").unwrap_or(n).to_string()
            }
            MatrixSource::Generated(g) => g.to_string(),
        }
    }

    /// Read or generate the matrix.
    pub fn load<T: Scalar>(&self) -> Result<(Csr<T>, LoadInfo), DatasetError> {
        let t = Instant::now();
        match self {
            MatrixSource::File(p) => {
                let m = mtx::read::<T>(p)?;
                let seconds = t.elapsed().as_secs_f64();
                Ok((
                    m.matrix,
                    LoadInfo {
                        seconds,
                        file_bytes: std::fs::metadata(p).ok().map(|m| m.len()),
                        text_bytes: Some(m.text_bytes),
                        header: Some(m.header),
                    },
                ))
            }
            MatrixSource::Generated(g) => {
                let a = g.generate::<T>()?;
                Ok((
                    a,
                    LoadInfo {
                        seconds: t.elapsed().as_secs_f64(),
                        file_bytes: None,
                        text_bytes: None,
                        header: None,
                    },
                ))
            }
        }
    }
}
