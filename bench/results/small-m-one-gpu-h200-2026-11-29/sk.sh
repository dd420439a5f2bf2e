#!/usr/bin/env bash
# Issue 24, one H200: the TMA GEMM with stream k (`augur_tma_128x{256,128}_sk`) against the split
# runs and cuBLASLt: the edge shapes (both types), the third weight set's 4-GPU shares at small
# and middle M, and `augur overlap gemm`'s default grid. Every kernel is checked before and after
# its timed launches. With bench/results/small-m-one-gpu-h200-2026-11-29/stream-k.patch applied
# (git apply) and built, from the repository root with .carry/augur.xz:
#   bash bench/results/small-m-one-gpu-h200-2026-11-29/sk.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
K=${K:-cublaslt,augur_tma_auto,augur_tma_128x256_sk,augur_tma_128x128_sk}
for t in bf16 f16; do
  timeout 60 $A overlap gemm --dtype $t --kernels $K 7,8,8 1000,136,40 129,264,1032 300,520,2056 16,64,64 > "$OUT/sk-edges-$t.csv" 2>> "$OUT/sk.err"
  echo "edges $t rc=$?"
done
S=()
for m in 32 128 512 1536; do S+=("$m,2048,3584" "$m,2304,7168" "$m,7168,5120" "$m,10240,7168"); done
timeout 150 $A overlap gemm --kernels $K "${S[@]}" > "$OUT/sk-third.csv" 2>> "$OUT/sk.err"
echo "third rc=$?"
timeout 250 $A overlap gemm --kernels $K > "$OUT/sk-grid.csv" 2>> "$OUT/sk.err"
echo "grid rc=$?"; grep -v "^$" "$OUT/sk.err" | tail -12
