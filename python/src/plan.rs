//! `Plan`: a matrix copied into augur, the kernel chosen for it set up on its backend, and the
//! products run on NumPy arrays or GPU vectors.

use super::*;
use crate::cuda::{cuda_stream, TorchApi};
use crate::model::feature_dict;

/// A plan: the matrix (copied), the chosen kernel set up on its backend.
#[pyclass(unsendable, module = "augur._augur")]
pub struct Plan {
    pub(crate) inner: OwnedPlan,
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
pub(crate) fn plan_options(
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
pub(crate) fn make_plan(
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
pub(crate) fn make_plan_cuda(
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
