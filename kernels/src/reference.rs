//! The reference SpMV: one plain sequential loop in f64. Obviously correct, never fast; every
//! other kernel is checked against it.

use augur_datasets::Csr;

use crate::error::{check_dims, KernelError};

/// `y = A x` in f64, row by row, entries in stored order.
pub fn spmv(a: &Csr<f64>, x: &[f64], y: &mut [f64]) -> Result<(), KernelError> {
    check_dims(a.rows(), a.cols(), x.len(), y.len())?;
    let ptr = a.indptr();
    let ptr = ptr.raw_storage();
    let (idx, val) = (a.indices(), a.data());
    for (i, yi) in y.iter_mut().enumerate() {
        let mut sum = 0.0;
        for k in ptr[i] as usize..ptr[i + 1] as usize {
            sum += val[k] * x[idx[k] as usize];
        }
        *yi = sum;
    }
    Ok(())
}
