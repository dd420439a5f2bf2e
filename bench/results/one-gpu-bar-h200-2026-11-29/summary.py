"""The issue's 0.8 bar on one GPU: cuBLASLt alone (`gemm`) over each fused pattern, per layer and
geomean, for two runs of bench/fused-one-gpu.sh, the older first.
python3 summary.py  (from this folder): the twenty-third session's run
(`../fused-reduce-swap-h200-2026-11-29/bar/`) beside this folder's.
python3 summary.py LABEL=FOLDER LABEL=FOLDER: any two runs (folders relative to this one's)."""
import collections, csv, math, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = [a.split("=", 1) for a in sys.argv[1:]] or [
    ("23rd", "../fused-reduce-swap-h200-2026-11-29/bar"), ("now", ".")]
RUNS = [(name, os.path.join(HERE, folder)) for name, folder in RUNS]
(OLD, _), (NOW, _) = RUNS


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
    pats = sorted({p for v in runs[NOW].values() for p in v if p != "gemm"})
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
    print(f"{op}, per layer, cuBLASLt us and cuBLASLt over each fused pattern ({OLD} -> {NOW}):")
    for s in sorted(runs[NOW]):
        now, old = runs[NOW][s], runs[OLD].get(s, {})
        cells = [f"{p} {old['gemm'] / old[p]:.2f} -> {now['gemm'] / now[p]:.2f}"
                 if p in old else f"{p} {now['gemm'] / now[p]:.2f}" for p in pats]
        print(f"  {s[0]:6} x {s[1]:6} x {s[2]:6}  gemm {old.get('gemm', math.nan):8.2f} -> "
              f"{now['gemm']:8.2f}  " + ", ".join(cells))
