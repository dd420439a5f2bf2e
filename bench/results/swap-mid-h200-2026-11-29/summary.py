#!/usr/bin/env python3
"""swap.csv (swap.sh): per layer and pattern the fastest sample-median of each build over both
rounds; base (169a72d: 128-row tiles beyond M 64) over new (the run's build: the swapped GEMM in
64-row token tiles wherever ceil(M/64) x ceil(N/128) <= 132); and what the committed rule gives,
which also counts the split's units (ceil(M/64) x ceil(N/128) x K <= 132; elsewhere the 128-row
kernel, whose PTX is the base build's). cuBLASLt (`gemm`) over the fastest pattern per layer.
Usage: python3 summary.py [swap.csv]"""
import os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from ab_rows import geomean as gm, read  # noqa: E402

runs = read(sys.argv[1] if len(sys.argv) > 1 else "swap.csv")
pats = {"fused-reduce:0": 1, "fused-reduce:0:2": 2, "fused-reduce:0:4": 4}
t = runs.best
print("every check passed:", runs.all_passed)
print("layer            cuBLASLt | base -> run's build (base over it) per pattern | "
      "cuBLASLt over the fastest: base, committed rule")
swapped, lt_b, lt_r = [], [], []
for s in runs.layers():
    m, n, _ = s
    g = min(t("new", s, "gemm"), t("base", s, "gemm"))
    cells, rule = [], {}
    for p, K in pats.items():
        sw = m <= 64 or -(-m // 64) * -(-n // 128) * K <= 132
        b, nw = t("base", s, p), t("new", s, p)
        rule[p] = nw if sw else b
        if sw and m > 64:
            swapped.append(b / nw)
        cells.append(f"{p[12:]:>4} {b:6.2f} -> {nw:6.2f} ({b / nw:.2f}){'*' if sw and m > 64 else ' '}")
    bb = min(t("base", s, p) for p in pats)
    lt_b.append(g / bb)
    lt_r.append(g / min(rule.values()))
    print(f"{m:4d} x {n:5d} x {s[2]:5d} {g:6.2f} | " + " | ".join(cells)
          + f" | {g / bb:.3f}, {g / min(rule.values()):.3f}")
print("* swapped under the committed rule")
print(f"base over new where the committed rule swaps at M > 64: {len(swapped)} cases, geomean "
      f"{gm(swapped):.3f}, {min(swapped):.2f}-{max(swapped):.2f}")
print(f"cuBLASLt over the fastest pattern, geomean over {len(lt_b)} layers: base {gm(lt_b):.3f}, "
      f"committed rule {gm(lt_r):.3f}")
for b in ["base", "new"]:
    v = [runs.one(b, "1", l, p) / runs.one(b, "2", l, p) for l, p in runs.round_keys(b, "1")]
    print(f"{b}: round 1 over round 2, geomean {gm(v):.3f}, range {min(v):.3f}-{max(v):.3f}")
