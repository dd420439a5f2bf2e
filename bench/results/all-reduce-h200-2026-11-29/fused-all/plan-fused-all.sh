#!/usr/bin/env bash
# Issue 24: `fused-all` through the library's plan (`augur overlap run`: a caller's buffers,
# checked, timed beside the harness), the shipped model's pick and `fused-all` given, both
# types, 2 GPUs. Through the device tool with carry [".carry/augur.xz"]:
#   bash bench/results/all-reduce-h200-2026-11-29/fused-all/plan-fused-all.sh
source bench/tp-env.sh
for t in bf16 f16; do
  for p in "" fused-all; do
    timeout 90 .carry/augur overlap run --gpus 2 --op all-reduce --dtype $t ${p:+--pattern $p} \
      --samples 5 64,4096,4096 200,4096,4096 1024,8192,8192 8192,5120,13824 \
      >> "$OUT/plan-fused-all.csv" 2>> "$OUT/plan-fused-all.err"
    echo "$t ${p:-model} rc=$? $((SECONDS - T0)) s"
  done
done
