#!/usr/bin/env bash
# Issue 24, one H200: the prezeroed split's MT x 64 f32 block staged at once in two boxes per
# consumer warpgroup (two tensor-memory reductions issued together, no wait for the first half's
# read; three layouts, each a build: first/, runtime-stride/, final-layout/ = staged.patch)
# (.carry/augur.xz) against a52ca1b (.carry/augur_base.xz: two halves in one box, the first
# half's read waited for), alternating, two rounds; odd shapes in both types with the new build
# first. From the repository root with the binaries in .carry:
#   bash bench/results/split-prezeroed-h200-2026-11-29/staged/ab.sh   (writes $OUT/ab.csv, $OUT/odd-*.csv)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
T0=$SECONDS
for t in f16 bf16; do
  timeout 60 .carry/augur overlap tp --gpus 1 --dtype $t --ops reduce-scatter \
    --patterns fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4 16,1032,512 72,1032,512 \
    136,2056,1024 264,1032,1024 > "$OUT/odd-$t.csv" 2>> "$OUT/ab.err"
  echo "odd $t rc=$? $((SECONDS - T0)) s"
done
S=(16,4096,1024 16,4096,2048 16,4096,3584 16,8192,2048 16,8192,7168 64,4096,3584 64,7168,2048
   128,4096,1024 256,4096,2048)
for round in 1 2; do
  for b in base new; do
    A=.carry/augur; [ $b = base ] && A=.carry/augur_base
    timeout ${LIMIT:-110} $A overlap tp --gpus 1 --ops reduce-scatter \
      --patterns gemm,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4,fused-reduce:0:8 "${S[@]}" \
      | sed "s/^/$b,$round,/" >> "$OUT/ab.csv" 2>> "$OUT/ab.err"
    echo "$b $round rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
  done
done
