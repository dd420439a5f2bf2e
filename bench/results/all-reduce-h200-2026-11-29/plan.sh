#!/usr/bin/env bash
# Issue 24, the GEMM + all-reduce through the library's plan with the shipped model's pick (and
# the reduce-scatter's, unchanged): `augur overlap run` checks the plan on a caller's buffers and
# times it beside the harness. Through the device tool with carry [".carry/augur.xz"]:
#   bash bench/results/all-reduce-h200-2026-11-29/plan.sh
source bench/tp-env.sh
for op in all-reduce reduce-scatter; do
  for t in bf16 f16; do
    timeout 120 .carry/augur overlap run --gpus 2 --op $op --dtype $t \
      64,4096,4096 1024,8192,8192 8192,5120,13824 > "$OUT/plan-$op-$t.csv" 2>> "$OUT/plan.err"
    echo "$op $t rc=$? $((SECONDS - T0)) s"
  done
done
