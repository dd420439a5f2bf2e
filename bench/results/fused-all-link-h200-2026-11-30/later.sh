#!/usr/bin/env bash
# Issue 24, two H200s, one call: the fused reduce-scatter's and all-reduce's 128-row tiles
# counting each unit one unit later (RsGate's flush_before_last: a warpgroup no longer waits at
# each store for the tile before's stores to have completed, a peer's link away). Builds: augur
# (this), old (the one before). (1) Checks, this build: `fused-reduce:0`, `fused-reduce:16` (the
# summing blocks' path), `fused-all`, at the estimate's width and forced to 192 (three boxes) and
# 128, on shapes whose GPUs' rows are whole 64-row halves and not (M 1000, 3000), both types;
# (2) this build against the one before, alternating, two rounds, 10 layers M 1024-16384, bulk,
# `fused-reduce:0`, `fused-all`. Tarred into one file.
# Through the device tool (kind nvidia-h200-x2), carry [".carry/augur.xz", ".carry/old.xz"]:
#   bash bench/results/fused-all-link-h200-2026-11-30/later.sh
source bench/tp-env.sh
S="1000,5120,5120 3000,7168,7168 4096,5120,5120 2048,4096,4096"
odd check check 60 --gpus 2 --ops all-reduce,reduce-scatter \
  --patterns bulk,fused-reduce:0,fused-reduce:16,fused-all --samples 3 $S
for w in 192 128; do
  export AUGUR_TP_FUSED_WIDTH=$w
  odd check-$w check 60 --gpus 2 --ops all-reduce,reduce-scatter \
    --patterns fused-reduce:0,fused-all --samples 3 $S
done
unset AUGUR_TP_FUSED_WIDTH
L="1024,4096,4096 2048,5120,5120 4096,5120,5120 4096,8192,8192 8192,4096,14336 16384,5120,5120
2048,8192,8192 1536,7168,7168 8192,7168,7168 16384,8192,8192"
ab later-ab later by_build 80 "old augur" --gpus 2 --ops all-reduce,reduce-scatter \
  --patterns bulk,fused-reduce:0,fused-all --samples 10 $L
echo "all $((SECONDS - T0)) s"
(cd "$OUT" && tar czf /tmp/later.tgz . && rm -rf ./* && mv /tmp/later.tgz .)
