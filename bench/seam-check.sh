#!/usr/bin/env bash
# The device seam on a GPU (issue 21): the correctness suite through `Device::cuda`, plans through
# the seam (each gather policy, checked), one-GPU MultiGpuSpmv, the dispatcher against kernels
# prepared by hand through the seam, and plan setup through the library (bench/plan-upload).
# After `bash bench/prepare-carry.sh`, through the device tool with carry [".carry"]:
#   bash bench/seam-check.sh        (writes $OUT/*.txt, *.json, *.csv)
set -uo pipefail
cd "$(dirname "$0")/.."
A=.carry/augur
M=.carry/matrices/suitesparse
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" NCCL_NVLS_ENABLE=0
$A check --backend cuda $M/*.mtx.gz > "$OUT/check.txt" 2>&1; echo "check rc=$?"; tail -4 "$OUT/check.txt"
for g in never sample always; do
  for p in f32 f64; do
    $A run $M/bcsstk33.mtx.gz --backend cuda --precision $p --gather $g --check --json \
      > "$OUT/run-bcsstk33-$g-$p.json" 2>&1
    echo "run bcsstk33 gather=$g $p rc=$?"
  done
done
$A run "stencil2d:nx=700" --backend cuda --iterations 1000 --check --explain > "$OUT/run-stencil2d.txt" 2>&1
echo "run stencil2d rc=$?"; grep -i "kernel\|check\|GB/s" "$OUT/run-stencil2d.txt" | head -6
$A run "stencil2d:nx=700" --gpus 1 --iterations 300 --check --profile --json > "$OUT/run-gpus1.json" 2>&1
echo "run --gpus 1 rc=$?"
$A bench dispatch --backend cuda $M/bcsstk33.mtx.gz "stencil2d:nx=300" "rmat:scale=14,ef=8,seed=1" \
  > "$OUT/dispatch.csv" 2> "$OUT/dispatch.err"
echo "dispatch rc=$?"; cat "$OUT/dispatch.csv"
REPS=3 bash bench/plan-upload/run.sh > "$OUT/plan-upload.txt" 2>&1; echo "plan-upload rc=$?"
tail -12 "$OUT/plan-upload.txt"
