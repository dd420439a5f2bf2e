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
for t in bf16 f16; do
  AUGUR_TP_UNVERIFIED=1 timeout 60 .carry/augur overlap tp --gpus 4 --dtype $t --ops all-gather \
    --patterns bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:16 \
    16,2048,4096 40,4096,4096 72,6144,4096 200,2048,2056 1024,6144,4096 \
    > "$OUT/odd4-$t.csv" 2>> "$OUT/ab4.err"
  echo "odd $t rc=$? $((SECONDS - T0)) s"
done
L=()
for m in 1024 2048 4096 8192 16384; do for w in 6144,4096 10240,8192 28672,4096; do L+=("$m,$w"); done; done
for round in 1 2; do
  for mode in off on; do
    if [ $mode = on ]; then export AUGUR_TP_UNVERIFIED=1; else unset AUGUR_TP_UNVERIFIED; fi
    timeout ${LIMIT:-120} .carry/augur overlap tp --gpus 4 --ops all-gather \
      --patterns gemm,bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:8 "${L[@]}" \
      | sed "s/^/$mode,$round,/" >> "$OUT/ab4.csv" 2>> "$OUT/ab4.err"
    echo "$mode $round rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
  done
done
