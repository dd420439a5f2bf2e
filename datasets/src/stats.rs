//! Row-length statistics of a CSR matrix (what `augur matrix info` prints). The full, versioned
//! feature set lives in the `features` crate; these are the few numbers a person wants first.

use crate::Csr;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RowStats {
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    pub row_len_min: usize,
    pub row_len_max: usize,
    pub row_len_mean: f64,
    pub row_len_std: f64,
    pub empty_rows: usize,
}

impl RowStats {
    pub fn of<T>(a: &Csr<T>) -> RowStats {
        let ptr = a.indptr();
        let ptr = ptr.raw_storage();
        let rows = a.rows();
        let (mut min, mut max, mut empty) = (usize::MAX, 0usize, 0usize);
        let (mut sum, mut sumsq) = (0f64, 0f64);
        for w in ptr.windows(2) {
            let len = (w[1] - w[0]) as usize;
            min = min.min(len);
            max = max.max(len);
            empty += (len == 0) as usize;
            sum += len as f64;
            sumsq += (len as f64) * (len as f64);
        }
        let mean = if rows > 0 { sum / rows as f64 } else { 0.0 };
        let var = if rows > 0 {
            (sumsq / rows as f64 - mean * mean).max(0.0)
        } else {
            0.0
        };
        RowStats {
            rows,
            cols: a.cols(),
            nnz: a.nnz(),
            row_len_min: if rows > 0 { min } else { 0 },
            row_len_max: max,
            row_len_mean: mean,
            row_len_std: var.sqrt(),
            empty_rows: empty,
        }
    }
}
