#!/usr/bin/env bash
# Issue 24, GPUS (default 2) H200s, one call: `fused-reduce:0[:K]` with everything so far kept to
# one GPU (the sum zeroed in the launch by the producer warpgroup's idle warps, the swapped GEMM
# at M <= 64 and in 64-row token tiles beyond, the f32 sum rounded at the launch's end) run
# between GPUs with AUGUR_TP_UNVERIFIED=1: odd shapes in both types first (checks), then the same
# build with and without it (without: the host's memset and ready words, 128-row tiles, the
# second launch), alternating, two rounds, then the library's plan on a caller's buffers. From
# the repository root with .carry/augur.xz:
#   bash bench/results/fused-rs-2gpu-h200-2026-11-29/verify.sh
source bench/tp-env.sh
G=${GPUS:-2}
AUGUR_TP_UNVERIFIED=1 odd odd$G verify 60 --gpus $G --ops reduce-scatter \
  --patterns bulk,fused-reduce:0,fused-reduce:0:2 \
  16,1032,$((512 * G)) 40,2056,$((1024 * G)) 64,4096,$((1024 * G)) $((64 + G)),4096,$((1024 * G)) \
  136,2056,$((1024 * G)) 200,1032,$((1024 * G))
layers "${MS:-16 32 64 128 256 1024}" "4096,4096 8192,8192 4096,14336"
ab ab$G verify by_variable ${LIMIT:-75} "host launch" --gpus $G --ops reduce-scatter \
  --patterns bulk,ll-bulk,fused-reduce:0,fused-reduce:0:2 "${L[@]}"
AUGUR_TP_UNVERIFIED=1 timeout 60 .carry/augur overlap run --gpus $G --op reduce-scatter \
  --pattern fused-reduce:0 16,4096,4096 128,8192,8192 1024,8192,8192 > "$OUT/run$G.csv" 2>> "$OUT/verify.err"
echo "run rc=$? end $((SECONDS-T0)) s"
