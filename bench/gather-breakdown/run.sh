#!/usr/bin/env bash
# Build the gather benchmark and run it for the whole gather and for feat_rows alone; CSV: variant,rows,nnz,blocks,gpu_us,wall_us,empty_launch_wall_us,max_len,top1pct.
# On the device: bash bench/gather-breakdown/run.sh > $OUT/gather-one.csv
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
echo "variant,rows,nnz,blocks,gpu_us,wall_us,empty_launch_wall_us,max_len,top1pct"
nvcc -O3 -arch=sm_90 -DFEATURES_CU='"../../kernels/cuda/features.cu"' gather_one.cu -o "$tmp/g" 2>/dev/null
"$tmp/g" full
"$tmp/g" rows
