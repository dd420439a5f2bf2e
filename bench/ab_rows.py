"""Read an A/B file of `augur overlap tp` rows (issue 24): each row prefixed by the build or
mode that ran it and the round (`base,1,<the tp CSV's columns>`), header rows repeated per run
(as the results folders' A/B scripts write them with `sed "s/^/$b,$round,/"`).

    import ab_rows
    runs = ab_rows.read("convert.csv")
    runs.best("new", (16, 4096, 1024), "fused-reduce:0")   # fastest median over the rounds
    runs.one("new", "1", (16, 4096, 1024), "gemm")         # one round's median

A row that is not a header and does not parse stops the script with its file, line and value."""
import collections
import csv
import math
import sys


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


class Runs:
    def __init__(self):
        self.times = collections.defaultdict(list)  # (build, m, n, k, pattern) -> medians
        self.rounds = {}  # (build, round, m, n, k, pattern) -> median
        self.all_passed = True

    def layers(self):
        return sorted({k[1:4] for k in self.times})

    def best(self, build, layer, pattern):
        return min(self.times[(build,) + tuple(layer) + (pattern,)])

    def one(self, build, rnd, layer, pattern):
        return self.rounds[(build, rnd) + tuple(layer) + (pattern,)]

    def round_keys(self, build, rnd):
        """(layer, pattern) of every row that `build` ran in round `rnd`."""
        return [(k[2:5], k[5]) for k in self.rounds if k[:2] == (build, rnd)]


def read(path):
    runs, hdr = Runs(), None
    try:
        f = open(path, newline="")
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    with f:
        for line, r in enumerate(csv.reader(f), 1):
            if len(r) > 2 and r[2] == "device":
                hdr = r[2:]
                continue
            if hdr is None or len(r) != len(hdr) + 2:
                sys.exit(f"{path}:{line}: not a row of an `overlap tp` A/B file: {','.join(r)[:80]}")
            x = dict(zip(hdr, r[2:]))
            try:
                layer = (int(x["m"]), int(x["n"]), int(x["k"]))
                us = float(x["us"])
            except ValueError:
                sys.exit(f"{path}:{line}: a shape or time that is not a number: {x['m']},"
                         f"{x['n']},{x['k']} {x['us']}")
            runs.all_passed &= x["passed"] == "true"
            runs.times[(r[0],) + layer + (x["pattern"],)].append(us)
            runs.rounds[(r[0], r[1]) + layer + (x["pattern"],)] = us
    return runs


def spread(runs, a, b, patterns=None):
    """Lines: each build's round 1 over its round 2, and a over b within each round."""
    out = []
    for build in (a, b):
        v = [runs.one(build, "1", l, p) / runs.one(build, "2", l, p) for l, p in runs.round_keys(build, "1")]
        out.append(f"{build}: round 1 over round 2, geomean {geomean(v):.3f}, "
                   f"range {min(v):.3f}-{max(v):.3f}")
    v = [runs.one(a, r, l, p) / runs.one(b, r, l, p)
         for l, p in runs.round_keys(b, "1") if patterns is None or p in patterns for r in "12"]
    out.append(f"{a} over {b} within each round: geomean {geomean(v):.3f}, range "
               f"{min(v):.3f}-{max(v):.3f}, below 1 on {sum(x < 1 for x in v)} of {len(v)}")
    return out
