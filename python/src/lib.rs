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

// DLPack's C structures (dlpack.h, v0.8 "legacy" capsule "dltensor", which every producer
// exports by default).
#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}
#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}
#[repr(C)]
struct DlTensor {
    data: *mut std::ffi::c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}
#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut std::ffi::c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}
const DL_CUDA: i32 = 2;
const DL_CUDA_MANAGED: i32 = 13;
const DL_FLOAT: u8 = 2;

/// A caller's CUDA stream handle as augur and DLPack take it: 0 (the legacy default stream in
/// CuPy's and PyTorch's numbering) becomes 1, which both DLPack and the CUDA driver
/// (`CU_STREAM_LEGACY`) read as that stream (DLPack does not allow 0).
fn cuda_stream(stream: u64) -> u64 {
    if stream == 0 {
        1
    } else {
        stream
    }
}

/// A one-dimensional CUDA vector borrowed through DLPack: its address, length, element bits and
/// GPU, with the capsule that keeps it alive (its deleter runs when the capsule goes).
struct CudaVector<'py> {
    _capsule: Bound<'py, PyAny>,
    raw: RawVector,
}

impl<'py> CudaVector<'py> {
    /// `obj.__dlpack__(stream=stream)`, checked: a contiguous 1-D float vector on a CUDA GPU.
    fn of(obj: &Bound<'py, PyAny>, stream: u64, what: &str) -> PyResult<CudaVector<'py>> {
        let kwargs = PyDict::new(obj.py());
        kwargs.set_item("stream", stream)?;
        let capsule = obj
            .call_method("__dlpack__", (), Some(&kwargs))
            .map_err(|e| value_err(format!("{what}: __dlpack__ failed: {e}")))?;
        // SAFETY: a capsule object (checked by name inside); its pointer is a DLManagedTensor
        // alive as long as the capsule, which this struct holds.
        let raw =
            unsafe { pyo3::ffi::PyCapsule_GetPointer(capsule.as_ptr(), c"dltensor".as_ptr()) };
        if raw.is_null() {
            pyo3::PyErr::take(obj.py());
            return Err(value_err(format!(
                "{what}: __dlpack__ did not return a \"dltensor\" capsule"
            )));
        }
        let t = unsafe { &(*raw.cast::<DlManagedTensor>()).dl_tensor };
        if t.device.device_type != DL_CUDA && t.device.device_type != DL_CUDA_MANAGED {
            return Err(value_err(format!(
                "{what} is not on a CUDA GPU (DLPack device type {})",
                t.device.device_type
            )));
        }
        if t.ndim != 1 {
            return Err(value_err(format!(
                "{what} must be one-dimensional, not {}-dimensional",
                t.ndim
            )));
        }
        // SAFETY: ndim = 1 entries behind shape (and strides when not null), per DLPack.
        let len = unsafe { *t.shape };
        let stride = if t.strides.is_null() {
            1
        } else {
            unsafe { *t.strides }
        };
        if stride != 1 && len > 1 {
            return Err(value_err(format!(
                "{what} must be contiguous (stride {stride}); .contiguous() / cupy.ascontiguousarray"
            )));
        }
        if t.dtype.code != DL_FLOAT || t.dtype.lanes != 1 || !matches!(t.dtype.bits, 32 | 64) {
            return Err(value_err(format!(
                "{what} must hold float32 or float64 values (DLPack type code {}, {} bits)",
                t.dtype.code, t.dtype.bits
            )));
        }
        Ok(CudaVector {
            raw: RawVector {
                ptr: t.data as u64 + t.byte_offset,
                len: len.max(0) as usize,
                bits: t.dtype.bits,
                device: t.device.device_id,
            },
            _capsule: capsule,
        })
    }
}

/// A plan: the matrix (copied), the chosen kernel set up on its backend.
#[pyclass(unsendable, module = "augur._augur")]
pub struct Plan {
    inner: OwnedPlan,
}

fn make<T: augur::PlanScalar + numpy::Element>(
    data: &PyReadonlyArray1<'_, T>,
    indptr: &Index<'_>,
    indices: &Index<'_>,
    shape: (usize, usize),
    b: &Backend,
    opts: PlanOptions,
) -> PyResult<OwnedPlan> {
    let name = format!("the {} x {} matrix", shape.0, shape.1);
    let py = data.py();
    let v = contiguous(data, "data")?;
    // A GPU plan reads the arrays only while it is made (the upload): int32 CSR is taken where
    // it is, without a copy, the arrays kept alive by the plan, and checked while it uploads;
    // arrays that are not canonical (unsorted or repeated columns) go the copying way below.
    if b.kind() != "cpu" {
        if let (Index::I32(p), Index::I32(i)) = (indptr, indices) {
            let (ps, is) = (contiguous(p, "indptr")?, contiguous(i, "indices")?);
            let keep: Vec<Py<PyAny>> = vec![
                p.as_any().clone().unbind(),
                i.as_any().clone().unbind(),
                data.as_any().clone().unbind(),
            ];
            let o = opts.clone();
            // SAFETY: the arrays stay allocated while the plan holds `keep` (their
            // references); a GPU plan reads them only inside this call, while they are
            // borrowed read-only. Other Python threads run meanwhile (the GIL released).
            match without_gil(py, || unsafe {
                OwnedPlan::from_arrays_kept(shape, (ps, is, v), Box::new(keep), b, o)
            }) {
                Err(AugurError::NotCanonical { .. }) => {}
                r => return r.map_err(py_err),
            }
        }
    }
    let r = match (indptr, indices) {
        (Index::I32(p), Index::I32(i)) => {
            let (p, i) = (contiguous(p, "indptr")?, contiguous(i, "indices")?);
            without_gil(py, || {
                OwnedPlan::from_arrays(&name, shape, (p, i, v), b, opts)
            })
        }
        (Index::I64(p), Index::I64(i)) => {
            let (p, i) = (contiguous(p, "indptr")?, contiguous(i, "indices")?);
            without_gil(py, || {
                OwnedPlan::from_arrays(&name, shape, (p, i, v), b, opts)
            })
        }
        _ => {
            return Err(value_err(
                "indptr and indices must have the same dtype (both int32 or both int64)",
            ))
        }
    };
    r.map_err(py_err)
}

/// The plan options both constructors take.
fn plan_options(
    iterations: u32,
    gather: &str,
    kernel: Option<&str>,
    model: Option<&str>,
    allow_other_device: bool,
) -> PyResult<PlanOptions> {
    let mut opts = PlanOptions::default()
        .expected_iterations(iterations.max(1))
        .gather(gather_policy(gather)?)
        .allow_other_device(allow_other_device);
    if let Some(k) = kernel {
        opts = opts.kernel(k);
    }
    if let Some(m) = model {
        opts = opts.selector(Selector::load(m).map_err(py_err)?);
    }
    Ok(opts)
}

/// Make a plan from CSR arrays (see `augur.SpmvPlan`, which takes a scipy.sparse matrix).
#[pyfunction]
#[pyo3(signature = (indptr, indices, data, shape, backend_name="auto", device=0, iterations=1, gather="auto", kernel=None, model=None, allow_other_device=false))]
#[allow(clippy::too_many_arguments)]
fn make_plan(
    indptr: &Bound<'_, PyAny>,
    indices: &Bound<'_, PyAny>,
    data: &Bound<'_, PyAny>,
    shape: (usize, usize),
    backend_name: &str,
    device: usize,
    iterations: u32,
    gather: &str,
    kernel: Option<&str>,
    model: Option<&str>,
    allow_other_device: bool,
) -> PyResult<Plan> {
    let b = backend(backend_name, device)?;
    let opts = plan_options(iterations, gather, kernel, model, allow_other_device)?;
    let (p, i) = (index(indptr, "indptr")?, index(indices, "indices")?);
    let inner = if let Ok(d) = data.extract::<PyReadonlyArray1<'_, f32>>() {
        make(&d, &p, &i, shape, &b, opts)?
    } else if let Ok(d) = data.extract::<PyReadonlyArray1<'_, f64>>() {
        make(&d, &p, &i, shape, &b, opts)?
    } else {
        return Err(value_err(
            "data must be a one-dimensional float32 or float64 NumPy array (a.astype(np.float64))",
        ));
    };
    Ok(Plan { inner })
}

