#!/usr/bin/env python3
"""Per-shape summary of `augur overlap tp` CSVs (issue 24): bulk, the best pattern, the
perfect-overlap bound (max of the GEMM alone and the collective alone), and per file the geomean
of every pattern over bulk, the per-shape best, the bound, and the share of the bound's gain the
best takes where that gain is >= 1.2x. Usage: python3 bench/tp-summary.py FILE.csv..."""
import csv
import math
import sys

for f in sys.argv[1:]:
    rows = list(csv.DictReader(open(f)))
    sh = {}
    for r in rows:
        sh.setdefault((int(r["m"]), int(r["n"]), int(r["k"])), {})[r["pattern"]] = float(r["us"])
    if not sh:
        continue
    pats = [p for p in next(iter(sh.values())) if p not in ("gemm", "comm")]
    print(f)
    g = {p: [] for p in pats}
    best, bound, shares, wins = [], [], [], {}
    for k, t in sorted(sh.items(), key=lambda x: (x[0][1], x[0][2], x[0][0])):
        for p in pats:
            g[p].append(math.log(t["bulk"] / t[p]))
        b = min(pats, key=t.get)
        wins[b] = wins.get(b, 0) + 1
        bd = max(t["gemm"], t["comm"])
        best.append(math.log(t["bulk"] / t[b]))
        bound.append(math.log(t["bulk"] / bd))
        if t["bulk"] / bd >= 1.2:
            shares.append((t["bulk"] - t[b]) / (t["bulk"] - bd))
        print("  %6dx%5dx%5d bulk %8.1f best %-14s %8.1f %.2fx bound %.2fx"
              % (k + (t["bulk"], b, t[b], t["bulk"] / t[b], t["bulk"] / bd)))
    e = lambda v: math.exp(sum(v) / len(v))
    print("  geomean over bulk: " + ", ".join("%s %.3f" % (p, e(v)) for p, v in g.items()))
    print("  per-shape best %.3f (least %.3f), bound %.3f; share of the bound's gain where it is "
          ">= 1.2x: mean %.2f over %d shapes; wins %s"
          % (e(best), math.exp(min(best)), e(bound),
             sum(shares) / max(1, len(shares)), len(shares), wins))
