"""verify-gpus.sh on two H200s (GPUS=2, MS="16 64 256"; this folder, the final-layout/ variant's
build) or its A/B alone with the committed kernel (a52ca1b's build: ../gpus2-committed/, the
folder as the first argument): the checks, then the prezeroed way off
(the variable unset: the split's sum zeroed in the launch, its partials 16 bytes at a time) over
on (AUGUR_TP_UNVERIFIED=1), the fastest median of each over two rounds, per layer and pattern;
the fused patterns against bulk and ll-bulk.   python3 summary.py [FOLDER]  (from this folder)"""
import csv
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../.."))
import ab_rows  # noqa: E402

if len(sys.argv) > 1:
    HERE = os.path.join(HERE, sys.argv[1])

odd = [r for f in sorted(glob.glob(os.path.join(HERE, "odd2-*.csv"))) for r in csv.DictReader(open(f))]
runs = os.path.join(HERE, "run2.csv")
run = list(csv.DictReader(open(runs))) if os.path.exists(runs) else []
r = ab_rows.read(os.path.join(HERE, "ab2.csv"))
ok = r.all_passed and all(x["passed"] == "true" for x in odd + run)
if odd and run:
    print(f"every check passed: {ok} ({len(odd)} odd-shape rows, worst "
          f"{max(float(x['max_err_over_bound']) for x in odd):.3f} of the bound; {len(run)} plan "
          f"runs, plan over harness {min(float(x['plan_over_harness']) for x in run):.3f}-"
          f"{max(float(x['plan_over_harness']) for x in run):.3f})")
else:
    print(f"every check passed: {ok} (the timed rows' checks)")
pats = ["bulk", "ll-bulk", "fused-reduce:0", "fused-reduce:0:2", "fused-reduce:0:4"]
FUSED = pats[2:]
for L in r.layers():
    print(f"{L[0]:4} x {L[1]:5} x {L[2]:5}  " + " | ".join(
        f"{p.replace('fused-reduce', 'fr')} {r.best('off', L, p):6.2f} -> {r.best('on', L, p):6.2f}" for p in pats))
for p in FUSED:
    v = [r.best("off", L, p) / r.best("on", L, p) for L in r.layers()]
    print(f"{p:17} off over on: geomean {ab_rows.geomean(v):.3f} ({min(v):.3f}-{max(v):.3f})")
for mode in ("off", "on"):
    best = {L: min(r.best(mode, L, p) for p in FUSED) for L in r.layers()}
    vb = [r.best(mode, L, "bulk") / best[L] for L in r.layers()]
    vl = [min(r.best(mode, L, p) for p in ("bulk", "ll-bulk")) / best[L] for L in r.layers()]
    wins = sum(x >= 1 for x in vl)
    print(f"{mode}: bulk over the fastest fused pattern {ab_rows.geomean(vb):.3f}; the faster of bulk "
          f"and ll-bulk over it {ab_rows.geomean(vl):.3f} (fused ahead on {wins} of {len(vl)})")
