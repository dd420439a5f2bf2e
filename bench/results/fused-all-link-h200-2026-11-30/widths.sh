#!/usr/bin/env bash
# Issue 24, two H200s, one call: the fused reduce-scatter's and all-reduce's 128-row tiles at
# each width (AUGUR_TP_FUSED_WIDTH=128, 192, 256), `fused-reduce:0` (reduce-scatter) and
# `fused-all` (all-reduce), beside bulk, on the row-parallel layers of the three weight sets'
# grids at M >= 512 (60 layers; below, the swapped GEMM, whose token tiles the width does not
# touch). The width the GEMM's estimate picks (what runs unforced) is `augur overlap gemm-plan`'s
# for one GPU's product. Each pattern checked before and after its timed calls. Tarred.
# Through the device tool (kind nvidia-h200-x2), carry [".carry/augur.xz"]:
#   bash bench/results/fused-all-link-h200-2026-11-30/widths.sh
source bench/tp-env.sh
L=()
for w in 4096,4096 4096,14336 8192,8192 8192,28672 3584,3584 3584,18944 5120,5120 5120,13824; do
  for m in 1024 2048 4096 8192 16384; do L+=("$m,$w"); done
done
for w in 3584,4096 5120,14336 7168,7168 7168,20480; do
  for m in 512 1536 3072 6144 12288; do L+=("$m,$w"); done
done
timeout 120 .carry/augur overlap tp --gpus 2 --ops all-reduce,reduce-scatter --patterns bulk \
  --samples 10 "${L[@]}" > "$OUT/bulk.csv" 2>> "$OUT/widths.err"
echo "bulk rc=$? $((SECONDS - T0)) s"
for w in 256 128 192; do
  AUGUR_TP_FUSED_WIDTH=$w timeout 120 .carry/augur overlap tp --gpus 2 --ops reduce-scatter \
    --patterns fused-reduce:0 --samples 10 "${L[@]}" > "$OUT/rs-$w.csv" 2>> "$OUT/widths.err"
  echo "rs $w rc=$? $((SECONDS - T0)) s"
  AUGUR_TP_FUSED_WIDTH=$w timeout 120 .carry/augur overlap tp --gpus 2 --ops all-reduce \
    --patterns fused-all --samples 10 "${L[@]}" > "$OUT/ar-$w.csv" 2>> "$OUT/widths.err"
  echo "ar $w rc=$? $((SECONDS - T0)) s"
done
echo "all $((SECONDS - T0)) s"
(cd "$OUT" && tar czf /tmp/widths.tgz . && rm -rf ./* && mv /tmp/widths.tgz .)
