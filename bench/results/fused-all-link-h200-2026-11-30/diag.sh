#!/usr/bin/env bash
# Issue 24, two H200s, one call: (1) the planes-buffer fix (fused.rs's all_acc_bytes): with the
# planes forced (AUGUR_TP_ALL_PLANES), `fused-all:2` after an unsplit `fused-all` in one process,
# the case that failed before, both types; (2) the plan's replica check (`augur overlap run
# --op all-reduce`: every GPU's sampled rows of the sum bit for bit), the model's pick and
# `fused-all:2`, both types; (3) where `fused-all`'s time goes between GPUs: the same layers on
# two GPUs and, with k halved (one GPU's share), on one (no peer: the GEMM and its local
# reductions only), at k 256 too (a GEMM of next to nothing: the link's rate by tensor-memory
# reductions), beside NCCL's all-reduce and `fused-reduce:0`; and the 16-bit planes (plain
# remote stores, summed at the end) on the same layers. Tarred into one file.
# Through the device tool (kind nvidia-h200-x2), carry [".carry/augur.xz"]:
#   bash bench/results/fused-all-link-h200-2026-11-30/diag.sh
source bench/tp-env.sh
export AUGUR_TP_ALL_PLANES=1
odd planes-fix planes-fix 100 --gpus 2 --ops all-reduce --patterns bulk,fused-all,fused-all:2 \
  --samples 5 16,4096,4096 64,8192,8192 200,4096,4096 1000,1000,512 3000,7168,7168
unset AUGUR_TP_ALL_PLANES
for t in bf16 f16; do
  for p in "" fused-all:2; do
    timeout 90 .carry/augur overlap run --gpus 2 --op all-reduce --dtype $t ${p:+--pattern $p} \
      --samples 5 16,3584,18944 200,4096,4096 8192,5120,13824 >> "$OUT/plan.csv" 2>> "$OUT/plan.err"
    echo "plan $t ${p:-model} rc=$? $((SECONDS - T0)) s"
  done
done
TWO="1024,4096,256 4096,4096,256 16384,4096,256 4096,8192,256 1024,5120,5120 4096,5120,5120
16384,5120,5120 4096,8192,8192 16384,8192,28672 256,4096,4096 64,8192,8192 16,4096,4096"
ONE=$(for s in $TWO; do IFS=, read -r m n k <<< "$s"; echo "$m,$n,$((k / 2))"; done)
timeout 150 .carry/augur overlap tp --gpus 2 --ops all-reduce,reduce-scatter \
  --patterns gemm,comm,bulk,fused-reduce:0,fused-all --samples 10 $TWO > "$OUT/link-2.csv" 2>> "$OUT/link.err"
echo "link-2 rc=$? $((SECONDS - T0)) s"
timeout 100 .carry/augur overlap tp --gpus 1 --ops all-reduce \
  --patterns gemm,fused-reduce:0,fused-all --samples 10 $ONE > "$OUT/link-1.csv" 2>> "$OUT/link.err"
echo "link-1 rc=$? $((SECONDS - T0)) s"
AUGUR_TP_ALL_PLANES=1 timeout 100 .carry/augur overlap tp --gpus 2 --ops all-reduce \
  --patterns bulk,fused-all --samples 10 $TWO > "$OUT/link-planes.csv" 2>> "$OUT/link.err"
echo "link-planes rc=$? $((SECONDS - T0)) s"
echo "all $((SECONDS - T0)) s"
(cd "$OUT" && tar czf /tmp/diag.tgz . && rm -rf ./* && mv /tmp/diag.tgz .)
