//! Symmetric reorderings of a matrix: a random permutation (destroys the locality of a mesh or a
//! graph in a good order) and reverse Cuthill-McKee (restores it: a bandwidth-reducing order, from
//! sprs, on the pattern of A + A^T). Used by the `expand` generator's `order=` key, so that the
//! training set holds the same real structure with its locality destroyed and restored.

use std::fmt;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::{build, Csr, DatasetError, Scalar};

/// How a generated matrix's rows and columns are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// As built.
    #[default]
    Natural,
    /// A random permutation, seeded (the same one for rows and columns of a square matrix; two
    /// independent ones otherwise).
    Random { seed: u64 },
    /// Reverse Cuthill-McKee on the pattern of A + A^T (square matrices only).
    Rcm,
}

impl Order {
    pub fn parse(s: &str, seed: u64) -> Option<Order> {
        match s {
            "natural" => Some(Order::Natural),
            "random" => Some(Order::Random { seed }),
            "rcm" => Some(Order::Rcm),
            _ => None,
        }
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Order::Natural => write!(f, "natural"),
            Order::Random { .. } => write!(f, "random"),
            Order::Rcm => write!(f, "rcm"),
        }
    }
}

/// `a` in `order`: row i of the result is row `rows[i]` of `a`, column j is column `cols[j]`.
pub fn reorder<T: Scalar>(name: &str, a: Csr<T>, order: Order) -> Result<Csr<T>, DatasetError> {
    let (m, n) = (a.rows(), a.cols());
    let (rows, cols): (Vec<usize>, Vec<usize>) = match order {
        Order::Natural => return Ok(a),
        Order::Random { seed } => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut p: Vec<usize> = (0..m).collect();
            p.shuffle(&mut rng);
            let q = if m == n {
                p.clone()
            } else {
                let mut q: Vec<usize> = (0..n).collect();
                q.shuffle(&mut rng);
                q
            };
            (p, q)
        }
        Order::Rcm => {
            if m != n {
                return Err(DatasetError::spec(
                    name,
                    format!("order=rcm needs a square matrix; this one is {m} x {n}"),
                ));
            }
            let p = rcm(name, &a)?;
            (p.clone(), p)
        }
    };
    permute(name, &a, &rows, &cols)
}

/// Reverse Cuthill-McKee (new -> old) of the pattern of A + A^T.
fn rcm<T: Scalar>(name: &str, a: &Csr<T>) -> Result<Vec<usize>, DatasetError> {
    let n = a.rows();
    let (ptr, idx) = (a.indptr(), a.indices());
    let ptr = ptr.raw_storage();
    let nnz = idx.len();
    let mut r = Vec::with_capacity(2 * nnz);
    let mut c = Vec::with_capacity(2 * nnz);
    for i in 0..n {
        for &j in &idx[ptr[i] as usize..ptr[i + 1] as usize] {
            r.extend([i as i32, j]);
            c.extend([j, i as i32]);
        }
    }
    let ones = vec![1f32; r.len()];
    let sym = build::csr_from_triplets(name, (n, n), &r, &c, &ones)?;
    drop((r, c, ones));
    let ord = sprs::linalg::reverse_cuthill_mckee(sym.view());
    Ok(ord.perm.vec().iter().map(|&v| v as usize).collect())
}

