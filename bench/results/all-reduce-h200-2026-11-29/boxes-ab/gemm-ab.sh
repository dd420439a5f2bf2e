#!/usr/bin/env bash
# Issue 24: the TMA GEMM's store with an odd count of 64-column boxes (128 x 192 tiles) waiting
# for every earlier store's read before refilling box 0's buffer (.carry/augur.xz, this build)
# against the build before (.carry/fence.xz: 75a1c01 with only comm.cu changed), one GPU,
# alternating, two rounds, `augur overlap gemm` on one GPU's share of mid-band layers (the
# widths 192 and 256 by name and the auto pick, cuBLASLt beside). Through the device tool with
# carry [".carry/augur.xz", ".carry/fence.xz"]:
#   bash bench/results/all-reduce-h200-2026-11-29/boxes-ab/gemm-ab.sh   (writes $OUT/gemm-ab.csv)
source bench/tp-env.sh
S="512,2304,7168 1024,1536,4096 2048,3584,4096 4096,2560,7168 1536,7168,4096 8192,1792,5120 3072,4096,14336 256,10240,7168"
for round in 1 2; do
  for b in fence augur; do
    timeout 120 .carry/$b overlap gemm --kernels augur_tma_128x192,augur_tma_128x256,augur_tma_auto,cublaslt \
      --reps 10 $S | sed "s/^/$b,$round,/" >> "$OUT/gemm-ab.csv" 2>> "$OUT/gemm-ab.err"
    echo "$b $round rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
  done
done
