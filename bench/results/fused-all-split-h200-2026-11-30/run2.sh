#!/usr/bin/env bash
# Issue 24, two H200s, one call, the second: (1) `fused-all` filling each staging box once for
# both GPUs (.carry/augur.xz, this build) against once per GPU (.carry/old.xz, the build
# before 2ee8abd), alternating, two rounds, 15 layers at M >= 512 (128-row tiles; the first
# call's A/B was lost: more than 8 files came back); (2) `fused-all` splitting k by its own
# rule (fused.rs's all_auto_splits, chosen on the first call's small-m.csv) beside
# `fused-all:1` and bulk on the same 32 layers; (3) `fused-all` and bulk re-timed on the whole
# all-reduce grids of the three weight sets (for the selector). Everything tarred into one
# file. Through the device tool with carry [".carry/augur.xz", ".carry/old.xz"]:
#   bash bench/results/fused-all-split-h200-2026-11-30/run2.sh
source bench/tp-env.sh
layers "512 2048 8192" "4096,4096 4096,14336 8192,8192 3584,18944 5120,13824"
ab store-ab store by_build ${LIMIT:-100} "old augur" --gpus 2 --ops all-reduce \
  --patterns gemm,bulk,fused-all "${L[@]}"
small_rs_layers
timeout 150 .carry/augur overlap tp --gpus 2 --ops all-reduce \
  --patterns bulk,fused-all:1,fused-all "${L[@]}" > "$OUT/small-m2.csv" 2> "$OUT/small-m2.err"
echo "small-m2 rc=$? $((SECONDS - T0)) s"
OUT=$OUT/regrid OPS=all-reduce GPUS=2 LIMIT=${GRID_LIMIT:-100} F=bulk,fused-all bash bench/regrid-fused.sh
echo "regrid $((SECONDS - T0)) s"
(cd "$OUT" && tar czf /tmp/run2.tgz . && rm -rf ./* && mv /tmp/run2.tgz .)
