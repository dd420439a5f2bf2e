#!/usr/bin/env python3
"""Put re-timed rows into a committed `augur overlap tp` grid (issue 24): for the overlap
selector's training after a build changed some patterns' kernels (bench/regrid-fused.sh).

    python3 bench/splice-grid.py OLD.csv NEW.csv > SPLICED.csv

Every row of NEW (but its bulk, which only measures drift) replaces OLD's row of the same layer
(device, gpus, op, dtype, m, n, k) and pattern, or is added to the layer; a layer of NEW that
OLD does not have is an error (the spliced grid keeps OLD's layers). The replaced rows'
bulk_over_pattern and share_of_bound are recomputed against OLD's bulk, GEMM alone and
collective alone. On stderr: the rows replaced and added, and NEW's bulk over OLD's per layer
(geomean and range), the drift between the two runs."""
import csv
import math
import sys


def key(r):
    return tuple(r[c] for c in ("device", "gpus", "op", "dtype", "m", "n", "k"))


def main(old_path, new_path):
    with open(old_path, newline="") as f:
        old = list(csv.DictReader(f))
        if not old:
            sys.exit(f"{old_path}: no rows")
        head = list(old[0].keys())
    with open(new_path, newline="") as f:
        new = list(csv.DictReader(f))
    layers = {}
    for i, r in enumerate(old):
        layers.setdefault(key(r), {})[r["pattern"]] = i
    drift, replaced, added = [], 0, []
    for n in new:
        k = key(n)
        if k not in layers:
            sys.exit(f"{new_path}: layer {'x'.join(k[4:])} ({n['op']}, {n['gpus']} GPUs) is not in {old_path}")
        at = layers[k]
        if n["pattern"] == "bulk":
            if "bulk" in at:
                drift.append(float(n["us"]) / float(old[at["bulk"]]["us"]))
            continue
        row = {c: n.get(c, "") for c in head}
        us = lambda p: float(old[at[p]]["us"]) if p in at else None
        b, g, c, t = us("bulk"), us("gemm"), us("comm"), float(n["us"])
        row["bulk_over_pattern"] = f"{b / t:.3f}" if b else ""
        bound = max(g, c) if g and c else None
        ok = row.get("passed") == "true" and row.get("max_err_over_bound", "") != ""
        row["share_of_bound"] = f"{(b - t) / (b - bound):.2f}" if b and bound and b > bound and ok else ""
        if n["pattern"] in at:
            old[at[n["pattern"]]] = row
            replaced += 1
        else:
            old.append(row)
            at[n["pattern"]] = len(old) - 1
            added.append(row)
    w = csv.DictWriter(sys.stdout, fieldnames=head, lineterminator="\n")
    w.writeheader()
    w.writerows(old)
    msg = f"{new_path} -> {old_path}: {replaced} rows replaced, {len(added)} added"
    if drift:
        gm = math.exp(sum(map(math.log, drift)) / len(drift))
        msg += f"; bulk new / old over {len(drift)} layers: geomean {gm:.3f}, {min(drift):.3f}-{max(drift):.3f}"
    print(msg, file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
