#!/usr/bin/env python3
"""The fused all-gather on one GPU, old build (128-row tiles) against new (the swapped kernel at
M <= 64): each build's least time over its two rounds per pattern, and cuBLASLt alone over
fused-push:1:8. Usage: compare.py (from this folder)."""
import collections, csv

res = {}
for b in ("old", "new"):
    d = collections.defaultdict(list)
    for r in csv.DictReader(open(f"fused-{b}.csv")):
        assert r["passed"] == "true", r
        d[(int(r["m"]), int(r["n"]), int(r["k"]), r["pattern"])].append(float(r["us"]))
    res[b] = {k: min(v) for k, v in d.items()}
print("    M      N     K | cuBLASLt old   new | fused-push:1:8 old   new | fused-pull:1:8 old   new "
      "| cuBLASLt / fused-push old  new")
for s in sorted({k[:3] for k in res["new"]}):
    g, p, q = ([res[b][s + (pat,)] for b in ("old", "new")]
               for pat in ("gemm", "fused-push:1:8", "fused-pull:1:8"))
    print(f"{s[0]:5d} {s[1]:6d} {s[2]:5d} | {g[0]:12.1f} {g[1]:5.1f} | {p[0]:18.1f} {p[1]:5.1f} "
          f"| {q[0]:18.1f} {q[1]:5.1f} | {g[0] / p[0]:24.2f} {g[1] / p[1]:4.2f}")
