"""augur's Python package against SciPy's own A @ x: the shared real matrices and the edge cases a
caller can hand it, on the CPU backend (CI) or whatever `AUGUR_TEST_BACKEND` names. Outputs are
poisoned (NaN) before each run; inputs are never all zeros."""
import glob
import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import augur

BACKEND = os.environ.get("AUGUR_TEST_BACKEND", "cpu")
HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get(
    "AUGUR_SHARED_MATRICES", os.path.join(HERE, "..", "..", "..", "shared", "matrices"))
MATRICES = sorted(glob.glob(os.path.join(SHARED, "suitesparse", "*.mtx.gz")))


def bound(a, x, dtype):
    """The accepted error per row: a few units of rounding over the row's |a| . |x|."""
    eps = np.finfo(dtype).eps
    row_len = np.diff(sp.csr_matrix(a).indptr)
    return 4 * (row_len + 1) * eps * (abs(a) @ np.abs(x)) + np.finfo(dtype).tiny


def check(a, dtype=np.float64, **kw):
    a = a.astype(dtype)
    x = np.random.default_rng(7).uniform(0.5, 1.5, a.shape[1]).astype(dtype)
    plan = augur.SpmvPlan(a, backend=BACKEND, **kw)
    y = np.full(a.shape[0], np.nan, dtype=dtype)
    got = plan.run(x, out=y)
    assert got is y
    want = (a.astype(np.float64) @ x.astype(np.float64))
    err = np.abs(y.astype(np.float64) - want)
    assert np.all(err <= bound(a, x, dtype)), (plan.kernel, err.max())
    return plan


@pytest.mark.skipif(not MATRICES, reason=f"no shared matrices under {SHARED}")
@pytest.mark.parametrize("path", MATRICES, ids=[os.path.basename(p)[:-7] for p in MATRICES])
def test_shared_matrices_match_scipy(path):
    a = scipy.io.mmread(path)
    if np.iscomplexobj(a.data) if sp.issparse(a) else True:
        pytest.skip("complex values or a dense file (augur runs real sparse matrices)")
    a = sp.csr_matrix(a)
    if a.nnz == 0:
        pytest.skip("no entries")
    check(a, np.float64, iterations=10)
    if np.abs(a.data).max() < np.finfo(np.float32).max / (np.diff(a.indptr).max() + 1):
        check(a, np.float32, iterations=1)  # (values beyond float32's range: f64 only)


def laplacian(n):
    e = np.ones(n)
    t = sp.diags([-e[:-1], 2 * e, -e[:-1]], [-1, 0, 1])
    return sp.kronsum(t, t, format="csr")


