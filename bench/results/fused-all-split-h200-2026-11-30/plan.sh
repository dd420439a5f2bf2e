#!/usr/bin/env bash
# Issue 24: `fused-all` with its k split through the library's plan (`augur overlap run`: a
# caller's buffers, checked, timed beside the harness): the shipped model's pick, `fused-all`
# (split by itself at the first three shapes) and `fused-all:2` given, both types, 2 GPUs.
# Through the device tool with carry [".carry/augur.xz"]:
#   bash bench/results/fused-all-split-h200-2026-11-30/plan.sh
source bench/tp-env.sh
for t in bf16 f16; do
  for p in "" fused-all fused-all:2; do
    timeout 90 .carry/augur overlap run --gpus 2 --op all-reduce --dtype $t ${p:+--pattern $p} \
      --samples 5 16,3584,18944 64,4096,14336 32,5120,14336 200,4096,4096 8192,5120,13824 \
      >> "$OUT/plan.csv" 2>> "$OUT/plan.err"
    echo "$t ${p:-model} rc=$? $((SECONDS - T0)) s"
  done
done
