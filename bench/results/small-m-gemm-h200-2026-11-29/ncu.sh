#!/usr/bin/env bash
# Issue 24, one H200: where augur's TMA GEMM loses to cuBLASLt at small M. Nsight Compute's DRAM,
# L2 and SM figures and each kernel's name (cuBLASLt's chosen kernel) for both GEMMs on a few
# one-GPU shares of the third weight set's layers. Clocks left alone (--clock-control none).
# From the repository root with .carry/augur.xz:  bash bench/results/small-m-gemm-h200-2026-11-29/ncu.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,launch__grid_size
for s in ${SHAPES:-32,10240,7168 32,7168,5120 128,10240,7168 512,10240,7168 512,2304,7168}; do
  timeout 120 ncu --clock-control none --csv --metrics $M \
    .carry/augur overlap gemm --reps 1 --warmup 0 --kernels ${KERNELS:-augur_tma_128x256_k2,augur_tma_auto,cublaslt} $s \
    > "$OUT/ncu-$s.csv" 2> "$OUT/ncu-$s.err"
  echo "$s rc=$?"
done
cat "$OUT"/ncu-*.csv > "$OUT/ncu.csv"; cat "$OUT"/ncu-*.err > "$OUT/ncu.err"; rm -f "$OUT"/ncu-*
