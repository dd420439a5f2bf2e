#!/usr/bin/env bash
# Issue 24, NOT RUN YET (no machine of four lent this session): four H200s, one call (~400 s).
# (1) On two of them, with the planes forced (AUGUR_TP_ALL_PLANES): `fused-all:2` after an
# unsplit `fused-all` in one process, the case that failed in planes16/ before the fix
# (fused.rs's all_acc_bytes), both types. (2) On four, `fused-all` (16-bit planes per source
# GPU unsplit, f32 planes split; AUGUR_TP_UNVERIFIED=1) checked on small and odd shapes, both
# types, every GPU's sums compared bit for bit. (3) The 4-GPU all-reduce grid of the three
# weight sets with every row-parallel pattern and `fused-all`. Tarred into one file. Through the
# device tool (kind nvidia-h200-x4) with carry [".carry/augur.xz"]:
#   bash bench/results/fused-all-split-h200-2026-11-30/queued-4gpu.sh
# Then: `python3 bench/tp-summary.py` or the train command on the grid (OVERLAP_GRIDS gains
# three 4-GPU all-reduce files), and if every check passed, all_counts (fused.rs) may take 4.
source bench/tp-env.sh
export AUGUR_TP_ALL_PLANES=1
odd planes-fix planes-fix 100 --gpus 2 --ops all-reduce --patterns bulk,fused-all,fused-all:2 \
  --samples 5 16,4096,4096 64,8192,8192 200,4096,4096 1000,1000,512 3000,7168,7168
unset AUGUR_TP_ALL_PLANES
export AUGUR_TP_UNVERIFIED=1
odd all4-check all4 150 --gpus 4 --ops all-reduce \
  --patterns gemm,bulk,fused-reduce:0,fused-all,fused-all:2 --samples 5 \
  16,4096,4096 32,3584,18944 64,8192,8192 96,5120,5120 200,4096,4096 1000,1000,512 \
  3000,7168,7168
OUT=$OUT/grid OPS=all-reduce GPUS=4 LIMIT=${GRID_LIMIT:-150} \
  F=gemm,comm,bulk,ll-bulk,chunked:2,pc-reduce:2:16,fused-reduce:0,fused-reduce:0:2,fused-all \
  bash bench/regrid-fused.sh
unset AUGUR_TP_UNVERIFIED
echo "all $((SECONDS - T0)) s"
(cd "$OUT" && tar czf /tmp/queued4.tgz . && rm -rf ./* && mv /tmp/queued4.tgz .)
