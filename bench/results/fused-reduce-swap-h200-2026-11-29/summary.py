#!/usr/bin/env python3
"""Tables of bench/results/fused-reduce-swap-h200-2026-11-29 (run from that folder):
one-gpu/ (the swapped fused-reduce:0 against a10ecef and cuBLASLt), the three zero runs (the
launch-zeroed sum against the host's memset), scope/ (the own rows' counts at GPU scope),
first-x2/rs-2.csv (a10ecef on 2 GPUs)."""
import collections, math, os, statistics as st


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v))


def load(path):
    """Rows prefixed `build,` or `build,round,`: (build, m, n, k, pattern) -> [us]."""
    d = collections.defaultdict(list)
    hdr = None
    for line in open(path):
        p = line.rstrip("\n").split(",")
        at = p.index("device") if "device" in p else None
        if at is not None:
            hdr, skip = p[at:], at
            continue
        r = dict(zip(hdr, p[skip:]))
        d[(p[0], int(r["m"]), int(r["n"]), int(r["k"]), r["pattern"])].append(float(r["us"]))
    return d


def one_gpu():
    new, old = load("one-gpu/rs.csv"), load("one-gpu/rs-old.csv")
    print("one-gpu: fused-reduce:0 on one H200, us (median of two rounds); cuBLASLt = the gemm pattern")
    print(f"{'M x N x K':>18} {'cuBLASLt':>8} {'a10ecef :0':>10} {'a10ecef :0:4':>12} {'new :0':>7} {':0:2':>6} {':0:4':>6} {':0:8':>6}  cuBLASLt/new best (a10ecef)")
    rat, rat_old = [], []
    for s in sorted({k[1:4] for k in new}):
        g = st.median(new[("new",) + s + ("gemm",)] + old[("old",) + s + ("gemm",)])
        o = [st.median(old[("old",) + s + (p,)]) for p in ["fused-reduce:0", "fused-reduce:0:4"]]
        n = [st.median(new[("new",) + s + (p,)]) for p in
             ["fused-reduce:0", "fused-reduce:0:2", "fused-reduce:0:4", "fused-reduce:0:8"]]
        rat.append(g / min(n))
        rat_old.append(g / min(o))
        print(f"{'x'.join(map(str, s)):>18} {g:8.1f} {o[0]:10.1f} {o[1]:12.1f} {n[0]:7.1f} {n[1]:6.1f} {n[2]:6.1f} {n[3]:6.1f}  {g / min(n):.2f} ({g / min(o):.2f})")
    print(f"geomean cuBLASLt over the best split: new {gm(rat):.3f}, a10ecef {gm(rat_old):.3f}; least new {min(rat):.2f}\n")


def zero(folder, name="zero.csv",
         what="host memset + ready words (old) vs zeroed in the launch (new)"):
    d = load(os.path.join(folder, name))
    print(f"{folder}: fused-reduce:0, {what}, us")
    by = collections.defaultdict(list)
    for s in sorted({k[1:4] for k in d}):
        g = lambda b, p: st.median(d[(b,) + s + (p,)])
        o0, n0, o4, n4 = (g("old", "fused-reduce:0"), g("new", "fused-reduce:0"),
                          g("old", "fused-reduce:0:4"), g("new", "fused-reduce:0:4"))
        by["M <= 64" if s[0] <= 64 else "M >= 128"].append(o0 / n0)
        print(f"{'x'.join(map(str, s)):>16}  :0 {o0:6.1f} -> {n0:6.1f}   :0:4 {o4:6.1f} -> {n4:6.1f}")
    print("  old over new (:0), geomean: " + ", ".join(f"{k} {gm(v):.3f}" for k, v in by.items()) + "\n")


def split():
    d = load("split/split.csv")
    pats = ["fused-reduce:0", "fused-reduce:0:2", "fused-reduce:0:4", "fused-reduce:0:8"]
    print("split/: 28db7c9 (old, red.add.f32) vs v4 (new, red.add.v4.f32), us")
    by = collections.defaultdict(list)
    best = collections.defaultdict(list)
    for s in sorted({k[1:4] for k in d}):
        g = lambda b, p: st.median(d[(b,) + s + (p,)])
        cub = st.median(d[("new",) + s + ("gemm",)] + d[("old",) + s + ("gemm",)])
        print(f"{'x'.join(map(str, s)):>16}  cuBLASLt {cub:5.1f}  " + "  ".join(
            f"{p[13:] or ':0'} {g('old', p):5.1f} -> {g('new', p):5.1f}" for p in pats))
        for p in pats[1:]:
            by[p].append(g("old", p) / g("new", p))
        for b in ("old", "new"):
            best[b].append(cub / min(g(b, p) for p in pats))
    print("  old over new: " + ", ".join(f"{p} {gm(v):.3f}" for p, v in by.items()))
    print(f"  cuBLASLt over the fastest: old {gm(best['old']):.3f}, new {gm(best['new']):.3f}\n")


def bar():
    """bar/: bench/fused-one-gpu.sh's 20 layers, against the sixteenth session's run of it."""
    import csv
    old_dir = "../held-start-h200-2026-11-28/one-gpu/"

    def rows(path):
        d = collections.defaultdict(dict)
        for r in csv.DictReader(open(path)):
            d[(int(r["m"]), int(r["n"]), int(r["k"]))][r["pattern"]] = float(r["us"])
        return d

    print("bar/: cuBLASLt alone over the fused kernel on one GPU, 20 layers (bench/fused-one-gpu.sh);"
          " the sixteenth session's run (held-start-h200-2026-11-28/one-gpu/) -> now")
    for op, pats in [("all-gather", ["fused-push:1:8", "fused-push:2:16"]),
                     ("reduce-scatter", ["fused-reduce:0", "fused-reduce:16", "fused-reduce:32"])]:
        new, old = rows(f"bar/one-gpu-{op}.csv"), rows(old_dir + f"one-gpu-{op}.csv")
        for p in pats:
            def part(d, keep):
                return [d[s]["gemm"] / d[s][p] for s in d if keep(s[0])]
            line = f"  {p:<16}"
            for name, keep in [("all", lambda m: True), ("M < 1024", lambda m: m < 1024),
                               ("M >= 1024", lambda m: m >= 1024)]:
                o, n = part(old, keep), part(new, keep)
                line += f" {name}: {gm(o):.3f} -> {gm(n):.3f} (>= 0.8: {sum(x >= 0.8 for x in o)} -> {sum(x >= 0.8 for x in n)} of {len(n)});"
            print(line)
    print()


def two_gpu():
    d = load("first-x2/rs-2.csv")
    print("first-x2/rs-2.csv: a10ecef on 2 H200s (the swapped builds stopped), us")
    for s in sorted({k[1:4] for k in d}):
        v = {p: d[("head",) + s + (p,)][0] for p in ["bulk", "fused-reduce:0", "fused-reduce:0:4"]}
        print(f"{'x'.join(map(str, s)):>16}  bulk {v['bulk']:6.1f}  :0 {v['fused-reduce:0']:6.1f}  :0:4 {v['fused-reduce:0:4']:6.1f}")


if __name__ == "__main__":
    one_gpu()
    for f in ["first-x2/zero-all-threads", "zero-consumers", "zero-final"]:
        zero(f)
    zero("scope", "scope.csv", "3ae08ce (old) vs the own rows counted at GPU scope (new)")
    split()
    bar()
    two_gpu()
