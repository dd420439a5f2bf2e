#!/usr/bin/env bash
# Collect the CUDA training runs on a GPU machine (after `bash bench/prepare-carry.sh` here;
# through the device tool with carry [".carry"]): every kernel of the pool on the shared SuiteSparse
# matrices and the generated training set up to 1e8 nonzeros (scripts/training-specs.sh), f32,
# iterations 1, 10, 100. SHARD=i/n takes every n-th matrix; RESUME=1 continues .carry/<csv> if it
# was carried. The runs CSV goes to $OUT; merge shards with `augur collect merge`.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
cs=$(ls /usr/local/cuda/lib64/libcusparse.so.* 2>/dev/null | head -1)
[ -n "$cs" ] && export LD_LIBRARY_PATH="$(dirname "$cs")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
A=.carry/augur
M=.carry/matrices
OUT=${OUT:-/tmp/out}
SHARD=${SHARD:-1/1}
name=runs-cuda-f32-shard${SHARD/\//of}.csv
if [ "${RESUME:-0}" = 1 ] && [ -f ".carry/$name" ]; then cp ".carry/$name" "$OUT/$name"; fi
mapfile -t specs < <(bash scripts/training-specs.sh 1e8 "$M")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
timeout "${LIMIT:-540}" $A collect --backend cuda --precision f32 --iterations 1,10,100 \
  --reps 10 --warmup 2 --shard "$SHARD" --resume --out "$OUT/$name" \
  "$M/suitesparse" "${specs[@]}" 2> "$OUT/collect-${SHARD/\//of}.err"
echo "collect rc=$?"
tail -5 "$OUT/collect-${SHARD/\//of}.err"
wc -l "$OUT/$name"
