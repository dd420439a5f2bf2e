#!/usr/bin/env bash
# Models trained as the shipped GPU models are (--gather-cost host-rows --policy per-k) on the
# committed H200 runs, ten family splits, each evaluated on its held-out families (100 ns
# inference charged) in the committed runs restricted to the repeat's matrices (Asub) and in the
# repeat itself (B). From the repository root, after `cargo build --release`.
set -euo pipefail
R=bench/results/spmv-repeat-h200-2026-11-28; T=${TMPD:-/tmp/rep}; mkdir -p "$T"
target/release/augur collect merge --force --out "$T/B.csv" $R/runs-*.csv.gz
python3 - "$T" <<'PY'
import csv, sys
t = sys.argv[1]
keep = set(r['matrix'] for r in csv.DictReader(open(f'{t}/B.csv')))
rd = csv.reader(open('datasets/runs/spmv-cuda-f32-h200.csv')); w = csv.writer(open(f'{t}/Asub.csv', 'w'))
w.writerow(next(rd)); [w.writerow(r) for r in rd if r[0] in keep]
PY
for s in 0 1 2 3 4 5 6 7 8 9; do
  target/release/augur train datasets/runs/spmv-cuda-f32-h200.csv --out "$T/m$s.json" --split-seed $s --gather-cost host-rows --policy per-k > "$T/m$s.train.txt" 2>&1
  for e in Asub B; do target/release/augur eval "$T/$e.csv" --model "$T/m$s.json" --charge-inference-ns 100 --json > "$T/$e$s.json"; done
done
python3 - "$T" <<'PY'
import json, sys, collections
t = sys.argv[1]
for e in ('Asub', 'B'):
    acc = collections.defaultdict(list)
    for s in range(10):
        r = json.load(open(f'{t}/{e}{s}.json'))
        acc['all'].append(r['overall']['oracle_ratio'])
        for x in r['buckets']: acc[x['bucket']].append(x['oracle_ratio'])
    print(e, '  '.join(f'{k}: {sum(v) / len(v):.3f}' for k, v in acc.items()))
PY
