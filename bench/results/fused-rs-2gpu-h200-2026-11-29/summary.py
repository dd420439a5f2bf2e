#!/usr/bin/env python3
"""ab2.csv (verify.sh): per layer the fastest sample-median over both rounds of each mode of the
same build, `host` (AUGUR_TP_UNVERIFIED unset: the host's memset and ready words, 128-row
tiles, the f32 sum rounded by a second launch) and `launch` (set: all of it in the launch, the
swapped GEMM); bulk (NCCL + cuBLASLt) and ll-bulk the fastest of both modes' runs (they do not
depend on it). Usage: python3 summary.py [ab2.csv]"""
import collections, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from ab_rows import geomean as gm, read  # noqa: E402

runs = read(sys.argv[1] if len(sys.argv) > 1 else "ab2.csv")
pats = ["fused-reduce:0", "fused-reduce:0:2"]
both = lambda s, p: min(runs.best("host", s, p), runs.best("launch", s, p))
print("every check passed:", runs.all_passed)
gain, vs_bulk, best_h, best_l = collections.defaultdict(list), collections.defaultdict(list), [], []
for s in runs.layers():
    bulk, ll = both(s, "bulk"), both(s, "ll-bulk")
    cells = []
    for p in pats:
        h, l = runs.best("host", s, p), runs.best("launch", s, p)
        band = "M <= 64" if s[0] <= 64 else "M 128-256" if s[0] <= 256 else "M 1024"
        gain[band].append(h / l)
        vs_bulk[(band, p, "host")].append(bulk / h)
        vs_bulk[(band, p, "launch")].append(bulk / l)
        cells.append(f"{p[12:]:>4} {h:7.2f} -> {l:7.2f} ({h / l:.2f}); bulk over it {bulk / h:.2f} -> {bulk / l:.2f}")
    best_h.append(bulk / min(bulk, ll, *(runs.best("host", s, p) for p in pats)))
    best_l.append(bulk / min(bulk, ll, *(runs.best("launch", s, p) for p in pats)))
    print(f"{s[0]:5d} x {s[1]:5d} x {s[2]:5d}  bulk {bulk:7.2f}  ll-bulk {ll:7.2f} | " + " | ".join(cells))
print()
for band, v in gain.items():
    print(f"{band}: host over launch, geomean {gm(v):.3f} ({min(v):.2f}-{max(v):.2f}), {len(v)} pairs")
for (band, p, mode), v in sorted(vs_bulk.items()):
    print(f"{band} {p} {mode}: bulk over it, geomean {gm(v):.3f} (least {min(v):.2f})")
print(f"best of bulk, ll-bulk and the two fused patterns, over bulk (geomean over {len(best_h)} "
      f"layers): host {gm(best_h):.3f}, launch {gm(best_l):.3f}")
