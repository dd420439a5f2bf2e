"""The issue's 0.8 bar on one GPU for the reduce-scatter with the committed build (final.sh):
cuBLASLt alone (`gemm`) over `fused-reduce:0`, over each split, and over the fastest of them per
layer; beside ../../one-gpu-bar-h200-2026-11-29/ (a19d04b, `fused-reduce:0` only).
python3 summary.py  (from this folder)"""
import collections
import csv
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    rows = list(csv.DictReader(open(path)))
    assert all(r["passed"] == "true" for r in rows), path
    by = collections.defaultdict(dict)
    for r in rows:
        by[(int(r["m"]), int(r["n"]), int(r["k"]))][r["pattern"]] = float(r["us"])
    return by


def g(xs):
    xs = list(xs)
    return math.exp(sum(map(math.log, xs)) / len(xs))


now = load(os.path.join(HERE, "one-gpu-reduce-scatter.csv"))
old = load(os.path.join(HERE, "../../one-gpu-bar-h200-2026-11-29/one-gpu-reduce-scatter.csv"))
FAM = ["fused-reduce:0", "fused-reduce:0:2", "fused-reduce:0:4"]
print("every check passed: True")


def line(name, by, f):
    r = {s: v["gemm"] / f(v) for s, v in by.items()}
    small = [x for s, x in r.items() if s[0] < 1024]
    big = [x for s, x in r.items() if s[0] >= 1024]
    print(f"{name:48} {g(r.values()):.3f} (>= 0.8 on {sum(x >= 0.8 for x in r.values())} of {len(r)};"
          f" M < 1024 {g(small):.3f}, M >= 1024 {g(big):.3f})")


line("a19d04b, fused-reduce:0", old, lambda v: v["fused-reduce:0"])
for p in FAM + ["fused-reduce:16", "fused-reduce:32"]:
    line(f"now, {p}", now, lambda v, p=p: v[p])
line("now, fastest of fused-reduce:0, :0:2, :0:4", now, lambda v: min(v[p] for p in FAM))
print("per layer: cuBLASLt us; cuBLASLt over :0 (a19d04b -> now), :0:2, :0:4, the fastest")
for s in sorted(now):
    v = now[s]
    print(f"  {s[0]:6} x {s[1]:5} x {s[2]:5}  {v['gemm']:8.2f}  {old[s]['gemm'] / old[s]['fused-reduce:0']:.2f} -> "
          f"{v['gemm'] / v['fused-reduce:0']:.2f}, {v['gemm'] / v['fused-reduce:0:2']:.2f}, "
          f"{v['gemm'] / v['fused-reduce:0:4']:.2f}, {v['gemm'] / min(v[p] for p in FAM):.2f}")
