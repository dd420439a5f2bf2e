//! Checking a kernel's output against the f64 reference.
//!
//! **The bound.** For row i with `len_i` stored entries, any order of summation gives
//! `|fl(Σ a_ij x_j) − Σ a_ij x_j| ≤ γ(len_i) · Σ |a_ij x_j|` with `γ(n) ≈ n·ε` (Higham, *Accuracy and
//! Stability of Numerical Algorithms*, §3.1). The kernel's result and the reference each carry such
//! an error, so a row passes when
//!
//! ```text
//! |y_i − ref_i| ≤ 2 · (len_i + 2) · ε_T · Σ_j |a_ij · x_j|
//! ```
//!
//! with ε_T the epsilon of the kernel's value type. The reference is computed in f64 from the very
//! same (f32 or f64) values the kernel saw, so rounding the inputs is not counted as error. An
//! empty row must give exactly 0, and a NaN anywhere (outputs are poisoned with NaN before a run,
//! so a row the kernel never wrote stays NaN) fails. The one exception: a row whose scale
//! `Σ_j |a_ij x_j|` exceeds the largest finite value of T may overflow (IEEE arithmetic gives ±inf
//! there, as it should); such rows are counted in `overflow_rows` and may be infinite, never NaN.

use augur_datasets::{Csr, Scalar};

use crate::reference;

/// Fill an output with NaN so that rows a kernel fails to write are caught.
pub fn poison<T: Scalar>(y: &mut [T]) {
    y.fill(T::nan());
}

/// A deterministic test vector with entries in ±[0.1, 1): no zeros, mixed signs.
pub fn test_vector<T: Scalar>(n: usize, seed: u64) -> Vec<T> {
    (0..n)
        .map(|i| {
            let mut z = (seed ^ 0xA076_1D64_78BD_642F)
                .wrapping_add((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let u = (z >> 11) as f64 / (1u64 << 53) as f64;
            let mag = 0.1 + 0.9 * u;
            T::from_f64(if z & 1 == 1 { -mag } else { mag })
        })
        .collect()
}

/// The outcome of comparing one output with the reference.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CheckReport {
    /// Largest `|y_i − ref_i| / Σ_j |a_ij x_j|` over rows (0 for exact rows).
    pub max_rel_err: f64,
    /// Largest error as a fraction of the row's bound; the check passes when it is <= 1.
    pub max_bound_ratio: f64,
    /// Row with the largest bound ratio (or the first NaN row).
    pub worst_row: Option<usize>,
    /// Rows whose output is NaN, or infinite where it need not be.
    pub bad_rows: usize,
    /// Rows whose scale exceeds T's range, so that an infinite result is correct.
    pub overflow_rows: usize,
    pub passed: bool,
}

/// The f64 reference product of a matrix of any value type, and the row scales `Σ_j |a_ij x_j|`.
pub fn reference_product<T: Scalar>(a: &Csr<T>, x: &[T]) -> (Vec<f64>, Vec<f64>) {
    let a64: Csr<f64> = a.map(|v| v.as_f64());
    let x64: Vec<f64> = x.iter().map(|v| v.as_f64()).collect();
    let mut y = vec![0.0; a.rows()];
    reference::spmv(&a64, &x64, &mut y).expect("x sized to the matrix by the caller");
    let abs = a64.map(|v| v.abs());
    let xabs: Vec<f64> = x64.iter().map(|v| v.abs()).collect();
    let mut scale = vec![0.0; a.rows()];
    reference::spmv(&abs, &xabs, &mut scale).expect("same shape");
    (y, scale)
}

/// Compare `y` (a kernel's output for `A x`) with the reference, using the bound above.
pub fn check<T: Scalar>(a: &Csr<T>, x: &[T], y: &[T]) -> CheckReport {
    let (reference, scale) = reference_product(a, x);
    compare::<T>(a, &reference, &scale, y)
}

/// As [`check`], with the reference and scales computed once by [`reference_product`].
pub fn compare<T: Scalar>(a: &Csr<T>, reference: &[f64], scale: &[f64], y: &[T]) -> CheckReport {
    let ptr = a.indptr();
    let ptr = ptr.raw_storage();
    let mut report = CheckReport {
        max_rel_err: 0.0,
        max_bound_ratio: 0.0,
        worst_row: None,
        bad_rows: 0,
        overflow_rows: 0,
        passed: y.len() == reference.len(),
    };
    let max = T::max_value().as_f64();
    for (i, (&yi, (&ri, &si))) in y.iter().zip(reference.iter().zip(scale)).enumerate() {
        let yi = yi.as_f64();
        if si > max {
            report.overflow_rows += 1;
            if yi.is_infinite() {
                continue;
            }
        }
        if !yi.is_finite() {
            report.bad_rows += 1;
            if report.bad_rows == 1 {
                report.worst_row = Some(i);
            }
            report.passed = false;
            continue;
        }
        let len = (ptr[i + 1] - ptr[i]) as f64;
        let err = (yi - ri).abs();
        let bound = 2.0 * (len + 2.0) * T::EPS * si;
        let (rel, ratio) = if err == 0.0 {
            (0.0, 0.0)
        } else if si == 0.0 {
            (f64::INFINITY, f64::INFINITY)
        } else {
            (err / si, err / bound)
        };
        report.max_rel_err = report.max_rel_err.max(rel);
        if ratio > report.max_bound_ratio {
            report.max_bound_ratio = ratio;
            if report.bad_rows == 0 {
                report.worst_row = Some(i);
            }
        }
    }
    report.passed &= report.bad_rows == 0 && report.max_bound_ratio <= 1.0;
    report
}
