#!/usr/bin/env bash
# A third weight set at M values the grids never had (issue 24): an out-of-sample test of the shipped overlap selector, then more training data.
# From the repository root through the device tool, carry [".carry/augur.xz"]: GPUS=4 bash bench/results/third-weights-h200-2026-11-28/third.sh (then GPUS=2); writes $OUT/third/grid-<gpus>-<op>.csv
set -uo pipefail
P=gemm,comm,bulk,ll-bulk,chunked:2,chunked:4,own-bulk,pull:1,push:1,push:2,pc-push:1:8,pc-push:2:8,pc-pull:1:8,pc-pull:2:8,fused-pull:1:8,fused-push:1:8,fused-pull:2:8,fused-push:2:8,fused-push:2:16,pc-reduce:2:16,pc-reduce:4:16,pc-reduce:2:32,fused-reduce:0,fused-reduce:8,fused-reduce:16,fused-reduce:32
t0=$SECONDS
MS="32 128 512 1536 3072 6144 12288" AG_W="8192,3584 28672,5120 9216,7168 40960,7168" RS_W="3584,4096 5120,14336 7168,7168 7168,20480" \
  OUT=$OUT/third LIMIT=${LIMIT:-270} TP_ARGS="--patterns $P" bash bench/tp-grid.sh
echo "took $((SECONDS-t0)) s"