/// Make a plan from CSR arrays already in CUDA memory (CuPy, PyTorch): their device addresses
/// `(indptr, indices, data)`, int32 indices and float32 or float64 values (`bits`), copied on the
/// device in order with the caller's `stream`.
#[pyfunction]
#[pyo3(signature = (ptrs, shape, nnz, bits, stream, device=0, iterations=1, gather="auto", kernel=None, model=None, allow_other_device=false))]
#[allow(clippy::too_many_arguments)]
fn make_plan_cuda(
    ptrs: (u64, u64, u64),
    shape: (usize, usize),
    nnz: usize,
    bits: u8,
    stream: u64,
    device: usize,
    iterations: u32,
    gather: &str,
    kernel: Option<&str>,
    model: Option<&str>,
    allow_other_device: bool,
) -> PyResult<Plan> {
    let b = backend("cuda", device)?;
    let opts = plan_options(iterations, gather, kernel, model, allow_other_device)?;
    let stream = Some(cuda_stream(stream));
    let full = (shape.0, shape.1, nnz);
    // SAFETY: the package passes the device arrays of a CuPy/PyTorch CSR matrix of this shape
    // (int32 indices, values of `bits`), alive for this call; the plan checks they are device
    // memory of its GPU and the row pointers' ends, and copies them before returning.
    let inner = match bits {
        32 => unsafe { OwnedPlan::from_cuda_csr::<f32>(full, ptrs, stream, &b, opts) },
        64 => unsafe { OwnedPlan::from_cuda_csr::<f64>(full, ptrs, stream, &b, opts) },
        _ => {
            return Err(value_err(
                "a device matrix must hold float32 or float64 values",
            ))
        }
    }
    .map_err(py_err)?;
    Ok(Plan { inner })
}

