//! # augur-datasets
//!
//! The first stage of augur's data flow (datasets -> features -> kernels -> models -> selector):
//! sparse matrices come in here, from Matrix Market files or from generators, as CSR with `i32`
//! indices ([`Csr`]).
//!
//! - [`mtx`]: a streaming Matrix Market reader (`.mtx`, `.mtx.gz`) with line-accurate errors.
//! - [`generate`]: deterministic generators (stencils, R-MAT, power-law, ...) that build CSR
//!   directly and reach 1e8+ nonzeros; named by spec strings such as `rmat:scale=20,ef=16,seed=1`.
//! - [`source`]: "a file or a spec", the argument every augur command takes.
//! - [`manifest`]: the shared-matrix manifest (`MANIFEST.tsv`) with family keys.
//! - [`stats`]: row-length statistics for `augur matrix info`.

mod build;
pub use build::csr_from_arrays;
pub mod catalog;
pub mod error;
pub mod fetch;
pub mod generate;
pub mod manifest;
pub mod mtx;
pub mod reorder;
pub mod scalar;
pub mod source;
pub mod stats;

pub use error::DatasetError;
pub use scalar::Scalar;
pub use source::{LoadInfo, MatrixSource};

/// Compressed sparse row matrix with `i32` column indices and row pointers: the form every augur
/// kernel consumes (GPU kernels and cuSPARSE use 32-bit indices).
pub type Csr<T> = sprs::CsMatI<T, i32, i32>;

/// A CSR matrix's arrays borrowed from wherever they live (a [`Csr`], or a caller's arrays: the
/// Python and C bindings), with the structure of a valid [`Csr`]: `indptr` has `rows + 1`
/// non-decreasing entries from 0 to `nnz`, each row's column indices are increasing and below
/// `cols`. What plans and devices read; `&Csr` converts for free.
#[derive(Debug)]
pub struct CsrRef<'a, T> {
    rows: usize,
    cols: usize,
    indptr: &'a [i32],
    indices: &'a [i32],
    data: &'a [T],
}

impl<T> Clone for CsrRef<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for CsrRef<'_, T> {}

impl<'a, T> From<&'a Csr<T>> for CsrRef<'a, T> {
    fn from(a: &'a Csr<T>) -> CsrRef<'a, T> {
        CsrRef {
            rows: a.rows(),
            cols: a.cols(),
            indptr: a.indptr().into_raw_storage(),
            indices: a.indices(),
            data: a.data(),
        }
    }
}

impl<'a, T> From<&CsrRef<'a, T>> for CsrRef<'a, T> {
    fn from(a: &CsrRef<'a, T>) -> CsrRef<'a, T> {
        *a
    }
}

impl<'a, T> CsrRef<'a, T> {
    /// Borrow checked CSR arrays (the checks of [`Csr`]'s constructor, without a copy): `None`
    /// when they are not a canonical CSR matrix (lengths, row pointers, a column out of range or
    /// not increasing in its row, more than i32 can index).
    pub fn try_new(
        (rows, cols): (usize, usize),
        indptr: &'a [i32],
        indices: &'a [i32],
        data: &'a [T],
    ) -> Option<CsrRef<'a, T>>
    where
        T: Sync,
    {
        use rayon::prelude::*;
        let ok = rows <= MAX_INDEX
            && cols <= MAX_INDEX
            && indptr.len() == rows + 1
            && indptr[0] == 0
            && indptr[rows] as usize == indices.len()
            && indices.len() == data.len()
            && indptr.windows(2).all(|w| w[0] <= w[1])
            && (0..rows).into_par_iter().with_min_len(4096).all(|r| {
                let s = &indices[indptr[r] as usize..indptr[r + 1] as usize];
                s.iter().all(|&c| c >= 0 && (c as usize) < cols)
                    && s.windows(2).all(|w| w[0] < w[1])
            });
        ok.then_some(CsrRef {
            rows,
            cols,
            indptr,
            indices,
            data,
        })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn cols(&self) -> usize {
        self.cols
    }
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }
    /// Row pointers: `rows + 1` entries.
    pub fn indptr(&self) -> &'a [i32] {
        self.indptr
    }
    pub fn indices(&self) -> &'a [i32] {
        self.indices
    }
    pub fn data(&self) -> &'a [T] {
        self.data
    }
}

/// Largest row count, column count or number of stored entries a [`Csr`] can hold.
pub const MAX_INDEX: usize = i32::MAX as usize;
