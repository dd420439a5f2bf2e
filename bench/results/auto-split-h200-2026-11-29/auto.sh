#!/usr/bin/env bash
# Issue 24: `fused-reduce:0` taking its k split by itself where its units leave the SMs idle
# (fused.rs's auto_splits), on two H200s (nvidia-h200-x2), one call. From the repository root
# with .carry/augur.xz of the build:
#   bash bench/results/auto-split-h200-2026-11-29/auto.sh     (writes $OUT/auto.tgz)
# 1. Odd shapes on 2 GPUs and on 1 (f16, bf16): token tiles holding both GPUs' rows (M 16, 40, 66),
#    N not a multiple of 128, every pattern checked before and after its timed calls.
# 2. The one-GPU bar's layers where it splits (M 16) and a control (256 x 4096 x 2048), beside
#    `fused-reduce:0:2` / `:0:4` and the GEMM alone.
# 3. The 2-GPU training grids' 21 layers where it splits, bulk and `fused-reduce:0`, per weight
#    set (for bench/splice-grid.py).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=$(mktemp -d)
source bench/unpack-carry.sh
T0=$SECONDS
if [ -n "${RUN_ONLY:-}" ]; then
  for g in 2 1; do
    timeout 90 .carry/augur overlap run --gpus $g --op reduce-scatter --pattern fused-reduce:0 \
      16,4096,4096 16,3584,18944 64,4096,14336 256,4096,4096 > "$OUT/run$g.csv" 2>> "$OUT/run.err"
    echo "run $g rc=$? $((SECONDS - T0)) s"
  done
  exit 0
fi
ODD=(16,1032,4096 40,2056,4096 66,4096,4096 64,4096,4096 136,2056,4096 16,3584,1792)
for g in 2 1; do
  base=bulk; [ $g = 1 ] && base=gemm
  for t in f16 bf16; do
    timeout 80 .carry/augur overlap tp --gpus $g --dtype $t --ops reduce-scatter \
      --patterns $base,fused-reduce:0,fused-reduce:0:2 "${ODD[@]}" > "$W/odd$g-$t.csv" 2>> "$W/err.txt"
    echo "odd $g $t rc=$? $((SECONDS - T0)) s"
  done
done
timeout 100 .carry/augur overlap tp --gpus 1 --ops reduce-scatter --samples 7 \
  --patterns gemm,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4 \
  16,4096,2048 16,4096,7168 16,8192,4096 16,8192,14336 256,4096,2048 > "$W/bar1.csv" 2>> "$W/err.txt"
echo "bar rc=$? $((SECONDS - T0)) s"
declare -A L=(
  [first]="16,4096,4096 16,4096,14336 16,8192,8192 16,8192,28672 64,4096,4096 64,4096,14336 64,8192,8192 64,8192,28672"
  [second]="16,3584,3584 16,3584,18944 16,5120,5120 16,5120,13824 64,3584,3584 64,3584,18944 64,5120,5120 64,5120,13824"
  [third]="32,3584,4096 32,5120,14336 32,7168,7168 32,7168,20480 128,3584,4096")
for set in first second third; do
  timeout 120 .carry/augur overlap tp --gpus 2 --ops reduce-scatter --patterns bulk,fused-reduce:0 \
    ${L[$set]} > "$W/regrid-$set.csv" 2>> "$W/err.txt"
  echo "regrid $set rc=$? $((SECONDS - T0)) s"
done
tar czf "$OUT/auto.tgz" -C "$W" .
# 4. (A second call.) Through the library's plan (`augur::overlap::LayerPlan`, `overlap run`) where
#    it splits, on 2 GPUs and 1:
#    RUN_ONLY=1 bash bench/results/auto-split-h200-2026-11-29/auto.sh
