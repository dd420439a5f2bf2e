#!/usr/bin/env bash
# Issue 24, GPUS (default 2) H200s, one call: `pc-push:C:S` / `pc-pull:C:S` with the GEMMs of the
# last piece on every SM (cuBLASLt plans without an SM target: they follow the piece's arrival,
# which the copy kernel writes as it ends) -- .carry/augur.xz, this build -- against every GEMM
# leaving S SMs to the copy kernel (.carry/old.xz, the build before), alternating, two rounds,
# 15 all-gather layers (M 1024-16384); odd shapes checked first with the new build (both types,
# one and two pieces). From the repository root:
#   GPUS=2 bash bench/results/pc-tail-h200-2026-11-29/ab.sh   (writes $OUT/odd-*.csv, $OUT/ab.csv)
source bench/tp-env.sh
G=${GPUS:-2}
odd odd ab 60 --gpus $G --ops all-gather \
  --patterns bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:16 \
  16,2048,4096 40,4096,4096 $((64 + 2 * G)),6144,4096 200,2048,2056 1024,6144,4096
layers "1024 2048 4096 8192 16384" "6144,4096 10240,8192 28672,4096"
ab ab ab by_build ${LIMIT:-110} "old augur" --gpus $G --ops all-gather \
  --patterns gemm,bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:8 "${L[@]}"
