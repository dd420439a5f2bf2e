# Where the held-out loss of the committed H100 selection goes (issue 18): per (k, nnz bucket,
# tier) the share of the summed log slowdown and the part of it that is the features' cost, and
# the median feature cost where the policy gathers at k = 1, nnz >= 1e6.
# Usage: python3 gap.py EVAL0.json ... (augur eval RUNS --model M --charge-inference-ns 100 --json)
import json, math, collections, statistics, sys
rows = [x for f in sys.argv[1:] for x in json.load(open(f))["samples"]]
b = lambda n: "<1e4" if n < 1e4 else "1e4-1e5" if n < 1e5 else "1e5-1e6" if n < 1e6 else ">=1e6"
tot = sum(math.log(x["selected_s"] / x["oracle_s"]) for x in rows)
feat = lambda x: math.log(x["selected_s"] / (x["selected_s"] - x["features_s"] - 1e-7))
print(f"samples {len(rows)}, geomean sel/oracle {math.exp(-tot / len(rows)):.3f}, "
      f"share of the loss that is feature cost {sum(map(feat, rows)) / tot:.3f}")
g = collections.defaultdict(lambda: [0, 0.0, 0.0])
for x in rows:
    k = (int(x["iterations"]), b(x["nnz"]), x["tier"])
    g[k][0] += 1; g[k][1] += math.log(x["selected_s"] / x["oracle_s"]); g[k][2] += feat(x)
print("k, nnz, tier: samples, share of loss, of it features, bucket geomean")
for k, v in sorted(g.items()):
    print(k, v[0], f"{v[1] / tot:.3f}", f"{v[2] / tot:.3f}", f"{math.exp(-v[1] / v[0]):.3f}")
big = [x["features_s"] * 1e6 for x in rows
       if x["iterations"] == 1 and x["nnz"] >= 1e6 and x["tier"] == "gathered"]
print(f"k = 1, nnz >= 1e6, gathered: {len(big)} samples, median feature cost {statistics.median(big):.1f} us")