fn run_typed<'py, T: augur::PlanScalar + numpy::Element>(
    plan: &mut OwnedPlan,
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArray1<T>>> {
    let (rows, cols, _) = plan.shape();
    let prec = plan.precision();
    let x: PyReadonlyArray1<'py, T> = x.extract().map_err(|_| {
        value_err(format!(
            "x must be a one-dimensional {} NumPy array of {cols} entries (this plan holds {prec} values)",
            if prec == "f32" { "float32" } else { "float64" }
        ))
    })?;
    let xs = contiguous(&x, "x")?;
    if xs.len() != cols {
        return Err(value_err(format!(
            "x has {} entries; the {rows} x {cols} matrix needs {cols}",
            xs.len()
        )));
    }
    let out: Bound<'py, PyArray1<T>> = match out {
        None => PyArray1::<T>::zeros(py, rows, false),
        Some(o) => o
            .cast::<PyArray1<T>>()
            .map_err(|_| {
                value_err(format!(
                    "out must be a one-dimensional {prec} NumPy array of {rows} entries"
                ))
            })?
            .clone(),
    };
    if out.len() != rows {
        return Err(value_err(format!(
            "out has {} entries; the {rows} x {cols} matrix gives {rows}",
            out.len()
        )));
    }
    {
        let mut w = out
            .try_readwrite()
            .map_err(|_| value_err("out is not writeable (or is borrowed elsewhere)"))?;
        let ys = w
            .as_slice_mut()
            .map_err(|_| value_err("out must be C-contiguous"))?;
        without_gil(py, || plan.run(xs, ys)).map_err(py_err)?;
    }
    Ok(out)
}

