#!/usr/bin/env bash
# The overlap selector's training grid (issue 24, Must 3): tensor-parallel layers of Llama-3-8B
# (hidden 4096: QKV N 6144 and gate+up N 28672 all-gathered; O K 4096 and down K 14336
# reduce-scattered) and of a hidden-8192 model (Llama-3-70B / Qwen-72B-like: QKV N 10240, gate+up
# N 57344; O K 8192, down K 28672), M (tokens) from 16 to 16384, on each GPU count in GPUS
# (default "2 4"), every pattern, each call timed from a held start (`augur overlap tp`'s
# default since 2026-11-28; TP_ARGS="--start barrier" for the old way); the CSV rows carry the
# overlap features (schema `overlap`). Through the device tool with carry [".carry"] (.carry/augur.xz):
#   GPUS="2 4" bash bench/tp-grid.sh        (writes $OUT/grid-<gpus>-<op>.csv and .err)
# AG_W and RS_W (space-separated N,K; defaults: the weights above) replace the weights, e.g. the
# second set of 2026-11-28: Qwen2.5-7B (hidden 3584: QKV N 4608, gate+up N 37888; O K 3584, down
# K 18944) and hidden-5120 models (Llama-2-13B QKV N 15360 and down K 13824; Qwen2.5-32B QKV N
# 7168; O K 5120):
#   AG_W="4608,3584 37888,3584 15360,5120 7168,5120" RS_W="3584,3584 3584,18944 5120,5120 5120,13824"
# OPS (default "all-gather reduce-scatter"; all-reduce runs the RS_W weights) picks the operations; TP_ARGS (say --patterns) must
# not name --ops (clap appends it: every shape would run twice). Run 2026-11-27 on 4 H200s:
# bench/results/tp-grid-h200-2026-11-27/ (from a barrier); on 2 H200s from a held start:
# bench/results/held-start-h200-2026-11-28/; on 4 from a held start, every pattern:
# bench/results/held-start-4gpu-h200-2026-11-28/; with ll-bulk on 2 and 4 (the shipped
# selector's grids): bench/results/ll-bulk-h200-2026-11-28/.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/unpack-carry.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
MS=${MS:-16 64 256 1024 2048 4096 8192 16384}
ag=(); rs=()
AG_W=${AG_W:-6144,4096 28672,4096 10240,8192 57344,8192}
RS_W=${RS_W:-4096,4096 4096,14336 8192,8192 8192,28672}
for m in $MS; do
  for w in $AG_W; do ag+=("$m,$w"); done
  for w in $RS_W; do rs+=("$m,$w"); done
done
for g in ${GPUS:-2 4}; do
  for op in ${OPS:-all-gather reduce-scatter}; do
    if [ "$op" = all-gather ]; then shapes=("${ag[@]}"); else shapes=("${rs[@]}"); fi
    f="$OUT/grid-$g-$op"
    timeout ${LIMIT:-280} .carry/augur overlap tp --gpus "$g" --ops "$op" ${TP_ARGS:-} "${shapes[@]}" > "$f.csv" 2> "$f.err"
    echo "$g GPUs $op rc=$? rows=$(($(wc -l < "$f.csv") - 1))"; tail -2 "$f.err"
  done
done
