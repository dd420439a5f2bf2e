#!/usr/bin/env python3
"""ab.sh's rows: per layer and pattern, base over new (the fastest median of each over two
rounds), bulk and the patterns over bulk with the new copy kernel, geomeans by pattern and M.
Usage: python3 summary.py  (from anywhere)"""
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../.."))
from ab_rows import geomean as gm, read  # noqa: E402

for name, pats in [("ab-ag.csv", ["own-bulk", "pc-push:1:8", "pc-pull:1:8", "pc-push:2:8", "pc-push:1:16"]),
                   ("ab-rs.csv", ["pc-reduce:2:16", "pc-reduce:2:32"])]:
    r = read(os.path.join(HERE, name))
    print(f"{name}: every check passed: {r.all_passed}")
    gain = collections.defaultdict(list)
    best_b, best_n = [], []
    for L in r.layers():
        bulk = min(r.best("base", L, "bulk"), r.best("augur", L, "bulk"))
        cells = []
        for p in pats:
            b, n = r.best("base", L, p), r.best("augur", L, p)
            gain[p].append(b / n)
            gain[(p, L[0])].append(b / n)
            cells.append(f"{p} {b:7.1f}->{n:7.1f} ({bulk / n:.2f}x bulk)")
        best_b.append(bulk / min(bulk, *(r.best("base", L, p) for p in pats)))
        best_n.append(bulk / min(bulk, *(r.best("augur", L, p) for p in pats)))
        print(f"  {L[0]:5d}x{L[1]:5d}x{L[2]:5d} bulk {bulk:7.1f} | " + " | ".join(cells))
    for p in pats:
        print(f"  {p}: base over new {gm(gain[p]):.3f} ({min(gain[p]):.2f}-{max(gain[p]):.2f}); by M: "
              + ", ".join(f"{m} {gm(gain[(p, m)]):.2f}" for m in sorted({L[0] for L in r.layers()})))
    print(f"  best of bulk and these over bulk: base {gm(best_b):.3f}, new {gm(best_n):.3f}")
