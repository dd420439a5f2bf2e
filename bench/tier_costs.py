#!/usr/bin/env python3
"""What the feature tiers cost against one SpMV, per nnz bucket, from a runs CSV (issue 18):
median of sample_s / (fastest kernel's per-call time) and of gather_s / the same, and the medians
of sample_s and gather_s in microseconds. Usage: python3 bench/tier_costs.py RUNS.csv"""
import csv, statistics as st, sys

by = {}
for r in csv.DictReader(open(sys.argv[1])):
    d = by.setdefault(r["matrix"], {"info": r, "t": []})
    if r["status"] == "ok":
        d["t"].append(float(r["per_iter_s"]))
buckets = [("nnz < 1e4", 0, 1e4), ("1e4 <= nnz < 1e5", 1e4, 1e5),
           ("1e5 <= nnz < 1e6", 1e5, 1e6), ("1e6 <= nnz < 1e7", 1e6, 1e7), ("nnz >= 1e7", 1e7, 1e99)]
print("| bucket | matrices | sampled tier / one SpMV | gathered tier / one SpMV | sampled tier (us) | gathered tier (us) |")
print("|---|---|---|---|---|---|")
for name, lo, hi in buckets:
    v = [(float(d["info"]["sample_s"]) / min(d["t"]), float(d["info"]["gather_s"]) / min(d["t"]),
          float(d["info"]["sample_s"]) * 1e6, float(d["info"]["gather_s"]) * 1e6)
         for d in by.values() if d["t"] and lo <= int(d["info"]["nnz"]) < hi]
    if v:
        print(f"| {name} | {len(v)} | {st.median(x[0] for x in v):.2f} | "
              f"{st.median(x[1] for x in v):.1f} | {st.median(x[2] for x in v):.1f} | "
              f"{st.median(x[3] for x in v):.1f} |")
