#!/usr/bin/env python3
"""Issue 18's "f64 if the pool's ranking differs": the pool's per-matrix ranking in f64 against
f32 on the same device and matrices. Usage:
  python3 bench/f64_ranking.py F32_RUNS.csv F64_RUNS.csv [--subset OUT.csv]
Per iteration count k (cost = setup + latency + (k - 1) x per call) and nnz bucket: how often
the fastest kernel is the same, the f64 slowdown of f32's fastest kernel (what a perfect f32
selector would lose on f64), and the mean Spearman correlation of the two rankings. --subset
writes the f32 rows of the matrices both runs hold (for `augur eval` side by side)."""
import csv, gzip, math, sys, collections

def load(p):
    by = collections.defaultdict(dict)
    rows = list(csv.DictReader(gzip.open(p, "rt") if p.endswith(".gz") else open(p)))
    for r in rows:
        if r["status"] == "ok":
            by[(r["matrix"], r["source"])][r["kernel"]] = r
    return rows, by

def cost(r, k):
    return float(r["setup_s"]) + float(r["latency_s"]) + (k - 1) * float(r["per_iter_s"])

def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    out = [0.0] * len(v)
    for pos, i in enumerate(order):
        out[i] = pos
    return out

def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va and vb else 1.0

rows32, f32 = load(sys.argv[1])
_, f64 = load(sys.argv[2])
both = sorted(m for m in f64 if m in f32)
print(f"{len(both)} matrices in both ({len(f64)} in the f64 runs)")
buckets = [("nnz < 1e5", 0, 1e5), ("1e5 <= nnz < 1e6", 1e5, 1e6), ("nnz >= 1e6", 1e6, 1e18), ("all", 0, 1e18)]
print(f"{'k':>4} {'bucket':18} {'n':>4} {'same best':>9} {'f32 best in f64: geomean':>25} {'worst':>7} {'spearman':>9}")
for k in (1, 10, 100):
    for name, lo, hi in buckets:
        same, logs, worst, rho, n = 0, 0.0, 1.0, 0.0, 0
        for m in both:
            nnz = int(next(iter(f64[m].values()))["nnz"])
            if not lo <= nnz < hi:
                continue
            ks = [x for x in f32[m] if x in f64[m]]
            c32 = [cost(f32[m][x], k) for x in ks]
            c64 = [cost(f64[m][x], k) for x in ks]
            b32 = ks[min(range(len(ks)), key=lambda i: c32[i])]
            b64 = min(c64)
            s = b64 / cost(f64[m][b32], k)
            n += 1
            same += b32 == ks[min(range(len(ks)), key=lambda i: c64[i])]
            logs += math.log(s)
            worst = min(worst, s)
            rho += spearman(c32, c64)
        if n:
            print(f"{k:>4} {name:18} {n:>4} {same / n:>8.0%} {math.exp(logs / n):>25.3f} {worst:>7.3f} {rho / n:>9.3f}")
# Which kernels gain or lose rank in f64: per kernel, geomean f64/f32 per-call time ratio at nnz >= 1e6.
print("\nper kernel at nnz >= 1e6: geomean f64 / f32 time per call")
agg = collections.defaultdict(list)
for m in both:
    if int(next(iter(f64[m].values()))["nnz"]) < 1e6:
        continue
    for x in f64[m]:
        if x in f32[m]:
            agg[x].append(float(f64[m][x]["per_iter_s"]) / float(f32[m][x]["per_iter_s"]))
for x, v in sorted(agg.items(), key=lambda t: math.exp(sum(map(math.log, t[1])) / len(t[1]))):
    print(f"  {x:14s} {math.exp(sum(map(math.log, v)) / len(v)):.2f}  (n={len(v)})")
if "--subset" in sys.argv:
    out = sys.argv[sys.argv.index("--subset") + 1]
    keep = set(both)
    w = csv.DictWriter(open(out, "w", newline=""), fieldnames=list(rows32[0].keys()))
    w.writeheader()
    w.writerows(r for r in rows32 if (r["matrix"], r["source"]) in keep)
