#!/usr/bin/env bash
# f16 on 4 GPUs, every pattern, the first weight set at five M values (issue 24, Must 1: bf16 and f16). From the repository root through the device tool, carry [".carry/augur.xz"]: bash bench/results/f16-4gpu-h200-2026-11-28/f16.sh (writes $OUT/f16/grid-4-<op>.csv)
set -uo pipefail
P=gemm,comm,bulk,ll-bulk,chunked:2,chunked:4,own-bulk,pull:1,push:1,push:2,pc-push:1:8,pc-push:2:8,pc-pull:1:8,pc-pull:2:8,fused-pull:1:8,fused-push:1:8,fused-pull:2:8,fused-push:2:8,fused-push:2:16,pc-reduce:2:16,pc-reduce:4:16,pc-reduce:2:32,fused-reduce:0,fused-reduce:8,fused-reduce:16,fused-reduce:32
t0=$SECONDS
MS="16 256 1024 4096 16384" GPUS=4 OUT=$OUT/f16 LIMIT=${LIMIT:-200} TP_ARGS="--dtype f16 --patterns $P" bash bench/tp-grid.sh
echo "took $((SECONDS-t0)) s"
