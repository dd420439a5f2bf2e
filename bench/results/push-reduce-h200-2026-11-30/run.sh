#!/usr/bin/env bash
# Issue 24: `push-reduce:C` (the peers' rows' partials first, pushed by the copy engines, then
# this GPU's rows, each cuBLASLt GEMM adding the received partial in its epilogue) on one and
# two H200s. (1) Checked: odd and layer shapes, C 1, 2, 4, both types, the reduce-scatter and
# the all-reduce (its reduce-scatter then NCCL's all-gather), one and two GPUs; (2) timed beside
# gemm, comm, bulk and fused-reduce:0 (fused-all for the all-reduce) on 12 two-GPU layers,
# compute-bound (comm / GEMM 0.2-0.4) to comm-bound. One call (~250 s), through the device tool
# (kind nvidia-h200-x2), carry [".carry/augur.xz"]:
#   bash bench/results/push-reduce-h200-2026-11-30/run.sh
# Ran once (call 3, calls.log) with an odd shape the harness refuses (1000,1030,520: every
# check run exited at once; removed since): the reduce-scatter timed one layer in 200 s, the
# all-reduce two in 150 s (first-rs.csv, first-ar.csv), then hung. Ran again in the thirty-
# third session (s33/run/: the two-GPU checks and both sweeps hung on a later layer, inside a
# driver call; README section 3). Run again only once gdb-diag.sh has found the hang. On two
# GPUs push-reduce needs AUGUR_TP_UNVERIFIED=1.
source bench/tp-env.sh
export AUGUR_TP_UNVERIFIED=1
P=push-reduce:1,push-reduce:2,push-reduce:4
for g in 1 2; do
  odd check-$g check 60 --gpus $g --ops reduce-scatter,all-reduce --patterns bulk,$P \
    --samples 3 1000,5120,5120 3000,7168,7168 1000,1024,512 4096,5120,5120
done
L="256,8192,8192 512,7168,7168 1024,5120,13824 2048,4096,14336 4096,5120,5120 4096,5120,13824
8192,3584,18944 8192,8192,8192 16384,4096,4096 16384,5120,13824 2048,8192,8192 12288,7168,20480"
timeout 240 .carry/augur overlap tp --gpus 2 --ops reduce-scatter --samples 10 \
  --patterns gemm,comm,bulk,fused-reduce:0,$P $L > "$OUT/rs.csv" 2>> "$OUT/time.err"
echo "rs rc=$? $((SECONDS - T0)) s"
timeout 200 .carry/augur overlap tp --gpus 2 --ops all-reduce --samples 10 \
  --patterns gemm,comm,bulk,fused-all,push-reduce:2,push-reduce:4 $L > "$OUT/ar.csv" 2>> "$OUT/time.err"
echo "ar rc=$? $((SECONDS - T0)) s"
(cd "$OUT" && tar czf /tmp/pr.tgz . && rm -rf ./* && mv /tmp/pr.tgz .)
