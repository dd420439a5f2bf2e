#!/usr/bin/env bash
# The fused patterns (issue 24): `fused-pull:C:S` / `fused-push:C:S` (all-gather + GEMM: one
# launch of augur's TMA GEMM per GPU whose first S blocks move the rows between the GPUs) and
# `fused-reduce:S` (GEMM + reduce-scatter: the TMA GEMM's tiles stored straight into their
# owners' staging, summed there by S blocks of the owner's launch). First a check of each on
# two layers (M 16: tiles that straddle two GPUs' rows; M 1024: whole tiles), then each
# operation's grid (bench/tp-grid.sh's 32 layers, M 16-16384) with the fused patterns beside
# bulk NCCL + cuBLASLt, the best producer/consumer patterns and the parts alone, then one layer
# of each through the library's plan (`augur overlap run`). With the binary carried as
# .carry/augur.xz, through the device tool on a machine of GPUS GPUs (default 2):
#   GPUS=2 bash bench/fused-gpu.sh        (writes $OUT/smoke-*, grid-*, run-*)
# OPS (default "all-gather reduce-scatter") picks the operations.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
GPUS=${GPUS:-2}
OPS=${OPS:-all-gather reduce-scatter}
AG_FUSED=${AG_FUSED:-fused-pull:1:8,fused-push:1:8,fused-pull:2:8,fused-push:2:8,fused-push:2:16}
RS_FUSED=${RS_FUSED:-fused-reduce:0,fused-reduce:8,fused-reduce:16,fused-reduce:32}
source bench/unpack-carry.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for op in $OPS; do
  if [ "$op" = all-gather ]; then
    fused=$AG_FUSED; others=pc-push:1:8,pc-push:2:8,pc-pull:1:8; k=4096; run="fused-push:1:8 fused-pull:1:8"
  else
    fused=$RS_FUSED; others=chunked:2,pc-reduce:2:16,pc-reduce:2:32; k=8192; run=${RS_RUN:-fused-reduce:0 fused-reduce:16}
  fi
  timeout 120 .carry/augur overlap tp --gpus "$GPUS" --ops "$op" --samples 5 \
    --patterns "gemm,bulk,$fused" 16,6144,$k 1024,6144,$k > "$OUT/smoke-$GPUS-$op.csv" 2> "$OUT/smoke-$GPUS-$op.err"
  rc=$?; echo "$op smoke rc=$rc"; cut -d, -f5-13 "$OUT/smoke-$GPUS-$op.csv"; tail -3 "$OUT/smoke-$GPUS-$op.err"
  [ $rc = 0 ] || continue
  [ -n "${SMOKE_ONLY:-}" ] && continue
  OUT="$OUT" GPUS="$GPUS" OPS="$op" LIMIT=${LIMIT:-280} \
    TP_ARGS="--patterns gemm,comm,bulk,$others,$fused" bash bench/tp-grid.sh
  for p in $run; do
    timeout 120 .carry/augur overlap run --op "$op" --gpus "$GPUS" --pattern "$p" 8192,6144,$k 16,6144,$k \
      > "$OUT/run-${p//:/_}-$GPUS.csv" 2> "$OUT/run-${p//:/_}-$GPUS.err"
    echo "run $p rc=$?"; cat "$OUT/run-${p//:/_}-$GPUS.csv"
  done
done
