#!/usr/bin/env bash
# Issue 24, four H200s, one call (NOT RUN YET: no machine of four was lent after the change):
# `pc-push:C:S` / `pc-pull:C:S` with the last piece's GEMMs on every SM (`on`: on four GPUs only
# with AUGUR_TP_UNVERIFIED=1, which changes nothing else there) against those GEMMs leaving S
# SMs to the copy kernel (`off`), same build, alternating, two rounds, 15 all-gather layers; odd
# shapes checked first with `on` (both types, one and two pieces). If `on` wins, `pc_tail`
# (kernels/src/cuda/gemm/tp/ag.rs) holds for four GPUs too and the 4-GPU grids' pc rows are
# re-timed (`MIN_M=1024 F=bulk,pc-push:1:8,pc-pull:1:8 GPUS=4 bash bench/regrid-fused.sh`).
# From the repository root with .carry/augur.xz:
#   bash bench/results/pc-tail-h200-2026-11-29/ab4.sh   (writes $OUT/odd4-*.csv, $OUT/ab4.csv)
source bench/tp-env.sh
AUGUR_TP_UNVERIFIED=1 odd odd4 ab4 60 --gpus 4 --ops all-gather \
  --patterns bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:16 \
  16,2048,4096 40,4096,4096 72,6144,4096 200,2048,2056 1024,6144,4096
unset AUGUR_TP_UNVERIFIED
layers "1024 2048 4096 8192 16384" "6144,4096 10240,8192 28672,4096"
ab ab4 ab4 by_variable ${LIMIT:-120} "off on" --gpus 4 --ops all-gather \
  --patterns gemm,bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:8 "${L[@]}"
