#!/usr/bin/env bash
# How much the held-out evaluation moves with the family split: train on RUNS with split seeds
# 0..N-1 (each holding out a different 20% of families), evaluate each model on its held-out
# families, print one CSV line per seed. Usage: bash bench/eval-splits.sh RUNS.csv [N]
# TRAIN_ARGS and EVAL_ARGS pass more flags (e.g. TRAIN_ARGS="--gather-cost device").
set -euo pipefail
cd "$(dirname "$0")/.."
runs=$1; n=${2:-5}
augur="${CARGO_TARGET_DIR:-target}/release/augur"
[ -x "$augur" ] || cargo build --release --locked -p augur-cli
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "seed,matrices,families,samples,sel_over_oracle,sel_over_oracle_nnz_ge_1e6,worst,worst_matrix,vs_single,vs_alg1,vs_alg1_nnz_ge_1e5,vs_hand,gathered"
for ((s = 0; s < n; s++)); do
  "$augur" train "$runs" --out "$tmp/m$s.json" --split-seed "$s" ${TRAIN_ARGS:-} > /dev/null
  "$augur" eval "$runs" --model "$tmp/m$s.json" --charge-inference-ns 100 ${EVAL_ARGS:-} --json | python3 -c '
import json, sys
r = json.load(sys.stdin); o = r["overall"]
big = [b for b in r["buckets"] if b["bucket"] == "nnz >= 1e6"]
f = lambda x: "" if x is None else f"{x:.3f}"
print(",".join([sys.argv[1], str(r["matrices"]), str(r["families"]), str(o["samples"]),
    f(o["oracle_ratio"]), f(big[0]["oracle_ratio"] if big and big[0]["samples"] else None), f(o["worst"]), o["worst_matrix"], f(o["vs_single"]), f(o["vs_alg1"]),
    f(r["vs_alg1_nnz_ge_1e5"]), f(o["vs_hand"]), f(o["gathered"])]))' "$s"
done
