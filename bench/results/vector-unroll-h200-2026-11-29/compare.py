"""Old over new per-iteration time (> 1: the unrolled build faster) per kernel, on the matrices
both builds timed, by nnz and by mean row length.
    python3 compare.py augur.csv.gz augur_new.csv.gz"""
import csv, gzip, math, sys


def load(f):
    d = {}
    with gzip.open(f, "rt") as fh:
        for x in csv.DictReader(fh):
            if x["status"] == "ok":
                d[(x["matrix"], x["kernel"])] = (float(x["per_iter_s"]), int(x["nnz"]),
                                                  float(x["f_mean_row_len"]))
    return d


def g(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


o, n = load(sys.argv[1]), load(sys.argv[2])
print("kernel: old/new geomean (matrices) | nnz < 1e5, 1e5-1e6, >= 1e6 | mean row < 8, 8-32, >= 32 | least, most")
for k in sorted({k for _, k in o}):
    r = [(o[key][0] / n[key][0], o[key][1], o[key][2]) for key in o if key[1] == k and key in n]
    by_nnz = [[x for x, z, _ in r if z < 1e5], [x for x, z, _ in r if 1e5 <= z < 1e6],
              [x for x, z, _ in r if z >= 1e6]]
    by_len = [[x for x, _, l in r if l < 8], [x for x, _, l in r if 8 <= l < 32],
              [x for x, _, l in r if l >= 32]]
    print(f"{k:9s} {g([x for x, _, _ in r]):.3f} ({len(r)}) | "
          + " ".join(f"{g(v):.3f} ({len(v)})" for v in by_nnz) + " | "
          + " ".join(f"{g(v):.3f} ({len(v)})" for v in by_len)
          + f" | {min(x for x, _, _ in r):.2f}, {max(x for x, _, _ in r):.2f}")
