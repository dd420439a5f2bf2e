#!/usr/bin/env bash
# Issue 24, GPUS (default 2) H200s: which of the swapped `fused-reduce:0` patterns stopped with an illegal
# instruction in the first build (.carry/augur_b1.xz: every owner's rows by a tensor-memory
# reduction, the later owners' at a negative row of their maps), each pattern alone on one
# layer, and the same in the build where the later owners' rows are added 16 bytes at a time
# (.carry/augur.xz), and, if carried, in a diagnostic build of it that adds them 4 bytes at a
# time as the 128-row kernel's pairs do (.carry/augur_r4.xz: red_add8 as four red_add2, the
# split's v4.f32 as two red_add2_f32; not committed). Writes $OUT/isolate.csv and .err.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
# The launch-zeroed sum and the swapped GEMM between GPUs (fused.rs, in_launch).
export AUGUR_TP_UNVERIFIED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
for b in b1 new r4; do
  A=.carry/augur_$b; [ $b = new ] && A=.carry/augur
  [ -x $A ] || continue
  for p in fused-reduce:0 fused-reduce:0:4; do
    timeout 40 $A overlap tp --gpus ${GPUS:-2} --ops reduce-scatter --samples 5 --patterns $p 16,4096,4096 \
      2>> "$OUT/isolate.err" | sed "s/^/$b,/" >> "$OUT/isolate.csv"
    echo "$b $p rc=${PIPESTATUS[0]}" | tee -a "$OUT/isolate.err"
  done
done
