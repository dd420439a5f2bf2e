//! Vectors on the GPU handed over from Python: DLPack capsules and PyTorch tensors (the fast
//! path), checked for type, length, device and overlap before a plan runs on them.

use super::*;

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
pub(crate) fn cuda_stream(stream: u64) -> u64 {
    if stream == 0 {
        1
    } else {
        stream
    }
}

/// A one-dimensional CUDA vector borrowed through DLPack: its address, length, element bits and
/// GPU, with the capsule that keeps it alive (its deleter runs when the capsule goes).
pub(crate) struct CudaVector<'py> {
    _capsule: Bound<'py, PyAny>,
    pub(crate) raw: RawVector,
}

impl<'py> CudaVector<'py> {
    /// `obj.__dlpack__(stream=stream)`, checked: a contiguous 1-D float vector on a CUDA GPU.
    pub(crate) fn of(
        obj: &Bound<'py, PyAny>,
        stream: u64,
        what: &str,
    ) -> PyResult<CudaVector<'py>> {
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

/// What the PyTorch fast path needs of the `torch` module, looked up once (when the first
/// tensor arrives; augur never imports PyTorch itself).
pub(crate) struct TorchApi {
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
    pub(crate) fn of<'a>(py: Python<'a>, v: &Bound<'a, PyAny>) -> PyResult<Option<&'a TorchApi>> {
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
    pub(crate) fn vector(&self, v: &Bound<'_, PyAny>) -> PyResult<Option<RawVector>> {
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
    pub(crate) fn current_stream(&self, py: Python<'_>, device: i32) -> PyResult<u64> {
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
pub(crate) struct RawVector {
    pub(crate) ptr: u64,
    len: usize,
    bits: u8,
    pub(crate) device: i32,
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
    pub(crate) fn launch_checked(
        &mut self,
        xv: RawVector,
        yv: RawVector,
        stream: u64,
    ) -> PyResult<()> {
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
