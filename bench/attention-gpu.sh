#!/usr/bin/env bash
# Issue 8 on one GPU (nvidia-h100-x1 or nvidia-h200), through the device tool with carry
# [".carry"] after `bash bench/prepare-carry.sh`:
#   1. `augur attention check`: every schedule against the f64 reference on the built-in shapes
#      (empty and one-token sequences, lengths off the tile, GQA 1/4/8, head_dim 64/128/256,
#      f16/bf16, contiguous and paged): check.log;
#   2. `augur attention bench` on a grid of decode shapes (uniform and skewed KV lengths, GQA):
#      bench.csv (median us per schedule, live-KV GB/s, fraction of copy bandwidth, FA2 splits);
#   3. FlashAttention-2 varlen and PyTorch SDPA on the same shapes, timed as augur's schedules
#      (bench/attention_baselines.py): baselines.csv.
# SHAPES overrides the grid (space-separated specs).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
A=${AUGUR:-.carry/augur}
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
timeout 300 "$A" attention check > "$OUT/check.log" 2>&1; echo "check rc=$?"; tail -1 "$OUT/check.log"
grid=${SHAPES:-"
attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=128000
attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=8192*8
attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=1024*64
attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=256*256
attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=32000;64*63
attention:q_heads=32,kv_heads=32,head_dim=128,dtype=f16,lens=4096*16
attention:q_heads=64,kv_heads=8,head_dim=128,dtype=bf16,lens=2048*32,page=16
attention:q_heads=16,kv_heads=16,head_dim=64,dtype=f16,lens=16*256
attention:q_heads=8,kv_heads=1,head_dim=256,dtype=bf16,lens=16384*4
"}
# shellcheck disable=SC2086
timeout 300 "$A" attention bench $grid > "$OUT/bench.csv" 2> "$OUT/bench.log"; echo "bench rc=$?"
# shellcheck disable=SC2086
timeout 200 python3 bench/attention_baselines.py $grid > "$OUT/baselines.csv" 2> "$OUT/baselines.log"; echo "baselines rc=$?"
head -5 "$OUT/bench.csv"; cat "$OUT/baselines.csv"
