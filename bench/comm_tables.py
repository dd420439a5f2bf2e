#!/usr/bin/env python3
"""Markdown tables of docs/BENCHMARKS.md's communication section from `augur eval`'s per-message
CSV: bus bandwidth per pattern for selected sizes, the model's pick in bold, its time and NCCL's.

    python3 bench/comm_tables.py bench/results/comm-model-h200-2026-11-22/messages.csv [dtype]
"""
import csv
import sys

SIZES = [1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]
PATTERNS = {"all-reduce": ["nccl", "ll", "one-shot", "two-shot"],
            "all-gather": ["nccl", "ll", "pull", "push", "copy-engine"]}


def human(b):
    for unit, s in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << s:
            return f"{b >> s} {unit}"
    return f"{b} B"


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    dtype = sys.argv[2] if len(sys.argv) > 2 else "f32"
    for coll in ("all-reduce", "all-gather"):
        for world in ("2", "4"):
            got = {int(r["bytes"]): r for r in rows
                   if r["collective"] == coll and r["world"] == world and r["dtype"] == dtype}
            if not got:
                continue
            pats = PATTERNS[coll]
            print(f"{coll}, {world} GPUs, {dtype}: bus bandwidth GB/s (nccl-tests convention) per "
                  "pattern; **bold** = the model's pick; time of the pick")
            print("| bytes | " + " | ".join(pats) + " | pick | pick us | NCCL us |")
            print("|---:|" + "---:|" * len(pats) + "---|---:|---:|")
            for b in SIZES:
                r = got.get(b)
                if r is None:
                    continue
                cells = []
                for p in pats:
                    v = r.get(f"busbw_{p}", "")
                    cells.append("-" if v == "" else (f"**{v}**" if p == r["selected"] else v))
                print(f"| {human(b)} | " + " | ".join(cells)
                      + f" | {r['selected']} | {r['selected_us']} | {r['nccl_us']} |")
            print()


main()
