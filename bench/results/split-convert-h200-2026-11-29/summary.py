#!/usr/bin/env python3
"""convert.csv (convert.sh): per shape the fastest sample-median of each build over both rounds,
base (544e79c: gemm_splitk_* launched after the fused kernel) over new (rs_convert at the
launch's end) per split, and cuBLASLt (`gemm`) over the fastest split of each build.
Usage: python3 summary.py [convert.csv]"""
import collections, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from ab_rows import geomean as gm, read, spread  # noqa: E402

runs = read(sys.argv[1] if len(sys.argv) > 1 else "convert.csv")
pats = ["fused-reduce:0:2", "fused-reduce:0:4", "fused-reduce:0:8"]
print("every check passed:", runs.all_passed)
ratios, lt = collections.defaultdict(list), collections.defaultdict(list)
for s in runs.layers():
    g = min(runs.best("new", s, "gemm"), runs.best("base", s, "gemm"))
    cells = []
    for p in pats:
        b, n = runs.best("base", s, p), runs.best("new", s, p)
        ratios[(s[0], p)].append(b / n)
        cells.append(f":{p[15:]} {b:6.2f} -> {n:6.2f} ({b / n:.3f})")
    bb = min(runs.best("base", s, p) for p in pats)
    bn = min(runs.best("new", s, p) for p in pats)
    lt[s[0]].append((g / bb, g / bn))
    print(f"{s[0]:4d} x {s[1]:4d} x {s[2]:4d}  cuBLASLt {g:6.2f}  " + " | ".join(cells)
          + f"  cuBLASLt/best {g / bb:.3f} -> {g / bn:.3f}")
print()
for (m, p), v in sorted(ratios.items()):
    print(f"M {m:4d} {p}: base over new, geomean {gm(v):.3f}")
allv = [x for v in ratios.values() for x in v]
print(f"all {len(allv)}: geomean {gm(allv):.3f}, least {min(allv):.3f}, most {max(allv):.3f}")
for m, v in sorted(lt.items()):
    print(f"M {m:4d}: cuBLASLt over the fastest split {gm([a for a, _ in v]):.3f} -> "
          f"{gm([b for _, b in v]):.3f}")
# Run to run: each build's round 1 over its round 2, and base over new within each round.
for line in spread(runs, "base", "new", set(pats)):
    print(line)
