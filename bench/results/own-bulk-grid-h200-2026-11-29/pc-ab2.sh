#!/usr/bin/env bash
# Issue 24, two H200s, one call: `pc-push:C:S` / `pc-pull:C:S` with the copy kernel spinning on
# the peer's ready word (.carry/augur.xz, this build) against the communication stream waiting
# for it (.carry/old.xz, ea4a214's build), alternating, two rounds, 12 all-gather layers.
# From the repository root:   bash bench/results/own-bulk-grid-h200-2026-11-29/pc-ab2.sh
source bench/tp-env.sh
layers "1024 2048 4096 16384" "6144,4096 10240,8192 28672,4096"
ab pc-ab2 pc-ab2 by_build ${LIMIT:-90} "old augur" --gpus 2 --ops all-gather \
  --patterns bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8 "${L[@]}"
