#!/usr/bin/env bash
# Issue 24, two H200s, one call: `fused-all` with a plane per source GPU in every GPU's f32 sum
# (what it runs on more than two GPUs; forced here by AUGUR_TP_ALL_PLANES): (1) checked on one
# and two GPUs, unsplit and split, both types, every GPU's sums compared bit for bit; (2) timed
# against the 16-bit sums on two GPUs (same build, alternating, two rounds); (3) this build
# (.carry/augur.xz) against the one before the planes (.carry/prev.xz, run2.sh's) with the
# planes off: `fused-reduce:0` and `fused-all` unchanged? Alternating, two rounds. Everything
# tarred into one file. Through the device tool with carry [".carry/augur.xz", ".carry/prev.xz"]:
#   bash bench/results/fused-all-split-h200-2026-11-30/run3.sh
source bench/tp-env.sh
export AUGUR_TP_ALL_PLANES=1
odd planes-check planes 150 --gpus 2 --ops all-reduce --patterns gemm,bulk,fused-all,fused-all:2 \
  --samples 5 16,4096,4096 32,3584,18944 64,8192,8192 96,5120,5120 200,4096,4096 \
  1000,1000,512 3000,7168,7168
odd planes-check-1 planes 100 --gpus 1 --ops all-reduce --patterns bulk,fused-all,fused-all:2 \
  --samples 5 16,4096,4096 200,4096,4096 1000,1000,512
unset AUGUR_TP_ALL_PLANES
layers "16 64 256 1024 4096" "4096,4096 4096,14336 8192,8192"
ab planes-ab planes by_planes 100 "sums planes" --gpus 2 --ops all-reduce \
  --patterns gemm,bulk,fused-all "${L[@]}"
ab build-ab build by_build 100 "prev augur" --gpus 2 --ops all-reduce \
  --patterns gemm,bulk,fused-reduce:0,fused-all "${L[@]}"
(cd "$OUT" && tar czf /tmp/run3.tgz . && rm -rf ./* && mv /tmp/run3.tgz .)
