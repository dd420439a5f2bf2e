#!/usr/bin/env bash
# Issue 24, one H200: the TMA kernel's tail split (augur_tma_128x{bn}_t{S}: the tiles of the last,
# part-filled wave cut in S ranges of k). Checks on odd shapes in bf16 and f16 (edges.csv) and
# the row gate in front of it (arrive.csv); then every width's whole-tile candidates (split 1, 2,
# 4, 8), its tail splits (2, 3, 4, 6, 8), augur_tma_auto and cuBLASLt on the 48 fit and 35
# validate shapes of ../tile-192-h200-2026-11-29 (fit.csv, validate.csv).
# From the repository root with .carry/augur.xz:  bash bench/results/tail-split-h200-2026-11-29/tail.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt"
E=augur_tma_128x256_t2,augur_tma_128x256_t4,augur_tma_128x192_t2,augur_tma_128x128_t4,augur_tma_128x128_t16,augur_tma_auto,cublaslt
for t in bf16 f16; do
  timeout 90 $A overlap gemm --dtype $t --kernels $E 2000,2056,1000 1100,4104,520 4097,1032,1032 \
    200,392,200 3000,2560,2048 >> "$OUT/edges.csv" 2>> "$OUT/check.err"
  echo "edges $t rc=$?"
done
timeout 60 $A overlap arrive --blocks 1,4 3072,1536,4096 2048,7168,4096 > "$OUT/arrive.csv" 2>> "$OUT/check.err"
echo "arrive rc=$?"
K=cublaslt,augur_tma_auto
for bn in 256 192 128; do
  for s in 1 2 4 8; do K+=",augur_tma_128x${bn}_k$s"; done
  for s in 2 3 4 6 8; do K+=",augur_tma_128x${bn}_t$s"; done
done
for m in 256 512 1024 2048 3072 4096; do
  S=()
  for s in 1536,4096 7168,4096 2560,8192 14336,8192 4096,1024 4096,3584 8192,2048 8192,7168; do S+=("$m,$s"); done
  timeout 200 $A overlap gemm --reps 7 --kernels "$K" "${S[@]}" >> "$OUT/fit.csv" 2>> "$OUT/fit.err"
  echo "fit $m rc=$?"
done
for m in 384 768 1536 2560 6144; do
  S=()
  for s in 2048,3584 7168,5120 2304,7168 10240,7168 3584,1024 5120,3584 7168,1792 7168,5120; do S+=("$m,$s"); done
  timeout 200 $A overlap gemm --reps 7 --kernels "$K" "${S[@]}" >> "$OUT/validate.csv" 2>> "$OUT/validate.err"
  echo "validate $m rc=$?"
done
