#!/usr/bin/env bash
# Issue 24, four H200s, one call: the copy kernel (comm.cu's `tp_copy_pieces`: `own-bulk`,
# `pc-push:C:S`, `pc-pull:C:S`, `pc-reduce:C:S`) with every thread of its grid taking every T-th
# vector (new, .carry/augur.xz) against blocks of 8 x 512 consecutive vectors (base,
# .carry/base.xz: at one block per SM a 2 MiB piece was 32 blocks' work), alternating, two
# rounds, on the all-gather's middle band (M 256-4096) and the reduce-scatter's pc pattern. From
# the repository root:
#   GPUS=4 bash bench/results/fused-4gpu-h200-2026-11-29/copy-grid/ab.sh   (writes $OUT/ab-ag.csv, ab-rs.csv)
source bench/tp-env.sh
G=${GPUS:-4}
AG=(); RS=()
for m in ${MS:-256 1024 2048 4096}; do
  for w in 6144,4096 10240,8192 57344,8192 28672,4096; do AG+=("$m,$w"); done
  for w in 4096,4096 8192,8192; do RS+=("$m,$w"); done
done
for round in 1 2; do
  for b in base augur; do
    timeout ${LIMIT:-100} .carry/$b overlap tp --gpus $G --ops all-gather \
      --patterns bulk,own-bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-push:1:16 "${AG[@]}" \
      | sed "s/^/$b,$round,/" >> "$OUT/ab-ag.csv" 2>> "$OUT/ab.err"
    echo "ag $b $round rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
    timeout ${LIMIT:-60} .carry/$b overlap tp --gpus $G --ops reduce-scatter \
      --patterns bulk,pc-reduce:2:16,pc-reduce:2:32 "${RS[@]}" \
      | sed "s/^/$b,$round,/" >> "$OUT/ab-rs.csv" 2>> "$OUT/ab.err"
    echo "rs $b $round rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
  done
done
