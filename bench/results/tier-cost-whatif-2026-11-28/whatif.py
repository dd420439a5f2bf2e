#!/usr/bin/env python3
"""What-if runs for issue 18: a copy of a runs CSV with the cost of a feature tier replaced.
Usage: whatif.py RUNS.csv OUT.csv COLUMN=SECONDS[,...] [--min-nnz N] [--cap]
  COLUMN: sample_upload_s or gather_upload_s (what a plan pays for the sampled tier / the
  gathered tier's row statistics); set on every matrix with nnz >= N (default 131072, where a
  plan hands the work off beside the upload); --cap: take min(measured, SECONDS) instead."""
import csv
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
opts = sys.argv[1:]
src, dst, spec = args[0], args[1], args[2]
min_nnz = int(opts[opts.index("--min-nnz") + 1]) if "--min-nnz" in opts else 131072
cap = "--cap" in opts
sets = [(c, float(v)) for c, v in (kv.split("=") for kv in spec.split(","))]
rd = csv.DictReader(open(src))
w = csv.DictWriter(open(dst, "w", newline=""), fieldnames=rd.fieldnames)
w.writeheader()
for r in rd:
    if int(r["nnz"]) >= min_nnz:
        for c, v in sets:
            r[c] = repr(min(float(r[c]), v) if cap else v)
    w.writerow(r)
