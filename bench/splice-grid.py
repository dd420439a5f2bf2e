#!/usr/bin/env python3
"""Put re-timed rows into a committed `augur overlap tp` grid (issue 24): for the overlap
selector's training after a build changed some patterns' kernels (bench/regrid-fused.sh).

    python3 bench/splice-grid.py OLD.csv NEW.csv SPLICED.csv

Every row of NEW (but its bulk, which only measures drift) replaces OLD's row of the same layer
(device, gpus, op, dtype, m, n, k) and pattern, or is added to the layer; a layer of NEW that
OLD does not have is an error (the spliced grid keeps OLD's layers). The replaced rows'
bulk_over_pattern and share_of_bound are recomputed against OLD's bulk, GEMM alone and
collective alone. SPLICED is written through a temporary file and a rename, never over OLD or
NEW. On stderr: the rows replaced and added, and NEW's bulk over OLD's per layer (geomean and
range), the drift between the two runs. Bad input stops it with the file, line and value."""
import csv
import math
import os
import sys
import tempfile

LAYER = ("device", "gpus", "op", "dtype", "m", "n", "k")
NEEDED = LAYER + ("pattern", "passed", "us")


def read(path):
    """The rows of an `augur overlap tp` CSV, each with its line number; `us` checked."""
    try:
        f = open(path, newline="")
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    with f:
        r = csv.DictReader(f)
        head = r.fieldnames or []
        missing = [c for c in NEEDED if c not in head]
        if missing:
            sys.exit(f"{path}:1: no column {', '.join(missing)}: not an `augur overlap tp` CSV")
        rows = []
        for row in r:
            line = r.line_num
            if None in row or any(v is None for v in row.values()):
                sys.exit(f"{path}:{line}: {len(head)} columns in the header, not in this row")
            try:
                us = float(row["us"])
            except ValueError:
                us = math.nan
            if not (math.isfinite(us) and us > 0):
                sys.exit(f"{path}:{line}: us `{row['us']}` is not a time")
            rows.append((line, row))
    return head, rows


def same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def main(old_path, new_path, out_path):
    for p in (old_path, new_path):
        if same_file(out_path, p) or os.path.abspath(out_path) == os.path.abspath(p):
            sys.exit(f"{out_path}: is the input {p}; give another output")
    head, old_rows = read(old_path)
    _, new = read(new_path)
    if not old_rows:
        sys.exit(f"{old_path}: no rows")
    old = [r for _, r in old_rows]
    layers = {}
    for i, r in enumerate(old):
        layers.setdefault(tuple(r[c] for c in LAYER), {})[r["pattern"]] = i
    drift, replaced, added = [], 0, 0
    for line, n in new:
        k = tuple(n[c] for c in LAYER)
        if k not in layers:
            sys.exit(f"{new_path}:{line}: layer {'x'.join(k[4:])} ({n['op']}, {n['gpus']} GPUs) "
                     f"is not in {old_path}")
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
        row["share_of_bound"] = (f"{(b - t) / (b - bound):.2f}"
                                 if b and bound and b > bound and ok else "")
        if n["pattern"] in at:
            old[at[n["pattern"]]] = row
            replaced += 1
        else:
            old.append(row)
            at[n["pattern"]] = len(old) - 1
            added += 1
    folder = os.path.dirname(os.path.abspath(out_path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".splice-", suffix=".csv")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=head, lineterminator="\n")
            w.writeheader()
            w.writerows(old)
        os.replace(tmp, out_path)
    except BaseException:
        os.unlink(tmp)
        raise
    msg = f"{new_path} -> {out_path} (from {old_path}): {replaced} rows replaced, {added} added"
    if drift:
        gm = math.exp(sum(map(math.log, drift)) / len(drift))
        msg += (f"; bulk new / old over {len(drift)} layers: geomean {gm:.3f}, "
                f"{min(drift):.3f}-{max(drift):.3f}")
    print(msg, file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
