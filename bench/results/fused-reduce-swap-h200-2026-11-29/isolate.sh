#!/usr/bin/env bash
# Issue 24, GPUS (default 2) H200s: which of the swapped `fused-reduce:0` patterns stopped with an illegal
# instruction in the first build (.carry/augur_b1.xz: every owner's rows by a tensor-memory
# reduction, the later owners' at a negative row of their maps), each pattern alone on one
# layer, and the same in the build where the later owners' rows are added 16 bytes at a time
# (.carry/augur.xz). Writes $OUT/isolate.csv and .err.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
# The launch-zeroed sum and the swapped GEMM between GPUs (fused.rs, in_launch).
export AUGUR_TP_UNVERIFIED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
for b in b1 new; do
  A=.carry/augur_b1; [ $b = new ] && A=.carry/augur
  for p in fused-reduce:0 fused-reduce:0:4; do
    timeout 40 $A overlap tp --gpus ${GPUS:-2} --ops reduce-scatter --samples 5 --patterns $p 16,4096,4096 \
      2>> "$OUT/isolate.err" | sed "s/^/$b,/" >> "$OUT/isolate.csv"
    echo "$b $p rc=${PIPESTATUS[0]}" | tee -a "$OUT/isolate.err"
  done
done
