#!/usr/bin/env bash
# Issue 24: push-reduce with every GEMM run once at set-up (Rs::new: the kernels loaded before
# any call waits on a peer's word), where layers-diag.sh's run (1) hung. (1) that run again,
# traced by step; (2) run.sh's two-GPU checks; (3) run.sh's two sweeps (12 layers). One call on
# nvidia-h200-x2 (~350 s at most), carry [".carry/augur.xz"]:
#   bash bench/results/push-reduce-h200-2026-11-30/fix.sh
source bench/tp-env.sh
export AUGUR_TP_UNVERIFIED=1
A="overlap tp --gpus 2 --ops reduce-scatter --samples 3"
L6="256,8192,8192 512,7168,7168 1024,5120,13824 2048,4096,14336 4096,5120,5120 4096,5120,13824"
# Compile every module first (NVRTC, no cache on a fresh machine), one layer.
timeout 150 .carry/augur $A --patterns bulk,fused-reduce:0,pc-reduce:2:16,push-reduce:2 \
  1024,4096,4096 > /dev/null 2>> "$OUT/time.err"
echo "compile rc=$? $((SECONDS - T0)) s"
AUGUR_TP_TRACE=1 timeout 75 .carry/augur $A --patterns push-reduce:2 $L6 > "$OUT/six.csv" 2> /tmp/six.err
echo "six rc=$? $((SECONDS - T0)) s"
grep -v "tp trace: rank" /tmp/six.err | tail -4 | cut -c1-200
P=push-reduce:1,push-reduce:2,push-reduce:4
odd check-2 check 60 --gpus 2 --ops reduce-scatter,all-reduce --patterns bulk,$P \
  --samples 3 1000,5120,5120 3000,7168,7168 1000,1024,512 4096,5120,5120
L="256,8192,8192 512,7168,7168 1024,5120,13824 2048,4096,14336 4096,5120,5120 4096,5120,13824
8192,3584,18944 8192,8192,8192 16384,4096,4096 16384,5120,13824 2048,8192,8192 12288,7168,20480"
timeout 150 .carry/augur overlap tp --gpus 2 --ops reduce-scatter --samples 10 \
  --patterns gemm,comm,bulk,fused-reduce:0,$P $L > "$OUT/rs.csv" 2>> "$OUT/time.err"
echo "rs rc=$? $((SECONDS - T0)) s"
timeout 120 .carry/augur overlap tp --gpus 2 --ops all-reduce --samples 10 \
  --patterns gemm,comm,bulk,fused-all,push-reduce:2,push-reduce:4 $L > "$OUT/ar.csv" 2>> "$OUT/time.err"
echo "ar rc=$? $((SECONDS - T0)) s"
tail -3 "$OUT"/*.err
(cd "$OUT" && tar czf /tmp/fix.tgz . && rm -rf ./* && mv /tmp/fix.tgz .)
