#!/usr/bin/env python3
"""Replace the feature tiers' costs (sample_s, gather_s, and upload_s, upload_gather_s: the
upload alone and with the gather during it; sample_upload_s: the sampled tier as a plan from a
host matrix pays it, beside the upload; gather_upload_s: the gathered tier on the host beside
the upload) of a full runs CSV with those of a tier-cost CSV
measured later on the same device (`bench/tier-cost-gpu.sh`), matched by (matrix, source): the
pool's timings stay, the tiers' costs are the current code's. Runs written before the upload was
timed get its two columns (after sample_s). Refuses a tier-cost CSV
from another device or one that lacks a matrix of the runs. The sampled features
(`f_sampled_*`) and `schema_version` come from the tier-cost CSV too: they are the current
sampler's (deterministic: one matrix gives one set of values on any machine), so a sampler
change reaches the runs with its cost. The runs file is rewritten in place
through a temporary file. With --subset, a tier-cost CSV of some of the matrices (a sweep of
the sizes a change can affect) replaces theirs and leaves the others as they are, and says how
many of each; --below N (implies --subset) takes from it only the matrices whose rows and
nonzeros are both below N (the sizes whose code path a change touched).
Usage: python3 bench/patch_tier_costs.py [--subset | --below N] RUNS.csv TIER_COST.csv"""
import csv, os, sys

args = sys.argv[1:]
subset = "--subset" in args
below = None
if "--below" in args:
    i = args.index("--below")
    below = float(args[i + 1])
    del args[i : i + 2]
    subset = True
runs_path, cost_path = [a for a in args if a != "--subset"]
cost = {}
for r in csv.DictReader(open(cost_path)):
    if below is None or max(int(r["rows"]), int(r["nnz"])) < below:
        cost[(r["matrix"], r["source"])] = r
with open(runs_path, newline="") as f:
    rd = csv.reader(f)
    header = next(rd)
    rows = list(rd)
NEW = ["upload_s", "upload_gather_s", "sample_upload_s", "gather_upload_s"]
for i, name in enumerate(NEW):  # older runs lack later columns: add them, empty, in place
    if name not in header:
        at = header.index(NEW[i - 1] if i else "sample_s") + 1
        header.insert(at, name)
        rows = [r[:at] + [""] + r[at:] for r in rows]
col = {name: i for i, name in enumerate(header)}
missing, devices = set(), set()
for row in rows:
    key = (row[col["matrix"]], row[col["source"]])
    c = cost.get(key)
    if c is None:
        missing.add(key)
        continue
    devices.add((row[col["device"]], c["device"]))
    row[col["sample_s"]] = c["sample_s"]
    row[col["schema_version"]] = c["schema_version"]
    for name in header:
        if name.startswith("f_sampled_"):
            row[col[name]] = c[name]
    row[col["gather_s"]] = c["gather_s"]
    for n in NEW:
        row[col[n]] = c.get(n, "")
if missing and not subset:
    sys.exit(f"{cost_path} lacks {len(missing)} matrices of {runs_path}, e.g. {sorted(missing)[0]}")
if any(a != b for a, b in devices):
    sys.exit(f"devices differ: {sorted(devices)}")
tmp = runs_path + ".tmp"
with open(tmp, "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
os.replace(tmp, runs_path)
keys = {(r[col['matrix']], r[col['source']]) for r in rows}
print(f"{runs_path}: tier costs of {len(keys - missing)} matrices replaced from {cost_path}"
      + (f", {len(missing)} left as they were" if missing else ""))
