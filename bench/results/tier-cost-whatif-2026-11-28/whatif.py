#!/usr/bin/env python3
"""What-if runs for issue 18: a copy of a runs CSV with the cost of a feature tier replaced.
Usage: whatif.py RUNS.csv OUT.csv COLUMN=SECONDS[,...] [--min-nnz N] [--cap]
  COLUMN: sample_upload_s or gather_upload_s (what a plan pays for the sampled tier / the
  gathered tier's row statistics); set on every matrix with nnz >= N (default 131072, where a
  plan hands the work off beside the upload); --cap: take min(measured, SECONDS) instead."""
import argparse
import csv
import os
import sys

ap = argparse.ArgumentParser(usage=__doc__)
ap.add_argument("runs")
ap.add_argument("out")
ap.add_argument("spec")
ap.add_argument("--min-nnz", type=int, default=131072)
ap.add_argument("--cap", action="store_true")
a = ap.parse_args()
if os.path.exists(a.out) and os.path.samefile(a.runs, a.out):
    sys.exit(f"whatif.py: {a.out} is the input; write the copy elsewhere")
try:
    sets = [(c, float(v)) for c, v in (kv.split("=") for kv in a.spec.split(","))]
except ValueError:
    sys.exit(f"whatif.py: `{a.spec}` is not COLUMN=SECONDS[,...]")
rd = csv.DictReader(open(a.runs))
missing = [c for c, _ in sets if c not in (rd.fieldnames or [])]
if missing:
    sys.exit(f"whatif.py: {a.runs} has no column {', '.join(missing)}")
w = csv.DictWriter(open(a.out, "w", newline=""), fieldnames=rd.fieldnames)
w.writeheader()
for r in rd:
    if int(r["nnz"]) >= a.min_nnz:
        for c, v in sets:
            r[c] = repr(min(float(r[c]), v) if a.cap else v)
    w.writerow(r)
