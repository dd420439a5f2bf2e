#!/usr/bin/env python3
"""Timing-mode tables of issue 17 from committed runs: throughput, graph and latency side by side.

    python3 bench/timing_tables.py spmv datasets/runs/spmv-cuda-f32-h100.csv
    python3 bench/timing_tables.py attention bench/results/attention-grid-h200-2026-11-24

SpMV: per nnz bucket, over the matrices of the bucket, the fastest kernel's seconds per call in
each mode (the fastest by throughput; medians over the matrices), and the median ratio of latency
and graph to throughput over every kernel. Also the smallest shared (SuiteSparse) matrices:
how many reach a throughput below 4 us. Attention: per live K+V size bucket, the per-shape
fastest schedule's median per mode, and each baseline's median per mode.
"""
import csv
import statistics as st
import sys
from collections import defaultdict


def open_csv(path):
    """A CSV at `path`, or its gzipped copy `path.gz` (the committed results are gzipped)."""
    import gzip
    import os
    return open(path) if os.path.exists(path) else gzip.open(path + ".gz", "rt")


def med(v):
    v = [x for x in v if x is not None]
    return st.median(v) if v else float("nan")


def f(x):
    return float(x) if x not in ("", None) else None


def us(x):
    return "-" if x != x else f"{x * 1e6:.2f}"


def spmv(path):
    rows = [r for r in csv.DictReader(open(path)) if r["status"] == "ok"]
    by = defaultdict(list)
    for r in rows:
        by[r["matrix"]].append(r)
    buckets = [(0, 1e4, "nnz < 1e4"), (1e4, 1e5, "1e4 <= nnz < 1e5"),
               (1e5, 1e6, "1e5 <= nnz < 1e6"), (1e6, 1e99, "nnz >= 1e6")]
    dev = rows[0]["device"]
    print(f"SpMV, {dev} ({path}), f32, L2 not flushed; fastest kernel per matrix by throughput")
    print()
    print("| bucket | matrices | throughput us | graph us | latency us | latency / throughput | throughput / graph |")
    print("|---|---|---|---|---|---|---|")
    for lo, hi, name in buckets:
        ms = [m for m in by if lo <= int(by[m][0]["nnz"]) < hi]
        best = [min(by[m], key=lambda r: float(r["per_iter_s"])) for m in ms]
        every = [r for m in ms for r in by[m]]
        lt = med([float(r["latency_s"]) / float(r["per_iter_s"]) for r in every])
        tg = med([float(r["per_iter_s"]) / float(r["graph_s"]) for r in every if r["graph_s"]])
        print(f"| {name} | {len(ms)} | {us(med([f(r['per_iter_s']) for r in best]))} | "
              f"{us(med([f(r['graph_s']) for r in best]))} | {us(med([f(r['latency_s']) for r in best]))} | "
              f"{lt:.2f} | {tg:.2f} |")
    real = [m for m in by if by[m][0]["source"].endswith(".mtx.gz")]
    small = sorted(real, key=lambda m: int(by[m][0]["nnz"]))[:20]
    tp = [min(float(r["per_iter_s"]) for r in by[m]) for m in small]
    gr = [min(float(r["graph_s"]) for r in by[m] if r["graph_s"]) for m in small]
    print()
    print(f"The 20 smallest shared matrices (nnz {by[small[0]][0]['nnz']}-{by[small[-1]][0]['nnz']}): "
          f"best throughput median {us(med(tp))} us (range {us(min(tp))}-{us(max(tp))}), "
          f"{sum(t < 4e-6 for t in tp)} of 20 below 4 us; graph median {us(med(gr))} us.")
    nog = sum(1 for r in rows if not r["graph_s"])
    print(f"Rows without a graph figure (capture failed): {nog} of {len(rows)}.")


def attention(d):
    runs = [r for r in csv.DictReader(open_csv(f"{d}/attention-runs.csv")) if r["status"] == "ok"]
    base = [r for r in csv.DictReader(open(f"{d}/baselines.csv")) if r["status"] == "ok"]
    by = defaultdict(list)
    for r in runs:
        if r["schedule"] != "fa2":
            by[r["shape"]].append(r)
    kvb = {s: float(rs[0]["f_kv_bytes"]) for s, rs in by.items()}
    buckets = [(0, 16e6, "< 16 MB"), (16e6, 256e6, "16-256 MB"), (256e6, 1e99, ">= 256 MB")]
    bb = defaultdict(dict)
    for r in base:
        bb[r["baseline"]][r["shape"]] = r
    print(f"Decode attention, {runs[0]['device']} ({d}): per-shape fastest schedule and baselines, medians in us")
    print()
    names = sorted(bb)
    head = "| live K+V | shapes | augur throughput | graph | latency |"
    for n in names:
        head += f" {n} throughput | graph | latency |"
    print(head)
    print("|---" * (5 + 3 * len(names)) + "|")
    for lo, hi, name in buckets:
        ss = [s for s in by if lo <= kvb[s] < hi]
        best = [min(by[s], key=lambda r: float(r["median_s"])) for s in ss]
        line = (f"| {name} | {len(ss)} | {us(med([f(r['median_s']) for r in best]))} | "
                f"{us(med([f(r['graph_s']) for r in best]))} | {us(med([f(r['latency_s']) for r in best]))} |")
        for n in names:
            rs = [bb[n][s] for s in ss if s in bb[n]]
            line += (f" {us(med([f(r['median_s']) for r in rs]))} | {us(med([f(r['graph_s']) for r in rs]))} | "
                     f"{us(med([f(r['latency_s']) for r in rs]))} |")
        print(line)


if __name__ == "__main__":
    {"spmv": spmv, "attention": attention}[sys.argv[1]](sys.argv[2])
