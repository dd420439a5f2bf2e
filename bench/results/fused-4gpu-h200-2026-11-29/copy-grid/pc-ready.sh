#!/usr/bin/env bash
# Issue 24, GPUS (default 4) H200s, one call (written after this folder's device time ran out;
# run the next session: ../../own-bulk-grid-h200-2026-11-29/pc-ready-4/): `pc-push:C:S` /
# `pc-pull:C:S` with the copy kernel spinning on the peers' ready words itself
# (AUGUR_TP_UNVERIFIED=1, `on`) against the communication stream waiting for them (`off`), same
# build, alternating, two rounds, the all-gather's layers where the shipped
# selector picks `pc-push:1:8` (M 2048-16384) and the middle band; odd shapes checked first.
# From the repository root with .carry/augur.xz of the current build:
#   GPUS=4 bash bench/results/fused-4gpu-h200-2026-11-29/copy-grid/pc-ready.sh
#   (writes $OUT/pc-odd<G>.csv, $OUT/pc-ab<G>.csv; summary: ab_rows.read, builds `off` / `on`)
source bench/tp-env.sh
G=${GPUS:-4}
AUGUR_TP_UNVERIFIED=1 timeout 60 .carry/augur overlap tp --gpus $G --ops all-gather \
  --patterns bulk,pc-push:1:8,pc-pull:1:8,pc-push:1:16 \
  16,2048,4096 40,4096,4096 $((64 + G)),6144,4096 200,2048,2056 > "$OUT/pc-odd$G.csv" 2>> "$OUT/pc.err"
echo "odd rc=$? $((SECONDS - T0)) s"
layers "1024 2048 4096 16384" "6144,4096 10240,8192 28672,4096"
ab pc-ab$G pc by_variable ${LIMIT:-150} "off on" --gpus $G --ops all-gather \
  --patterns bulk,own-bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8 "${L[@]}"
