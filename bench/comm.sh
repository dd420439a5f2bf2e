#!/usr/bin/env bash
# Issue 7 on a multi-GPU machine (nvidia-h200-x4; -x2 runs the 2-GPU part), through the device
# tool with carry [".carry"] after `bash bench/prepare-carry.sh`:
#   1. odd sizes (not a multiple of the 16-byte vector, or of the GPU count) checked for every
#      pattern, f32 and bf16, on 2 and 4 GPUs;
#   2. the sweep `augur collect comm --sizes $SIZES` on GPUs 0,1 and on 0,1,2,3: every pattern
#      checked against the host at every size, then timed (median of 9 batches after warm-up).
# Writes under $OUT (default ./out): odd-{2,4}.csv, comm-{2,4}.csv, *.log, devices.json.
# SIZES (default 1KiB..1GiB), WORLDS (default "2 4"), LIMIT (seconds per collect, default 280),
# COLLECTIVES, DTYPES, PATTERNS (comma lists, default all); SKIP_ODD=1 skips step 1. Each progress line of the logs starts
# with the seconds since the sweep began (a stall shows as a gap).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
A=${AUGUR:-.carry/augur}
SIZES=${SIZES:-1KiB..1GiB}
LIMIT=${LIMIT:-280}
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
ngpu=$(nvidia-smi -L | wc -l)
WORLDS=${WORLDS:-"2 4"}
"$A" devices --json > "$OUT/devices.json" 2>&1 || true
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1 || true
fail=0
for w in $WORLDS; do
  [ "$ngpu" -ge "$w" ] || { echo "skip $w GPUs: only $ngpu"; continue; }
  devs=$(seq -s, 0 $((w - 1)))
  if [ "${SKIP_ODD:-0}" != 1 ]; then
    timeout 120 "$A" collect comm --devices "$devs" --sizes 4,6,18,1028,12340,65538,1000006,3000010 \
      --reps 3 --warmup 2 --out "$OUT/odd-$w.csv" --force > "$OUT/odd-$w.log" 2>&1 || { echo "odd sizes on $w GPUs: FAILED (rc $?)"; fail=1; }
    tail -3 "$OUT/odd-$w.log"
  fi
  timeout "$LIMIT" "$A" collect comm --devices "$devs" --sizes "$SIZES" \
    --collectives "${COLLECTIVES:-all-reduce,all-gather}" --dtypes "${DTYPES:-f32,bf16}" \
    ${PATTERNS:+--patterns "$PATTERNS"} \
    --out "$OUT/comm-$w.csv" --force > "$OUT/comm-$w.log" 2>&1 || { echo "sweep on $w GPUs: FAILED (rc $?)"; fail=1; }
  tail -3 "$OUT/comm-$w.log"
done
exit $fail