#[pymethods]
impl Plan {
    /// y = A x. `x`: a NumPy vector of the plan's dtype with as many entries as columns; `out`
    /// (optional): where to write y (rows entries, same dtype); returns y.
    #[pyo3(signature = (x, out=None))]
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.inner.precision() {
            "f32" => run_typed::<f32>(&mut self.inner, py, x, out)?.into_any(),
            _ => run_typed::<f64>(&mut self.inner, py, x, out)?.into_any(),
        })
    }

    /// y = A x on CUDA vectors the caller owns (DLPack: PyTorch, CuPy, JAX...), without copies,
    /// in order with the caller's CUDA `stream` (its handle; 0 or 1: the legacy default stream):
    /// the product runs after the work already on it and before the work enqueued next. The host
    /// does not wait.
    fn run_cuda(
        &mut self,
        x: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
        stream: u64,
    ) -> PyResult<()> {
        let stream = cuda_stream(stream);
        let xv = CudaVector::of(x, stream, "x")?;
        let yv = CudaVector::of(out, stream, "out")?;
        self.launch_checked(xv.raw, yv.raw, stream)
    }

    /// `run_cuda` for vectors described by the caller's library itself (PyTorch's data_ptr,
    /// CuPy's data.ptr; the package does this for them, which is cheaper than a DLPack export):
    /// each `(address, entries, bits per value, GPU)`.
    fn run_cuda_ptr(
        &mut self,
        x: (u64, usize, u8, i32),
        out: (u64, usize, u8, i32),
        stream: u64,
    ) -> PyResult<()> {
        let stream = cuda_stream(stream);
        self.launch_checked(RawVector::from(x), RawVector::from(out), stream)
    }

    /// `run_cuda` for PyTorch CUDA tensors, read here without a DLPack export (the package's
    /// hot path): True when both `x` and `out` are contiguous one-dimensional float tensors on a
    /// GPU and the product was enqueued on `stream` (None: PyTorch's current stream of their
    /// GPU); False for anything else, which the package then hands to DLPack (whose checks
    /// name the problem).
    #[pyo3(signature = (x, out, stream=None))]
    fn run_torch(
        &mut self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
        stream: Option<u64>,
    ) -> PyResult<bool> {
        let Some(api) = TorchApi::of(py, x)? else {
            return Ok(false);
        };
        let (Some(xv), Some(yv)) = (api.vector(x)?, api.vector(out)?) else {
            return Ok(false);
        };
        let stream = match stream {
            Some(s) => s,
            None => api.current_stream(py, xv.device)?,
        };
        self.launch_checked(xv, yv, cuda_stream(stream))?;
        Ok(true)
    }

    /// For the overhead benchmark (bench/python-gpu): `n` products on the same CUDA vectors
    /// enqueued from a Rust loop (the DLPack export and checks once), then one wait; seconds per
    /// call. What `run` costs from Python beyond this is the binding's overhead.
    fn _time_launches(
        &mut self,
        x: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
        stream: u64,
        n: usize,
    ) -> PyResult<f64> {
        let stream = cuda_stream(stream);
        let (xv, yv) = (
            CudaVector::of(x, stream, "x")?,
            CudaVector::of(out, stream, "out")?,
        );
        // One checked call first (types, lengths), then the loop.
        self.run_cuda(x, out, stream)?;
        self.inner.synchronize().map_err(py_err)?;
        let t = std::time::Instant::now();
        for _ in 0..n {
            // SAFETY: the vectors checked by the run_cuda above, alive for this call.
            unsafe { self.inner.launch_cuda(xv.raw.ptr, yv.raw.ptr, Some(stream)) }
                .map_err(py_err)?;
        }
        self.inner.synchronize().map_err(py_err)?;
        Ok(t.elapsed().as_secs_f64() / n.max(1) as f64)
    }

    /// Wait until the plan's GPU work is done (not needed after run_cuda when the caller orders
    /// by its stream).
    fn synchronize(&self) -> PyResult<()> {
        self.inner.synchronize().map_err(py_err)
    }

    /// The kernel chosen and why.
    #[getter]
    fn decision(&self) -> PyDecision {
        PyDecision::of(self.inner.decision())
    }

    /// Seconds making the plan took, by part (model, features, modules, select, upload,
    /// kernel_setup, total).
    #[getter]
    fn setup_cost<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.setup();
        let d = PyDict::new(py);
        for (k, v) in [
            ("model", s.model_s),
            ("features", s.features_s),
            ("modules", s.modules_s),
            ("select", s.select_s),
            ("upload", s.upload_s),
            ("kernel_setup", s.kernel_setup_s),
            ("total", s.total_s),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// The features the plan computed (name -> value; tiers it did not read are left out).
    #[getter]
    fn features<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        feature_dict(py, self.inner.features())
    }

    /// "cpu", "cuda" or "hip".
    #[getter]
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    /// "float32" or "float64".
    #[getter]
    fn dtype(&self) -> &'static str {
        match self.inner.precision() {
            "f32" => "float32",
            _ => "float64",
        }
    }

    /// (rows, columns).
    #[getter]
    fn shape(&self) -> (usize, usize) {
        let (r, c, _) = self.inner.shape();
        (r, c)
    }

    /// Whether the plan copied the matrix's arrays (False: a GPU plan made from canonical int32
    /// CSR read them where they are).
    #[getter]
    fn copied(&self) -> bool {
        self.inner.copied()
    }

    /// Stored entries (after summing repeats).
    #[getter]
    fn nnz(&self) -> usize {
        self.inner.shape().2
    }
}

