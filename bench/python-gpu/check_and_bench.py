"""augur's Python package on a CUDA GPU (issue 22): correctness of the zero-copy path with PyTorch
and CuPy vectors against the f64 product of SciPy, stream ordering on a non-default stream, the
binding's per-call overhead against the same launches from a Rust loop (CuPy's own csr @ x beside
them), and what plan creation from a SciPy matrix adds over the plan's own setup at 1e7 nonzeros.
Usage: python check_and_bench.py MATRICES_DIR OUT_DIR (bash bench/python-gpu/run.sh does it)."""
import csv, glob, os, statistics, sys, time, warnings
warnings.simplefilter("ignore", DeprecationWarning)

import numpy as np
import scipy.io
import scipy.sparse as sp
import torch
import cupy
import cupyx.scipy.sparse as csp

import augur

mdir, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
print("augur", augur.__version__, "torch", torch.__version__, "cupy", cupy.__version__,
      torch.cuda.get_device_name(0), flush=True)


def bound(a, x, dtype):
    eps = np.finfo(dtype).eps
    return 4 * (np.diff(a.indptr) + 1) * eps * (abs(a) @ np.abs(x)) + np.finfo(dtype).tiny


# 1. Correctness: every shared matrix, f32 and f64, PyTorch and CuPy vectors, outputs poisoned.
def shared(mdir):
    """(name, dtype, matrix) for every real shared matrix with entries, f32 (where its values
    fit) and f64, canonical CSR."""
    for path in sorted(glob.glob(os.path.join(mdir, "*.mtx.gz"))):
        m = scipy.io.mmread(path)
        if not sp.issparse(m) or np.iscomplexobj(m.data):
            continue
        a64 = sp.csr_matrix(m, dtype=np.float64)
        a64.sum_duplicates()
        if a64.nnz == 0:
            continue
        for dtype in (np.float32, np.float64):
            if dtype == np.float32 and np.abs(a64.data).max() > 1e30:
                continue
            yield os.path.basename(path)[:-7], dtype, a64.astype(dtype)


rows, fails = [], 0
for name, dtype, a in shared(mdir):
    x = np.random.default_rng(1).uniform(0.5, 1.5, a.shape[1]).astype(dtype)
    want = a.astype(np.float64) @ x.astype(np.float64)
    tol = bound(a, x, dtype)
    plan = augur.SpmvPlan(a, backend="cuda", iterations=100)
    for lib in ("torch", "cupy"):
        if lib == "torch":
            xd = torch.from_numpy(x).cuda()
            yd = torch.full((a.shape[0],), float("nan"), dtype=xd.dtype, device="cuda")
            plan.run(xd, yd)
            y = yd.cpu().numpy()
        else:
            xd = cupy.asarray(x)
            yd = cupy.full(a.shape[0], cupy.nan, dtype=dtype)
            plan.run(xd, yd)
            y = cupy.asnumpy(yd)
        err = np.abs(y.astype(np.float64) - want)
        ok = bool(np.all(err <= tol))
        fails += not ok
        rows.append([name, np.dtype(dtype).name, lib, plan.kernel, a.nnz, ok,
                     float(np.max(err / tol)) if len(err) else 0.0])
