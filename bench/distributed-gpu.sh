#!/usr/bin/env bash
# `augur run --distributed` and CG across processes (issue 23) on what one GPU allows: one rank
# (world 1) in the halo and all-gather modes, checked; a group of two whose second rank never
# starts (rank 0 must name it after its timeout, no output); two ranks on one GPU (NCCL refuses a
# GPU twice: both must fail, not hang); the CG example with every vector on the GPU, in one
# process (--gpus 1) and as one rank (--distributed), on the 1.1e8-nonzero stencil.
# After `bash bench/prepare-carry.sh` and copying the release `cg` example to .carry/cg, through
# the device tool with carry [".carry"]:
#   bash bench/distributed-gpu.sh       (writes $OUT/distributed.tar.gz and a summary)
set -uo pipefail
cd "$(dirname "$0")/.."
A=.carry/augur
CG=.carry/cg
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=$(mktemp -d)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/device.txt"
one() { env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$1 "${@:2}"; }
S="stencil3d:nx=64,points=27"
for mode in halo all-gather; do
  one 29501 $A run "$S" --distributed --gather-mode $mode --iterations 300 --check --profile \
    --json > "$R/run-dist1-$mode.json" 2> "$R/run-dist1-$mode.err"
  echo "run --distributed (world 1) $mode rc=$?"
  grep -o '"passed": [a-z]*' "$R/run-dist1-$mode.json" | head -2
  $A run "$S" --gpus 1 --gather-mode $mode --iterations 300 --check --profile --json \
    > "$R/run-gpus1-$mode.json" 2>&1
  echo "run --gpus 1 $mode rc=$?"
  grep -o '"per_iteration_s": [0-9.e-]*' "$R/run-dist1-$mode.json" "$R/run-gpus1-$mode.json"
done
t0=$(date +%s.%N)
env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 \
  $A run "$S" --distributed --timeout 5 --json > "$R/missing.out" 2> "$R/missing.err"
echo "missing rank 1: rc=$? after $(python3 -c "import time;print(round(time.time()-$t0,1))") s, stdout $(wc -c < "$R/missing.out") bytes"
cat "$R/missing.err"
for r in 0 1; do
  env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29521 \
    timeout 120 $A run "$S" --distributed --gather-mode halo --timeout 20 --json \
    > "$R/twice-$r.out" 2> "$R/twice-$r.err" &
done
wait; echo "two ranks on one GPU: stdout $(cat $R/twice-0.out $R/twice-1.out | wc -c) bytes"
tail -2 "$R/twice-0.err" "$R/twice-1.err"
for spec in "stencil3d:nx=160,points=27"; do
  for mode in "" "--halo"; do
    $CG "$spec" --iterations 3000 --gpus 1 $mode > "$R/cg-gpus1$mode.txt" 2>&1
    echo "cg --gpus 1 $mode rc=$?"
    one 29531 $CG "$spec" --iterations 3000 --distributed $mode > "$R/cg-dist1$mode.txt" 2>&1
    echo "cg --distributed $mode rc=$?"
    grep -h "^CG\|^exchange" "$R/cg-gpus1$mode.txt" "$R/cg-dist1$mode.txt"
  done
done
tar czf "$OUT/distributed.tar.gz" -C "$R" .