/// What the PyTorch fast path needs of the `torch` module, looked up once (when the first
/// tensor arrives; augur never imports PyTorch itself).
struct TorchApi {
    tensor: Py<pyo3::types::PyType>,
    f32: Py<PyAny>,
    f64: Py<PyAny>,
    /// `torch._C._cuda_getCurrentRawStream(device)` (an int, no Stream object), where it exists.
    raw_stream: Option<Py<PyAny>>,
    current_stream: Py<PyAny>,
}

static TORCH: pyo3::sync::PyOnceLock<TorchApi> = pyo3::sync::PyOnceLock::new();

impl TorchApi {
    /// The API when `v` is exactly a `torch.Tensor` (subclasses go through DLPack).
    fn of<'a>(py: Python<'a>, v: &Bound<'a, PyAny>) -> PyResult<Option<&'a TorchApi>> {
        let ty = v.get_type();
        if let Some(api) = TORCH.get(py) {
            return Ok(ty.is(api.tensor.bind(py)).then_some(api));
        }
        if !ty.module()?.to_cow()?.starts_with("torch") {
            return Ok(None);
        }
        let api = TORCH.get_or_try_init(py, || -> PyResult<TorchApi> {
            let torch = py.import("torch")?;
            let c = torch.getattr("_C")?;
            Ok(TorchApi {
                tensor: torch.getattr("Tensor")?.cast_into()?.unbind(),
                f32: torch.getattr("float32")?.unbind(),
                f64: torch.getattr("float64")?.unbind(),
                raw_stream: c
                    .getattr("_cuda_getCurrentRawStream")
                    .ok()
                    .map(Bound::unbind),
                current_stream: torch.getattr("cuda")?.getattr("current_stream")?.unbind(),
            })
        })?;
        Ok(ty.is(api.tensor.bind(py)).then_some(api))
    }

    /// A contiguous one-dimensional float32/float64 CUDA tensor as a raw vector; None for any
    /// other tensor.
    fn vector(&self, v: &Bound<'_, PyAny>) -> PyResult<Option<RawVector>> {
        let py = v.py();
        if !v.get_type().is(self.tensor.bind(py)) {
            return Ok(None);
        }
        let device: i32 = v.call_method0(pyo3::intern!(py, "get_device"))?.extract()?;
        if device < 0
            || v.call_method0(pyo3::intern!(py, "dim"))?.extract::<i64>()? != 1
            || !v
                .call_method0(pyo3::intern!(py, "is_contiguous"))?
                .extract::<bool>()?
        {
            return Ok(None);
        }
        let dtype = v.getattr(pyo3::intern!(py, "dtype"))?;
        let bits = if dtype.is(self.f32.bind(py)) {
            32
        } else if dtype.is(self.f64.bind(py)) {
            64
        } else {
            return Ok(None);
        };
        Ok(Some(RawVector {
            ptr: v.call_method0(pyo3::intern!(py, "data_ptr"))?.extract()?,
            len: v.call_method0(pyo3::intern!(py, "numel"))?.extract()?,
            bits,
            device,
        }))
    }

    /// PyTorch's current stream on `device`, as a handle.
    fn current_stream(&self, py: Python<'_>, device: i32) -> PyResult<u64> {
        match &self.raw_stream {
            Some(f) => f.bind(py).call1((device,))?.extract(),
            None => self
                .current_stream
                .bind(py)
                .call1((device,))?
                .getattr("cuda_stream")?
                .extract(),
        }
    }
}

/// A CUDA vector as an address, its entries, bits per value and GPU.
#[derive(Clone, Copy)]
struct RawVector {
    ptr: u64,
    len: usize,
    bits: u8,
    device: i32,
}

impl From<(u64, usize, u8, i32)> for RawVector {
    fn from((ptr, len, bits, device): (u64, usize, u8, i32)) -> RawVector {
        RawVector {
            ptr,
            len,
            bits,
            device,
        }
    }
}

