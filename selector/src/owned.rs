//! [`OwnedPlan`]: an [`SpmvPlan`] that keeps what it reads alive, for callers that hand augur
//! arrays rather than a borrow that outlives the plan (the Python and C bindings). Either the
//! plan owns a copy: a matrix built from CSR arrays with [`augur_datasets::csr_from_arrays`]
//! (checked; non-canonical rows sorted and summed, with a note in the decision), borrowed by the
//! plan inside one allocation (`self_cell`); or, without a copy, the plan borrows the caller's
//! arrays, checks them while they upload, and holds whatever keeps them alive
//! ([`OwnedPlan::from_arrays_kept`], unsafe: the caller vouches for their lifetime).

use std::any::Any;

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

/// What keeps borrowed arrays alive (e.g. the Python arrays' references); dropped after the plan.
pub type Keep = Box<dyn Any + Send>;

enum Cell {
    F32(CellF32),
    F64(CellF64),
    // (plan, keep): fields drop in order, the plan before what keeps its arrays alive.
    RefF32(Box<SpmvPlan<'static, f32>>, #[allow(dead_code)] Keep),
    RefF64(Box<SpmvPlan<'static, f64>>, #[allow(dead_code)] Keep),
}

/// Run `$e` with `$p` bound to the plan, whichever way it is held.
macro_rules! with_plan {
    ($cell:expr, |$p:ident| $e:expr) => {
        match $cell {
            Cell::F32(c) => c.with_dependent(|_, $p| $e),
            Cell::F64(c) => c.with_dependent(|_, $p| $e),
            Cell::RefF32($p, _) => $e,
            Cell::RefF64($p, _) => $e,
        }
    };
}

/// A plan and the matrix it keeps, in f32 or f64.
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
    fn hold(plan: SpmvPlan<'static, Self>, keep: Keep) -> OwnedPlan;
    #[doc(hidden)]
    fn run(p: &mut OwnedPlan, x: &[Self], y: &mut [Self]) -> Result<(), AugurError>;
}

fn parts<T: augur_kernels::cuda::GpuScalar>(
    p: &SpmvPlan<'_, T>,
) -> (Decision, SetupCost, SpmvFeatures) {
    (
        p.decision().clone(),
        p.setup().clone(),
        p.features().clone(),
    )
}

macro_rules! plan_scalar {
    ($t:ty, $cell:ident, $variant:ident, $refvariant:ident) => {
        impl PlanScalar for $t {
            fn make(
                a: Csr<$t>,
                backend: &Backend,
                opts: PlanOptions,
            ) -> Result<OwnedPlan, AugurError> {
                let cell = $cell::try_new(a, |a| SpmvPlan::new(a, backend, opts))?;
                let (decision, setup, features) = cell.with_dependent(|_, p| parts(p));
                Ok(OwnedPlan {
                    cell: Cell::$variant(cell),
                    decision,
                    setup,
                    features,
                })
            }

            fn hold(plan: SpmvPlan<'static, $t>, keep: Keep) -> OwnedPlan {
                let (decision, setup, features) = parts(&plan);
                OwnedPlan {
                    cell: Cell::$refvariant(Box::new(plan), keep),
                    decision,
                    setup,
                    features,
                }
            }

            fn run(p: &mut OwnedPlan, x: &[$t], y: &mut [$t]) -> Result<(), AugurError> {
                match &mut p.cell {
                    Cell::$variant(c) => c.with_dependent_mut(|_, plan| plan.run(x, y)),
                    Cell::$refvariant(plan, _) => plan.run(x, y),
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

plan_scalar!(f32, CellF32, F32, RefF32);
plan_scalar!(f64, CellF64, F64, RefF64);

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

    /// A plan on the caller's CSR arrays without a copy ([`SpmvPlan::from_arrays`]: checked
    /// while they upload; [`AugurError::NotCanonical`] when they are not canonical CSR). `keep`
    /// is whatever keeps them alive (the Python arrays' references); it is dropped after the
    /// plan.
    ///
    /// # Safety
    /// The arrays must stay allocated, and must not be written, as long as `keep` lives (a GPU
    /// plan reads them only while it is made; a CPU plan at every product).
    pub unsafe fn from_arrays_kept<T: PlanScalar>(
        shape: (usize, usize),
        (indptr, indices, data): (&[i32], &[i32], &[T]),
        keep: Keep,
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<OwnedPlan, AugurError> {
        // SAFETY: the caller's promise: the arrays outlive `keep`, which the plan holds and
        // drops after itself.
        let (indptr, indices, data): (&'static [i32], &'static [i32], &'static [T]) =
            unsafe { std::mem::transmute((indptr, indices, data)) };
        let plan = SpmvPlan::from_arrays(shape, indptr, indices, data, backend, opts)?;
        Ok(T::hold(plan, keep))
    }

    /// [`SpmvPlan::from_cuda_csr`]: a plan for a matrix already in CUDA memory (copied on the
    /// device; the caller's arrays may go once its stream has passed the copy).
    ///
    /// # Safety
    /// As [`SpmvPlan::from_cuda_csr`].
    pub unsafe fn from_cuda_csr<T: PlanScalar>(
        shape: (usize, usize, usize),
        ptrs: (u64, u64, u64),
        stream: Option<u64>,
        backend: &Backend,
        opts: PlanOptions,
    ) -> Result<OwnedPlan, AugurError> {
        // SAFETY: the caller's promise, passed on.
        let plan = unsafe { SpmvPlan::from_cuda_csr(shape, ptrs, stream, backend, opts) }?;
        Ok(T::hold(plan, Box::new(())))
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
        // SAFETY: the caller's promise, passed on.
        match &mut self.cell {
            Cell::F32(c) => c.with_dependent_mut(|_, p| unsafe { p.launch_cuda(x, y, stream) }),
            Cell::F64(c) => c.with_dependent_mut(|_, p| unsafe { p.launch_cuda(x, y, stream) }),
            Cell::RefF32(p, _) => unsafe { p.launch_cuda(x, y, stream) },
            Cell::RefF64(p, _) => unsafe { p.launch_cuda(x, y, stream) },
        }
    }

    /// Wait for the plan's device (its own stream).
    pub fn synchronize(&self) -> Result<(), AugurError> {
        with_plan!(&self.cell, |p| p.synchronize())
    }

    /// `f32` or `f64`.
    pub fn precision(&self) -> &'static str {
        match self.cell {
            Cell::F32(_) | Cell::RefF32(..) => "f32",
            Cell::F64(_) | Cell::RefF64(..) => "f64",
        }
    }

    /// Rows, columns and stored entries of the matrix.
    pub fn shape(&self) -> (usize, usize, usize) {
        with_plan!(&self.cell, |p| p.shape())
    }

    /// Whether the plan copied the matrix (false: it reads the caller's arrays).
    pub fn copied(&self) -> bool {
        matches!(self.cell, Cell::F32(_) | Cell::F64(_))
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
        with_plan!(&self.cell, |p| p.device().kind().name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use augur_datasets::CsrRef;

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
        // Borrowed arrays: no copy, the same product.
        let ptr32 = [0i32, 2, 3, 5];
        let idx32 = [0i32, 2, 1, 0, 2];
        let val2 = [2.0f64, 1.0, 3.0, 4.0, 5.0];
        let cpu = Backend::cpu();
        let kept = |i: &[i32]| unsafe {
            OwnedPlan::from_arrays_kept(
                (3, 3),
                (&ptr32, i, &val2),
                Box::new(()),
                &cpu,
                PlanOptions::default(),
            )
        };
        let mut q = kept(&idx32).unwrap();
        assert!(!q.copied() && p.copied());
        let mut z = [f64::NAN; 3];
        q.run(&[1.0, 2.0, 3.0], &mut z).unwrap();
        assert_eq!(z, [5.0, 6.0, 19.0]);
        // Non-canonical arrays are not a CsrRef.
        assert!(CsrRef::try_new((3, 3), &ptr32, &[2, 0, 1, 0, 2], &val2).is_none());
        assert!(CsrRef::try_new((3, 3), &ptr32, &[0, 3, 1, 0, 2], &val2).is_none());
        for bad in [[2, 0, 1, 0, 2], [0, 3, 1, 0, 2]] {
            let e = kept(&bad).err().unwrap();
            assert!(matches!(e, AugurError::NotCanonical { .. }), "{e}");
        }
        // A matrix in GPU memory needs a CUDA backend: refused before any address is read.
        let e = unsafe {
            OwnedPlan::from_cuda_csr::<f32>(
                (3, 3, 5),
                (0x1000, 0x2000, 0x3000),
                None,
                &Backend::cpu(),
                PlanOptions::default(),
            )
        }
        .err()
        .expect("refused");
        assert!(e.to_string().contains("CUDA device memory"), "{e}");
        // Device pointers are CUDA's alone.
        let e = unsafe { p.launch_cuda(0x1000, 0x2000, None) }.unwrap_err();
        assert!(e.to_string().contains("CUDA only"), "{e}");
    }
}
