#!/usr/bin/env bash
# Issue 24, GPUS (default 2) H200s, one call: `fused-reduce:0[:K]` with everything so far kept to
# one GPU (the sum zeroed in the launch by the producer warpgroup's idle warps, the swapped GEMM
# at M <= 64 and in 64-row token tiles beyond, the f32 sum rounded at the launch's end) run
# between GPUs with AUGUR_TP_UNVERIFIED=1: odd shapes in both types first (checks), then the same
# build with and without it (without: the host's memset and ready words, 128-row tiles, the
# second launch), alternating, two rounds, then the library's plan on a caller's buffers. From
# the repository root with .carry/augur.xz:
#   bash bench/results/fused-rs-2gpu-h200-2026-11-29/verify.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
G=${GPUS:-2}
T0=$SECONDS
for t in f16 bf16; do
  AUGUR_TP_UNVERIFIED=1 timeout 60 .carry/augur overlap tp --gpus $G --dtype $t --ops reduce-scatter \
    --patterns bulk,fused-reduce:0,fused-reduce:0:2 \
    16,1032,$((512 * G)) 40,2056,$((1024 * G)) 64,4096,$((1024 * G)) $((64 + G)),4096,$((1024 * G)) \
    136,2056,$((1024 * G)) 200,1032,$((1024 * G)) > "$OUT/odd$G-$t.csv" 2>> "$OUT/verify.err"
  echo "odd $t rc=$? $((SECONDS-T0)) s"
done
S=()
for m in ${MS:-16 32 64 128 256 1024}; do
  for w in 4096,4096 8192,8192 4096,14336; do S+=("$m,$w"); done
done
for round in 1 2; do
  for mode in host launch; do
    if [ $mode = launch ]; then export AUGUR_TP_UNVERIFIED=1; else unset AUGUR_TP_UNVERIFIED; fi
    timeout ${LIMIT:-75} .carry/augur overlap tp --gpus $G --ops reduce-scatter \
      --patterns bulk,ll-bulk,fused-reduce:0,fused-reduce:0:2 "${S[@]}" \
      | sed "s/^/$mode,$round,/" >> "$OUT/ab$G.csv" 2>> "$OUT/verify.err"
    echo "$mode $round rc=${PIPESTATUS[0]} $((SECONDS-T0)) s"
  done
done
AUGUR_TP_UNVERIFIED=1 timeout 60 .carry/augur overlap run --gpus $G --op reduce-scatter \
  --pattern fused-reduce:0 16,4096,4096 128,8192,8192 1024,8192,8192 > "$OUT/run$G.csv" 2>> "$OUT/verify.err"
echo "run rc=$? end $((SECONDS-T0)) s"
