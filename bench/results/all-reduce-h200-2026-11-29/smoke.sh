#!/usr/bin/env bash
# Issue 24, the GEMM + all-reduce: every pattern that applies checked (before and after its
# timed calls) on 2 GPUs, bf16 and f16, on edge and layer shapes; the plan (`augur overlap run`)
# on the same buffers a caller registers, per pattern. Through the device tool with carry
# [".carry/augur.xz"]:  bash bench/results/all-reduce-h200-2026-11-29/smoke.sh
source bench/tp-env.sh
P=gemm,comm,bulk,ll-bulk,chunked:2,chunked:4,pc-reduce:2:16,pc-reduce-sm:2:16,fused-reduce:0,fused-reduce:0:2,fused-reduce:16
# M 16 and 64 (the swapped fused GEMM), 256, 2048 (the 128-row tiles), N not a multiple of 128.
layers "16 64 256 2048" "4096,4096 3584,18944"
odd smoke smoke 240 --gpus 2 --ops all-reduce --patterns "$P" --samples 5 "${L[@]}"
# N 1000 (not whole 16-byte rows: no fused pattern).
odd odd smoke 60 --gpus 2 --ops all-reduce --patterns gemm,comm,bulk,ll-bulk,chunked:2,pc-reduce:2:16 \
  --samples 5 96,1000,512 2048,1000,1024
# The plan on the caller's buffers, each pattern given, and the model's pick.
for p in bulk chunked:2 fused-reduce:0 ll-bulk ""; do
  timeout 60 .carry/augur overlap run --gpus 2 --op all-reduce ${p:+--pattern $p} --samples 5 \
    256,4096,4096 2048,8192,8192 >> "$OUT/run.csv" 2>> "$OUT/run.err"
  echo "run ${p:-model} rc=$? $((SECONDS - T0)) s"
done
