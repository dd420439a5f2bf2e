#!/usr/bin/env bash
# Issue 24, two H200s, one call. (1) `fused-all` with k split (`fused-all:K`; `fused-all` splits
# by itself where `fused-reduce:0` does) checked before and after its timed calls on small and
# odd shapes, bf16 and f16, every GPU's sampled rows also compared bit for bit; the
# reduce-scatter's and all-gather's patterns checked on a few shapes (the refactors of
# 9e5be75, not yet run on a GPU). (2) At M 16-256 of the three weight sets' all-reduce layers:
# `fused-all:1` (no split), `fused-all` (split by itself), `:2`, `:4` beside bulk, one run.
# (3) `fused-all` filling each staging box once for both GPUs (.carry/augur.xz, this build)
# against once per GPU (.carry/old.xz, the build before), alternating, two rounds, 15 layers at
# M >= 512 (128-row tiles). Through the device tool with carry [".carry/augur.xz",
# ".carry/old.xz"]:
#   bash bench/results/fused-all-split-h200-2026-11-30/run.sh
source bench/tp-env.sh
odd split-check split 150 --gpus 2 --ops all-reduce \
  --patterns gemm,bulk,fused-all,fused-all:1,fused-all:2,fused-all:4 --samples 5 \
  16,4096,4096 32,3584,18944 64,8192,8192 96,5120,5120 200,4096,4096 128,5120,14336 \
  256,3584,3584 1000,1000,512 3000,7168,7168
odd rs-check refactor 100 --gpus 2 --ops reduce-scatter \
  --patterns bulk,ll-bulk,chunked:2,pc-reduce:2:16,fused-reduce:0,fused-reduce:0:2,fused-reduce:16 \
  --samples 3 16,4096,4096 200,4096,4096 1024,4096,14336
odd ag-check refactor 100 --gpus 2 --ops all-gather \
  --patterns bulk,own-bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,fused-push:1:8 \
  --samples 3 16,2048,4096 1024,6144,4096 4096,6144,4096
small_rs_layers
timeout 150 .carry/augur overlap tp --gpus 2 --ops all-reduce \
  --patterns bulk,fused-all:1,fused-all,fused-all:2,fused-all:4 "${L[@]}" \
  > "$OUT/small-m.csv" 2> "$OUT/small-m.err"
echo "small-m rc=$? $((SECONDS - T0)) s"
layers "512 2048 8192" "4096,4096 4096,14336 8192,8192 3584,18944 5120,13824"
ab store-ab store by_build ${LIMIT:-100} "old augur" --gpus 2 --ops all-reduce \
  --patterns gemm,bulk,fused-all "${L[@]}"
