#!/usr/bin/env bash
# Issue 24, one H200: the swapped `fused-reduce:0:K`'s partials added 16 bytes at a time
# (red.add.v4.f32 from the staged box, two halves of 32 columns) against one value at a time
# (red.add.f32; the committed build 28db7c9, .carry/augur_scoped.xz), alternating, two rounds;
# odd shapes in both types. From the repository root with .carry/augur.xz and
# .carry/augur_scoped.xz:  bash bench/results/fused-reduce-swap-h200-2026-11-29/split.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
S=()
for m in 16 64; do
  for w in 4096,1024 4096,3584 3584,4608 8192,2048 8192,7168; do S+=("$m,$w"); done
done
for round in 1 2; do
  for b in old new; do
    A=.carry/augur; [ $b = old ] && A=.carry/augur_scoped
    timeout ${LIMIT:-80} $A overlap tp --gpus 1 --ops reduce-scatter \
      --patterns gemm,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4,fused-reduce:0:8 "${S[@]}" \
      | sed "s/^/$b,$round,/" >> "$OUT/split.csv" 2>> "$OUT/split.err"
    echo "$b $round rc=$?"
  done
done
for t in f16 bf16; do
  timeout 60 .carry/augur overlap tp --gpus 1 --dtype $t --ops reduce-scatter \
    --patterns gemm,fused-reduce:0:2,fused-reduce:0:4 16,1032,512 40,2056,1024 64,4104,1024 \
    > "$OUT/split-odd-$t.csv" 2>> "$OUT/split.err"
  echo "odd $t rc=$?"
done
