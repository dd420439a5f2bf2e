#!/usr/bin/env python3
"""Tables of the tail-split runs (README.md), graph mode. fit.csv / validate.csv: per shape
where a tail split measured faster than the best whole-tile candidate by 2% or the build's auto
took one, cuBLASLt, the best of each; then cuBLASLt over the choice of kernels.rs's tma_auto
rule for the 128-row tiles (re-implemented here: tma_choice, and the tail split where its
estimate is lower by TAIL_MARGIN) at several margins. final-check/auto.csv against
auto-old.csv: augur_tma_auto before this session (209f558) and now, per M. same-kernel.csv: the
128 x 256 kernel in both builds, alternating. Usage: summary.py DIR"""
import collections, csv, math, os, re, statistics, sys

TAIL = re.compile(r"_t\d+$")


def split_steps(k, s):
    kt = max(1, -(-k // 64))
    per = -(-kt // s)
    return per, -(-kt // per)


def step_us(m, bn):
    factor = {128: 1.4, 192: 1.15, 256: 1.0}[bn]
    return max(128 * bn * 64 * 2 / 7.5e6 * factor, (bn + min(m, 128)) * 64 * 2 / 80e3)


def dram_us(m, n, k):
    return (m * k + n * k + m * n) * 2 / 3.0e6


def whole_estimate(m, n, k, bn, s, sms=132):
    per, used = split_steps(k, s)
    if used != s or (s > 1 and per < 4):
        return None
    units = -(-m // 128) * -(-n // bn) * s
    t = math.hypot(-(-units // sms) * (per * step_us(m, bn) + 3.0), dram_us(m, n, k))
    return t + (2.0 + 8 * s * m * n / 3.0e6 if s > 1 else 0.0)


def tail_estimate(m, n, k, bn, s, sms=132):
    tiles = -(-m // 128) * -(-n // bn)
    whole, tail = tiles // sms * sms, tiles % sms
    per, used = split_steps(k, s)
    if tail == 0 or s < 2 or used != s or per < 4:
        return None
    kt = max(1, -(-k // 64))
    sm = whole // sms * (kt * step_us(m, bn) + 3.0) + -(-(tail * s) // sms) * (
        per * step_us(m, bn) + 3.0)
    return math.hypot(sm, dram_us(m, n, k)) + 2.0 + 8 * s * tail * 128 * bn / 3.0e6


def name(bn, s, tail):
    return f"augur_tma_128x{bn}" + (f"_t{s}" if tail else (f"_k{s}" if s > 1 else ""))


def choice(m, n, k, margin):
    w = min(x for x in ((whole_estimate(m, n, k, bn, s), bn, s) for bn in (256, 192, 128)
                        for s in (1, 2, 4, 8, 16)) if x[0] is not None)
    t = [x for x in ((tail_estimate(m, n, k, bn, s), bn, s) for bn in (256, 192, 128)
                     for s in (2, 3, 4, 6, 8)) if x[0] is not None]
    if t and min(t)[0] < (1 - margin) * w[0]:
        return name(min(t)[1], min(t)[2], True)
    return name(w[1], w[2], False)


def geo(x):
    return math.exp(sum(map(math.log, x)) / len(x))


def load(path):
    by, chosen = collections.defaultdict(dict), {}
    for r in csv.DictReader(open(path)):
        if r["device"] == "device":
            continue
        assert r["passed"] == "true", r
        s = (int(r["m"]), int(r["n"]), int(r["k"]))
        by[s][r["kernel"]] = float(r["graph_us"])
        if r["kernel"] == "augur_tma_auto":
            chosen[s] = r["tma_choice"]
    return by, chosen


def sweep(path):
    by, chosen = load(path)
    print(f"## {os.path.basename(path)}: {len(by)} shapes, graph-mode us")
    print("m n k | cublaslt | best whole | best tail | augur_tma_auto (its pick)")
    for s, d in sorted(by.items()):
        rows = [(v, kk) for kk, v in d.items() if kk.startswith("augur_tma_128x")]
        whole = min(x for x in rows if not TAIL.search(x[1]))
        tail = min(x for x in rows if TAIL.search(x[1]))
        if tail[0] < 0.98 * whole[0] or TAIL.search(chosen[s]):
            print(f"{s[0]} {s[1]} {s[2]} | {d['cublaslt']:.1f} | {whole[0]:.1f} {whole[1][10:]} | "
                  f"{tail[0]:.1f} {tail[1][10:]} | {d['augur_tma_auto']:.1f} ({chosen[s]})")
    print("\nrule | tail split on | cuBLASLt / choice: geomean (least) | best 128-row / choice")
    for label, margin in [("no tail split", 9.0)] + [(f"margin {x}", x) for x in
                                                     (0.0, 0.03, 0.05, 0.08, 0.1, 0.15)]:
        cb, bb, on = [], [], 0
        for (m, n, k), d in by.items():
            c = choice(m, n, k, margin)
            on += bool(TAIL.search(c))
            best = min(v for kk, v in d.items() if kk.startswith("augur_tma_128x"))
            cb.append(d["cublaslt"] / d[c])
            bb.append(best / d[c])
        print(f"{label} | {on} | {geo(cb):.3f} ({min(cb):.2f}) | {geo(bb):.3f} ({min(bb):.2f})")
    print()


def auto(base):
    new, _ = load(os.path.join(base, "final-check", "auto.csv"))
    old, _ = load(os.path.join(base, "final-check", "auto-old.csv"))
    fitw = {(1536, 4096), (7168, 4096), (2560, 8192), (14336, 8192), (4096, 1024), (4096, 3584),
            (8192, 2048), (8192, 7168)}
    fitm = {256, 512, 1024, 2048, 3072, 4096}
    print("## final-check: augur_tma_auto, 209f558 (old, run first) and this build (new), "
          "cuBLASLt over it, geomean (least); shapes >= 0.8")
    groups = [("all", lambda s: True),
              ("fitted on (fit.csv's shapes)", lambda s: s[0] in fitm and s[1:] in fitw),
              ("not fitted on", lambda s: not (s[0] in fitm and s[1:] in fitw))]
    groups += [(f"M {m}", lambda s, m=m: s[0] == m) for m in sorted({s[0] for s in new})]
    for label, sel in groups:
        S = [s for s in new if sel(s)]
        a = [new[s]["cublaslt"] / new[s]["augur_tma_auto"] for s in S]
        b = [old[s]["cublaslt"] / old[s]["augur_tma_auto"] for s in S]
        sp = [old[s]["augur_tma_auto"] / new[s]["augur_tma_auto"] for s in S]
        print(f"{label} ({len(S)}) | old {geo(b):.3f} ({min(b):.2f}), {sum(x >= 0.8 for x in b)} | "
              f"new {geo(a):.3f} ({min(a):.2f}), {sum(x >= 0.8 for x in a)} | old / new time "
              f"{geo(sp):.3f} ({min(sp):.2f}-{max(sp):.2f})")
    print()


def same_kernel(path):
    d = collections.defaultdict(list)
    for line in open(path):
        f = line.strip().split(",")
        if f[2] == "device":
            continue
        assert f[9] == "true", line
        d[(f[0], int(f[4]), int(f[5]), int(f[6]), f[7])].append(float(f[13]))
    print("## same-kernel.csv: augur_tma_128x256 in both builds, alternating (new first), "
          "median of 2 rounds, us (rounds)")
    for s in sorted({k[1:4] for k in d}):
        o, n = d[("old",) + s + ("augur_tma_128x256",)], d[("new",) + s + ("augur_tma_128x256",)]
        co, cn = d[("old",) + s + ("cublaslt",)], d[("new",) + s + ("cublaslt",)]
        print(f"{s[0]} {s[1]} {s[2]} | old {statistics.median(o):.1f} {o} | new "
              f"{statistics.median(n):.1f} {n} | old / new {statistics.median(o) / statistics.median(n):.3f}"
              f" | cuBLASLt beside: {statistics.median(co):.1f}, {statistics.median(cn):.1f}")


if __name__ == "__main__":
    base = sys.argv[1] if len(sys.argv) > 1 else "."
    for f in ("fit.csv", "validate.csv"):
        sweep(os.path.join(base, f))
    auto(base)
    same_kernel(os.path.join(base, "same-kernel.csv"))
