#!/usr/bin/env bash
# The vector kernels (vector4-32, binned) with their row loop shared with adaptive's (group_sum,
# `#pragma unroll 4`) against the committed build, on one H200: `augur check --backend cuda` with
# the new build, then `augur collect` of those kernels and scalar (the drift reference) on the
# training set's shard 1/4 up to 1e7 nonzeros, the old build then the new, same machine.
# With .carry/augur.xz (the committed build), .carry/augur_new.xz (built with unroll.patch
# applied) and the matrices in $M (default .carry/matrices), from the repository root:
#   bash bench/results/vector-unroll-h200-2026-11-29/screen.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
M=${M:-.carry/matrices}
export AUGUR_SHARED_MATRICES=$M
timeout 200 .carry/augur_new check --backend cuda > "$OUT/check.txt" 2> "$OUT/check.err"
echo "check rc=$?"; grep -E "vector|binned|matrices|fail" "$OUT/check.txt" | head -12
mapfile -t specs < <(bash scripts/training-specs.sh 1e7 "$M")
K=(--kernel scalar --kernel vector4 --kernel vector8 --kernel vector16 --kernel vector32 --kernel binned)
for b in augur augur_new; do
  timeout ${LIMIT:-170} .carry/$b collect --backend cuda --precision f32 "${K[@]}" --reps 5 \
    --shard ${SHARD:-1/4} --out "$OUT/$b.csv" "$M/suitesparse" "${specs[@]}" 2> "$OUT/$b.err"
  echo "$b rc=$? rows=$(wc -l < "$OUT/$b.csv")"
done
