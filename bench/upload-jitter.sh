#!/usr/bin/env bash
# Is what gathering adds to a plan's upload a property of the matrix, or jitter? Re-measures
# upload_s / upload_gather_s three times (augur collect, one kernel) on the 16 matrices with the
# largest recorded difference in datasets/runs/spmv-cuda-f32-h100.csv and 4 typical ones
# (bench/upload-jitter-matrices.txt). After bench/prepare-carry.sh (copy the list to
# .carry/outliers.txt), through the device tool with carry [".carry"]; writes $OUT/up-{1,2,3}.csv.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mapfile -t m < .carry/outliers.txt
for r in 1 2 3; do
  .carry/augur collect --backend cuda --precision f32 --kernel scalar --reps 2 --warmup 1 \
    --rounds 1 --out "$OUT/up-$r.csv" "${m[@]}" 2>&1 | tail -1
done
