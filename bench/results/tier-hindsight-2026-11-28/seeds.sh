#!/usr/bin/env bash
# Ten family splits trained as the shipped GPU models are, each evaluated on its held-out
# families with `augur eval --json` (every sample with each tier's pick and cost, `per_tier`).
# Usage: TAG=name [RUNS=datasets/runs/spmv-cuda-f32-h200.csv] [TRAIN="..."] bash seeds.sh
# Writes ${TMPD:-/tmp/th}/$TAG/{m,e}<seed>.json and prints the mean over seeds (all / nnz >= 1e6).
set -e
R=${RUNS:-datasets/runs/spmv-cuda-f32-h200.csv}
A=${AUGUR:-target/release/augur}
D=${TMPD:-/tmp/th}/${TAG:?TAG=name}; mkdir -p "$D"
for s in 0 1 2 3 4 5 6 7 8 9; do
  ($A train $R --out $D/m$s.json --split-seed $s --gather-cost host-rows --policy per-k $TRAIN > /dev/null 2>&1 &&
   $A eval $R --model $D/m$s.json --charge-inference-ns 100 --json > $D/e$s.json) &
  if [ $s = 4 ]; then wait; fi
done
wait
python3 - "$D" <<'PY'
import json, sys
a, b, w = [], [], []
for s in range(10):
    r = json.load(open(f'{sys.argv[1]}/e{s}.json'))
    a.append(r['overall']['oracle_ratio']); w.append(r['overall']['worst'])
    b.append([x for x in r['buckets'] if x['bucket'] == 'nnz >= 1e6'][0]['oracle_ratio'])
print(f'{sys.argv[1]}: mean all {sum(a)/10:.4f}  nnz >= 1e6 {sum(b)/10:.4f}  least worst {min(w):.3f}  per seed',
      ' '.join(f'{x:.3f}' for x in a))
PY
