//! [`OwnedPlan`]: an [`SpmvPlan`] that owns its matrix, for callers that hand augur arrays
//! rather than a borrow that outlives the plan (the Python and C bindings). The matrix is built
//! from CSR arrays with [`augur_datasets::csr_from_arrays`] (checked; non-canonical rows sorted
//! and summed, with a note in the decision), and the plan borrows it inside one allocation
//! (`self_cell`: no unsafe code here).

use augur_datasets::{csr_from_arrays, Csr};
use augur_features::spmv::SpmvFeatures;
use augur_kernels::device::SpmvDevice;
use self_cell::self_cell;

use crate::{AugurError, Backend, Decision, PlanOptions, SetupCost, SpmvPlan};

type PlanF32<'a> = SpmvPlan<'a, f32>;
type PlanF64<'a> = SpmvPlan<'a, f64>;

self_cell!(
    struct CellF32 {
        owner: Csr<f32>,
        #[not_covariant]
        dependent: PlanF32,
    }
);

self_cell!(
    struct CellF64 {
        owner: Csr<f64>,
        #[not_covariant]
        dependent: PlanF64,
    }
);

enum Cell {
    F32(CellF32),
    F64(CellF64),
}

/// A plan and the matrix it owns, in f32 or f64.
pub struct OwnedPlan {
    cell: Cell,
    /// What the plan was made for, kept for callers (the decision, the setup cost).
    decision: Decision,
    setup: SetupCost,
    features: SpmvFeatures,
}

/// Values an [`OwnedPlan`] can be made of and run on.
pub trait PlanScalar: augur_kernels::cuda::GpuScalar {
    #[doc(hidden)]
    fn make(a: Csr<Self>, backend: &Backend, opts: PlanOptions) -> Result<OwnedPlan, AugurError>;
    #[doc(hidden)]
    fn run(p: &mut OwnedPlan, x: &[Self], y: &mut [Self]) -> Result<(), AugurError>;
}

macro_rules! plan_scalar {
    ($t:ty, $cell:ident, $variant:ident) => {
        impl PlanScalar for $t {
            fn make(
                a: Csr<$t>,
                backend: &Backend,
                opts: PlanOptions,
            ) -> Result<OwnedPlan, AugurError> {
                let cell = $cell::try_new(a, |a| SpmvPlan::new(a, backend, opts))?;
                let (decision, setup, features) = cell.with_dependent(|_, p| {
                    (
                        p.decision().clone(),
                        p.setup().clone(),
                        p.features().clone(),
                    )
                });
                Ok(OwnedPlan {
                    cell: Cell::$variant(cell),
                    decision,
                    setup,
                    features,
                })
            }

            fn run(p: &mut OwnedPlan, x: &[$t], y: &mut [$t]) -> Result<(), AugurError> {
                match &mut p.cell {
                    Cell::$variant(c) => c.with_dependent_mut(|_, plan| plan.run(x, y)),
                    _ => Err(AugurError::Invalid(format!(
                        "this plan holds {} values; it runs on {} vectors, not {}",
                        p.precision(),
                        p.precision(),
                        stringify!($t)
                    ))),
                }
            }
        }
    };
}

plan_scalar!(f32, CellF32, F32);
plan_scalar!(f64, CellF64, F64);

