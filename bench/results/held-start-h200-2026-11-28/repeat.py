#!/usr/bin/env python3
"""Run-to-run agreement of two `augur overlap tp` runs of the same layers: per layer, the
pattern fastest in one run timed in the other, over the other's fastest (both ways), geomean
per M bucket; and the median |log(time ratio)| of the same pattern between the runs.
Usage: python3 repeat.py RUN_A.csv RUN_B.csv"""
import collections
import csv
import math
import sys


def load(p):
    d = collections.defaultdict(dict)
    for r in csv.DictReader(open(p)):
        if r["pattern"] in ("gemm", "comm") or r["passed"] != "true":
            continue
        d[(int(r["m"]), int(r["n"]), int(r["k"]))][r["pattern"]] = float(r["us"])
    return d


def g(v):
    return math.exp(sum(map(math.log, v)) / len(v))


a, b = load(sys.argv[1]), load(sys.argv[2])
buckets, spread = collections.defaultdict(list), []
for key in sorted(set(a) & set(b)):
    pats = set(a[key]) & set(b[key])
    pa = min(pats, key=lambda p: a[key][p])
    pb = min(pats, key=lambda p: b[key][p])
    m = key[0]
    bk = "M < 256" if m < 256 else ("256 <= M < 2048" if m < 2048 else "M >= 2048")
    for r in (b[key][pb] / b[key][pa], a[key][pa] / a[key][pb]):
        buckets[bk].append(r)
        buckets["all"].append(r)
    spread += [abs(math.log(a[key][p] / b[key][p])) for p in pats]
for k, v in sorted(buckets.items()):
    print(f"{k:16s} {len(v):3d} picks  other run's oracle: {g(v):.3f} (worst {min(v):.2f})")
print(f"median |log(time ratio)| of a pattern between the runs: {sorted(spread)[len(spread) // 2]:.3f}")
