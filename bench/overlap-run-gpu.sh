#!/usr/bin/env bash
# The all-gather + GEMM through the library's plan on a caller's buffers (issue 24,
# `augur::overlap::LayerPlan`): `augur overlap run` on GPUS GPUs (default 2), first with the
# built-in model's pattern on its default shapes, then every all-gather pattern given by name on
# one layer (M 8192, Llama-3-8B's QKV: N 6144, K 4096), each checked after its first call and
# after the timing, with the harness's run of the same pattern beside it. After the binary is
# carried as .carry/augur.xz (bench/prepare-carry.sh, then xz), through the device tool on a
# machine of 2 (or 4) GPUs with carry [".carry"]:
#   GPUS=2 bash bench/overlap-run-gpu.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
A=.carry/augur
OUT=${OUT:-/tmp/out}
GPUS=${GPUS:-2}
source bench/unpack-carry.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 240 $A overlap run --gpus "$GPUS" > "$OUT/run-model-$GPUS.csv" 2> "$OUT/run-model-$GPUS.err"
echo "model's patterns rc=$?"; cat "$OUT/run-model-$GPUS.csv"; tail -3 "$OUT/run-model-$GPUS.err"
first=1
for p in ${PATTERNS:-bulk chunked:2 pull:1 pull-bulk push:2 pc-push:2:8 pc-pull:1:8 own-bulk}; do
  timeout 120 $A overlap run --gpus "$GPUS" --pattern "$p" 8192,6144,4096 > "$OUT/one.csv" 2>> "$OUT/run-patterns-$GPUS.err"
  echo "$p rc=$?" >> "$OUT/run-patterns-$GPUS.err"
  if [ $first = 1 ]; then cat "$OUT/one.csv"; first=0; else tail -n +2 "$OUT/one.csv"; fi
done > "$OUT/run-patterns-$GPUS.csv"
rm -f "$OUT/one.csv"
echo "patterns:"; cat "$OUT/run-patterns-$GPUS.csv"; grep rc= "$OUT/run-patterns-$GPUS.err" | tr '\n' ' '
