#!/usr/bin/env bash
# The comm and attention trees' split criterion (gini, regret, or chosen between them by
# cross-validation: the default since the thirty-fifth session), over fold counts, each scored
# on what training left out (attention: every 5th shape group; comm: sizes that are not a power
# of two). CPU only, a few seconds.
# Usage: bash bench/results/cost-criteria-cpu-2026-12-05/sweep.sh [augur binary]
set -euo pipefail
cd "$(dirname "$0")/../../.."
A=${1:-target/release/augur}
R=bench/results/attention-grid-h200-2026-11-24
C=bench/results/comm-model-h200-2026-11-22/train-runs.csv
T=$(mktemp -d)
for f in 3 4 5 6 8 10; do
  for c in gini regret gini,regret; do
    echo "== attention, $f folds, criteria $c"
    "$A" train "$R/attention-runs.csv.gz" --out "$T/a.json" --force --folds "$f" --criterion "$c" | grep -o "depth [0-9]*, .* leaves"
    for t in throughput graph; do
      "$A" eval "$R/attention-runs.csv.gz" --model "$T/a.json" --baselines "$R/baselines.csv" --timing "$t" | grep "^held-out" | sed "s/^/$t  /"
    done
  done
done
for f in 3 4 5 6 8; do
  for c in gini regret gini,regret; do
    echo "== comm, $f folds, criteria $c"
    "$A" train "$C" --out "$T/c.json" --force --folds "$f" --criterion "$c" | grep depth
    "$A" eval "$C" --model "$T/c.json" | grep -E "GPUs|unseen"
  done
done
rm -rf "$T"
