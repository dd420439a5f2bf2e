#!/usr/bin/env python3
"""convert.csv (convert.sh): per shape the fastest sample-median of each build over both rounds,
base (544e79c: gemm_splitk_* launched after the fused kernel) over new (rs_convert at the
launch's end) per split, and cuBLASLt (`gemm`) over the fastest split of each build.
Usage: python3 summary.py [convert.csv]"""
import collections, csv, math, sys

path = sys.argv[1] if len(sys.argv) > 1 else "convert.csv"
d, hdr, ok = collections.defaultdict(list), None, True
for r in csv.reader(open(path)):
    if r[2] == "device":
        hdr = r[2:]
        continue
    x = dict(zip(hdr, r[2:]))
    ok &= x["passed"] == "true"
    d[(r[0], int(x["m"]), int(x["n"]), int(x["k"]), x["pattern"])].append(float(x["us"]))
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
pats = ["fused-reduce:0:2", "fused-reduce:0:4", "fused-reduce:0:8"]
print("every check passed:", ok)
ratios, lt = collections.defaultdict(list), collections.defaultdict(list)
for s in sorted({k[1:4] for k in d}):
    g = min(d[("new",) + s + ("gemm",)] + d[("base",) + s + ("gemm",)])
    cells = []
    for p in pats:
        b, n = min(d[("base",) + s + (p,)]), min(d[("new",) + s + (p,)])
        ratios[(s[0], p)].append(b / n)
        cells.append(f":{p[15:]} {b:6.2f} -> {n:6.2f} ({b / n:.3f})")
    bb = min(min(d[("base",) + s + (p,)]) for p in pats)
    bn = min(min(d[("new",) + s + (p,)]) for p in pats)
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
one = {}
hdr = None
for r in csv.reader(open(path)):
    if r[2] == "device":
        hdr = r[2:]
        continue
    x = dict(zip(hdr, r[2:]))
    one[(r[0], r[1], x["m"], x["n"], x["k"], x["pattern"])] = float(x["us"])
for b in ["base", "new"]:
    v = [one[(b, "1") + k[2:]] / one[(b, "2") + k[2:]] for k in one if k[:2] == (b, "1")]
    print(f"{b}: round 1 over round 2, geomean {gm(v):.3f}, range {min(v):.3f}-{max(v):.3f}")
v = [one[("base", r) + k[2:]] / one[("new", r) + k[2:]]
     for k in one if k[:2] == ("new", "1") and k[5] != "gemm" for r in "12"]
print(f"base over new within each round: geomean {gm(v):.3f}, range {min(v):.3f}-{max(v):.3f}, "
      f"below 1 on {sum(x < 1 for x in v)} of {len(v)}")
