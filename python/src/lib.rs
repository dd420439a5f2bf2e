//! `augur._augur`: the Rust side of the Python package (PyO3). The package's `augur/__init__.py`
//! turns scipy.sparse matrices into CSR arrays and calls these; users call that module.
//!
//! Errors: a caller's mistake (bad arrays, a wrong length or dtype, an unknown kernel or model) is
//! a `ValueError`, a missing backend or a device failure a `RuntimeError`, both with augur's
//! message. The matrix's arrays are copied into the plan (a CSR with sorted, unique indices per
//! row; non-canonical rows are sorted and summed, which the decision's notes say).

use std::sync::Arc;

use augur::datasets::CsrRef;
use augur::features::spmv::{CpuGatherer, CsrPattern, SpmvFeatures, SpmvGatherer};
use augur::kernels::KernelError;
use augur::models::{AnyModel, ExportFormat};
use augur::{AugurError, Backend, Decision, GatherPolicy, OwnedPlan, PlanOptions, Selector};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

mod cuda;
mod model;
mod plan;

use cuda::{CudaVector, RawVector};
use model::{features, Model};
use plan::{make_plan, make_plan_cuda, plan_options, Plan};

/// augur's error as the Python exception a caller expects.
fn py_err(e: AugurError) -> PyErr {
    match &e {
        AugurError::Kernel(
            KernelError::NotAvailable { .. }
            | KernelError::Cuda(_)
            | KernelError::Hip(_)
            | KernelError::Compile { .. },
        )
        | AugurError::Nccl(_)
        | AugurError::NotEnoughGpus { .. } => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

fn value_err(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// `f()` with the GIL released, so that other Python threads run meanwhile (plan creation, host
/// products: milliseconds on large matrices).
///
/// Plans and backends are not `Send` (their GPU handles are reference-counted per thread), and
/// do not need to be: `detach` runs `f` on this thread and returns here. `f` must not touch
/// Python objects; the ones it may drop (a plan's keep-alive references on an error) are
/// released later by PyO3's reference pool. A `Plan` is `unsendable`, so no other thread can
/// reach the plan `f` works on.
fn without_gil<R>(py: Python<'_>, f: impl FnOnce() -> R) -> R {
    struct SameThread<T>(T);
    // SAFETY: see above: the value crosses no thread (detach calls `f` on the calling thread).
    unsafe impl<T> Send for SameThread<T> {}
    impl<T> SameThread<T> {
        fn into_inner(self) -> T {
            self.0
        }
    }
    let f = SameThread(f);
    py.detach(move || SameThread(f.into_inner()())).into_inner()
}

/// An index array as i32 or i64 (the two dtypes scipy uses).
enum Index<'py> {
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

fn index<'py>(a: &Bound<'py, PyAny>, what: &str) -> PyResult<Index<'py>> {
    if let Ok(v) = a.extract::<PyReadonlyArray1<'py, i32>>() {
        return Ok(Index::I32(v));
    }
    if let Ok(v) = a.extract::<PyReadonlyArray1<'py, i64>>() {
        return Ok(Index::I64(v));
    }
    Err(value_err(format!(
        "{what} must be a one-dimensional int32 or int64 NumPy array"
    )))
}

fn contiguous<'a, T: numpy::Element>(
    a: &'a PyReadonlyArray1<'_, T>,
    what: &str,
) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| {
        value_err(format!(
            "{what} must be C-contiguous (np.ascontiguousarray)"
        ))
    })
}

fn gather_policy(s: &str) -> PyResult<GatherPolicy> {
    Ok(match s {
        "auto" => GatherPolicy::Auto,
        "never" => GatherPolicy::Never,
        "sample" => GatherPolicy::Sample,
        "always" => GatherPolicy::Always,
        _ => {
            return Err(value_err(format!(
                "gather = {s:?}: \"auto\", \"never\", \"sample\" or \"always\""
            )))
        }
    })
}

thread_local! {
    /// Backends opened on this thread, by name and GPU: a GPU is opened once (its context,
    /// stream and kernel modules) and shared by the plans made after, as a Rust program that
    /// keeps its `Backend` does.
    static BACKENDS: std::cell::RefCell<std::collections::HashMap<(String, usize), Backend>> =
        Default::default();
}

