#!/usr/bin/env bash
# Issue 24, four H200s, one call: `own-bulk` with the copy kernel announcing the call itself
# (this GPU's ready word written into every peer by the kernel, no cuStreamWriteValue32) and
# launched on the compute stream (no joins of the communication stream) -- the build `new`,
# .carry/augur.xz -- against the build before (ea4a214, .carry/old.xz: three stream writes, two
# joins a call), alternating, two rounds, 12 all-gather layers (M 64-2048); odd shapes checked
# first with the new build (own-bulk on 4 and 2 GPUs, both types; the pc patterns, whose copy
# kernel announces too with AUGUR_TP_UNVERIFIED). From the repository root:
#   bash bench/results/announce-4gpu-h200-2026-11-29/ab.sh   (writes $OUT/odd*.csv, $OUT/ab.csv)
source bench/tp-env.sh
odd odd4 ab 60 --gpus 4 --ops all-gather --patterns bulk,own-bulk \
  16,2048,4096 40,4096,4096 68,6144,4096 200,2048,2056
timeout 40 .carry/augur overlap tp --gpus 2 --ops all-gather --patterns bulk,own-bulk \
  16,2048,4096 40,4096,4096 66,6144,4096 200,2048,2056 > "$OUT/odd2.csv" 2>> "$OUT/ab.err"
echo "odd 2 rc=$? $((SECONDS - T0)) s"
AUGUR_TP_UNVERIFIED=1 timeout 60 .carry/augur overlap tp --gpus 4 --ops all-gather \
  --patterns bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:16 \
  16,2048,4096 40,4096,4096 68,6144,4096 200,2048,2056 > "$OUT/odd4-pc.csv" 2>> "$OUT/ab.err"
echo "odd pc rc=$? $((SECONDS - T0)) s"
layers "64 512 1024 2048" "6144,4096 10240,8192 28672,4096"
ab ab ab by_build 90 "old augur" --gpus 4 --ops all-gather --patterns gemm,bulk,own-bulk "${L[@]}"
