#!/usr/bin/env bash
# Issue 24, one H200: `fused-reduce:0[:K]`'s rows of the sum zeroed (and the ready words written)
# by the producer warpgroup's three idle warps (.carry/augur.xz) instead of the consumer
# warpgroups before their first products (36db38f, .carry/augur_base.xz), alternating, two
# rounds; odd shapes in both types with the new build; then the diagnostic build's phases
# (.carry/augur_phase.xz: ../phases-h200-2026-11-29/phases.patch on this build). From the
# repository root with the binaries in .carry:
#   bash bench/results/zero-helpers-h200-2026-11-29/helpers.sh   (writes $OUT/helpers.csv)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
S=(16,4096,1024 16,8192,2048 64,4096,3584 64,7168,2048 128,4096,1024 256,4096,2048 256,8192,2048
   1024,4096,3584 1024,8192,2048 4096,4096,3584 4096,8192,7168)
for round in 1 2; do
  for b in base new; do
    A=.carry/augur; [ $b = base ] && A=.carry/augur_base
    timeout ${LIMIT:-100} $A overlap tp --gpus 1 --ops reduce-scatter \
      --patterns gemm,fused-reduce:0,fused-reduce:0:2 "${S[@]}" \
      | sed "s/^/$b,$round,/" >> "$OUT/helpers.csv" 2>> "$OUT/helpers.err"
    echo "$b $round rc=${PIPESTATUS[0]}"
  done
done
for t in f16 bf16; do
  timeout 60 .carry/augur overlap tp --gpus 1 --dtype $t --ops reduce-scatter \
    --patterns fused-reduce:0,fused-reduce:0:2 16,1032,512 72,1032,512 136,2056,1024 \
    264,1032,1024 520,2056,1024 > "$OUT/helpers-odd-$t.csv" 2>> "$OUT/helpers.err"
  echo "odd $t rc=$?"
done
if [ -x .carry/augur_phase ]; then
  for s in 16,4096,1024 128,4096,1024 1024,4096,3584; do
    echo "== $s" >> "$OUT/phases.txt"
    AUGUR_PHASES=1 timeout 60 .carry/augur_phase overlap tp --gpus 1 --ops reduce-scatter \
      --start barrier --samples 3 --warmup 1 --patterns fused-reduce:0,fused-reduce:0:2 "$s" \
      >> "$OUT/phases.txt" 2>&1
    echo "rc=$?" >> "$OUT/phases.txt"
  done
fi
