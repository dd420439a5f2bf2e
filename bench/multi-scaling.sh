#!/usr/bin/env bash
# Multi-GPU SpMV scaling (issue 23's targets) in one call: for each matrix and GPU count, 300
# iterations of x <- A x with the selected kernels, (a) one process driving every GPU with the
# all-gather the comm model picks, (b) the same with the halo exchange, (c) one process per GPU
# (RANK/WORLD_SIZE/LOCAL_RANK, NCCL, halo), and CG (every vector on the GPUs) to 1e-8 on the
# stencil, whose iteration count must not change with the GPU count. Efficiency = t(1 GPU) /
# (N t(N GPUs)).
# After `bash bench/prepare-carry.sh` and copying the release `cg` example to .carry/cg, through
# the device tool with carry [".carry"] on a machine with enough GPUs:
#   GPUS="1 2 4" bash bench/multi-scaling.sh     (writes $OUT/scaling.csv, $OUT/scaling.tar.gz)
set -uo pipefail
cd "$(dirname "$0")/.."
A=.carry/augur
CG=.carry/cg
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=$(mktemp -d)
GPUS=${GPUS:-"1 2 4"}
ITERS=${ITERS:-300}
MATRICES=${MATRICES:-"stencil3d:nx=160,points=27 banded:n=8000000,bw=7 rmat:scale=23,ef=16,seed=1"}
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/device.txt"
echo "matrix,gpus,mode,processes,per_iteration_s,rc" > "$OUT/scaling.csv"
per_it() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['per_iteration_s'])" "$1" 2>/dev/null || echo nan; }
port=29600
for m in $MATRICES; do
  tag=$(echo "$m" | tr ':=,' '___')
  for n in $GPUS; do
    for mode in ${MODES1:-auto all-gather halo}; do
      f="$R/$tag-$n-$mode-1p.json"
      timeout 200 $A run "$m" --gpus "$n" --gather-mode $mode --iterations "$ITERS" --check \
        --profile --json > "$f" 2> "$f.err"; rc=$?
      echo "\"$m\",$n,$mode,1,$(per_it "$f"),$rc" | tee -a "$OUT/scaling.csv"
    done
    for mode in halo all-gather; do
      port=$((port + 1)); pids=()
      for ((r = 0; r < n; r++)); do
        env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
          timeout 200 $A run "$m" --distributed --gather-mode $mode --iterations "$ITERS" \
          --check --timeout 120 --json > "$R/$tag-$n-$mode-np-r$r.json" 2> "$R/$tag-$n-$mode-np-r$r.err" &
        pids+=($!)
      done
      rc=0; for p in "${pids[@]}"; do wait "$p" || rc=$?; done
      echo "\"$m\",$n,$mode,$n,$(per_it "$R/$tag-$n-$mode-np-r0.json"),$rc" | tee -a "$OUT/scaling.csv"
    done
  done
done
for n in $GPUS; do
  for halo in "" "--halo"; do
    timeout 200 $CG "stencil3d:nx=160,points=27" --gpus "$n" $halo --iterations 3000 \
      > "$R/cg-$n$halo.txt" 2>&1
    echo "cg --gpus $n $halo rc=$?: $(grep -h '^CG' "$R/cg-$n$halo.txt")"
  done
  port=$((port + 1)); pids=()
  for ((r = 0; r < n; r++)); do
    env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      timeout 200 $CG "stencil3d:nx=160,points=27" --distributed --halo --iterations 3000 \
      > "$R/cg-np-$n-r$r.txt" 2>&1 &
    pids+=($!)
  done
  rc=0; for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  echo "cg $n processes rc=$rc: $(grep -h '^CG' "$R/cg-np-$n-r0.txt")"
done
tar czf "$OUT/scaling.tar.gz" -C "$R" .
