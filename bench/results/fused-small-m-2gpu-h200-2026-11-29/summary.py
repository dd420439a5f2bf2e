#!/usr/bin/env python3
"""bench/fused-small-m-ab.sh on 2 H200s (run from this folder): per layer the new build's
bulk, ll-bulk, GEMM alone and collective alone, each fused all-gather in 998a5b2 (old) and
a10ecef (new), medians over the rounds that finished; then old over new per M and pattern."""
import collections, csv, math, statistics as st

d = collections.defaultdict(list)
for r in csv.DictReader(open("ab-all-gather-2.csv")):
    d[(r["build"], int(r["m"]), int(r["n"]), int(r["k"]), r["pattern"])].append(float(r["us"]))
pats = ["fused-push:1:8", "fused-pull:1:8", "fused-push:2:8"]
sp = collections.defaultdict(list)
print("M x N x K: bulk, ll-bulk, GEMM alone, collective alone (new build); per fused pattern old -> new (old/new); the new fused best over ll-bulk")
for s in sorted({k[1:4] for k in d}):
    g = lambda b, p: st.median(d[(b,) + s + (p,)]) if d.get((b,) + s + (p,)) else float("nan")
    line = f"{'x'.join(map(str, s)):>15} {g('new', 'bulk'):6.1f} {g('new', 'll-bulk'):6.1f} {g('new', 'gemm'):6.1f} {g('new', 'comm'):6.1f} |"
    for p in pats:
        o, n = g("old", p), g("new", p)
        line += f" {o:6.1f} -> {n:6.1f} ({o / n:.2f})"
        if o == o and n == n:
            sp[(s[0], p)].append(o / n)
    best = min(g("new", p) for p in pats)
    line += f" | {g('new', 'll-bulk') / best:.2f}"
    print(line)
print("\nold over new, geomean (layers):")
for k in sorted(sp):
    v = sp[k]
    print(f"  M {k[0]:>4} {k[1]:<15} {math.exp(sum(map(math.log, v)) / len(v)):.3f} ({len(v)})")
