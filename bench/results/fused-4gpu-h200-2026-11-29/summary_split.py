#!/usr/bin/env python3
"""verify-split/ab4.csv (../split-prezeroed-h200-2026-11-29/verify-gpus.sh with GPUS=4): per
layer the fastest sample-median over both rounds of each mode of the same build, `off`
(AUGUR_TP_UNVERIFIED unset: on four GPUs the host's memset and ready words, the sums zeroed by
the host) and `on` (set: zeroing in the launch, the split's sums zeroed ahead, `fused-reduce:0`'s
own k split); bulk and ll-bulk the fastest of both modes. Usage: python3 summary_split.py [FILE]"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../.."))
from ab_rows import geomean as gm, read  # noqa: E402

runs = read(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "verify-split/ab4.csv"))
pats = ["fused-reduce:0", "fused-reduce:0:2", "fused-reduce:0:4"]
print("every check passed:", runs.all_passed)
gain = {p: [] for p in pats}
best_off, best_on = [], []
for s in runs.layers():
    bulk = min(runs.best(m, s, "bulk") for m in ("off", "on"))
    ll = min(runs.best(m, s, "ll-bulk") for m in ("off", "on"))
    cells = []
    for p in pats:
        a, b = runs.best("off", s, p), runs.best("on", s, p)
        gain[p].append(a / b)
        cells.append(f"{p[12:]:>4} {a:7.2f} -> {b:7.2f} ({a / b:.2f})")
    best_off.append(bulk / min(bulk, ll, *(runs.best("off", s, p) for p in pats)))
    best_on.append(bulk / min(bulk, ll, *(runs.best("on", s, p) for p in pats)))
    print(f"{s[0]:4d} x {s[1]:5d} x {s[2]:5d}  bulk {bulk:7.2f}  ll-bulk {ll:7.2f} | " + " | ".join(cells))
print()
for p in pats:
    v = gain[p]
    print(f"{p}: off over on, geomean {gm(v):.3f} ({min(v):.2f}-{max(v):.2f}), {len(v)} layers")
print(f"best of bulk, ll-bulk and the fused patterns over bulk (geomean, {len(best_on)} layers): "
      f"off {gm(best_off):.3f}, on {gm(best_on):.3f}")
