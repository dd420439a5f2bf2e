#!/usr/bin/env bash
# Issue 24, one H200: `fused-reduce:0` counting its own rows' tiles at GPU scope (a release add
# at .gpu, not .sys) and, on one GPU, the zeroing's fences at GPU scope, against the committed
# build before it (3ae08ce, .carry/augur_prev.xz), alternating, two rounds, with cuBLASLt (the
# gemm pattern). From the repository root with .carry/augur.xz and .carry/augur_prev.xz:
#   bash bench/results/fused-reduce-swap-h200-2026-11-29/scope.sh   (writes $OUT/scope.csv)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
S=()
for m in 16 64; do
  for w in 4096,1024 4096,3584 8192,2048 8192,7168; do S+=("$m,$w"); done
done
S+=(128,4096,3584 512,8192,2048 1024,4096,3584 4096,4096,3584)
for round in 1 2; do
  for b in old new; do
    A=.carry/augur; [ $b = old ] && A=.carry/augur_prev
    timeout ${LIMIT:-100} $A overlap tp --gpus 1 --ops reduce-scatter \
      --patterns gemm,fused-reduce:0,fused-reduce:0:4 "${S[@]}" | sed "s/^/$b,$round,/" >> "$OUT/scope.csv" 2>> "$OUT/scope.err"
    echo "$b $round rc=$?"
  done
done