impl OwnedPlan {
    /// A plan for the matrix `a` (taken over).
    pub fn new<T: PlanScalar>(
        a: Csr<T>,
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<OwnedPlan, AugurError> {
        T::make(a, backend, opts)
    }

    /// A plan for the CSR arrays of a `shape.0 x shape.1` matrix (copied; any integer index
    /// type whose values fit i32). Rows with unsorted or repeated column indices are sorted and
    /// summed, which the decision's notes say. `name` names the matrix in errors.
    pub fn from_arrays<T: PlanScalar, I: Copy + TryInto<i64> + std::fmt::Display + Sync>(
        name: &str,
        shape: (usize, usize),
        (indptr, indices, data): (&[I], &[I], &[T]),
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<OwnedPlan, AugurError> {
        let (a, fixed) = csr_from_arrays(name, shape, indptr, indices, data)?;
        let mut p = OwnedPlan::new(a, backend, opts)?;
        if fixed > 0 {
            p.decision.notes.push(format!(
                "{fixed} rows had unsorted or repeated column indices: sorted, repeats summed \
                 (as scipy's sum_duplicates)"
            ));
        }
        Ok(p)
    }

    /// `y = A x` (host vectors; a GPU plan copies them to and from the device).
    pub fn run<T: PlanScalar>(&mut self, x: &[T], y: &mut [T]) -> Result<(), AugurError> {
        T::run(self, x, y)
    }

    /// [`SpmvPlan::launch_cuda`]: `y = A x` on the caller's CUDA memory, in order with its
    /// stream; `x` and `y` hold values of [`OwnedPlan::precision`].
    ///
    /// # Safety
    /// As [`SpmvPlan::launch_cuda`], with values of the plan's precision.
    pub unsafe fn launch_cuda(
        &mut self,
        x: u64,
        y: u64,
        stream: Option<u64>,
    ) -> Result<(), AugurError> {
        match &mut self.cell {
            // SAFETY: the caller's promise, passed on.
            Cell::F32(c) => c.with_dependent_mut(|_, p| unsafe { p.launch_cuda(x, y, stream) }),
            Cell::F64(c) => c.with_dependent_mut(|_, p| unsafe { p.launch_cuda(x, y, stream) }),
        }
    }

    /// Wait for the plan's device (its own stream).
    pub fn synchronize(&self) -> Result<(), AugurError> {
        match &self.cell {
            Cell::F32(c) => c.with_dependent(|_, p| p.synchronize()),
            Cell::F64(c) => c.with_dependent(|_, p| p.synchronize()),
        }
    }

    /// `f32` or `f64`.
    pub fn precision(&self) -> &'static str {
        match self.cell {
            Cell::F32(_) => "f32",
            Cell::F64(_) => "f64",
        }
    }

    /// Rows, columns and stored entries of the matrix.
    pub fn shape(&self) -> (usize, usize, usize) {
        match &self.cell {
            Cell::F32(c) => {
                let a = c.borrow_owner();
                (a.rows(), a.cols(), a.nnz())
            }
            Cell::F64(c) => {
                let a = c.borrow_owner();
                (a.rows(), a.cols(), a.nnz())
            }
        }
    }

    /// The kernel chosen and why (notes included).
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    pub fn setup(&self) -> &SetupCost {
        &self.setup
    }

    /// The features the plan computed (those of tiers it did not read are NaN).
    pub fn features(&self) -> &SpmvFeatures {
        &self.features
    }

    /// `cpu`, `cuda` or `hip`.
    pub fn backend(&self) -> &'static str {
        match &self.cell {
            Cell::F32(c) => c.with_dependent(|_, p| p.device().kind().name()),
            Cell::F64(c) => c.with_dependent(|_, p| p.device().kind().name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owned_plan_runs_like_a_borrowed_one_and_refuses_the_other_precision() {
        // 3 x 3: [[2, 0, 1], [0, 3, 0], [4, 0, 5]], row 2 given unsorted with a repeat.
        let ptr = [0i64, 2, 3, 6];
        let idx = [0i64, 2, 1, 2, 0, 2];
        let val = [2.0f64, 1.0, 3.0, 2.0, 4.0, 3.0];
        let mut p = OwnedPlan::from_arrays(
            "t",
            (3, 3),
            (&ptr, &idx, &val),
            &Backend::cpu(),
            PlanOptions::default(),
        )
        .unwrap();
        assert_eq!(p.shape(), (3, 3, 5));
        assert_eq!((p.precision(), p.backend()), ("f64", "cpu"));
        assert!(p
            .decision()
            .notes
            .iter()
            .any(|n| n.contains("1 rows had unsorted")));
        let mut y = [f64::NAN; 3];
        p.run(&[1.0, 2.0, 3.0], &mut y).unwrap();
        assert_eq!(y, [5.0, 6.0, 19.0]);
        let e = p.run(&[1.0f32, 2.0, 3.0], &mut [0.0f32; 3]).unwrap_err();
        assert!(e.to_string().contains("holds f64 values"), "{e}");
        let e = p.run(&[1.0f64], &mut y).unwrap_err();
        assert!(!e.to_string().is_empty());
        // Device pointers are CUDA's alone.
        let e = unsafe { p.launch_cuda(0x1000, 0x2000, None) }.unwrap_err();
        assert!(e.to_string().contains("CUDA only"), "{e}");
    }
}
