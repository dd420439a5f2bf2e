#!/usr/bin/env python3
"""Replace one kernel's timings (status, error, setup_s, per_iter_s, timing, latency_s,
throughput_s, graph_s, batch, reps) in a runs CSV with those of later CSVs of that kernel alone
on the same device (`bench/adaptive-gpu.sh`: `augur collect --kernel K`), matched by matrix:
every other column and row stays as committed. `augur collect merge` would also take the later
machine's per-matrix columns (upload and tier costs), which drift from host to host. Refuses
timing CSVs from another device, of another kernel, or lacking a matrix the runs time K on.
The runs file is rewritten in place through a temporary file.
Usage: python3 bench/patch_kernel_timings.py KERNEL RUNS.csv TIMINGS.csv [TIMINGS.csv ...]"""
import csv, os, sys

kernel, runs_path, *timing_paths = sys.argv[1:]
if not timing_paths:
    sys.exit(__doc__)
COLS = ["status", "error", "setup_s", "per_iter_s", "timing", "latency_s", "throughput_s",
        "graph_s", "batch", "reps"]
NEED = ["matrix", "kernel", "device"] + COLS


def rows_of(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in NEED if c not in (reader.fieldnames or [])]
        if missing:
            sys.exit(f"{path}: not a runs CSV (no column {', '.join(missing)})")
        return reader.fieldnames, list(reader)


new = {}
device = None
for p in timing_paths:
    for r in rows_of(p)[1]:
        if r["kernel"] != kernel:
            sys.exit(f"{p}: a row of kernel {r['kernel']!r}, not {kernel!r}")
        device = device or r["device"]
        if r["device"] != device:
            sys.exit(f"{p}: device {r['device']!r}, not {device!r}")
        new[r["matrix"]] = r
fields, rows = rows_of(runs_path)
mine = [r for r in rows if r["kernel"] == kernel]
if any(r["device"] != device for r in mine):
    sys.exit(f"{runs_path} was collected on another device than {device!r}")
missing = [r["matrix"] for r in mine if r["matrix"] not in new]
if missing:
    sys.exit(f"no new timing of {kernel} for {len(missing)} matrices, e.g. {missing[0]}")
for r in mine:
    for c in COLS:
        r[c] = new[r["matrix"]][c]
tmp = runs_path + ".tmp"
with open(tmp, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
os.replace(tmp, runs_path)
print(f"{runs_path}: {len(mine)} rows of {kernel} re-timed from {len(timing_paths)} file(s); "
      f"{len(rows) - len(mine)} other rows unchanged")