impl Plan {
    /// The product on checked CUDA vectors (types, lengths, one GPU, no overlap; the plan checks
    /// that they are device memory of its GPU).
    fn launch_checked(&mut self, xv: RawVector, yv: RawVector, stream: u64) -> PyResult<()> {
        let (rows, cols, _) = self.inner.shape();
        let bits = if self.inner.precision() == "f32" {
            32
        } else {
            64
        };
        for (what, v, n) in [("x", &xv, cols), ("out", &yv, rows)] {
            if v.bits != bits {
                return Err(value_err(format!(
                    "{what} holds float{} values; this plan holds float{bits}",
                    v.bits
                )));
            }
            if v.len != n {
                return Err(value_err(format!(
                    "{what} has {} entries; the {rows} x {cols} matrix needs {n}",
                    v.len
                )));
            }
        }
        if xv.device != yv.device {
            return Err(value_err(format!(
                "x is on GPU {} and out on GPU {}",
                xv.device, yv.device
            )));
        }
        let (xb, yb) = (xv.ptr, yv.ptr);
        let bytes = (bits / 8) as u64;
        if rows > 0 && cols > 0 && xb < yb + rows as u64 * bytes && yb < xb + cols as u64 * bytes {
            return Err(value_err("x and out overlap"));
        }
        // SAFETY: CUDA vectors of the lengths and type checked above, kept alive by the caller's
        // objects for this call and, by the caller's stream ordering, until the product has run
        // (the caller's stream waits for it); the plan checks they are device memory of its GPU.
        unsafe { self.inner.launch_cuda(xb, yb, Some(stream)) }.map_err(py_err)
    }
}

fn feature_dict<'py>(py: Python<'py>, f: &SpmvFeatures) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let schema = SpmvFeatures::schema();
    for (n, v) in schema.names().zip(f.values()) {
        if !v.is_nan() {
            d.set_item(n, v)?;
        }
    }
    Ok(d)
}

/// Every SpMV feature of a CSR pattern (known, sampled and exact), computed on the host.
#[pyfunction]
fn features<'py>(
    py: Python<'py>,
    indptr: &Bound<'py, PyAny>,
    indices: &Bound<'py, PyAny>,
    shape: (usize, usize),
) -> PyResult<Bound<'py, PyDict>> {
    let name = format!("the {} x {} matrix", shape.0, shape.1);
    let (p, i) = (index(indptr, "indptr")?, index(indices, "indices")?);
    let build = |n: usize| vec![1.0f32; n];
    let a = match (&p, &i) {
        (Index::I32(p), Index::I32(i)) => {
            let (p, i) = (contiguous(p, "indptr")?, contiguous(i, "indices")?);
            augur::datasets::csr_from_arrays(&name, shape, p, i, &build(i.len()))
        }
        (Index::I64(p), Index::I64(i)) => {
            let (p, i) = (contiguous(p, "indptr")?, contiguous(i, "indices")?);
            augur::datasets::csr_from_arrays(&name, shape, p, i, &build(i.len()))
        }
        _ => {
            return Err(value_err(
                "indptr and indices must have the same dtype (both int32 or both int64)",
            ))
        }
    }
    .map_err(|e| py_err(e.into()))?
    .0;
    let f = CpuGatherer
        .gather(CsrPattern::of(&a))
        .map_err(|e| py_err(e.into()))?;
    feature_dict(py, &f)
}

/// A trained model of any domain (SpMV, collectives, attention).
#[pyclass(frozen, module = "augur._augur")]
pub struct Model {
    model: AnyModel,
    origin: String,
}

#[pymethods]
impl Model {
    /// A model file, or a built-in model by name: "default-cpu", "default-cuda",
    /// "default-cuda-h100", "default-cuda-h200", "default-comm", "default-attention",
    /// "default-overlap".
    #[staticmethod]
    fn load(name_or_path: &str) -> PyResult<Model> {
        let model = augur::defaults::load_any(name_or_path).map_err(|e| py_err(e.into()))?;
        Ok(Model {
            model,
            origin: name_or_path.to_string(),
        })
    }

