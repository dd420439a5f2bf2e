#!/usr/bin/env bash
# Issue 24, GPUS (default 2) H200s: `fused-reduce:0` with the swapped GEMM at M <= 64 and the
# rows of the sum zeroed in the launch, against the builds before: a10ecef
# (.carry/augur_head.xz: 128-row tiles, memset and ready words from the host) and the swapped
# GEMM alone (.carry/augur_b1.xz), with bulk in every build as the anchor of drift; the new
# build also runs the GEMM alone, the collective alone, ll-bulk and the k splits. Layers of the
# default grid's reduce-scattered weights (N,K: 4096,4096 4096,14336 8192,8192) and 5120,13824,
# M 16-1024. From the repository root with the three binaries in .carry:
#   GPUS=2 bash bench/results/fused-reduce-swap-h200-2026-11-29/rs-2gpu.sh   (writes $OUT/rs-<gpus>.csv)
# (BUILDS: which of head, b1, new run, in that order; MS: the token counts)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
# The launch-zeroed sum and the swapped GEMM between GPUs (fused.rs, in_launch).
export AUGUR_TP_UNVERIFIED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
G=${GPUS:-2}
S=()
for m in ${MS:-16 32 64 256 1024}; do
  for w in 4096,4096 4096,14336 8192,8192 5120,13824; do S+=("$m,$w"); done
done
f="$OUT/rs-$G.csv"; : > "$f"
for b in ${BUILDS:-head b1 new}; do
  A=.carry/augur_$b; P=bulk,fused-reduce:0,fused-reduce:0:4
  [ $b = new ] && A=.carry/augur && P=gemm,comm,bulk,ll-bulk,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4
  timeout ${LIMIT:-150} $A overlap tp --gpus "$G" --ops reduce-scatter --patterns $P "${S[@]}" \
    > "$OUT/part.csv" 2>> "$OUT/rs-$G.err"
  echo "$G GPUs $b rc=$?"
  [ -s "$f" ] || head -1 "$OUT/part.csv" | sed 's/^/build,/' > "$f"
  tail -n +2 "$OUT/part.csv" | sed "s/^/$b,/" >> "$f"
done
rm -f "$OUT/part.csv"
