#!/usr/bin/env bash
# Issue 8's attention runs on one GPU (nvidia-h200 or nvidia-h100-x1), through the device tool
# with carry [".carry"] after `bash bench/prepare-carry.sh`:
#   1. `augur collect attention` over the built-in grid (every schedule checked against the f64
#      reference on 4 sequences per shape, then timed; FlashAttention-2's split rule on the
#      split-KV kernel as rows `fa2`): attention-runs.csv, collect.log;
#   2. the outside baselines on the same shapes, timed as augur's schedules are (latency,
#      throughput, graph): FlashAttention-2 varlen and PyTorch SDPA (bench/attention_baselines.py):
#      baselines.csv;
#   3. `augur attention bench` on one 128k sequence: bench-128k.csv (with the measured copy
#      bandwidth the GB/s compare with).
# LIMIT (seconds, default 380) bounds step 1; SKIP_SDPA=1 leaves out step 2 (the grid is
# deterministic: an earlier baselines.csv still fits); `--resume` continues a cut-off run when
# attention-runs.csv is carried back in (RESUME=path).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
A=${AUGUR:-.carry/augur}
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
"$A" collect attention --list-grid > "$OUT/grid.txt"
if [ -n "${RESUME:-}" ]; then cp "$RESUME" "$OUT/attention-runs.csv"; R=--resume; else R=--force; fi
timeout "${LIMIT:-380}" "$A" collect attention --out "$OUT/attention-runs.csv" $R ${SHAPES:-} > /dev/null 2> "$OUT/collect.log"
echo "collect rc=$?"; tail -2 "$OUT/collect.log"
"$A" attention bench 'attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=131072' > "$OUT/bench-128k.csv" 2>&1
if [ -z "${SKIP_SDPA:-}" ]; then
  timeout "${SDPA_LIMIT:-200}" python3 bench/attention_baselines.py --file "$OUT/grid.txt" > "$OUT/baselines.csv" 2> "$OUT/baselines.log"
  echo "baselines rc=$? rows=$(($(wc -l < "$OUT/baselines.csv") - 1))"; tail -3 "$OUT/baselines.log"
fi
