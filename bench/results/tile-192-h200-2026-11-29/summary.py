#!/usr/bin/env python3
"""Tables of the 128 x 192 tile runs (README.md), graph mode. For fit.csv and validate.csv: per
shape cuBLASLt and the best measured split of each tile width; then, geomean and least, cuBLASLt
over the choice of kernels.rs's tma_choice (re-implemented here) without the 192-wide tiles
("before") and with them at each cost factor of a 192-wide step, and the best 128-row candidate
over the choice. For fused-ab.csv: old build over new per pattern and shape (median of rounds).
Usage: summary.py DIR"""
import collections, csv, math, os, statistics, sys


def split_steps(k, s):
    kt = max(1, -(-k // 64))
    per = -(-kt // s)
    return per, -(-kt // per)


def estimate(m, n, k, bn, s, f192, sms=132):
    per, used = split_steps(k, s)
    if used != s or (s > 1 and per < 4):
        return None
    units = -(-m // 128) * -(-n // bn) * s
    per_sm = -(-units // sms)
    factor = {128: 1.4, 192: f192, 256: 1.0}[bn]
    products = 128 * bn * 64 * 2 / 7.5e6 * factor
    loads = (bn + min(m, 128)) * 64 * 2 / 80e3
    sm = per_sm * (per * max(products, loads) + 3.0)
    dram = (m * k + n * k + m * n) * 2 / 3.0e6
    t = math.hypot(sm, dram)
    return t + (2.0 + 8 * s * m * n / 3.0e6 if s > 1 else 0.0)


def choice(m, n, k, widths, f192=1.15):
    c = [(estimate(m, n, k, bn, s, f192), bn, s) for bn in widths for s in (1, 2, 4, 8, 16)]
    _, bn, s = min(x for x in c if x[0] is not None)
    return f"augur_tma_128x{bn}" + (f"_k{s}" if s > 1 else "")


def geo(x):
    return math.exp(sum(map(math.log, x)) / len(x))


def gemm_table(path):
    by = collections.defaultdict(dict)
    for r in csv.DictReader(open(path)):
        if r["device"] != "device":
            by[(int(r["m"]), int(r["n"]), int(r["k"]))][r["kernel"]] = float(r["graph_us"])
    print(f"## {os.path.basename(path)}: {len(by)} shapes, graph-mode us")
    print("m n k | cublaslt | best 256 | best 192 | best 128 | augur_tma_auto")
    for (m, n, k), d in sorted(by.items()):
        best = {}
        for bn in (256, 192, 128):
            v, name = min((v, kk) for kk, v in d.items() if kk.startswith(f"augur_tma_128x{bn}"))
            best[bn] = f"{v:.1f} ({name[len('augur_tma_'):]})"
        print(f"{m} {n} {k} | {d['cublaslt']:.1f} | {best[256]} | {best[192]} | {best[128]} | "
              f"{d['augur_tma_auto']:.1f}")
    rules = [("before (256, 128)", (256, 128), 1.15)] + [
        (f"with 192, factor {f}", (256, 192, 128), f) for f in (1.0, 1.1, 1.15, 1.2, 1.3, 1.4)]
    print("\nrule | cuBLASLt / choice: geomean (least) | best 128-row candidate / choice: geomean (least)")
    for label, widths, f in rules:
        cb, bb = [], []
        for (m, n, k), d in by.items():
            c = d[choice(m, n, k, widths, f)]
            best = min(v for kk, v in d.items() if kk.startswith("augur_tma_128x"))
            cb.append(d["cublaslt"] / c)
            bb.append(best / c)
        print(f"{label} | {geo(cb):.3f} ({min(cb):.2f}) | {geo(bb):.3f} ({min(bb):.2f})")
    auto = [d["cublaslt"] / d["augur_tma_auto"] for d in by.values()]
    print(f"augur_tma_auto as run (this build: factor 1.15, swapped kernel where tma_auto takes it)"
          f" | {geo(auto):.3f} ({min(auto):.2f}) |")
    print()


def fused_table(path):
    d = collections.defaultdict(list)
    for line in open(path):
        f = line.strip().split(",")
        if f[2] == "device":
            continue
        assert f[10] == "true", line
        d[(f[4], int(f[6]), int(f[7]), int(f[8]), f[9], f[0])].append(float(f[12]))
    print(f"## {os.path.basename(path)}: one GPU, held start, median of 2 rounds, us")
    print("op m n k | pattern | old | new | old / new | cuBLASLt alone / new")
    keys = sorted(set(k[:5] for k in d))
    for key in keys:
        if key[4] == "gemm":
            continue
        o = statistics.median(d[key + ("old",)])
        n = statistics.median(d[key + ("new",)])
        g = statistics.median(d[key[:4] + ("gemm", "new")])
        print(f"{key[0]} {key[1]} {key[2]} {key[3]} | {key[4]} | {o:.1f} | {n:.1f} | {o / n:.3f} | "
              f"{g / n:.3f}")


if __name__ == "__main__":
    base = sys.argv[1] if len(sys.argv) > 1 else "."
    for name in ("fit.csv", "validate.csv"):
        gemm_table(os.path.join(base, name))
    fused_table(os.path.join(base, "fused-ab.csv"))
