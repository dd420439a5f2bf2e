#!/usr/bin/env bash
# The TMA GEMM's producer issuing a unit's first B stages before it waits for A's rows (issue 24:
# at small M, B is most of the bytes and does not depend on the rows arriving), against the
# committed build, on one H200, the builds alternating: `augur overlap arrive` (rows arriving by
# copy + flag while the gated GEMM runs; A poisoned until then, checked exactly), `augur overlap
# tp --gpus 1` with the fused kernels (no peer), and `augur overlap gemm` on its default grid
# (the ungated kernel). With .carry/augur.xz (committed) and .carry/augur_new.xz (this change),
# from the repository root: bash bench/results/b-first-h200-2026-11-29/ab.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
AR=(32,2304,7168 32,10240,7168 128,7168,5120 128,10240,7168 512,2304,7168 2048,7168,4096)
TP=(32,2048,3584 32,10240,7168 128,7168,5120 512,2304,7168)
for round in 1 2; do
  for b in augur augur_new; do
    timeout 60 .carry/$b overlap arrive --blocks 1,4 "${AR[@]}" > "$OUT/arrive-$b-$round.csv" 2>> "$OUT/ab.err"
    echo "arrive $b $round rc=$?"
  done
done
for b in augur augur_new; do
  timeout 60 .carry/$b overlap tp --gpus 1 --ops all-gather --samples 15 --patterns gemm,fused-push:1:8 "${TP[@]}" > "$OUT/tp-$b.csv" 2>> "$OUT/ab.err"
  echo "tp $b rc=$?"
  timeout 90 .carry/$b overlap gemm --kernels augur_tma_auto,cublaslt > "$OUT/gemm-$b.csv" 2>> "$OUT/ab.err"
  echo "gemm $b rc=$?"
done
grep -i "fail\|error" "$OUT/ab.err" | head -5
