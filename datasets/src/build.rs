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

/// CSR from a caller's arrays (the Python and C bindings): row pointers, column indices and
/// values as scipy.sparse and C codes hold them, indices of any integer width that fits i32.
/// Checked with errors naming the array and the entry (lengths, a first row pointer other than
/// 0, decreasing row pointers, a column out of range, an index beyond i32). Rows with unsorted or
/// repeated column indices (non-canonical CSR, which scipy allows) are sorted and their repeats
/// summed, as `scipy.sparse.csr_matrix.sum_duplicates` does; the second value says how many rows
/// that touched (0: the arrays were canonical and were taken as they are).
pub fn csr_from_arrays<T: Scalar, I: Copy + TryInto<i64> + std::fmt::Display + Sync>(
    name: &str,
    shape: (usize, usize),
    indptr: &[I],
    indices: &[I],
    data: &[T],
) -> Result<(Csr<T>, usize), DatasetError> {
    let err = |what: String| DatasetError::Arrays {
        name: name.to_string(),
        what,
    };
    let (rows, cols) = shape;
    let max = i32::MAX as usize;
    for (what, v) in [
        ("rows", rows),
        ("columns", cols),
        ("entries", indices.len()),
    ] {
        if v > max {
            return Err(DatasetError::TooLarge {
                name: name.to_string(),
                what,
                value: v as u128,
                max,
            });
        }
    }
    if indptr.len() != rows + 1 {
        return Err(err(format!(
            "indptr has {} entries; a matrix of {rows} rows needs {}",
            indptr.len(),
            rows + 1
        )));
    }
    if indices.len() != data.len() {
        return Err(err(format!(
            "indices has {} entries but data has {}",
            indices.len(),
            data.len()
        )));
    }
    let as_i64 = |v: I| -> Option<i64> { v.try_into().ok() };
    let mut ptr = Vec::with_capacity(rows + 1);
    let mut prev = 0i64;
    for (r, &p) in indptr.iter().enumerate() {
        let v = as_i64(p)
            .filter(|&v| v >= 0 && v <= max as i64)
            .ok_or_else(|| {
                err(format!(
                    "indptr[{r}] = {p} is negative or beyond the i32 limit"
                ))
            })?;
        if r == 0 && v != 0 {
            return Err(err(format!("indptr[0] = {v}; it must be 0")));
        }
        if v < prev {
            return Err(err(format!(
                "indptr decreases at row {}: indptr[{}] = {prev} > indptr[{r}] = {v}",
                r - 1,
                r - 1
            )));
        }
        prev = v;
        ptr.push(v as i32);
    }
    if prev as usize != indices.len() {
        return Err(err(format!(
            "indptr[{rows}] = {prev} but indices and data have {} entries",
            indices.len()
        )));
    }
    // Indices converted and range-checked in parallel (the copy is most of the cost); the first
    // bad one is looked up again only to name it.
    let conv = |c: I| as_i64(c).filter(|&v| v >= 0 && (v as u64) < cols as u64);
    let idx: Vec<i32> = match indices
        .par_iter()
        .map(|&c| conv(c).map(|v| v as i32))
        .collect::<Option<Vec<i32>>>()
    {
        Some(v) => v,
        None => {
            let k = indices
                .iter()
                .position(|&c| conv(c).is_none())
                .expect("one failed above");
            let row = ptr.partition_point(|&p| p as usize <= k) - 1;
            return Err(err(format!(
                "indices[{k}] = {} (row {row}) is outside the {cols} columns",
                indices[k]
            )));
        }
    };
    let unsorted = (0..rows)
        .into_par_iter()
        .filter(|&r| {
            let s = &idx[ptr[r] as usize..ptr[r + 1] as usize];
            !s.windows(2).all(|w| w[0] < w[1])
        })
        .count();
    let val: Vec<T> = data.par_iter().copied().collect();
    if unsorted == 0 {
        // Everything `try_new` checks was checked above (lengths, row pointers from 0 and
        // non-decreasing to nnz, indices in range and increasing in each row): not again.
        // SAFETY: see above; sprs' invariants for a CSR matrix hold.
        let m = unsafe { Csr::new_unchecked(sprs::CompressedStorage::CSR, shape, ptr, idx, val) };
        return Ok((m, 0));
    }
    let start: Vec<usize> = ptr.iter().map(|&p| p as usize).collect();
    Ok((csr_from_buckets(name, shape, &start, idx, val)?, unsorted))
}