    /// "spmv", "comm", "attention" or "overlap".
    #[getter]
    fn domain(&self) -> &'static str {
        self.model.domain()
    }

    /// The device the model was trained on.
    #[getter]
    fn device(&self) -> String {
        match &self.model {
            AnyModel::Spmv(m) => m.device.clone(),
            AnyModel::Comm(m) => m.device.clone(),
            AnyModel::Attention(m) => m.device.clone(),
            AnyModel::Overlap(m) => m.device.clone(),
        }
    }

    /// The model as "text", "dot" (Graphviz), "rust" or "json".
    fn export(&self, format: &str) -> PyResult<String> {
        let f: ExportFormat = format
            .parse()
            .map_err(|e: augur::models::ModelError| value_err(e.to_string()))?;
        Ok(self.model.export(f))
    }

    /// An SpMV model's choice for a matrix with these features (a dict as `augur.features`
    /// returns; features left out count as not computed) over `iterations` products.
    #[pyo3(signature = (features, iterations=1))]
    fn select(&self, features: &Bound<'_, PyDict>, iterations: u32) -> PyResult<PyDecision> {
        let AnyModel::Spmv(m) = &self.model else {
            return Err(value_err(format!(
                "{} is a {} model; select() is for SpMV models",
                self.origin,
                self.domain()
            )));
        };
        let schema = SpmvFeatures::schema();
        let mut values = vec![f64::NAN; schema.features.len()];
        for (k, v) in features.iter() {
            let k: String = k.extract()?;
            let i = schema.names().position(|n| n == k).ok_or_else(|| {
                value_err(format!(
                    "unknown feature `{k}`; the schema has: {}",
                    schema.names().collect::<Vec<_>>().join(", ")
                ))
            })?;
            values[i] = v
                .extract::<f64>()
                .map_err(|_| value_err(format!("feature `{k}` is not a number")))?;
        }
        let s = Arc::new(Selector::from_model((**m).clone(), self.origin.clone()));
        let d = s
            .select_values(&values, iterations.max(1))
            .map_err(py_err)?;
        Ok(PyDecision::of(&d))
    }

    /// A collectives, attention or overlap model's choice for a shape given as augur's spec
    /// string (`message:collective=all-reduce,dtype=bf16,bytes=64KiB,world=4,link=nvlink`,
    /// `attention:q_heads=32,kv_heads=8,head_dim=128,lens=4096*2;16*30`, or
    /// `overlap:op=all-gather,m=8192,n=6144,k=4096,world=4`): (the pattern or schedule, the
    /// path through the tree, notes). No GPU needed.
    fn choose(&self, spec: &str) -> PyResult<(String, Vec<String>, Vec<String>)> {
        use augur::features::attention::AttentionShape;
        use augur::features::message::MessageShape;
        let feature = |e: augur::features::FeatureError| value_err(e.to_string());
        match &self.model {
            AnyModel::Comm(m) => {
                let shape = MessageShape::parse(spec).map_err(feature)?;
                shape.validate().map_err(feature)?;
                let pick = m.choose(&shape).ok_or_else(|| {
                    value_err(format!(
                        "{} has no tree for {:?}",
                        self.origin, shape.collective
                    ))
                })?;
                let path = m
                    .path(&shape)
                    .into_iter()
                    .map(|(n, v, t, below)| {
                        format!("{n} = {v} {} {t}", if below { "<" } else { ">=" })
                    })
                    .collect();
                Ok((pick.to_string(), path, Vec::new()))
            }
            AnyModel::Attention(m) => {
                let shape = AttentionShape::parse(spec).map_err(feature)?;
                let c = augur::attention::choose_schedule(m, &shape, None, "").map_err(py_err)?;
                Ok((c.schedule.name().to_string(), c.path, c.notes))
            }
            AnyModel::Overlap(m) => {
                let shape = augur::features::overlap::OverlapShape::parse(spec).map_err(feature)?;
                let c = augur::overlap::choose_pattern(m, &shape, "").map_err(py_err)?;
                Ok((c.pattern.name(), c.path, c.notes))
            }
            AnyModel::Spmv(_) => Err(value_err(format!(
                "{} is an SpMV model: use select(features, iterations)",
                self.origin
            ))),
        }
    }

    /// An SpMV model's kernels.
    #[getter]
    fn kernels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match &self.model {
            AnyModel::Spmv(m) => PyList::new(py, &m.kernels),
            _ => PyList::new(py, Vec::<String>::new()),
        }
    }

    fn __repr__(&self) -> String {
        format!("Model({:?}, domain={:?})", self.origin, self.domain())
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
