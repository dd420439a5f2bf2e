"""ab.sh's rows (this folder: a19d04b over the change) or staged/ab.sh's (a folder given as the
first argument, staged/first, staged/runtime-stride or staged/final-layout: a52ca1b over each
variant): base over new per layer and pattern (fastest median over two rounds), geomeans by
pattern, within-round spread, cuBLASLt over the fastest fused pattern; the odd shapes' checks.
    python3 summary.py [FOLDER]  (from this folder)"""
import csv
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../.."))
import ab_rows  # noqa: E402

if len(sys.argv) > 1:
    HERE = os.path.join(HERE, sys.argv[1])

odd = [r for f in sorted(glob.glob(os.path.join(HERE, "odd-*.csv"))) for r in csv.DictReader(open(f))]
r = ab_rows.read(os.path.join(HERE, "ab.csv"))
print(f"every check passed: {r.all_passed and all(x['passed'] == 'true' for x in odd)} "
      f"({len(odd)} odd-shape rows, each checked before and after its timed calls)")
pats = ["fused-reduce:0", "fused-reduce:0:2", "fused-reduce:0:4", "fused-reduce:0:8"]
split = pats[1:]
print("layer                  cuBLASLt | base -> new (base over new) per pattern")
ratios = {p: [] for p in pats}
for L in r.layers():
    cells = []
    for p in pats:
        b, n = r.best("base", L, p), r.best("new", L, p)
        ratios[p].append((L, b / n))
        cells.append(f"{p[12:]:>4} {b:6.2f} -> {n:6.2f} ({b / n:.3f})")
    print(f"{L[0]:5} x {L[1]:5} x {L[2]:5}  {r.best('new', L, 'gemm'):7.2f} | " + " | ".join(cells))
for p in pats:
    v = [x for _, x in ratios[p]]
    small = [x for L, x in ratios[p] if L[0] <= 256]
    print(f"{p:17} base over new: geomean {ab_rows.geomean(v):.3f} ({min(v):.3f}-{max(v):.3f}); "
          f"M <= 256 {ab_rows.geomean(small):.3f}")
within = []
for rnd in ("1", "2"):
    for L, p in r.round_keys("new", rnd):
        if p in split:
            within.append(r.one("base", rnd, L, p) / r.one("new", rnd, L, p))
print(f"split patterns, base over new within each round: geomean {ab_rows.geomean(within):.3f}, "
      f"range {min(within):.3f}-{max(within):.3f}, below 1 on {sum(x < 1 for x in within)} of {len(within)}")
print("cuBLASLt over the fastest of fused-reduce:0 and its splits, base -> new:")
for L in r.layers():
    g = r.best("new", L, "gemm")
    fb = min(r.best("base", L, p) for p in pats)
    fn = min(r.best("new", L, p) for p in pats)
    best = min(pats, key=lambda p: r.best("new", L, p))
    print(f"  {L[0]:5} x {L[1]:5} x {L[2]:5}  {g / fb:.3f} -> {g / fn:.3f}  ({best[12:]})")
