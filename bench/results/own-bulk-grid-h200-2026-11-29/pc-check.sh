#!/usr/bin/env bash
# Issue 24: `pc-push:C:S` / `pc-pull:C:S` with the copy kernel spinning on the peers' ready words
# (the default on two and four GPUs since this build) checked on odd shapes on two and four
# H200s, both types (checked before and after their timed calls). From the repository root with
# .carry/augur.xz:   bash bench/results/own-bulk-grid-h200-2026-11-29/pc-check.sh
source bench/tp-env.sh
for g in ${GPUS:-2 4}; do
  odd pc-odd$g pc-check 60 --gpus $g --ops all-gather \
    --patterns bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:16 \
    16,2048,4096 40,4096,4096 $((64 + 2 * g)),6144,4096 200,2048,2056 1024,6144,4096
done
