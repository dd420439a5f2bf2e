#!/usr/bin/env python3
"""Summarise an `augur bench spmv --backend cuda` CSV as the Markdown table of docs/BENCHMARKS.md.

Usage: python3 bench/summarize_gpu.py bench/results/gpu-bench-f32-<device>-<date>.csv
Prints the table, the geomean of (best non-cuSPARSE kernel vs cuSPARSE ALG1) over nnz >= 1e5, and
each balanced kernel's worst ratio to the per-matrix oracle on the large skewed matrices.
"""
import csv
import math
import re
import sys

def short(m):
    """The spec without its seed and the parameters left at their defaults."""
    m = m.split(",seed")[0].replace(",a=0.57,b=0.19,c=0.19,sym=0,perm=1", "")
    params = dict(kv.split("=", 1) for kv in m.split(":", 1)[1].split(",")) if ":" in m else {}
    n = params.get("rows", params.get("n"))
    for key in ("cols", "max", "hub_len", "ny", "nz"):
        if key in params and params[key] in (n, params.get("nx")):
            m = re.sub(r",%s=%s(?=,|$)" % (key, re.escape(params[key])), "", m)
    return m


def main(path):
    by, order = {}, []
    for r in csv.DictReader(open(path)):
        if r["matrix"] not in by:
            order.append(r["matrix"])
        by.setdefault(r["matrix"], {})[r["kernel"]] = r
    ms = lambda r: float(r["median_s"])
    print("| matrix | nnz | floor ms | fastest | best of ours | % of copy | vs ALG1 | ALG1 ms | ALG2 ms | gather (SpMVs) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for m in order:
        ks = by[m]
        ours = min((k for k in ks if not k.startswith("cusparse")), key=lambda k: ms(ks[k]))
        best = min(ks, key=lambda k: ms(ks[k]))
        o = ks[ours]
        if int(o["nnz"]) >= 1e5:
            ratios.append(float(o["speedup_vs_alg1"]))
        print("| `%s` | %s | %.3f | %s | %s %.3f ms | %.0f%% | %.2fx | %.3f | %.3f | %.2f |" % (
            short(m), format(int(o["nnz"]), ","), float(o["floor_s"]) * 1e3, best, ours,
            ms(o) * 1e3, 100 * float(o["fraction_of_copy"]), float(o["speedup_vs_alg1"]),
            ms(ks["cusparse_alg1"]) * 1e3, ms(ks["cusparse_alg2"]) * 1e3,
            float(o["gather_per_spmv"])))
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print("\ngeomean best-ours / ALG1 over nnz >= 1e5: %.3f (n=%d)" % (g, len(ratios)))
    skewed = [m for m in order if m.startswith(("powerlaw:rows=10000000", "rmat:scale=22", "hubs:n=4000000"))]
    for k in ["merge_path", "merge_tiled", "nnz_split", "binned"]:
        worst = max(ms(by[m][k]) / min(ms(r) for r in by[m].values()) for m in skewed)
        print("%s: worst / oracle on the large skewed matrices %.2f" % (k, worst))


if __name__ == "__main__":
    main(sys.argv[1])
