#!/usr/bin/env bash
# A layer through the library's plan on a caller's buffers (issue 24, `augur::overlap::LayerPlan`):
# `augur overlap run` on GPUS GPUs (default 2), for OP (all-gather, the default, or
# reduce-scatter), first with the built-in model's pattern on its default shapes, then every
# pattern of the operation given by name on one layer (M 8192; all-gather: Llama-3-8B's QKV, N
# 6144, K 4096; reduce-scatter: N 4096, K 4096), each checked after its first call and after the
# timing, with the harness's run of the same pattern beside it. After the binary is
# carried as .carry/augur.xz (bench/prepare-carry.sh, then xz), through the device tool on a
# machine of 2 (or 4) GPUs with carry [".carry"]:
#   GPUS=2 bash bench/overlap-run-gpu.sh; OP=reduce-scatter GPUS=2 bash bench/overlap-run-gpu.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
A=.carry/augur
OUT=${OUT:-/tmp/out}
GPUS=${GPUS:-2}
OP=${OP:-all-gather}
if [ "$OP" = all-gather ]; then
  layer=8192,6144,4096; all="bulk chunked:2 pull:1 pull-bulk push:2 pc-push:2:8 pc-pull:1:8 own-bulk"
else
  layer=8192,4096,4096; all="bulk chunked:2 pc-reduce:2:16 pc-reduce-sm:2:16"
fi
tag=$OP-$GPUS
source bench/unpack-carry.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 240 $A overlap run --op "$OP" --gpus "$GPUS" > "$OUT/run-model-$tag.csv" 2> "$OUT/run-model-$tag.err"
echo "model's patterns rc=$?"; cat "$OUT/run-model-$tag.csv"; tail -3 "$OUT/run-model-$tag.err"
first=1
for p in ${PATTERNS:-$all}; do
  timeout 120 $A overlap run --op "$OP" --gpus "$GPUS" --pattern "$p" $layer > "$OUT/one.csv" 2>> "$OUT/run-patterns-$tag.err"
  echo "$p rc=$?" >> "$OUT/run-patterns-$tag.err"
  if [ $first = 1 ]; then cat "$OUT/one.csv"; first=0; else tail -n +2 "$OUT/one.csv"; fi
done > "$OUT/run-patterns-$tag.csv"
rm -f "$OUT/one.csv"
echo "patterns:"; cat "$OUT/run-patterns-$tag.csv"; grep rc= "$OUT/run-patterns-$tag.err" | tr '\n' ' '
