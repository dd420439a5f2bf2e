#!/usr/bin/env bash
# Issue 24, one H200: the build whose consumers take a unit's k steps alone before its products
# (unit_steps: one remainder, not the whole unit twice) checked again, under recheck/: the TMA
# kinds on odd shapes in bf16 (edges.csv), the row gate in front of kernels on every SM
# (arrive.csv), and same-kernel.sh's alternation against 209f558 (same-kernel.csv).
# From the repository root with .carry/augur.xz and .carry/augur_old.xz:  bash bench/results/tail-split-h200-2026-11-29/recheck.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
E=augur_tma_128x256_t2,augur_tma_128x192_t3,augur_tma_128x128_t8,augur_tma_128x192_k2,augur_tma_128x256,augur_tma_auto,cublaslt
timeout 90 $A overlap gemm --kernels $E 7,8,8 129,264,1032 2000,2056,1000 1100,4104,520 4097,1032,1032 \
  2560,5120,3584 >> "$OUT/edges.csv" 2>> "$OUT/check.err"
echo "edges rc=$?"
timeout 120 $A overlap arrive --blocks 4 4096,4096,3584 2560,5120,3584 > "$OUT/arrive.csv" 2>> "$OUT/check.err"
echo "arrive rc=$?"
bash bench/results/tail-split-h200-2026-11-29/same-kernel.sh
