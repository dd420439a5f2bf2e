#!/usr/bin/env bash
# Warps per block of the attention kernels, measured (issue 8, long-KV bandwidth), on one GPU
# through the device tool with carry [".carry"] after `bash bench/prepare-carry.sh`:
#   1. `augur attention check` of every schedule with blocks of 2, 3 and 4 warps (WARPS=2,3,4):
#      check.log;
#   2. `augur attention bench` of the long-KV shapes in bench/attention-long-kv.txt (the slowest
#      of the grid run plus a few fast ones), every schedule with 2, 3 and 4 warps: warps.csv;
#      and, when .carry/augur-old exists (an earlier build), the same shapes with it: old.csv.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
A=${AUGUR:-.carry/augur}
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mapfile -t SHAPES < bench/attention-long-kv.txt
t=$(date +%s)
"$A" attention check --warps "${WARPS:-2,3,4}" > "$OUT/check.log" 2>&1
echo "check rc=$? $(tail -1 "$OUT/check.log") $(( $(date +%s) - t )) s"
t=$(date +%s)
"$A" attention bench --warps "${WARPS:-2,3,4}" "${SHAPES[@]}" > "$OUT/warps.csv" 2> "$OUT/warps.log"
echo "bench rc=$? rows=$(($(wc -l < "$OUT/warps.csv") - 1)) $(( $(date +%s) - t )) s"
if [ -x .carry/augur-old ]; then
  t=$(date +%s)
  .carry/augur-old attention bench "${SHAPES[@]}" > "$OUT/old.csv" 2> "$OUT/old.log"
  echo "old rc=$? rows=$(($(wc -l < "$OUT/old.csv") - 1)) $(( $(date +%s) - t )) s"
fi
