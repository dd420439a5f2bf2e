#!/usr/bin/env bash
# Issue 24, two H200s, one call: three staging buffers a consumer warpgroup for the 192-wide
# TMA tiles (gemm_tma.cu's tma_buffers: a tile's three boxes staged at once, so the warpgroup
# never waits for its stores to have read a box before its next unit). Builds: augur (this),
# two (the same with two buffers at 192, as before), old (the commit before: no
# AUGUR_TP_FUSED_WIDTH). (1) Checks, this build, the fused tiles forced to 192 wide
# (AUGUR_TP_FUSED_WIDTH=192), every fused row-parallel pattern and the all-gather's, both types;
# (2) the TMA GEMM alone at 192 and as `augur_tma_auto` picks, one GPU, old against this,
# alternating, two rounds; (3) `fused-reduce:0` and `fused-all` at 192 wide, two buffers against
# three (two against this build), alternating, two rounds, 10 layers M 1024-16384; then 128 and
# 256 wide (this build) on the same layers. Tarred into one file.
# Through the device tool (kind nvidia-h200-x2), carry [".carry/augur.xz", ".carry/two.xz",
# ".carry/old.xz"]:
#   bash bench/results/fused-all-link-h200-2026-11-30/buffers.sh
source bench/tp-env.sh
export AUGUR_TP_FUSED_WIDTH=192
odd check192 check 100 --gpus 2 --ops all-reduce,reduce-scatter,all-gather \
  --patterns bulk,fused-reduce:0,fused-reduce:0:2,fused-all,fused-all:2,fused-push:1:8,fused-pull:1:8 \
  --samples 5 200,4096,4096 1000,1024,512 1000,5120,5120 3000,7168,7168 4096,5120,5120
unset AUGUR_TP_FUSED_WIDTH
G="256,2304,7168 512,1536,4096 1024,6144,4096 2048,10240,7168 4096,3584,8192 8192,7168,5120 2560,10240,7168"
for round in 1 2; do
  for b in old augur; do
    timeout 60 .carry/$b overlap gemm --kernels augur_tma_128x192,augur_tma_auto,cublaslt \
      --reps 10 $G | sed "s/^/$b,$round,/" >> "$OUT/gemm-ab.csv" 2>> "$OUT/gemm.err"
    echo "gemm $b $round rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
  done
done
L="1024,4096,4096 2048,5120,5120 4096,5120,5120 4096,8192,8192 8192,4096,14336 16384,5120,5120
2048,8192,8192 1536,7168,7168 8192,7168,7168 16384,8192,8192"
export AUGUR_TP_FUSED_WIDTH=192
ab width-ab width by_build 80 "two augur" --gpus 2 --ops all-reduce,reduce-scatter \
  --patterns bulk,fused-reduce:0,fused-all --samples 10 $L
for w in 128 256; do
  AUGUR_TP_FUSED_WIDTH=$w timeout 80 .carry/augur overlap tp --gpus 2 --ops all-reduce,reduce-scatter \
    --patterns bulk,fused-reduce:0,fused-all --samples 10 $L > "$OUT/width-$w.csv" 2>> "$OUT/width.err"
  echo "width $w rc=$? $((SECONDS - T0)) s"
done
unset AUGUR_TP_FUSED_WIDTH
echo "all $((SECONDS - T0)) s"
(cd "$OUT" && tar czf /tmp/buffers.tgz . && rm -rf ./* && mv /tmp/buffers.tgz .)
