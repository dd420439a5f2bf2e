#!/usr/bin/env bash
# Issue 24, one H200: `fused-reduce:0:K` rounding its f32 sum into the rows of the sum at the
# launch's end (rs_convert; .carry/augur.xz) against a second launch after it (gemm_splitk_*;
# the build before, 544e79c, .carry/augur_base.xz), alternating, two rounds; odd shapes in both
# types with the new build. From the repository root with both binaries in .carry:
#   bash bench/results/split-convert-h200-2026-11-29/convert.sh   (writes $OUT/convert.csv)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
S=()
for m in ${MS:-16 64 128 256}; do
  for w in 4096,1024 4096,3584 8192,2048 7168,2048; do S+=("$m,$w"); done
done
for round in 1 2; do
  for b in base new; do
    A=.carry/augur; [ $b = base ] && A=.carry/augur_base
    timeout ${LIMIT:-110} $A overlap tp --gpus 1 --ops reduce-scatter \
      --patterns gemm,fused-reduce:0:2,fused-reduce:0:4,fused-reduce:0:8 "${S[@]}" \
      | sed "s/^/$b,$round,/" >> "$OUT/convert.csv" 2>> "$OUT/convert.err"
    echo "$b $round rc=${PIPESTATUS[0]}"
  done
done
for t in f16 bf16; do
  timeout 60 .carry/augur overlap tp --gpus 1 --dtype $t --ops reduce-scatter \
    --patterns gemm,fused-reduce:0:2,fused-reduce:0:4 16,1032,512 40,2056,1024 64,4104,1024 \
    136,2056,1024 264,1032,2048 > "$OUT/convert-odd-$t.csv" 2>> "$OUT/convert.err"
  echo "odd $t rc=$?"
done