with open(os.path.join(out, "check.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["matrix", "dtype", "library", "kernel", "nnz", "passed", "worst_over_bound"])
    w.writerows(rows)
print(f"check: {len(rows)} products (matrix x dtype x library), {fails} failed", flush=True)

# 1b. Matrices already in GPU memory (CuPy csr_matrix, PyTorch sparse CSR): the plan copies them
# on the GPU (not through the host); every shared matrix, f32 and f64.
drows, dfails = [], 0
for name, dtype, a in shared(mdir):
    x = np.random.default_rng(3).uniform(0.5, 1.5, a.shape[1]).astype(dtype)
    want = a.astype(np.float64) @ x.astype(np.float64)
    tol = bound(a, x, dtype)
    for lib in ("cupy", "torch"):
        if lib == "cupy":
            dm = csp.csr_matrix(a)
            xd = cupy.asarray(x)
        else:
            dm = torch.sparse_csr_tensor(torch.from_numpy(a.indptr.astype(np.int64)),
                                         torch.from_numpy(a.indices.astype(np.int64)),
                                         torch.from_numpy(a.data), size=a.shape).cuda()
            xd = torch.from_numpy(x).cuda()
        plan = augur.SpmvPlan(dm, backend="cuda", iterations=100)
        on_gpu = any("copied on the GPU" in n for n in plan.notes)
        yd = plan.run(xd)
        y = cupy.asnumpy(yd) if lib == "cupy" else yd.cpu().numpy()
        err = np.abs(y.astype(np.float64) - want)
        ok = bool(np.all(err <= tol)) and on_gpu and not plan._plan.copied
        dfails += not ok
        drows.append([name, np.dtype(dtype).name, lib, plan.kernel, plan.decision.tier,
                      a.nnz, ok, float(np.max(err / tol)) if len(err) else 0.0])
with open(os.path.join(out, "device-matrix.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["matrix", "dtype", "library", "kernel", "tier", "nnz", "passed",
                "worst_over_bound"])
    w.writerows(drows)
print(f"device-resident matrices: {len(drows)} plans and products, {dfails} failed", flush=True)
fails += dfails

# 1c. What PyTorch's fast path (read in Rust, no DLPack) must refuse, with a ValueError naming it,
# and what it must hand on (a CPU tensor runs on the host).
a = sp.csr_matrix(sp.random(50, 40, density=0.2, random_state=4, dtype=np.float32))
plan = augur.SpmvPlan(a, backend="cuda")
xt = torch.rand(40, device="cuda")
refusals = [
    ("x of 39 entries", lambda: plan.run(xt[:39], torch.empty(50, device="cuda")), "entries"),
    ("float16 x", lambda: plan.run(xt.half(), torch.empty(50, device="cuda")), "float"),
    ("strided x", lambda: plan.run(torch.rand(80, device="cuda")[::2],
                                   torch.empty(50, device="cuda")), "contiguous"),
    ("float64 out", lambda: plan.run(xt, torch.empty(50, device="cuda", dtype=torch.float64)),
     "float"),
    ("2-D out", lambda: plan.run(xt, torch.empty(50, 1, device="cuda")), "dimensional"),
]
for what, call, word in refusals:
    try:
        call()
        print(f"fast path: {what} was NOT refused", flush=True)
        fails += 1
    except ValueError as e:
        ok = word in str(e)
        fails += not ok
        print(f"fast path: {what} refused{'' if ok else ' WITHOUT naming it'}: {e}", flush=True)
# Non-canonical SciPy arrays on a GPU plan (checked while they upload, then taken the copying
# way: sorted and summed) and broken ones (a column out of range: a ValueError, not a GPU fault).
n_ = 300000  # 6 scattered columns per row (sp.random at this size would need 9e10 draws)
r_ = np.repeat(np.arange(n_), 6)
big = sp.csr_matrix((np.random.default_rng(5).uniform(0.5, 1.5, r_.size),
                     (r_, (r_ * 7919 + np.tile(np.arange(6), n_) * 104729) % n_)),
                    shape=(n_, n_))
big.sum_duplicates()
big.sort_indices()
ok, nc = False, big
try:
    # Each row's columns twice over (unsorted and repeated), as csr_matrix((data, indices,
    # indptr)) keeps them.
    rows_ = np.repeat(np.arange(big.shape[0]), np.diff(big.indptr))
    o = np.argsort(np.r_[rows_, rows_], kind="stable")
    nc = sp.csr_matrix((np.r_[big.data, big.data][o], np.r_[big.indices, big.indices][o],
                        2 * big.indptr), shape=big.shape)
    p2 = augur.SpmvPlan(nc, backend="cuda", iterations=10)
    xd = torch.rand(big.shape[1], device="cuda", dtype=torch.float64)
    y2 = p2.run(xd).cpu().numpy()
    ok = np.allclose(y2, 2 * (big @ xd.cpu().numpy()), rtol=1e-10, atol=1e-12) and \
        any("sorted" in n for n in p2.notes)
except Exception as e:
    print(f"non-canonical arrays on CUDA: {e}", flush=True)
fails += not ok
print(f"non-canonical SciPy arrays on a CUDA plan (nnz {nc.nnz}): "
      f"{'sorted and summed, product passed' if ok else 'FAILED'}", flush=True)
bad = big.copy()
bad.indices[bad.nnz // 2] = bad.shape[1] + 7
try:
    augur.SpmvPlan(bad, backend="cuda")
    print("a column out of range on CUDA: NOT refused", flush=True)
    fails += 1
except ValueError as e:
    print(f"a column out of range on CUDA: refused: {str(e)[:160]}", flush=True)
y_host = plan.run(xt.cpu())
ok = np.allclose(np.asarray(y_host), a @ xt.cpu().numpy(), rtol=1e-5, atol=1e-6)
fails += not ok
print(f"fast path: a CPU tensor ran on the host: {'passed' if ok else 'FAILED'}", flush=True)

# 2. Stream order: on a non-default stream, behind a long sleep kernel, x made, the product, and
# a read of y, all on that stream; the host never waits in between.
a = sp.csr_matrix(scipy.io.mmread(os.path.join(mdir, "bcsstk33.mtx.gz")), dtype=np.float32)
plan = augur.SpmvPlan(a, backend="cuda", iterations=100)
x = np.random.default_rng(2).uniform(0.5, 1.5, a.shape[1]).astype(np.float32)
xt = torch.from_numpy(x).cuda()
want = a.astype(np.float64) @ (2 * x.astype(np.float64))
s = torch.cuda.Stream()
ok_order = True
for trial in range(5):
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)  # ~tens of ms of GPU time first on s
        x2 = xt * 2
        y = torch.full((a.shape[0],), float("nan"), device="cuda")  # poisoned, on s
        plan.run(x2, y)                # on s: after x2, without a host wait
        z = y * 1.0                    # on s: after the product
        z = z.cpu().numpy()            # the copy on s too (.cpu() on another stream need not wait)
    ok_order &= bool(np.all(np.abs(z - want) <= bound(a, 2 * x, np.float32)))
# The same through CuPy's current stream.
cs = cupy.cuda.Stream(non_blocking=True)
xc = cupy.asarray(x)
with cs:
    for trial in range(5):
        busy = cupy.ones(1 << 26, dtype=cupy.float32)
        for _ in range(30):  # some milliseconds of work on cs first
            busy = busy * 1.0000001
        x2 = xc * 2
        y = cupy.full(a.shape[0], cupy.nan, dtype=cupy.float32)
        plan.run(x2, y)
        z = cupy.asnumpy(y * 1.0, stream=cs)
        ok_order &= bool(np.all(np.abs(z - want) <= bound(a, 2 * x, np.float32)))
print(f"stream order on a non-default stream behind a sleep: {'passed' if ok_order else 'FAILED'}",
      flush=True)

# 3. Per-call overhead: the same launches from Python (plan.run with DLPack each call) and from a
# Rust loop, host-bound small matrices; CuPy's csr @ x beside them.
bench = []
for path in ["bcsstk33.mtx.gz", "nos3.mtx.gz", "bp_1600.mtx.gz"]:
    p = os.path.join(mdir, path)
    if not os.path.exists(p):
        continue
    a = sp.csr_matrix(scipy.io.mmread(p), dtype=np.float32)
    plan = augur.SpmvPlan(a, backend="cuda", iterations=1000)
    xt = torch.ones(a.shape[1], device="cuda")
    yt = torch.empty(a.shape[0], device="cuda")
    ac = csp.csr_matrix(a)
    xc = cupy.ones(a.shape[1], dtype=cupy.float32)
    n = 2000
    stream = torch.cuda.current_stream().cuda_stream
    for rep in range(7):
        rust = plan._plan._time_launches(xt, yt, stream, n)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            plan.run(xt, yt)
        torch.cuda.synchronize()
        py = (time.perf_counter() - t) / n
        t = time.perf_counter()
        for _ in range(n):
            plan._plan.run_cuda(xt, yt, stream)
        torch.cuda.synchronize()
        dl = (time.perf_counter() - t) / n
        t = time.perf_counter()
        for _ in range(n):
            yc = ac @ xc
        cupy.cuda.Device().synchronize()
        cp = (time.perf_counter() - t) / n
        bench.append([path[:-7], a.nnz, plan.kernel, rep, rust * 1e6, py * 1e6, dl * 1e6,
                      cp * 1e6])
with open(os.path.join(out, "overhead.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["matrix", "nnz", "kernel", "rep", "rust_loop_us", "python_run_us",
                "python_dlpack_us", "cupy_csr_matvec_us"])
    w.writerows(bench)
for name in sorted({b[0] for b in bench}):
    r = [b for b in bench if b[0] == name][1:]  # the first rep warms up
    med = lambda i: statistics.median(b[i] for b in r)
    print(f"overhead {name}: rust loop {med(4):.2f} us, python run {med(5):.2f} us "
          f"(+{med(5) - med(4):.2f} us), through DLPack {med(6):.2f} us, cupy csr@x "
          f"{med(7):.2f} us per call", flush=True)

# 4. Plan creation from SciPy at 1e7 nonzeros: wall time of augur.SpmvPlan against the plan's own
# setup (what the Rust API pays for a matrix it already holds); the difference is the binding's
# conversion, copy and checks.
n1 = 1000
t1 = sp.diags([-np.ones(n1 - 1), 2 * np.ones(n1), -np.ones(n1 - 1)], [-1, 0, 1], format="csr")
big = sp.kron(sp.kron(t1, sp.identity(1000, format="csr")), sp.csr_matrix(np.ones((1, 3))),
              format="csr").astype(np.float64)
big.sort_indices()
creation = []
for backend in ("cuda", "cpu"):
    for rep in range(5):
        t = time.perf_counter()
        p = augur.SpmvPlan(big, backend=backend, iterations=100)
        wall = time.perf_counter() - t
        setup, copied = p.setup_cost["total"], p._plan.copied
        del p
        t = time.perf_counter()
        augur._csr_arrays(big)  # the package's Python side alone (format, dtype and index checks)
        arrays = time.perf_counter() - t
        # The Rust API on the same arrays (SpmvPlan::from_arrays; and the check alone), in Rust.
        check, rust = augur._augur._time_rust_creation(big.indptr, big.indices, big.data,
                                                       big.shape, backend, 100)
        creation.append([backend, big.nnz, rep, wall, setup, copied, arrays, check, rust])
with open(os.path.join(out, "creation.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["backend", "nnz", "rep", "python_wall_s", "plan_setup_total_s", "copied",
                "python_arrays_s", "rust_check_s", "rust_from_arrays_s"])
    w.writerows(creation)
for backend in ("cuda", "cpu"):
    r = [c for c in creation if c[0] == backend][1:]
    wall = statistics.median(c[3] for c in r)
    own = statistics.median(c[4] for c in r)
    arrays = statistics.median(c[6] for c in r)
    check = statistics.median(c[7] for c in r)
    rust = statistics.median(c[8] for c in r)
    print(f"creation {backend} nnz={big.nnz}: python {wall * 1e3:.1f} ms; Rust from the same "
          f"arrays {rust * 1e3:.1f} ms (their check alone {check * 1e3:.2f} ms), added "
          f"{100 * (wall / rust - 1):.1f}%; plan setup alone {own * 1e3:.1f} ms, added "
          f"{100 * (wall / own - 1):.1f}% (arrays copied: {r[0][5]}; package's Python side "
          f"{arrays * 1e3:.2f} ms)", flush=True)
sys.exit(1 if fails or not ok_order else 0)
