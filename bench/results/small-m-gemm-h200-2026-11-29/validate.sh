#!/usr/bin/env bash
# Issue 24, one H200: the final small-M choice (augur_tma_auto) on shapes neither the fit
# (swap.sh) nor the first check (heldout.sh) saw: Qwen2.5-32B's projections at TP 4 (QKV 1792 x
# 5120, o_proj 5120 x 1280, gate+up 13824 x 5120, down 5120 x 6912) at M 8-256, and two wide
# ones; every candidate of both TMA kernels beside it and cuBLASLt (validate.csv).
# From the repository root with .carry/augur.xz:  bash bench/results/small-m-gemm-h200-2026-11-29/validate.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
source bench/results/small-m-gemm-h200-2026-11-29/candidates.sh
for ms in "8 32 56 80" "112 144 192 256"; do
  S=()
  for m in $ms; do for s in 1792,5120 5120,1280 13824,5120 5120,6912; do S+=("$m,$s"); done; done
  timeout 280 $A overlap gemm --reps 7 --kernels "$K" "${S[@]}" >> "$OUT/validate.csv" 2>> "$OUT/validate.err"
  echo "validate $ms rc=$?"
done
timeout 120 $A overlap gemm --reps 7 --kernels "$K" 32,28672,4096 64,32768,8192 >> "$OUT/validate.csv" 2>> "$OUT/validate.err"
echo "wide rc=$?"
