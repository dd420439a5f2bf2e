"""The issue's 0.8 bar on one GPU: cuBLASLt alone (`gemm`) over each fused pattern, this folder's
H100 run (`bar/`) beside the H200's last (`../one-gpu-bar-h200-2026-11-29/`, a19d04b).
python3 summary.py  (from this folder)"""
import collections, csv, math, os

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = [("H200 a19d04b", os.path.join(HERE, "../one-gpu-bar-h200-2026-11-29")),
        ("H100 now", os.path.join(HERE, "bar"))]


def load(folder, op):
    rows = list(csv.DictReader(open(os.path.join(folder, f"one-gpu-{op}.csv"))))
    assert all(r["passed"] == "true" for r in rows), (folder, op)
    by = collections.defaultdict(dict)
    for r in rows:
        by[(int(r["m"]), int(r["n"]), int(r["k"]))][r["pattern"]] = float(r["us"])
    return by


def g(xs):
    xs = list(xs)
    return math.exp(sum(map(math.log, xs)) / len(xs))


print("every check passed: True")
for op in ["all-gather", "reduce-scatter"]:
    runs = {name: load(folder, op) for name, folder in RUNS}
    pats = sorted({p for v in runs["H100 now"].values() for p in v if p != "gemm"})
    for p in pats:
        line = f"{op:15} {p:17}"
        for name, by in runs.items():
            if not all(p in v for v in by.values()):
                continue
            rat = {s: v["gemm"] / v[p] for s, v in by.items()}
            small = [x for s, x in rat.items() if s[0] < 1024]
            big = [x for s, x in rat.items() if s[0] >= 1024]
            line += (f" | {name}: {g(rat.values()):.3f} (>= 0.8 on {sum(x >= 0.8 for x in rat.values())}"
                     f" of {len(rat)}; M < 1024 {g(small):.3f}, M >= 1024 {g(big):.3f})")
        print(line)
    print(f"{op}, per layer: cuBLASLt us (H200, H100) and cuBLASLt over each fused pattern (H200 -> H100):")
    h200, h100 = runs["H200 a19d04b"], runs["H100 now"]
    for s in sorted(h100):
        now, old = h100[s], h200.get(s, {})
        parts = [f"{p} {old['gemm'] / old[p]:.2f} -> {now['gemm'] / now[p]:.2f}" if p in old
                 else f"{p} {now['gemm'] / now[p]:.2f}" for p in pats]
        print(f"  {s[0]:6} x {s[1]:6} x {s[2]:6}  gemm {old.get('gemm', float('nan')):8.2f} {now['gemm']:8.2f}  "
              + ", ".join(parts))
