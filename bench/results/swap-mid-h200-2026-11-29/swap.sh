#!/usr/bin/env bash
# Issue 24, one H200: `fused-reduce:0[:K]` with the swapped GEMM in 64-row token tiles beyond M
# 64, where they fit in one wave (ceil(M / 64) x ceil(N / 128) <= SMs; .carry/augur.xz) against
# the 128-row tiles there (169a72d, .carry/augur_conv.xz), alternating, two rounds; odd shapes in
# both types with the new build. From the repository root with both binaries in .carry:
#   bash bench/results/swap-mid-h200-2026-11-29/swap.sh   (writes $OUT/swap.csv)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
S=()
for m in ${MS:-96 128 256}; do
  for w in 3584,1024 4096,1024 4096,3584 8192,2048 7168,2048; do S+=("$m,$w"); done
done
S+=(256,4096,2048 256,4096,7168 64,4096,1024)
for round in 1 2; do
  for b in base new; do
    A=.carry/augur; [ $b = base ] && A=.carry/augur_conv
    timeout ${LIMIT:-120} $A overlap tp --gpus 1 --ops reduce-scatter \
      --patterns gemm,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4 "${S[@]}" \
      | sed "s/^/$b,$round,/" >> "$OUT/swap.csv" 2>> "$OUT/swap.err"
    echo "$b $round rc=${PIPESTATUS[0]}"
  done
done
for t in f16 bf16; do
  timeout 60 .carry/augur overlap tp --gpus 1 --dtype $t --ops reduce-scatter \
    --patterns fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4 72,1032,512 96,2056,1024 \
    136,2056,1024 200,1032,2048 264,1032,1024 > "$OUT/swap-odd-$t.csv" 2>> "$OUT/swap.err"
  echo "odd $t rc=$?"
done
