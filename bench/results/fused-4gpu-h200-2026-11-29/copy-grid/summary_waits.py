#!/usr/bin/env python3
"""waits.sh's rows: `own-bulk` with the stream waits (`stream`) and with the copy kernel waiting
itself (`kernel`), fastest median of two rounds each; the copy's share (own-bulk minus the GEMM
alone). Usage: python3 summary_waits.py  (from anywhere)"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../.."))
from ab_rows import geomean as gm, read  # noqa: E402

r = read(os.path.join(HERE, "waits-ab.csv"))
odd = list(csv.DictReader(open(os.path.join(HERE, "waits-odd.csv"))))
print(f"every check passed: {r.all_passed and all(x['passed'] == 'true' for x in odd)} "
      f"({len(odd)} odd-shape rows)")
g, vs = [], []
for L in r.layers():
    s, k = r.best("stream", L, "own-bulk"), r.best("kernel", L, "own-bulk")
    bulk = min(r.best(m, L, "bulk") for m in ("stream", "kernel"))
    gemm = min(r.best(m, L, "gemm") for m in ("stream", "kernel"))
    g.append(s / k)
    vs.append(bulk / k)
    print(f"{L[0]:5d} x {L[1]:5d} x {L[2]:5d}  GEMM {gemm:6.1f}  bulk {bulk:6.1f}  own-bulk {s:6.1f} -> "
          f"{k:6.1f} ({s / k:.2f}x; {bulk / k:.2f}x bulk)  the copy's share {s - gemm:5.1f} -> {k - gemm:5.1f} us")
print(f"stream over kernel: geomean {gm(g):.3f} ({min(g):.2f}-{max(g):.2f}); bulk over own-bulk now "
      f"{gm(vs):.3f} ({min(vs):.2f}-{max(vs):.2f})")
