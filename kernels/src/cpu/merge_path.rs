//! Merge-path SpMV (Merrill & Garland, SC'16): the row ends and the nonzero indices are two sorted
//! lists; walking their merge consumes one row end or one nonzero per step. Cutting the merge into
//! equal pieces gives every thread the same rows + nonzeros, whatever the row lengths; a row cut
//! by a piece boundary is finished through a carry added after all pieces are done.

use augur_datasets::{CsrRef, Scalar};
use rayon::prelude::*;

use super::dot;

/// Start coordinates (row, nonzero) of `parts` equal pieces of the merge, plus the end.
pub(super) fn partition(ptr: &[i32], parts: usize) -> Vec<(usize, usize)> {
    let rows = ptr.len() - 1;
    let nnz = ptr[rows] as usize;
    let total = rows + nnz;
    (0..=parts)
        .map(|p| {
            search(
                (p as u128 * total as u128 / parts as u128) as usize,
                ptr,
                nnz,
            )
        })
        .collect()
}

/// The merge-path coordinate on diagonal `d`: the number of rows finished `i` and nonzeros
/// consumed `d - i`, with `i` the largest such that row `i - 1` ends at or before `d - i`.
fn search(d: usize, ptr: &[i32], nnz: usize) -> (usize, usize) {
    let rows = ptr.len() - 1;
    let (mut lo, mut hi) = (d.saturating_sub(nnz), d.min(rows));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        // Row `mid` ends at ptr[mid + 1]; the merge takes that row end before nonzero d-mid-1
        // exactly when the row ends no later than it.
        if (ptr[mid + 1] as usize) < d - mid {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    (lo, d - lo)
}

pub(super) fn run<T: Scalar>(a: CsrRef<'_, T>, x: &[T], y: &mut [T], coords: &[(usize, usize)]) {
    let ptr = a.indptr();
    let (idx, val) = (a.indices(), a.data());
    // Piece p writes the rows it finishes, coords[p].0 .. coords[p+1].0: disjoint slices of y.
    let mut pieces = Vec::with_capacity(coords.len() - 1);
    let mut rest = &mut y[..];
    for w in coords.windows(2) {
        let (piece, r) = rest.split_at_mut(w[1].0 - w[0].0);
        pieces.push((w[0], w[1], piece));
        rest = r;
    }
    let carries: Vec<(usize, T)> = pieces
        .into_par_iter()
        .map(|((row0, mut k), (row1, k1), piece)| {
            for (r, yr) in (row0..row1).zip(piece.iter_mut()) {
                // The first row may start part-way (its head was a carry of an earlier piece).
                let end = ptr[r + 1] as usize;
                *yr = dot(&idx[k..end], &val[k..end], x);
                k = end;
            }
            // The start of row `row1`, finished by a later piece.
            let sum = dot(&idx[k..k1], &val[k..k1], x);
            (row1, sum)
        })
        .collect();
    for (row, carry) in carries {
        if row < y.len() {
            y[row] += carry;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_covers_everything_in_order() {
        // rows of length 0, 5, 0, 1, 10
        let ptr = [0, 0, 5, 5, 6, 16];
        for parts in 1..8 {
            let c = partition(&ptr, parts);
            assert_eq!(c[0], (0, 0));
            assert_eq!(*c.last().unwrap(), (5, 16));
            for w in c.windows(2) {
                assert!(w[0].0 <= w[1].0 && w[0].1 <= w[1].1, "{c:?}");
            }
            // Every coordinate is consistent: rows finished end at or before the nonzeros taken.
            for &(i, k) in &c {
                assert!(i == 0 || ptr[i] as usize <= k, "{c:?}");
                assert!(i == 5 || k <= ptr[i + 1] as usize, "{c:?}");
            }
        }
    }
}
