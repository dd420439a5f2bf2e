#!/usr/bin/env bash
# The fused kernels' GEMM on one GPU (issue 24: the fused pattern must reach 0.8 of cuBLASLt
# alone on the same shapes): `augur overlap tp --gpus 1` runs each fused kernel with no peer (its
# copy or summing blocks idle, the GEMM on the other SMs, the output checked) beside cuBLASLt
# alone (`gemm`), over bench/tp-grid.sh's layers as one GPU's share of a 2-GPU layer (M rows; the
# all-gather's N / 2 columns, the reduce-scatter's K / 2). With .carry/augur.xz, through the
# device tool:   bash bench/fused-one-gpu.sh     (writes $OUT/one-gpu-*.csv; OPS picks the operations)
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
ag=(); rs=()
for m in ${MS:-16 256 1024 4096 16384}; do
  ag+=("$m,3072,4096" "$m,14336,4096" "$m,5120,8192" "$m,28672,8192")
  rs+=("$m,4096,2048" "$m,4096,7168" "$m,8192,4096" "$m,8192,14336")
done
ops=${OPS:-all-gather reduce-scatter}
[[ $ops == *all-gather* ]] && { timeout 200 .carry/augur overlap tp --gpus 1 --ops all-gather --samples 7 \
  --patterns gemm,fused-push:1:8,fused-push:2:16 "${ag[@]}" > "$OUT/one-gpu-all-gather.csv" 2> "$OUT/one-gpu-all-gather.err"
echo "all-gather rc=$?"; tail -2 "$OUT/one-gpu-all-gather.err"; }
[[ $ops == *reduce-scatter* ]] && { timeout 200 .carry/augur overlap tp --gpus 1 --ops reduce-scatter --samples 7 \
  --patterns gemm,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4,fused-reduce:16,fused-reduce:32 "${rs[@]}" > "$OUT/one-gpu-reduce-scatter.csv" 2> "$OUT/one-gpu-reduce-scatter.err"
echo "reduce-scatter rc=$?"; tail -2 "$OUT/one-gpu-reduce-scatter.err"; }
true
