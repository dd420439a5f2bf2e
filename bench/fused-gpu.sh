#!/usr/bin/env bash
# The fused all-gather + GEMM (issue 24, `fused-pull:C:S` / `fused-push:C:S`: one launch of
# augur's TMA GEMM per GPU whose first S blocks move the rows between the GPUs): first a check on
# two layers (M 16 and 1024: tiles that straddle two GPUs' rows, and whole tiles), then the
# all-gather's grid (bench/tp-grid.sh's 32 layers, M 16-16384) with the fused patterns beside
# bulk NCCL + cuBLASLt, the best producer/consumer patterns and the parts alone, then one layer
# through the library's plan (`augur overlap run`). With the binary carried as
# .carry/augur.xz, through the device tool on a machine of GPUS GPUs (default 2):
#   GPUS=2 bash bench/fused-gpu.sh        (writes $OUT/smoke-*, grid-*, run-*)
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
GPUS=${GPUS:-2}
FUSED=${FUSED:-fused-pull:1:8,fused-push:1:8,fused-pull:2:8,fused-push:2:8,fused-push:2:16}
source bench/unpack-carry.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 120 .carry/augur overlap tp --gpus "$GPUS" --ops all-gather --samples 5 \
  --patterns "gemm,bulk,$FUSED" 16,6144,4096 1024,6144,4096 > "$OUT/smoke-$GPUS.csv" 2> "$OUT/smoke-$GPUS.err"
rc=$?; echo "smoke rc=$rc"; cut -d, -f5-13 "$OUT/smoke-$GPUS.csv"; tail -3 "$OUT/smoke-$GPUS.err"
[ $rc = 0 ] || exit $rc
[ -n "${SMOKE_ONLY:-}" ] && exit 0
OUT="$OUT" GPUS="$GPUS" OPS=all-gather LIMIT=${LIMIT:-280} \
  TP_ARGS="--patterns gemm,comm,bulk,pc-push:1:8,pc-push:2:8,pc-pull:1:8,$FUSED" bash bench/tp-grid.sh
for p in ${RUN_PATTERNS:-fused-push:1:8 fused-pull:1:8}; do
  timeout 120 .carry/augur overlap run --gpus "$GPUS" --pattern "$p" 8192,6144,4096 16,6144,4096 \
    > "$OUT/run-${p//:/_}-$GPUS.csv" 2> "$OUT/run-${p//:/_}-$GPUS.err"
  echo "run $p rc=$?"; cat "$OUT/run-${p//:/_}-$GPUS.csv"
done
