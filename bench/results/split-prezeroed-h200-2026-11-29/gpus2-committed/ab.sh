#!/usr/bin/env bash
# Issue 24, two H200s: the A/B part of ../verify-gpus.sh alone with the committed kernel (a52ca1b's
# binary, carried as .carry/augur_base.xz, on which prezeroed between GPUs needs
# AUGUR_TP_UNVERIFIED): the variable off and on, alternating, two rounds. What ran (one call,
# nvidia-h200-x2), from the repository root:
#   bash bench/results/split-prezeroed-h200-2026-11-29/gpus2-committed/ab.sh   (writes $OUT/ab2.csv)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
cp .carry/augur_base.xz .carry/augur.xz; source bench/unpack-carry.sh; export NCCL_NVLS_ENABLE=0
S=(); for m in 16 64 256; do for w in 4096,4096 8192,8192 4096,14336; do S+=("$m,$w"); done; done
for round in 1 2; do
  for mode in off on; do
    if [ $mode = on ]; then export AUGUR_TP_UNVERIFIED=1; else unset AUGUR_TP_UNVERIFIED; fi
    timeout 60 .carry/augur overlap tp --gpus 2 --ops reduce-scatter \
      --patterns bulk,ll-bulk,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4 "${S[@]}" \
      | sed "s/^/$mode,$round,/" >> $OUT/ab2.csv 2>> $OUT/ab2.err
    echo "$mode $round rc=${PIPESTATUS[0]} $SECONDS s"
  done
done