fn backend(s: &str, device: usize) -> PyResult<Backend> {
    let key = (s.to_string(), device);
    if let Some(b) = BACKENDS.with(|m| m.borrow().get(&key).cloned()) {
        return Ok(b);
    }
    let b = match s {
        "auto" => Backend::auto(),
        "cpu" => Backend::cpu(),
        "cuda" => Backend::cuda(device).map_err(py_err)?,
        "hip" => Backend::hip(device).map_err(py_err)?,
        _ => {
            return Err(value_err(format!(
                "backend = {s:?}: \"auto\", \"cpu\", \"cuda\" or \"hip\""
            )))
        }
    };
    BACKENDS.with(|m| m.borrow_mut().insert(key, b.clone()));
    Ok(b)
}

/// The kernel chosen for a matrix, and why. `str()` is the explanation.
#[pyclass(frozen, name = "Decision", module = "augur._augur")]
pub struct PyDecision {
    #[pyo3(get)]
    kernel: String,
    /// The caller chose the kernel (no model consulted).
    #[pyo3(get)]
    forced: bool,
    #[pyo3(get)]
    iterations: u32,
    /// The feature tier the choice read: "known", "sampled" or "gathered".
    #[pyo3(get)]
    tier: String,
    /// Which tree chose.
    #[pyo3(get)]
    tree: String,
    /// The path through that tree: (input, value, threshold, went_below) per split.
    #[pyo3(get)]
    path: Vec<(String, f64, f64, bool)>,
    /// The path through the tier policy.
    #[pyo3(get)]
    policy: Vec<(String, f64, f64, bool)>,
    #[pyo3(get)]
    leaf_samples: usize,
    #[pyo3(get)]
    leaf_mean_regret: f64,
    #[pyo3(get)]
    model: String,
    /// The tree's pick where the long-row guard overruled it (`kernel` is then the fallback),
    /// else None.
    #[pyo3(get)]
    vetoed: Option<String>,
    #[pyo3(get)]
    notes: Vec<String>,
    text: String,
}

impl PyDecision {
    fn of(d: &Decision) -> PyDecision {
        let steps = |v: &[augur::Step]| {
            v.iter()
                .map(|s| (s.input.clone(), s.value, s.threshold, s.below))
                .collect()
        };
        PyDecision {
            kernel: d.kernel.clone(),
            forced: d.forced,
            iterations: d.iterations,
            tier: d.tier.name().into(),
            tree: d.tree.clone(),
            path: steps(&d.path),
            policy: steps(&d.policy),
            leaf_samples: d.leaf_samples,
            leaf_mean_regret: d.leaf_mean_regret,
            model: d.model.clone(),
            vetoed: d.guard.as_ref().map(|g| g.vetoed.clone()),
            notes: d.notes.clone(),
            text: d.to_string(),
        }
    }
}

#[pymethods]
impl PyDecision {
    fn __str__(&self) -> String {
        self.text.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "Decision(kernel={:?}, tier={:?}, iterations={})",
            self.kernel, self.tier, self.iterations
        )
    }
}

/// augur's version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// For the creation benchmark (bench/python-gpu): what the Rust API pays for the same plan from
/// the same arrays, timed in Rust: `(check_s, total_s)`, the check of the arrays alone
/// (`CsrRef::try_new`), and `SpmvPlan::from_arrays` (which checks them while they upload;
/// float64 values, int32 indices, the model's choice for `iterations`). What `augur.SpmvPlan`
/// costs beyond `total_s` is the binding's overhead.
#[pyfunction]
fn _time_rust_creation(
    indptr: PyReadonlyArray1<'_, i32>,
    indices: PyReadonlyArray1<'_, i32>,
    data: PyReadonlyArray1<'_, f64>,
    shape: (usize, usize),
    backend_name: &str,
    iterations: u32,
) -> PyResult<(f64, f64)> {
    let b = backend(backend_name, 0)?;
    let opts = plan_options(iterations, "auto", None, None, false)?;
    let (p, i, v) = (
        contiguous(&indptr, "indptr")?,
        contiguous(&indices, "indices")?,
        contiguous(&data, "data")?,
    );
    let t = std::time::Instant::now();
    if CsrRef::try_new(shape, p, i, v).is_none() {
        return Err(value_err("not canonical CSR arrays"));
    }
    let check = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let plan = augur::SpmvPlan::from_arrays(shape, p, i, v, &b, opts).map_err(py_err)?;
    let total = t.elapsed().as_secs_f64();
    drop(plan);
    Ok((check, total))
}

#[pymodule]
fn _augur(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Plan>()?;
    m.add_class::<PyDecision>()?;
    m.add_class::<Model>()?;
    m.add_function(wrap_pyfunction!(make_plan, m)?)?;
    m.add_function(wrap_pyfunction!(make_plan_cuda, m)?)?;
    m.add_function(wrap_pyfunction!(features, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(_time_rust_creation, m)?)?;
    Ok(())
}
