#!/usr/bin/env bash
# Issue 18's "f64 if the pool's ranking differs": the whole CUDA pool in f64 on a slice of the
# training set (every SHARD-th matrix of the sources, MAX_NNZ bounding the grown and generated
# ones), with the collection's own sample counts, for `python3 bench/f64_ranking.py` against the
# committed f32 runs of the same device. After `bash bench/prepare-carry.sh` (or the binary as
# .carry/augur.xz and the matrices in .carry/matrices), through the device tool with carry
# [".carry"]:
#   SHARD=1/6 MAX_NNZ=3e7 bash bench/f64-ranking-gpu.sh
# A cut run resumes from .carry/resume.csv (copy the cut CSV there).
set -uo pipefail
A=.carry/augur
M=.carry/matrices
OUT=${OUT:-/tmp/out}
source bench/unpack-carry.sh
export AUGUR_SHARED_MATRICES=$M
mapfile -t specs < <(bash scripts/training-specs.sh "${MAX_NNZ:-3e7}" "$M")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
resume=""
[ -f .carry/resume.csv ] && cp .carry/resume.csv "$OUT/f64.csv" && resume="--resume"
timeout "${LIMIT:-540}" $A collect --backend cuda --precision f64 --shard "${SHARD:-1/6}" \
  $resume --out "$OUT/f64.csv" "$M/suitesparse" "${specs[@]}" 2> "$OUT/f64.err"
echo "collect rc=$?"
tail -2 "$OUT/f64.err"
