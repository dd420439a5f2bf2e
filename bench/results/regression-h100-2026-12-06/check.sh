#!/usr/bin/env bash
# One GPU, the build of this session (nothing of the GPU paths has run since the thirty-third
# session's two H200s): every GPU check augur has that runs on one GPU, each bounded. Carry
# [".carry/augur.xz", ".carry/matrices"]:
#   cargo build --release --locked -p augur-cli && xz -T0 -6 -c target/release/augur > .carry/augur.xz
#   mkdir -p .carry/matrices && cp -r ../shared/matrices/suitesparse ../shared/matrices/MANIFEST.tsv .carry/matrices/
#   (then the 8 largest files and their MANIFEST lines removed, for the 64 MiB transfer: bcsstk16
#   bayer10 bcsstk33 luxembourg_osm mhd1280a rgg_n_2_15_s0 ex6 bcsstk13; 131 matrices left)
#   bash bench/results/regression-h100-2026-12-06/check.sh
source bench/tp-env.sh
A=.carry/augur
export AUGUR_SHARED_MATRICES=.carry/matrices
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
step() { # NAME SECONDS ARGS...: augur ARGS into $OUT/NAME.txt (stderr beside), its rc and time
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$A" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"
  echo "$name rc=$? $((SECONDS - T0)) s"
}
step kernels-build 90 kernels build
# SpMV: every CUDA kernel, f32 and f64, the edge cases and the 131 shared matrices carried.
step check-cuda 200 check --backend cuda
# Decode attention: every schedule on the built-in shapes (empty and one-token sequences,
# GQA 1/4/8, head_dim 64/128/256, f16 and bf16, paged).
step attention-check 80 attention check
# The GEMMs of the overlap patterns: the TMA kernel's widths, auto, swapped, against the exact
# product, checked before and after timing; small, mid and large M.
step gemm-bf16 60 overlap gemm --reps 3 --warmup 1 16,4096,4096 64,6144,4096 200,4096,14336 1024,4096,4096 4096,5120,13824
step gemm-f16 60 overlap gemm --dtype f16 --reps 3 --warmup 1 16,4096,4096 1024,4096,4096 4096,5120,13824
# Every pattern of the three operations with one rank (checked; their mechanics, not a gain).
P=gemm,comm,bulk,ll-bulk,chunked:2,own-bulk,pull:1,push:2,pc-push:1:8,pc-pull:1:8,fused-push:2:8,fused-pull:1:8,pc-reduce:2:16,push-reduce:2,fused-reduce:0,fused-reduce:16,fused-all
step tp-1gpu 120 overlap tp --gpus 1 --ops all-gather,reduce-scatter,all-reduce --samples 5 --patterns $P 16,4096,4096 1024,4096,4096
# SpMV through the library API with the shipped H100 model, explained.
step run-explain 40 run stencil3d:nx=100,points=27 --backend cuda --iterations 50 --explain
grep -h "failed\|FAIL\|passed\|checked" "$OUT/check-cuda.txt" | tail -n 5
grep -c ",false," "$OUT"/gemm-*.txt "$OUT/tp-1gpu.txt"
tail -n 3 "$OUT"/*.err | cut -c1-200
(cd "$OUT" && tar czf /tmp/regression.tgz . && rm -rf ./* && mv /tmp/regression.tgz .)