#[cfg(test)]
mod array_tests {
    use super::*;
    use crate::CsrRef;

    #[test]
    fn canonical_arrays_are_taken_as_they_are() {
        let (m, fixed) =
            csr_from_arrays("t", (2, 3), &[0i32, 2, 3], &[0, 2, 1], &[1.0f64, 2.0, 3.0]).unwrap();
        assert_eq!(fixed, 0);
        assert_eq!(m.indices(), &[0, 2, 1]);
        assert_eq!(m.data(), &[1.0, 2.0, 3.0]);
        // i64 indices that fit, and empty shapes.
        let (m, _) = csr_from_arrays("t", (1, 1), &[0i64, 1], &[0i64], &[5.0f32]).unwrap();
        assert_eq!(m.nnz(), 1);
        let (m, _) = csr_from_arrays::<f64, i32>("t", (0, 0), &[0], &[], &[]).unwrap();
        assert_eq!((m.rows(), m.cols(), m.nnz()), (0, 0, 0));
    }

    #[test]
    fn unsorted_and_repeated_columns_are_sorted_and_summed() {
        let (m, fixed) = csr_from_arrays(
            "t",
            (2, 3),
            &[0i32, 3, 4],
            &[2, 0, 2, 1],
            &[1.0f64, 2.0, 3.0, 4.0],
        )
        .unwrap();
        assert_eq!(fixed, 1);
        assert_eq!(m.indptr().raw_storage(), &[0, 2, 3]);
        assert_eq!(m.indices(), &[0, 2, 1]);
        assert_eq!(m.data(), &[2.0, 4.0, 4.0]);
    }

    #[test]
    fn bad_arrays_name_the_array_and_the_entry() {
        let e = |r: Result<(Csr<f64>, usize), DatasetError>| r.unwrap_err().to_string();
        let v = [1.0f64, 2.0];
        assert_eq!(
            e(csr_from_arrays("a", (2, 2), &[0i32, 1], &[0, 1], &v)),
            "a: indptr has 2 entries; a matrix of 2 rows needs 3"
        );
        assert_eq!(
            e(csr_from_arrays("a", (2, 2), &[1i32, 1, 2], &[0, 1], &v)),
            "a: indptr[0] = 1; it must be 0"
        );
        assert_eq!(
            e(csr_from_arrays("a", (2, 2), &[0i32, 2, 1], &[0, 1], &v)),
            "a: indptr decreases at row 1: indptr[1] = 2 > indptr[2] = 1"
        );
        assert_eq!(
            e(csr_from_arrays("a", (2, 2), &[0i32, 1, 2], &[0, 2], &v)),
            "a: indices[1] = 2 (row 1) is outside the 2 columns"
        );
        assert_eq!(
            e(csr_from_arrays("a", (2, 2), &[0i32, 1, 2], &[0, -1], &v)),
            "a: indices[1] = -1 (row 1) is outside the 2 columns"
        );
        assert_eq!(
            e(csr_from_arrays("a", (2, 2), &[0i32, 1, 3], &[0, 1], &v)),
            "a: indptr[2] = 3 but indices and data have 2 entries"
        );
        assert_eq!(
            e(csr_from_arrays(
                "a",
                (2, 2),
                &[0i32, 1, 2],
                &[0, 1],
                &v[..1]
            )),
            "a: indices has 2 entries but data has 1"
        );
        let big = [0i64, 1 << 40];
        assert!(
            e(csr_from_arrays("a", (1, 2), &big, &[0], &v[..1])).contains("beyond the i32 limit")
        );
    }

