#!/usr/bin/env bash
# Issue 24, one H200: the TMA kernels' choice at small M checked on shapes it was not fitted on:
# `augur overlap gemm`'s default layer shapes (Llama-3-8B's projections at TP 4, 8192 x 8192) at M
# 16-160, every candidate of both TMA kernels (the swapped one in both token tiles and every
# split; the 128-row one in both widths and the splits the old choice took from) beside
# augur_tma_auto and cuBLASLt (heldout.csv); then f16 on a few of them (heldout-f16.csv).
# From the repository root with .carry/augur.xz:  bash bench/results/small-m-gemm-h200-2026-11-29/heldout.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
source bench/results/small-m-gemm-h200-2026-11-29/candidates.sh
for ms in "16 24 48" "64 96 128 160"; do
  S=()
  for m in $ms; do for s in 1536,4096 4096,1024 7168,4096 4096,3584 8192,8192; do S+=("$m,$s"); done; done
  timeout 280 $A overlap gemm --reps 7 --kernels "$K" "${S[@]}" >> "$OUT/heldout.csv" 2>> "$OUT/heldout.err"
  echo "heldout $ms rc=$?"
done
timeout 100 $A overlap gemm --dtype f16 --kernels cublaslt,augur_tma_auto 16,1536,4096 48,7168,4096 \
  96,4096,3584 128,8192,8192 > "$OUT/heldout-f16.csv" 2>> "$OUT/heldout.err"
echo "f16 rc=$?"
