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
        shape: (usize, usize),
        indptr: &'a [i32],
        indices: &'a [i32],
        data: &'a [T],
    ) -> Option<CsrRef<'a, T>>
    where
        T: Sync,
    {
        // SAFETY: checked before it is returned.
        let a = unsafe { CsrRef::new_unchecked(shape, indptr, indices, data) };
        a.is_canonical().then_some(a)
    }

    /// Borrow CSR arrays without checking them, for a caller that checks them
    /// ([`CsrRef::is_canonical`]) while other work goes on (a plan checks the caller's arrays
    /// while it uploads them).
    ///
    /// # Safety
    /// Host code reads a `CsrRef` with bounds checks (malformed arrays give wrong values or a
    /// panic), but GPU kernels do not: nothing may launch a kernel on the arrays (uploaded or
    /// not) before `is_canonical` said true.
    pub unsafe fn new_unchecked(
        (rows, cols): (usize, usize),
        indptr: &'a [i32],
        indices: &'a [i32],
        data: &'a [T],
    ) -> CsrRef<'a, T> {
        CsrRef {
            rows,
            cols,
            indptr,
            indices,
            data,
        }
    }

    /// Whether the arrays are a canonical CSR matrix (what [`CsrRef::try_new`] checks: lengths,
    /// row pointers, a column out of range or not increasing in its row, more than i32 can
    /// index), in one parallel pass.
    pub fn is_canonical(&self) -> bool
    where
        T: Sync,
    {
        use rayon::prelude::*;
        let (rows, cols, indptr, indices) = (self.rows, self.cols, self.indptr, self.indices);
        rows <= MAX_INDEX
            && cols <= MAX_INDEX
            && indptr.len() == rows + 1
            && indptr[0] == 0
            && indptr[rows] as usize == indices.len()
            && indices.len() == self.data.len()
            // One parallel pass over blocks of rows (vectorised within a block).
            && (0..rows.div_ceil(ROWS_PER_CHECK)).into_par_iter().all(|b| {
                let r = b * ROWS_PER_CHECK..((b + 1) * ROWS_PER_CHECK).min(rows);
                rows_canonical(&indptr[r.start..=r.end], indices, cols)
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

/// Rows per parallel task of [`CsrRef::try_new`]'s check.
const ROWS_PER_CHECK: usize = 16_384;

/// Whether the rows whose pointers are `p` (`rows + 1` of them) are canonical CSR: pointers
/// non-decreasing and inside `indices`, columns in `0..cols` and strictly increasing in each row.
/// Written without early exits so that it vectorises: the adjacent pairs that do not increase
/// are counted over the block's entries at once, and must all be at row ends.
fn rows_canonical(p: &[i32], indices: &[i32], cols: usize) -> bool {
    let (first, last) = (p[0], p[p.len() - 1]);
    if first < 0
        || last as usize > indices.len()
        || !p.iter().zip(&p[1..]).fold(true, |ok, (a, b)| ok & (a <= b))
    {
        return false;
    }
    let (lo, hi) = (first as usize, last as usize);
    let s = &indices[lo..hi];
    // In range: a negative column is beyond any u32 column count (cols <= i32::MAX).
    let cols = cols as u32;
    if !s.iter().fold(true, |ok, &c| ok & ((c as u32) < cols)) {
        return false;
    }
    let falls = s
        .iter()
        .zip(s.get(1..).unwrap_or_default())
        .map(|(a, b)| (a >= b) as usize)
        .sum::<usize>();
    let mut at_row_ends = 0;
    let mut prev = lo;
    for &e in &p[1..p.len() - 1] {
        let e = e as usize;
        if e != prev && e < hi {
            at_row_ends += (s[e - lo - 1] >= s[e - lo]) as usize;
        }
        prev = e;
    }
    falls == at_row_ends
}

/// Largest row count, column count or number of stored entries a [`Csr`] can hold.
pub const MAX_INDEX: usize = i32::MAX as usize;
