#!/usr/bin/env python3
"""helpers.csv (helpers.sh): per layer and pattern the fastest sample-median of each build over
both rounds, base (36db38f: the consumers zero) over new (the producer warpgroup's idle warps
zero), cuBLASLt (`gemm`) over each; run-to-run spread. Usage: python3 summary.py [helpers.csv]"""
import os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from ab_rows import geomean as gm, read, spread  # noqa: E402

runs = read(sys.argv[1] if len(sys.argv) > 1 else "helpers.csv")
pats = ["fused-reduce:0", "fused-reduce:0:2"]
print("every check passed:", runs.all_passed)
small, large = [], []
for s in runs.layers():
    g = min(runs.best("new", s, "gemm"), runs.best("base", s, "gemm"))
    cells = []
    for p in pats:
        b, n = runs.best("base", s, p), runs.best("new", s, p)
        (small if s[0] <= 256 else large).append(b / n)
        cells.append(f"{p[12:]:>4} {b:7.2f} -> {n:7.2f} ({b / n:.3f}), cuBLASLt over it "
                     f"{g / b:.3f} -> {g / n:.3f}")
    print(f"{s[0]:5d} x {s[1]:5d} x {s[2]:5d}  cuBLASLt {g:7.2f} | " + " | ".join(cells))
allv = small + large
print(f"base over new: all {len(allv)} {gm(allv):.3f} ({min(allv):.3f}-{max(allv):.3f}); "
      f"M <= 256 {gm(small):.3f}; M >= 1024 {gm(large):.3f}")
for line in spread(runs, "base", "new", set(pats)):
    print(line)
