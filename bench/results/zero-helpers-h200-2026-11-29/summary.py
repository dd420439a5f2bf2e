#!/usr/bin/env python3
"""helpers.csv (helpers.sh): per layer and pattern the fastest sample-median of each build over
both rounds, base (36db38f: the consumers zero) over new (the producer warpgroup's idle warps
zero), cuBLASLt (`gemm`) over each; run-to-run spread. Usage: python3 summary.py [helpers.csv]"""
import collections, csv, math, sys

path = sys.argv[1] if len(sys.argv) > 1 else "helpers.csv"
d, one, hdr, ok = collections.defaultdict(list), {}, None, True
for r in csv.reader(open(path)):
    if r[2] == "device":
        hdr = r[2:]
        continue
    x = dict(zip(hdr, r[2:]))
    ok &= x["passed"] == "true"
    d[(r[0], int(x["m"]), int(x["n"]), int(x["k"]), x["pattern"])].append(float(x["us"]))
    one[(r[0], r[1], x["m"], x["n"], x["k"], x["pattern"])] = float(x["us"])
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print("every check passed:", ok)
small, large = [], []
for s in sorted({k[1:4] for k in d}):
    g = min(d[("new",) + s + ("gemm",)] + d[("base",) + s + ("gemm",)])
    cells = []
    for p in ["fused-reduce:0", "fused-reduce:0:2"]:
        b, n = min(d[("base",) + s + (p,)]), min(d[("new",) + s + (p,)])
        (small if s[0] <= 256 else large).append(b / n)
        cells.append(f"{p[12:]:>4} {b:7.2f} -> {n:7.2f} ({b / n:.3f}), cuBLASLt over it "
                     f"{g / b:.3f} -> {g / n:.3f}")
    print(f"{s[0]:5d} x {s[1]:5d} x {s[2]:5d}  cuBLASLt {g:7.2f} | " + " | ".join(cells))
allv = small + large
print(f"base over new: all {len(allv)} {gm(allv):.3f} ({min(allv):.3f}-{max(allv):.3f}); "
      f"M <= 256 {gm(small):.3f}; M >= 1024 {gm(large):.3f}")
for b in ["base", "new"]:
    v = [one[(b, "1") + k[2:]] / one[(b, "2") + k[2:]] for k in one if k[:2] == (b, "1")]
    print(f"{b}: round 1 over round 2, geomean {gm(v):.3f}, range {min(v):.3f}-{max(v):.3f}")
v = [one[("base", r) + k[2:]] / one[("new", r) + k[2:]]
     for k in one if k[:2] == ("new", "1") and k[5] != "gemm" for r in "12"]
print(f"base over new within each round: geomean {gm(v):.3f}, range {min(v):.3f}-{max(v):.3f}, "
      f"below 1 on {sum(x < 1 for x in v)} of {len(v)}")