@pytest.mark.parametrize("gather", ["auto", "never", "sample", "always"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_gather_policy_and_precision(gather, dtype):
    p = check(laplacian(40), dtype, iterations=50, gather=gather)
    assert p.dtype == dtype
    assert p.kernel == p.decision.kernel and p.kernel in str(p.decision)
    # A pick the long-row guard overruled names the tree's pick and says why.
    assert p.decision.vetoed is None or "long-row guard" in str(p.decision)


def test_each_kernel_forced():
    a = laplacian(30)
    kernels = augur.Model.load(f"default-{'cuda' if BACKEND == 'cuda' else 'cpu'}").kernels
    assert kernels
    for k in kernels:
        p = check(a, kernel=k)
        assert p.kernel == k and p.decision.forced


@pytest.mark.parametrize("shape", [(0, 0), (5, 0), (0, 5), (3, 3), (1, 1)])
def test_empty_matrices(shape):
    a = sp.csr_matrix(shape, dtype=np.float64)
    plan = augur.SpmvPlan(a, backend=BACKEND)
    x = np.ones(shape[1])
    y = plan.run(x)
    assert y.shape == (shape[0],) and np.all(y == 0)


def test_one_by_one_and_rectangular():
    check(sp.csr_matrix(np.array([[3.5]])))
    rng = np.random.default_rng(3)
    for shape in [(7, 300), (300, 7), (1, 1000), (1000, 1)]:
        check(sp.random(*shape, density=0.3, format="csr", random_state=rng) + 0.0)


def test_other_formats_are_converted_with_a_note():
    a = laplacian(12)
    for fmt in ["csc", "coo", "bsr", "lil", "dok"]:
        p = check(a.asformat(fmt))
        if fmt != "csr":
            assert any("to CSR" in n for n in p.notes), p.notes


def test_int64_indices_are_converted_with_a_note():
    b = laplacian(10)
    # (scipy's constructor would narrow them again)
    b.indices, b.indptr = b.indices.astype(np.int64), b.indptr.astype(np.int64)
    assert b.indices.dtype == np.int64
    p = augur.SpmvPlan(b, backend=BACKEND)
    x = np.linspace(0.5, 1.5, 100)
    np.testing.assert_allclose(p.run(x), b @ x, rtol=1e-14)
    assert any("int64 indices converted" in n for n in p.notes), p.notes


def test_indices_beyond_int32_are_refused():
    a = sp.csr_matrix((1, 2**31 + 5), dtype=np.float64)
    with pytest.raises(ValueError, match="32-bit"):
        augur.SpmvPlan(a, backend=BACKEND)


def test_non_canonical_csr_is_sorted_and_summed():
    # Row 0 unsorted with a repeat, row 2 with a repeat: scipy sums repeats in A @ x too.
    indptr = np.array([0, 3, 4, 7], dtype=np.int32)
    indices = np.array([2, 0, 2, 1, 0, 0, 2], dtype=np.int32)
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    a = sp.csr_matrix((data, indices, indptr), shape=(3, 3))
    assert not a.has_canonical_format
    x = np.array([1.0, 10.0, 100.0])
    want = a @ x
    p = augur.SpmvPlan(a, backend=BACKEND)
    np.testing.assert_array_equal(p.run(x), want)
    assert any("unsorted or repeated" in n for n in p.notes), p.notes
    assert p.nnz == 5


def test_bad_input_is_a_value_error_with_augurs_message():
    a = laplacian(6)
    with pytest.raises(ValueError, match="scipy.sparse"):
        augur.SpmvPlan(a.toarray())
    with pytest.raises(ValueError, match="float32 or float64"):
        augur.SpmvPlan(a.astype(np.int32))
    with pytest.raises(ValueError, match="float32 or float64"):
        augur.SpmvPlan(a.astype(np.complex128))
    with pytest.raises(ValueError, match="unknown kernel"):
        augur.SpmvPlan(a, backend=BACKEND, kernel="no_such_kernel")
    with pytest.raises(ValueError, match="gather"):
        augur.SpmvPlan(a, backend=BACKEND, gather="sometimes")
    with pytest.raises(ValueError, match="backend"):
        augur.SpmvPlan(a, backend="tpu")
    with pytest.raises(ValueError, match="iterations"):
        augur.SpmvPlan(a, iterations=0)
    p = augur.SpmvPlan(a, backend=BACKEND)
    with pytest.raises(ValueError, match="entries"):
        p.run(np.ones(5))
    with pytest.raises(ValueError, match="float64"):
        p.run(np.ones(36, dtype=np.float32))
    with pytest.raises(ValueError, match="out"):
        p.run(np.ones(36), out=np.empty(36, dtype=np.float32))
    with pytest.raises(ValueError, match="out has"):
        p.run(np.ones(36), out=np.empty(35))
    with pytest.raises(ValueError, match="contiguous"):
        p.run(np.ones(72)[::2])
    # Arrays that do not describe a matrix, straight to the binding: the entry is named.
    with pytest.raises(ValueError, match=r"indices\[1\] = 9"):
        augur._augur.make_plan(np.array([0, 1, 2], np.int32), np.array([0, 9], np.int32),
                               np.ones(2), (2, 2), "cpu")
    with pytest.raises(ValueError, match="indptr"):
        augur._augur.make_plan(np.array([0, 2, 1], np.int32), np.array([0, 1], np.int32),
                               np.ones(2), (2, 2), "cpu")


def test_a_missing_backend_is_a_runtime_error():
    try:
        import augur._augur as m
        m.make_plan(np.array([0, 1], np.int32), np.array([0], np.int32), np.ones(1), (1, 1),
                    "cuda")
    except RuntimeError as e:
        assert "not available" in str(e)
    # Where a CUDA GPU exists the plan is made: nothing to check here.


def test_features_and_models():
    a = laplacian(20)
    f = augur.features(a)
    assert f["rows"] == 400 and f["nnz"] == a.nnz and f["row_len_max"] == 5
    for name in ["default-cpu", "default-cuda", "default-cuda-h100", "default-cuda-h200"]:
        m = augur.Model.load(name)
        assert m.domain == "spmv"
        d = m.select(f, 100)
        assert d.kernel in m.kernels and str(d)
        for fmt in ["text", "dot", "rust", "json"]:
            assert len(m.export(fmt)) > 100
    for name, domain in [
        ("default-comm", "comm"),
        ("default-attention", "attention"),
        ("default-overlap", "overlap"),
    ]:
        m = augur.load_model(name)
        assert m.domain == domain and "digraph" in m.export("dot")
        with pytest.raises(ValueError, match="SpMV models"):
            m.select(f)
    with pytest.raises(ValueError):
        augur.Model.load("/no/such/model.json")
    with pytest.raises(ValueError, match="unknown format"):
        augur.Model.load("default-cpu").export("pdf")
    with pytest.raises(ValueError, match="unknown feature"):
        augur.Model.load("default-cpu").select({"no_such_feature": 1.0})


def test_plan_reports_its_setup_and_features():
    p = augur.SpmvPlan(laplacian(25), backend=BACKEND, iterations=10, gather="always")
    s = p.setup_cost
    assert set(s) >= {"model", "features", "upload", "kernel_setup", "total"}
    assert s["total"] > 0
    assert p.features["row_len_max"] == 5
    assert p.decision.tier == "gathered"
    assert "SpmvPlan(625 x 625" in repr(p)


def test_comm_and_attention_choices_from_spec_strings():
    comm = augur.Model.load("default-comm")
    pick, path, _ = comm.choose("message:collective=all-reduce,dtype=bf16,bytes=64KiB,world=4,link=nvlink")
    assert pick and path and all(("<" in p or ">=" in p) for p in path)
    att = augur.Model.load("default-attention")
    sched, path, notes = att.choose("attention:q_heads=32,kv_heads=8,head_dim=128,lens=4096*2;16*30")
    assert sched and isinstance(path, list)
    # How sure: the training inputs at the pick's leaf and its mean regret there.
    msgs, regret = comm.evidence("message:collective=all-reduce,dtype=bf16,bytes=64KiB,world=4,link=nvlink")
    assert msgs >= 1 and 0.0 <= regret < 0.5
    shapes, regret = att.evidence("attention:q_heads=32,kv_heads=8,head_dim=128,lens=4096*2;16*30")
    assert shapes >= 1 and 0.0 <= regret < 0.5
    with pytest.raises(ValueError):
        comm.choose("message:collective=all-reduce,bytes=-3")
    with pytest.raises(ValueError, match="SpMV model"):
        augur.Model.load("default-cpu").choose("message:collective=all-reduce,bytes=1KiB")


def test_overlap_choice_from_a_spec_string():
    m = augur.Model.load("default-overlap")
    assert m.domain == "overlap" and "H200" in m.device
    pick, path, notes = m.choose("overlap:op=all-gather,m=16384,n=10240,k=8192,world=4")
    assert pick != "bulk" and path and not notes
    pick, _, _ = m.choose("overlap:op=all-gather,m=16,n=6144,k=4096,world=4")
    assert pick in ("bulk", "own-bulk", "ll-bulk")
    _, _, notes = m.choose("overlap:op=reduce-scatter,m=8192,n=8192,k=8192,world=8")
    assert any("groups of [2, 4]" in n for n in notes)
    with pytest.raises(ValueError, match="split evenly"):
        m.choose("overlap:op=all-gather,m=8190,n=6144,k=4096,world=4")
    # The GEMM + all-reduce (two GPUs' tree): the fused all-reduce at a large layer; on four
    # GPUs it is refused (unverified there), so bulk, noted.
    pick, path, notes = m.choose("overlap:op=all-reduce,m=4096,n=8192,k=8192,world=2")
    assert pick == "fused-all" and path and not notes
    pick, _, notes = m.choose("overlap:op=all-reduce,m=4096,n=8192,k=8192,world=4")
    assert pick == "bulk" and any("cannot run here" in n for n in notes)
    # How sure: the training layers at the pick's leaf and its mean regret there; none where
    # the pick is not the tree's (bulk in its place), and only for overlap models.
    layers, regret = m.evidence("overlap:op=all-gather,m=16384,n=10240,k=8192,world=4")
    assert layers >= 1 and 0.0 <= regret < 0.5
    assert m.evidence("overlap:op=all-reduce,m=4096,n=8192,k=8192,world=4") is None
    with pytest.raises(ValueError, match="evidence\\(\\) is for collectives, attention and overlap"):
        augur.Model.load("default-cpu").evidence("overlap:op=all-gather,m=16,n=6144,k=4096,world=4")
