//! One correctness suite for every backend (Ginkgo style): each kernel of a backend, in f32 and
//! f64, on the edge cases and any matrices given, against the f64 reference with the per-row bound
//! of [`crate::check`], outputs poisoned with NaN first. The tests run it on the CPU backend;
//! `augur check --backend cuda` runs it on a GPU.

use augur_datasets::generate::Generator;
use augur_datasets::Csr;

use crate::check::{self, CheckReport};
use crate::cuda::GpuScalar;
use crate::KernelError;

/// A backend that computes `y = A x` with named kernels, from host data to host data. Every
/// [`crate::device::SpmvDevice`] is one (`CpuDevice`, `CudaSpmv`, the run-time `Device`).
pub trait SpmvBackend {
    /// `cpu`, or `cuda` with the device name.
    fn name(&self) -> String;
    fn kernel_names(&self) -> Vec<&'static str>;
    /// Write `A x` into `y` with kernel `kernel` (whatever upload and setup that takes).
    fn spmv<T: GpuScalar>(
        &mut self,
        kernel: &str,
        a: &Csr<T>,
        x: &[T],
        y: &mut [T],
    ) -> Result<(), KernelError>;
}

/// The outcome of one kernel on one matrix in one precision.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SuiteResult {
    pub matrix: String,
    pub kernel: &'static str,
    pub precision: &'static str,
    /// None when the kernel returned an error (see `error`).
    pub report: Option<CheckReport>,
    pub error: Option<String>,
}

impl SuiteResult {
    pub fn passed(&self) -> bool {
        self.report.as_ref().is_some_and(|r| r.passed)
    }
}

/// Run every kernel of `backend` on `a` in precision T.
pub fn check_matrix<B: SpmvBackend, T: GpuScalar>(
    backend: &mut B,
    name: &str,
    a: &Csr<T>,
) -> Vec<SuiteResult> {
    let x = check::test_vector::<T>(a.cols(), a.nnz() as u64 + 7);
    let (reference, scale) = check::reference_product(a, &x);
    backend
        .kernel_names()
        .into_iter()
        .map(|kernel| {
            let mut y = vec![T::nan(); a.rows()];
            let (report, error) = match backend.spmv(kernel, a, &x, &mut y) {
                Ok(()) => (Some(check::compare(a, &reference, &scale, &y)), None),
                Err(e) => (None, Some(e.to_string())),
            };
            SuiteResult {
                matrix: name.to_string(),
                kernel,
                precision: T::NAME,
                report,
                error,
            }
        })
        .collect()
}

/// Run every kernel in f64, and in f32 where the values fit f32.
pub fn check_both<B: SpmvBackend>(backend: &mut B, name: &str, a: &Csr<f64>) -> Vec<SuiteResult> {
    let mut out = check_matrix(backend, name, a);
    if a.data().iter().all(|v| v.abs() <= f32::MAX as f64) {
        let a32: Csr<f32> = a.map(|&v| v as f32);
        out.extend(check_matrix(backend, name, &a32));
    }
    out
}

/// The edge cases every backend must get right: 0 nnz, 0x0, 0xN, Nx0, 1x1, empty rows, one dense
/// row of 1e6 among empty rows, and generated shapes with long rows, rectangles and skew.
pub fn edge_cases() -> Vec<(String, Csr<f64>)> {
    let mut v = vec![
        ("0 nnz 5x3".to_string(), Csr::zero((5, 3))),
        ("0x0".to_string(), Csr::zero((0, 0))),
        ("0 rows x 4".to_string(), Csr::zero((0, 4))),
        ("4 rows x 0 cols".to_string(), Csr::zero((4, 0))),
        (
            "1x1".to_string(),
            Csr::new((1, 1), vec![0, 1], vec![0], vec![-2.5]),
        ),
        (
            "empty rows".to_string(),
            Csr::new(
                (6, 4),
                vec![0, 0, 2, 2, 2, 3, 3],
                vec![0, 3, 1],
                vec![1.5, -0.5, 2.0],
            ),
        ),
    ];
    let n = 1_000_000;
    v.push((
        "one dense row of 1e6 among empty rows".into(),
        Csr::new(
            (3, n),
            vec![0, 0, n as i32, n as i32],
            (0..n as i32).collect(),
            check::test_vector(n, 9),
        ),
    ));
    for spec in [
        "arrowhead:n=3000",
        "hubs:n=20000,hubs=2,short=1,seed=4",
        "tall:rows=5000,cols=7,row_len=3",
        "wide:rows=3,cols=50000,row_len=20000",
        "rmat:scale=12,ef=8,seed=1",
        "stencil3d:nx=12,points=27",
        "powerlaw:rows=3000,alpha=1.7,seed=2",
        "blockdiag:n=999,block=100",
    ] {
        let a = Generator::parse(spec)
            .and_then(|g| g.generate())
            .expect("built-in edge-case specs are valid");
        v.push((spec.to_string(), a));
    }
    v
}
