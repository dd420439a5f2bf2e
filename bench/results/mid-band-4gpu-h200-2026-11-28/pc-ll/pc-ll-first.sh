#!/usr/bin/env bash
# pc-ll first run (issue 24; through the device tool from the repository root, carry [".carry/augur.xz"]: bash bench/results/mid-band-4gpu-h200-2026-11-28/pc-ll/pc-ll-first.sh): 4 GPUs, the mid band (M 256-2048), beside bulk, ll-bulk, pc-push:1:8.
set -uo pipefail
source bench/unpack-carry.sh
O=$OUT/s; mkdir -p $O; export NCCL_NVLS_ENABLE=0
timeout 110 .carry/augur overlap tp --gpus 4 --ops all-gather --samples 9 --patterns gemm,comm,bulk,ll-bulk,pc-push:1:8,pc-ll:1:16,pc-ll:2:16,pc-ll:2:32,pc-ll:4:32 1024,6144,4096 1024,10240,8192 2048,6144,4096 512,28672,4096 256,10240,8192 > $O/pc-ll-4.csv 2> $O/pc-ll-4.err; echo "rc=$?"; tail -3 $O/pc-ll-4.err
awk -F, '{print $5,$6,$7,$8,$9,$11}' $O/pc-ll-4.csv
cd $OUT && tar czf out.tgz s && rm -rf s
