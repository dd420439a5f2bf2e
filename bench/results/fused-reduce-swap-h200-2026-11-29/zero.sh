#!/usr/bin/env bash
# Issue 24, one H200: `fused-reduce:0` zeroing its GPU's rows of the sum in the launch and
# writing the ready words from it (rs_zero_announce), against the build that did both from the
# host on the stream before the launch (a memset, one word per peer; .carry/augur_b1.xz: the
# swapped GEMM already in, one-gpu.sh's build), alternating, two rounds; small M (the swapped
# GEMM) and larger M (128-row tiles), and odd shapes checked in both types. From the repository
# root with .carry/augur.xz and .carry/augur_b1.xz:
#   bash bench/results/fused-reduce-swap-h200-2026-11-29/zero.sh      (OUT=... for another folder)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
S=()
for m in 16 64; do
  for w in 4096,1024 4096,3584 8192,2048 8192,7168; do S+=("$m,$w"); done
done
S+=(128,4096,3584 512,8192,2048 1024,4096,3584 2048,8192,7168 4096,4096,3584 8192,8192,2048)
for round in 1 2; do
  for b in old new; do
    A=.carry/augur; [ $b = old ] && A=.carry/augur_b1
    timeout ${LIMIT:-120} $A overlap tp --gpus 1 --ops reduce-scatter \
      --patterns gemm,fused-reduce:0,fused-reduce:0:4 "${S[@]}" | sed "s/^/$b,$round,/" >> "$OUT/zero.csv" 2>> "$OUT/zero.err"
    echo "$b $round rc=$?"
  done
done
for t in f16 bf16; do
  timeout 60 .carry/augur overlap tp --gpus 1 --dtype $t --ops reduce-scatter --patterns gemm,fused-reduce:0,fused-reduce:0:2,fused-reduce:16 \
    16,1032,520 40,2056,1024 64,4096,1024 65,4096,1024 200,1032,1032 1000,2056,1024 > "$OUT/zero-odd-$t.csv" 2>> "$OUT/zero.err"
  echo "odd $t rc=$?"
done
