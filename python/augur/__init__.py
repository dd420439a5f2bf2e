"""augur: pick the fastest SpMV kernel for a sparse matrix at run time, and say why.

    import augur, numpy as np, scipy.sparse as sp
    a = sp.random(10000, 10000, density=1e-3, format="csr", dtype=np.float64)
    plan = augur.SpmvPlan(a, iterations=100)       # features, model's choice, setup: once
    y = plan.run(np.ones(a.shape[1]))              # y = A x, as often as needed
    print(plan.decision)                           # the kernel and why

The CUDA backend is loaded at run time: the package imports and runs on the CPU on machines
without a GPU. Errors are ValueError (the caller's input) or RuntimeError (a missing backend, a
device failure), with augur's message.
"""

from __future__ import annotations

import numpy as _np

from . import _augur
from ._augur import Decision, Model, Plan

__version__ = _augur.version()
__all__ = ["SpmvPlan", "Decision", "Model", "Plan", "features", "load_model", "__version__"]

_BACKENDS = ("auto", "cpu", "cuda", "hip")


def _csr_arrays(a, what="a"):
    """(indptr, indices, data, shape, notes) of a scipy.sparse matrix or array, as augur takes
    them: CSR, C-contiguous, int32 indices where they fit (int64 ones are converted with a note;
    ones beyond int32 are an error), float32 or float64 values."""
    notes = []
    try:
        import scipy.sparse as sp
    except ImportError as e:  # pragma: no cover - scipy is an optional dependency
        raise ValueError(f"{what}: augur takes scipy.sparse matrices; install scipy") from e
    mod = type(a).__module__.split(".")[0]
    if mod == "cupyx" and hasattr(a, "get"):
        notes.append("a CuPy sparse matrix: copied to the host for a plan off the GPU")
        a = a.get()
    elif mod == "torch" and getattr(a, "is_sparse_csr", False):
        notes.append("a PyTorch CSR tensor: copied to the host for a plan off the GPU")
        t = a.cpu()
        a = sp.csr_matrix((t.values().numpy(), t.col_indices().numpy(),
                           t.crow_indices().numpy()), shape=tuple(t.shape))
    if not sp.issparse(a):
        raise ValueError(
            f"{what} must be a scipy.sparse matrix or array (CSR, CSC, COO, ...), "
            f"not {type(a).__name__}"
        )
    if a.ndim != 2:
        raise ValueError(f"{what} must be two-dimensional, not {a.ndim}-dimensional")
    if a.format != "csr":
        notes.append(f"converted from {a.format.upper()} to CSR")
        a = a.tocsr()
    if a.dtype not in (_np.float32, _np.float64):
        raise ValueError(
            f"{what} holds {a.dtype} values; augur runs float32 or float64 "
            f"(a.astype(np.float64))"
        )
    indptr, indices = a.indptr, a.indices
    if indptr.dtype != _np.int32 or indices.dtype != _np.int32:
        limit = _np.iinfo(_np.int32).max
        biggest = max(a.shape[0], a.shape[1], a.nnz)
        if biggest > limit:
            raise ValueError(
                f"{what}: {a.shape[0]} x {a.shape[1]} with {a.nnz} entries does not fit "
                f"augur's 32-bit indices (largest {limit})"
            )
        notes.append(f"{indices.dtype} indices converted to int32")
        if indptr.dtype != indices.dtype or indices.dtype not in (_np.int32, _np.int64):
            indptr, indices = indptr.astype(_np.int64), indices.astype(_np.int64)
        # (int64 ones are narrowed by augur while it copies them)
    return (
        _np.ascontiguousarray(indptr),
        _np.ascontiguousarray(indices),
        _np.ascontiguousarray(a.data),
        (int(a.shape[0]), int(a.shape[1])),
        notes,
    )


