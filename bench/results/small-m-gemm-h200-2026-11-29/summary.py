#!/usr/bin/env python3
"""Tables of the small-M GEMM runs (README.md): per M, cuBLASLt over augur_tma_auto, the best
TMA candidate measured over augur_tma_auto, and where the wide candidates were measured
(heldout, validate) the same for the choice before this change (the 128-row tiles only, by
kernels.rs's tma_estimate_us, re-implemented here). Graph mode. Usage: summary.py DIR"""
import collections, csv, gzip, math, sys


def rows(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [r for r in csv.DictReader(f) if r["device"] != "device"]


def split_steps(k, s):
    kt = max(1, -(-k // 64))
    per = -(-kt // s)
    return per, -(-kt // per)


def wide_estimate(m, n, k, bn, s, sms=132):
    per, used = split_steps(k, s)
    if used != s or (s > 1 and per < 4):
        return None
    units = -(-m // 128) * -(-n // bn) * s
    per_sm = -(-units // sms)
    products = 128 * bn * 64 * 2 / 7.5e6 * (1.4 if bn == 128 else 1.0)
    loads = (bn + min(m, 128)) * 64 * 2 / 80e3
    sm = per_sm * (per * max(products, loads) + 3.0)
    dram = (m * k + n * k + m * n) * 2 / 3.0e6
    t = math.hypot(sm, dram)
    return t + (2.0 + 8 * s * m * n / 3.0e6 if s > 1 else 0.0)


def old_choice(m, n, k):
    c = [(wide_estimate(m, n, k, bn, s), bn, s) for bn in (256, 128) for s in (1, 2, 4, 8, 16)]
    _, bn, s = min(x for x in c if x[0] is not None)
    return f"augur_tma_128x{bn}" + (f"_k{s}" if s > 1 else "")


def geo(v):
    return math.exp(sum(map(math.log, v)) / len(v))


def table(path):
    by = collections.OrderedDict()
    for r in rows(path):
        assert r["passed"] == "true", r
        by.setdefault((int(r["m"]), int(r["n"]), int(r["k"])), {})[r["kernel"]] = (
            float(r["graph_us"]), r["tma_choice"])
    per_m = collections.defaultdict(list)
    for (m, n, k), d in by.items():
        lt, (auto, choice) = d["cublaslt"][0], d["augur_tma_auto"]
        cands = {kn: v[0] for kn, v in d.items() if kn not in ("cublaslt", "augur_tma_auto")}
        best = min(cands.values())
        old = cands.get(old_choice(m, n, k))
        per_m[m].append((lt / auto, best / auto, lt / old if old else None, best / old if old else None))
        print(f"  {m:5d} {n:6d} {k:5d}  auto {choice:>16} {auto:7.1f}  best {min(cands, key=cands.get)[10:]:>16} "
              f"{best:7.1f}  cuBLASLt {lt:7.1f}  cuBLASLt/auto {lt / auto:.2f}"
              + (f"  before: {old_choice(m, n, k)[10:]} {old:.1f} ({lt / old:.2f})" if old else ""))
    print("  M: cuBLASLt/auto, best/auto[, cuBLASLt/before, best/before] (geomean, least)")
    allv = []
    for m, v in sorted(per_m.items()):
        allv += v
        cols = [[x[i] for x in v] for i in range(4) if v[0][i] is not None]
        print(f"  {m:5d} " + "  ".join(f"{geo(c):.3f} ({min(c):.2f})" for c in cols))
    cols = [[x[i] for x in allv] for i in range(4) if allv[0][i] is not None]
    print("    all " + "  ".join(f"{geo(c):.3f} ({min(c):.2f})" for c in cols))


for name in ("sweep.csv", "heldout.csv.gz", "validate.csv.gz"):
    print(f"== {sys.argv[1]}/{name}")
    table(f"{sys.argv[1]}/{name}")
