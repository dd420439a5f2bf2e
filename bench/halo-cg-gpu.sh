#!/usr/bin/env bash
# MultiGpuSpmv's halo mode and CG on the GPUs (issue 23) on one GPU: the halo split checked
# against the f64 reference (every square shared matrix cut into 2, 3, 4 and 7 shards on the one
# GPU, all of the halo mode but NCCL), the halo mode of MultiGpuSpmv on one GPU, and CG with every
# vector on the GPU (`MultiGpuSpmv::cg`, all-gather and halo modes) against the same CG with its
# vectors on the host (one SpmvPlan), on a small and the 1.1e8-nonzero stencil.
# After `bash bench/prepare-carry.sh` and copying the release `cg` example to .carry/cg, through
# the device tool with carry [".carry"]:
#   bash bench/halo-cg-gpu.sh        (writes $OUT/*.txt, *.json)
set -uo pipefail
cd "$(dirname "$0")/.."
A=.carry/augur
CG=.carry/cg
M=.carry/matrices/suitesparse
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
$A check --backend cuda --halo-shards 2,3,4,7 $M/*.mtx.gz > "$OUT/check-halo.txt" 2>&1
echo "check rc=$?"; tail -5 "$OUT/check-halo.txt" | cut -c1-400
for mode in halo all-gather; do
  $A run "stencil3d:nx=64,points=27" --gpus 1 --gather-mode $mode --iterations 300 --check \
    --profile --json > "$OUT/run-gpus1-$mode.json" 2>&1
  echo "run --gpus 1 --gather-mode $mode rc=$?"
done
for spec in "stencil3d:nx=64,points=27" "$M/bcsstk16.mtx.gz" "stencil3d:nx=160,points=27"; do
  tag=$(basename "$spec" | tr ':=,' '___' | sed 's/.mtx.gz//')
  $CG "$spec" --iterations 3000 > "$OUT/cg-$tag-host.txt" 2>&1; echo "cg $tag host rc=$?"
  $CG "$spec" --iterations 3000 --gpus 1 > "$OUT/cg-$tag-gpu.txt" 2>&1; echo "cg $tag gpu rc=$?"
  $CG "$spec" --iterations 3000 --gpus 1 --halo > "$OUT/cg-$tag-gpu-halo.txt" 2>&1
  echo "cg $tag gpu halo rc=$?"
  grep -h "^CG" "$OUT/cg-$tag-host.txt" "$OUT/cg-$tag-gpu.txt" "$OUT/cg-$tag-gpu-halo.txt"
done
$A run "stencil3d:nx=160,points=27" --gpus 1 --iterations 300 --json > "$OUT/run-160-gpus1.json" 2>&1
echo "run 160 rc=$?"; grep -o '"per_iteration_s":[^,]*' "$OUT/run-160-gpus1.json"