class SpmvPlan:
    """y = A x for one sparse matrix: features, the model's kernel choice and its setup once,
    then ``run`` as often as needed.

    a: a scipy.sparse matrix or array (CSR is read as it is; CSC, COO, ... are converted; rows
       with unsorted or repeated indices are sorted and summed), float32 or float64.
    backend: "auto" (a CUDA GPU when usable, else the CPU), "cpu", "cuda" or "hip".
    device: the GPU ordinal.
    iterations: how many products you expect to run (the choice depends on it).
    gather: which features to compute before choosing: "auto" (the model's policy), "never"
       (the shape only), "sample" (a fixed-size sample of rows), "always" (a full pass).
    kernel: a kernel name to use instead of the model's choice.
    model: a model file or built-in name ("default-cpu", "default-cuda-h100", ...).
    allow_other_device: use a model trained on another device without refusing.
    """

    def __init__(self, a, backend="auto", device=0, iterations=1, gather="auto", kernel=None,
                 model=None, allow_other_device=False):
        if backend not in _BACKENDS:
            raise ValueError(f"backend = {backend!r}: one of {', '.join(map(repr, _BACKENDS))}")
        if not isinstance(iterations, (int, _np.integer)) or iterations < 1:
            raise ValueError(f"iterations = {iterations!r}: a positive integer")
        model = None if model is None else str(model)
        dev = _device_csr(a) if backend in ("auto", "cuda") else None
        if dev is not None:
            # A CSR matrix in CUDA memory (CuPy, PyTorch): it stays there (copied on the GPU).
            ptrs, shape, nnz, bits, gpu, stream, notes, keep = dev  # keep: alive for the call
            self._plan = _augur.make_plan_cuda(
                ptrs, shape, nnz, bits, stream, gpu, int(iterations), gather, kernel, model,
                bool(allow_other_device))
            del keep
            self._notes = notes
            return
        indptr, indices, data, shape, notes = _csr_arrays(a)
        self._plan = _augur.make_plan(
            indptr, indices, data, shape, backend, int(device), int(iterations), gather, kernel,
            model, bool(allow_other_device))
        self._notes = notes

    def run(self, x, out=None, stream=None):
        """y = A x; returns y.

        x: a NumPy vector of the plan's dtype with one entry per column (other dtypes are
        refused, not converted), or a CUDA vector of PyTorch, CuPy or any DLPack producer on
        the plan's GPU (a plan with backend "cuda"). out: where to write y (optional; made like
        x when not given). A CUDA product takes no copies and does not wait: it runs in order
        on the caller's current stream (PyTorch's or CuPy's; ``stream``, a CUDA stream handle,
        overrides it), so later work on that stream sees y.
        """
        if isinstance(x, _np.ndarray):
            return self._plan.run(x, out)
        if out is not None and self._plan.run_torch(x, out, stream):
            return out  # PyTorch CUDA tensors: read in Rust, the hot path
        rx = _raw(x)
        if rx is None:
            if not hasattr(x, "__dlpack_device__"):
                return self._plan.run(x, out)
            if int(x.__dlpack_device__()[0]) == 1:  # kDLCPU: a host array of another library
                return self._plan.run(_np.asarray(x), out)
        if out is None:
            out = _empty_like(x, self.shape[0])
            if self._plan.run_torch(x, out, stream):
                return out
        if stream is None:
            stream = _current_stream(x)
        ry = _raw(out) if rx is not None else None
        if ry is not None:
            # CuPy: the address from the library itself (cheaper than DLPack).
            self._plan.run_cuda_ptr(rx, ry, stream)
        else:
            self._plan.run_cuda(x, out, int(stream))
        return out

    __call__ = run

    @property
    def decision(self) -> Decision:
        """The kernel chosen and why (``str()`` is the explanation)."""
        return self._plan.decision

    @property
    def kernel(self) -> str:
        return self._plan.decision.kernel

    @property
    def notes(self) -> list:
        """What was done to the input (conversions), then the decision's notes."""
        return list(self._notes) + list(self._plan.decision.notes)

    @property
    def setup_cost(self) -> dict:
        """Seconds making the plan took, by part."""
        return self._plan.setup_cost

    @property
    def features(self) -> dict:
        """The features the plan computed (name -> value)."""
        return self._plan.features

    @property
    def backend(self) -> str:
        return self._plan.backend

    @property
    def dtype(self):
        return _np.dtype(self._plan.dtype)

    @property
    def shape(self) -> tuple:
        return self._plan.shape

    @property
    def nnz(self) -> int:
        return self._plan.nnz

    def __repr__(self):
        r, c = self.shape
        return (f"SpmvPlan({r} x {c}, nnz={self.nnz}, {self.dtype}, backend={self.backend!r}, "
                f"kernel={self.kernel!r})")

    def __str__(self):
        head = repr(self)
        extra = "".join(f"\n  note: {n}" for n in self._notes)
        return f"{head}\n{self.decision}{extra}"


_BITS = {"float32": 32, "float64": 64}