/// Rows `rows` (new -> old) and columns `cols` (new -> old) of `a`, rows sorted by column.
fn permute<T: Scalar>(
    name: &str,
    a: &Csr<T>,
    rows: &[usize],
    cols: &[usize],
) -> Result<Csr<T>, DatasetError> {
    let mut inv = vec![0i32; cols.len()];
    for (new, &old) in cols.iter().enumerate() {
        inv[old] = new as i32;
    }
    let (ptr, idx, val) = (a.indptr(), a.indices(), a.data());
    let ptr = ptr.raw_storage();
    let mut indptr = Vec::with_capacity(rows.len() + 1);
    indptr.push(0i32);
    let mut total = 0i32;
    for &o in rows {
        total += ptr[o + 1] - ptr[o];
        indptr.push(total);
    }
    let mut indices = vec![0i32; idx.len()];
    let mut data = vec![T::zero(); idx.len()];
    // Split the outputs by row, then fill rows in parallel.
    let mut pieces = Vec::with_capacity(rows.len());
    let (mut irest, mut vrest) = (&mut indices[..], &mut data[..]);
    for (i, &o) in rows.iter().enumerate() {
        let len = (indptr[i + 1] - indptr[i]) as usize;
        let (a1, a2) = irest.split_at_mut(len);
        let (b1, b2) = vrest.split_at_mut(len);
        (irest, vrest) = (a2, b2);
        pieces.push((o, a1, b1));
    }
    pieces.into_par_iter().for_each(|(o, oi, ov)| {
        let (s, e) = (ptr[o] as usize, ptr[o + 1] as usize);
        let mut row: Vec<(i32, T)> = idx[s..e]
            .iter()
            .zip(&val[s..e])
            .map(|(&c, &v)| (inv[c as usize], v))
            .collect();
        row.sort_unstable_by_key(|x| x.0);
        for ((c, v), (pc, pv)) in row.into_iter().zip(oi.iter_mut().zip(ov.iter_mut())) {
            *pc = c;
            *pv = v;
        }
    });
    build::finish(name, (rows.len(), cols.len()), indptr, indices, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::Generator;

    /// Each row's values (as bits, sorted), rows sorted: what any row and column order keeps.
    fn row_values(a: &Csr<f64>) -> Vec<Vec<u64>> {
        let mut rows: Vec<Vec<u64>> = a
            .outer_iterator()
            .map(|r| {
                let mut v: Vec<u64> = r.data().iter().map(|x| x.to_bits()).collect();
                v.sort_unstable();
                v
            })
            .collect();
        rows.sort();
        rows
    }

    fn gen(spec: &str) -> Csr<f64> {
        Generator::parse(spec).unwrap().generate().unwrap()
    }

    /// The bandwidth: max |col - row|.
    fn bandwidth(a: &Csr<f64>) -> usize {
        a.iter()
            .map(|(_, (r, c))| r.abs_diff(c) as usize)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn random_permutes_rows_and_columns_alike_and_keeps_every_entry() {
        let a = gen("banded:n=300,bw=3");
        let p = reorder("t", a.clone(), Order::Random { seed: 7 }).unwrap();
        assert_eq!(p.nnz(), a.nnz());
        assert_eq!(
            p,
            reorder("t", a.clone(), Order::Random { seed: 7 }).unwrap()
        );
        // The same multiset of values, and the diagonal stays the diagonal (symmetric permutation).
        let diag = |m: &Csr<f64>| {
            let mut d: Vec<u64> = (0..m.rows())
                .filter_map(|i| m.get(i, i))
                .map(|v| v.to_bits())
                .collect();
            d.sort_unstable();
            d
        };
        assert_eq!(diag(&p), diag(&a));
        assert!(
            bandwidth(&p) > 50,
            "locality destroyed: bandwidth {}",
            bandwidth(&p)
        );
        // Rows are sorted by column (the CSR invariant every kernel relies on).
        assert!(p
            .outer_iterator()
            .all(|r| r.indices().windows(2).all(|w| w[0] < w[1])));
    }

    #[test]
    fn rcm_restores_a_narrow_band() {
        let a = gen("banded:n=400,bw=2");
        let scrambled = reorder("t", a.clone(), Order::Random { seed: 3 }).unwrap();
        let restored = reorder("t", scrambled.clone(), Order::Rcm).unwrap();
        assert!(bandwidth(&scrambled) > 100);
        assert!(
            bandwidth(&restored) <= 8,
            "rcm bandwidth {}",
            bandwidth(&restored)
        );
        assert_eq!(restored.nnz(), a.nnz());
    }

    #[test]
    fn rectangular_random_and_rcm_refused() {
        let a = gen("tall:rows=50,cols=7,row_len=3");
        let p = reorder("t", a.clone(), Order::Random { seed: 1 }).unwrap();
        assert_eq!(row_values(&a), row_values(&p), "rows are moved whole");
        assert_ne!(a, p);
        let e = reorder("t", a, Order::Rcm).unwrap_err().to_string();
        assert!(e.contains("square") && e.contains("50 x 7"), "{e}");
    }
}
