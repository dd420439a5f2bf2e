//! Triplets to CSR in O(nnz): bucket entries by row (a counting sort that keeps file order), sort
//! each row by column where it is not sorted already, sum duplicates, compact. Rows are processed
//! in parallel. Shared by the Matrix Market reader and the R-MAT generator.

use rayon::prelude::*;

use crate::{Csr, DatasetError, Scalar};

/// Build CSR from (row, col, value) triplets; duplicates are summed in input order.
pub(crate) fn csr_from_triplets<T: Scalar>(
    name: &str,
    shape: (usize, usize),
    rows_of: &[i32],
    cols_of: &[i32],
    vals_of: &[T],
) -> Result<Csr<T>, DatasetError> {
    let (rows, _) = shape;
    let mut start = vec![0usize; rows + 1];
    for &r in rows_of {
        start[r as usize + 1] += 1;
    }
    for i in 0..rows {
        start[i + 1] += start[i];
    }
    let n = rows_of.len();
    let mut idx = vec![0i32; n];
    let mut val = vec![T::zero(); n];
    let mut next = start.clone();
    for ((&r, &c), &v) in rows_of.iter().zip(cols_of).zip(vals_of) {
        let p = &mut next[r as usize];
        idx[*p] = c;
        val[*p] = v;
        *p += 1;
    }
    drop(next);
    csr_from_buckets(name, shape, &start, idx, val)
}

/// Rows `start[i]..start[i+1]` of `idx`/`val` hold row i's entries in any column order, possibly
/// repeated: sort them, sum repeats, compact, check.
pub(crate) fn csr_from_buckets<T: Scalar>(
    name: &str,
    shape: (usize, usize),
    start: &[usize],
    mut idx: Vec<i32>,
    mut val: Vec<T>,
) -> Result<Csr<T>, DatasetError> {
    let rows = shape.0;
    const CHUNK: usize = 1 << 12;
    // Split into disjoint per-chunk slices, then sort and deduplicate each row in parallel.
    let mut pieces = Vec::with_capacity(rows.div_ceil(CHUNK));
    let (mut irest, mut vrest) = (&mut idx[..], &mut val[..]);
    for r0 in (0..rows).step_by(CHUNK) {
        let r1 = (r0 + CHUNK).min(rows);
        let (i, ir) = irest.split_at_mut(start[r1] - start[r0]);
        let (v, vr) = vrest.split_at_mut(start[r1] - start[r0]);
        (irest, vrest) = (ir, vr);
        pieces.push((r0, r1, i, v));
    }
    let lens: Vec<usize> = pieces
        .into_par_iter()
        .flat_map_iter(|(r0, r1, idx, val)| {
            let base = start[r0];
            let mut scratch: Vec<(i32, T)> = Vec::new();
            (r0..r1)
                .map(|r| {
                    let (s, e) = (start[r] - base, start[r + 1] - base);
                    sort_and_merge(&mut idx[s..e], &mut val[s..e], &mut scratch)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // Compact in place: rows only move left.
    let mut indptr = Vec::with_capacity(rows + 1);
    indptr.push(0i32);
    let mut w = 0usize;
    for (r, len) in lens.into_iter().enumerate() {
        idx.copy_within(start[r]..start[r] + len, w);
        val.copy_within(start[r]..start[r] + len, w);
        w += len;
        indptr.push(w as i32);
    }
    idx.truncate(w);
    val.truncate(w);
    finish(name, shape, indptr, idx, val)
}

/// Sort one row by column (stable: repeats are summed in input order) and merge repeats; returns
/// the new length. Already-sorted rows, the common case in files, cost one pass.
fn sort_and_merge<T: Scalar>(idx: &mut [i32], val: &mut [T], scratch: &mut Vec<(i32, T)>) -> usize {
    if idx.windows(2).all(|w| w[0] < w[1]) {
        return idx.len();
    }
    if !idx.windows(2).all(|w| w[0] <= w[1]) {
        scratch.clear();
        scratch.extend(idx.iter().copied().zip(val.iter().copied()));
        scratch.sort_by_key(|e| e.0);
        for (k, (c, v)) in scratch.iter().enumerate() {
            idx[k] = *c;
            val[k] = *v;
        }
    }
    let mut w = 0;
    for k in 0..idx.len() {
        if w > 0 && idx[k] == idx[w - 1] {
            let v = val[k];
            val[w - 1] += v;
        } else {
            idx[w] = idx[k];
            val[w] = val[k];
            w += 1;
        }
    }
    w
}

/// Wrap checked arrays as CSR. `try_new` verifies the structure (sorted, in range) in one linear
/// pass, so a bug here becomes an error rather than a wrong matrix downstream.
pub(crate) fn finish<T: Scalar>(
    name: &str,
    shape: (usize, usize),
    indptr: Vec<i32>,
    indices: Vec<i32>,
    data: Vec<T>,
) -> Result<Csr<T>, DatasetError> {
    Csr::try_new(shape, indptr, indices, data).map_err(|(_, _, _, e)| {
        DatasetError::spec(name, format!("internal error: built an invalid CSR: {e}"))
    })
}