def _raw(v):
    """(address, entries, bits, GPU) of a contiguous 1-D float CUDA vector of CuPy, else None
    (DLPack then takes it, or says what is wrong with it). PyTorch tensors are read in Rust
    (`Plan.run_torch`) before this is asked."""
    if type(v).__module__.startswith("cupy"):
        if v.ndim != 1 or not v.flags.c_contiguous:
            return None
        bits = _BITS.get(v.dtype.name)
        return None if bits is None else (v.data.ptr, v.size, bits, v.device.id)
    return None


def _device_csr(a):
    """(device addresses, shape, nnz, value bits, GPU, the caller's current stream, notes, the
    arrays to keep alive while the plan copies them) of a CSR matrix in CUDA memory
    (CuPy's csr_matrix, PyTorch's sparse CSR tensor), its indices made int32 and, for CuPy,
    its rows canonical on the GPU; None for anything else."""
    mod = type(a).__module__.split(".")[0]
    notes = []
    if mod == "cupyx" and getattr(a, "format", None) == "csr":
        import cupy
        bits = _BITS.get(a.dtype.name)
        if bits is None:
            raise ValueError(f"the matrix holds {a.dtype} values; augur runs float32 or float64")
        if not a.has_canonical_format:
            a = a.copy()
            a.sum_duplicates()
            notes.append("unsorted or repeated column indices: sorted and summed on the GPU")
        ip, ix = a.indptr, a.indices
        if ip.dtype != cupy.int32 or ix.dtype != cupy.int32:
            ip, ix = ip.astype(cupy.int32), ix.astype(cupy.int32)
            notes.append("indices converted to int32 on the GPU")
        notes.append("a CuPy matrix in GPU memory: copied on the GPU, not through the host")
        gpu = a.data.device.id
        with cupy.cuda.Device(gpu):
            stream = cupy.cuda.get_current_stream().ptr
        return ((ip.data.ptr, ix.data.ptr, a.data.data.ptr), (int(a.shape[0]), int(a.shape[1])),
                int(a.nnz), bits, gpu, stream, notes, (a, ip, ix))
    if mod == "torch" and getattr(a, "is_sparse_csr", False) and a.is_cuda:
        import torch
        vals = a.values()
        bits = _BITS.get(str(vals.dtype)[6:])
        if bits is None:
            raise ValueError(f"the matrix holds {vals.dtype} values; augur runs float32 or float64")
        crow, col = a.crow_indices(), a.col_indices()
        if crow.dtype != torch.int32 or col.dtype != torch.int32:
            if max(a.shape[0], a.shape[1], vals.numel()) > _np.iinfo(_np.int32).max:
                raise ValueError("the matrix does not fit augur's 32-bit indices")
            crow, col = crow.to(torch.int32), col.to(torch.int32)
            notes.append(f"{a.crow_indices().dtype} indices converted to int32 on the GPU")
        crow, col, vals = crow.contiguous(), col.contiguous(), vals.contiguous()
        notes.append("a PyTorch CSR tensor in GPU memory: copied on the GPU, not through the host")
        return ((crow.data_ptr(), col.data_ptr(), vals.data_ptr()),
                (int(a.shape[0]), int(a.shape[1])), int(vals.numel()), bits,
                vals.get_device(), _current_stream(vals), notes, (a, crow, col, vals))
    return None


def _empty_like(x, n):
    """An uninitialised vector of n entries like x (same library, dtype and GPU)."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        import torch
        return torch.empty(n, dtype=x.dtype, device=x.device)
    if mod == "cupy":
        import cupy
        with x.device:
            return cupy.empty(n, dtype=x.dtype)
    raise ValueError(
        f"out is needed for a {type(x).__name__} x (augur makes it only for PyTorch and CuPy)")


def _current_stream(x):
    """The CUDA stream handle the caller's library is using for x's GPU (0: the legacy default
    stream, also for libraries augur does not know)."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # an int, no Stream object
        if raw is not None:
            return raw(x.get_device())
        return torch.cuda.current_stream(x.device).cuda_stream
    if mod == "cupy":
        import cupy
        with x.device:
            return cupy.cuda.get_current_stream().ptr
    return 0


def features(a) -> dict:
    """Every SpMV feature augur computes for a matrix's pattern (name -> value): the known ones
    (shape), the sampled estimates and the exact ones."""
    indptr, indices, _, shape, _ = _csr_arrays(a)
    return _augur.features(indptr, indices, shape)


def load_model(name_or_path) -> Model:
    """``Model.load``: a model file or a built-in model by name."""
    return Model.load(str(name_or_path))
