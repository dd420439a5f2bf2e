#!/usr/bin/env bash
# Issue 24, two H200s, one call: `fused-all`'s plane per source GPU stored in the 16-bit type
# unsplit (each partial tile a plain store into its GPU's plane of every GPU's sum; the planes
# summed in f32 in rank order at the launch's end), after the f32 planes of run3.sh lost 0.52x:
# (1) checked on one and two GPUs (AUGUR_TP_ALL_PLANES), unsplit and split, both types, every
# GPU's sums compared bit for bit; (2) timed against the 16-bit sums on two GPUs (same build,
# alternating, two rounds; run3.sh's layers). Tarred into one file. Through the device tool with
# carry [".carry/augur.xz"]:
#   bash bench/results/fused-all-split-h200-2026-11-30/run4.sh
source bench/tp-env.sh
export AUGUR_TP_ALL_PLANES=1
odd planes16-check planes16 150 --gpus 2 --ops all-reduce --patterns gemm,bulk,fused-all,fused-all:2 \
  --samples 5 16,4096,4096 32,3584,18944 64,8192,8192 96,5120,5120 200,4096,4096 \
  1000,1000,512 3000,7168,7168
odd planes16-check-1 planes16 100 --gpus 1 --ops all-reduce --patterns bulk,fused-all \
  --samples 5 16,4096,4096 200,4096,4096 1000,1000,512
unset AUGUR_TP_ALL_PLANES
layers "16 64 256 1024 4096" "4096,4096 4096,14336 8192,8192"
ab planes16-ab planes16 by_planes 100 "sums planes" --gpus 2 --ops all-reduce \
  --patterns gemm,bulk,fused-all "${L[@]}"
(cd "$OUT" && tar czf /tmp/run4.tgz . && rm -rf ./* && mv /tmp/run4.tgz .)
