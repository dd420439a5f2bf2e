#!/usr/bin/env bash
# Ten family splits of RUNS trained as the shipped GPU models are (--gather-cost host-rows
# --policy per-k, plus $TRAIN) and evaluated on each split's held-out families (inference charged
# 100 ns): the mean selected/oracle over all samples and at nnz >= 1e6, each seed's, the worst.
# Usage: TAG=name [TRAIN="..."] bash seeds.sh RUNS.csv     (models and evals in ${TMPD:-/tmp/hy})
R=$1; T=${TMPD:-/tmp/hy}; mkdir -p "$T"
for s in ${SEEDS:-0 1 2 3 4 5 6 7 8 9}; do
  target/release/augur train "$R" --out "$T/$TAG$s.json" --split-seed $s --gather-cost host-rows --policy per-k $TRAIN > "$T/$TAG$s.train.txt" 2>&1
  target/release/augur eval "$R" --model "$T/$TAG$s.json" --charge-inference-ns 100 --json > "$T/$TAG$s.eval.json" 2>/dev/null
done
python3 - "$T" "$TAG" <<'PY'
import json, os, sys
t, tag = sys.argv[1], sys.argv[2]
a, b, w = [], [], []
for s in range(10):
    f = f"{t}/{tag}{s}.eval.json"
    if not os.path.exists(f) or os.path.getsize(f) == 0:
        continue
    r = json.load(open(f))
    a.append(r["overall"]["oracle_ratio"])
    b.append([x for x in r["buckets"] if x["bucket"] == "nnz >= 1e6"][0]["oracle_ratio"])
    w.append(r["overall"]["worst"])
print(tag, "mean %.3f / %.3f" % (sum(a) / len(a), sum(b) / len(b)), " ".join("%.3f" % x for x in a),
      "| worst", " ".join("%.2f" % x for x in w))
PY