    #[test]
    fn borrowed_csr_is_checked_in_one_pass() {
        let v = [1.0f64; 5];
        let ok =
            |p: &[i32], i: &[i32], shape| CsrRef::try_new(shape, p, i, &v[..i.len()]).is_some();
        assert!(ok(&[0, 2, 2, 5], &[0, 2, 0, 1, 2], (3, 3)));
        assert!(ok(&[0], &[], (0, 4)));
        assert!(ok(&[0, 0], &[], (1, 0)));
        // Row pointers: decreasing in the middle, negative, past the end, wrong ends.
        assert!(!ok(&[0, 3, 2, 5], &[0, 1, 2, 0, 1], (3, 3)));
        assert!(!ok(&[0, -1, 2, 5], &[0, 1, 2, 0, 1], (3, 3)));
        assert!(!ok(&[0, 9, 2, 5], &[0, 1, 2, 0, 1], (3, 3)));
        assert!(!ok(&[0, 2, 2, 4], &[0, 1, 2, 0, 1], (3, 3)));
        assert!(!ok(&[1, 2, 2, 5], &[0, 1, 2, 0, 1], (3, 3)));
        assert!(!ok(&[0, 2, 5], &[0, 1, 2, 0, 1], (3, 3)));
        // Columns: negative, at the column count, repeated, unsorted.
        assert!(!ok(&[0, 2, 2, 5], &[-1, 2, 0, 1, 2], (3, 3)));
        assert!(!ok(&[0, 2, 2, 5], &[0, 3, 0, 1, 2], (3, 3)));
        assert!(!ok(&[0, 2, 2, 5], &[0, 2, 0, 1, 1], (3, 3)));
        assert!(!ok(&[0, 2, 2, 5], &[2, 0, 0, 1, 2], (3, 3)));
        // Many rows (several parallel chunks), one bad row far in.
        let n = 20_000;
        let p: Vec<i32> = (0..=n).collect();
        let mut i: Vec<i32> = (0..n).collect();
        let w = vec![1.0f32; n as usize];
        let n = n as usize;
        assert!(CsrRef::try_new((n, n), &p, &i, &w).is_some());
        i[17_123] = n as i32;
        assert!(CsrRef::try_new((n, n), &p, &i, &w).is_none());
    }

    #[test]
    fn the_borrowed_check_agrees_with_a_plain_one() {
        // Random small arrays, often slightly broken, against the obvious row-by-row check.
        fn plain(rows: usize, cols: usize, p: &[i32], i: &[i32]) -> bool {
            p.len() == rows + 1
                && p[0] == 0
                && p[rows] as usize == i.len()
                && p.windows(2).all(|w| w[0] <= w[1])
                && (0..rows).all(|r| {
                    let s = &i[p[r] as usize..p[r + 1] as usize];
                    s.iter().all(|&c| c >= 0 && (c as usize) < cols)
                        && s.windows(2).all(|w| w[0] < w[1])
                })
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n.max(1)
        };
        let (mut valid, mut invalid) = (0, 0);
        for _ in 0..20_000 {
            let (rows, cols) = (next(6) as usize, next(6) as usize);
            let mut p = vec![0i32];
            let mut i = Vec::new();
            for _ in 0..rows {
                let mut c: Vec<i32> = (0..cols as i32).filter(|_| next(2) == 0).collect();
                c.sort();
                i.extend(c);
                p.push(i.len() as i32);
            }
            match next(8) {
                0 if !i.is_empty() => {
                    let k = next(i.len() as u64) as usize;
                    i[k] = next(8) as i32 - 2;
                }
                1 if rows > 0 => {
                    let k = 1 + next(rows as u64) as usize;
                    p[k] = next(8) as i32 - 1;
                }
                2 if i.len() > 1 => {
                    let k = next(i.len() as u64 - 1) as usize;
                    i.swap(k, k + 1);
                }
                _ => {}
            }
            let v = vec![1.0f32; i.len()];
            let want = plain(rows, cols, &p, &i);
            let got = CsrRef::try_new((rows, cols), &p, &i, &v).is_some();
            assert_eq!(got, want, "rows {rows} cols {cols} p {p:?} i {i:?}");
            if want {
                valid += 1
            } else {
                invalid += 1
            }
        }
        assert!(
            valid > 1000 && invalid > 1000,
            "{valid} valid, {invalid} invalid"
        );
    }
}
