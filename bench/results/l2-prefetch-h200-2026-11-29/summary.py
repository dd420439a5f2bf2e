"""Committed over patched build, medians of the three rounds, per shape and row blocks:
    python3 summary.py arrive.csv"""
import collections, statistics as st, sys

hdr, rows = None, []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split(",")
    if f[2] == "device":
        hdr = f[2:]
        continue
    d = dict(zip(hdr, f[2:]))
    d["build"] = f[1]
    rows.append(d)
print("every check passed:", all(r["passed"] == "true" for r in rows), f"({len(rows)} rows)")
agg = collections.defaultdict(lambda: collections.defaultdict(list))
for r in rows:
    k = (int(r["m"]), int(r["n"]), int(r["k"]), int(r["blocks"]))
    agg[k][r["build"]].append((float(r["graph_gated_us"]), float(r["gated_us"])))
print("m, n, k, blocks: row-gated GEMM, graph us committed / patched, committed over patched (graph, throughput)")
for k in sorted(agg):
    o, n = agg[k]["augur"], agg[k]["augur_new"]
    go, gn = st.median(x[0] for x in o), st.median(x[0] for x in n)
    to, tn = st.median(x[1] for x in o), st.median(x[1] for x in n)
    print(k, f"{go:.1f} / {gn:.1f}", f"{go / gn:.3f}", f"{to / tn:.3f}")
