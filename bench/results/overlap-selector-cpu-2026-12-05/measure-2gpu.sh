#!/usr/bin/env bash
# NOT RUN YET (no device machine in the thirty-fourth session): LayerPlan::measured through
# `augur overlap run --measure` on two GPUs, both operations, over layers where the shipped
# model's held-out pick lost to bulk (bench/results/overlap-selector-cpu-2026-12-05/README.md)
# and some it wins: each row's `chosen` is `measured`, `why` ends with both plan-time times and
# the kept pattern, `passed` must be true (the check poisons after the measuring calls).
# One call on nvidia-h200-x2 (~120 s), carry [".carry/augur.xz"]; GPUS=4 on a machine of four
# (the same layers; a few are the 4-GPU held-out misses):
#   cargo build --release --locked -p augur-cli && xz -T0 -6 -c target/release/augur > .carry/augur.xz
#   bash bench/results/overlap-selector-cpu-2026-12-05/measure-2gpu.sh
source bench/tp-env.sh
R=(.carry/augur overlap run --gpus "${GPUS:-2}" --measure --samples 9)
timeout 200 "${R[@]}" --op reduce-scatter 16,3584,18944 64,3584,3584 128,3584,4096 256,4096,4096 1024,4096,4096 16384,8192,8192 \
  > "$OUT/measure-rs.csv" 2> "$OUT/measure-rs.err"
echo "reduce-scatter rc=$? $((SECONDS - T0)) s"
timeout 200 "${R[@]}" --op all-gather 32,40960,7168 128,28672,5120 256,7168,5120 1024,28672,4096 16384,6144,4096 \
  > "$OUT/measure-ag.csv" 2> "$OUT/measure-ag.err"
echo "all-gather rc=$? $((SECONDS - T0)) s"
cut -d, -f5-12 "$OUT"/measure-*.csv
