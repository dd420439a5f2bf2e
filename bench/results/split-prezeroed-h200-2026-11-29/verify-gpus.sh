#!/usr/bin/env bash
# Issue 24, GPUS (default 2) H200s, one call (run with GPUS=2 MS="16 64 256": gpus2/; never with
# GPUS=4): `fused-reduce:0:K` with its partials by tensor-memory reductions and its f32 sums
# zeroed two calls ahead (fused.rs's prezeroed, on more than one GPU at first only with
# AUGUR_TP_UNVERIFIED=1, now on for two; on four GPUs the variable also turns the launch's own
# zeroing on, in_launch):
# odd shapes in both types first (M 16, 40, 64 and 64 + GPUS: token tiles holding several GPUs'
# rows, the first owner's by the tensor-memory unit, the later ones' 16 bytes at a time; 136,
# 200: 64-row token tiles), every pattern checked before and after its timed calls; then the same
# build with and without the variable, alternating, two rounds; then the library's plan. From
# the repository root with .carry/augur.xz of the current build:
#   GPUS=2 bash bench/results/split-prezeroed-h200-2026-11-29/verify-gpus.sh
#   (writes $OUT/odd<G>-{f16,bf16}.csv, $OUT/ab<G>.csv, $OUT/run<G>.csv)
source bench/tp-env.sh
G=${GPUS:-2}
AUGUR_TP_UNVERIFIED=1 odd odd$G verify 75 --gpus $G --ops reduce-scatter \
  --patterns bulk,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4 \
  16,1032,$((1024 * G)) 40,2056,$((1024 * G)) 64,4096,$((1024 * G)) $((64 + G)),4096,$((1024 * G)) \
  136,2056,$((1024 * G)) 200,1032,$((1024 * G))
layers "${MS:-16 32 64 128 256}" "4096,4096 8192,8192 4096,14336"
ab ab$G verify by_variable ${LIMIT:-90} "off on" --gpus $G --ops reduce-scatter \
  --patterns bulk,ll-bulk,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4 "${L[@]}"
AUGUR_TP_UNVERIFIED=1 timeout 60 .carry/augur overlap run --gpus $G --op reduce-scatter \
  --pattern fused-reduce:0:2 16,4096,4096 64,8192,8192 256,8192,8192 > "$OUT/run$G.csv" 2>> "$OUT/verify.err"
echo "run rc=$? end $((SECONDS - T0)) s"
