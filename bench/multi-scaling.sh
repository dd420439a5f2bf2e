#!/usr/bin/env bash
# Multi-GPU SpMV scaling (issue 23's targets) in one call: for each matrix and GPU count, 300
# iterations of x <- A x with the selected kernels, (a) one process driving every GPU with the
# all-gather the comm model picks, (b) the same with the halo exchange, (c) one process per GPU
# (RANK/WORLD_SIZE/LOCAL_RANK, NCCL, halo and all-gather), and CG (every vector on the GPUs) to
# 1e-8 on the stencil, whose iteration count must not change with the GPU count. Efficiency =
# t(1 GPU) / (N t(N GPUs)). One GPU runs one mode (no exchange) and no processes.
# After `bash bench/prepare-carry.sh` and copying the release `cg` example to .carry/cg, through
# the device tool with carry [".carry"] on a machine with enough GPUs:
#   GPUS="1 2 4" bash bench/multi-scaling.sh     (writes $OUT/scaling.csv, $OUT/scaling.tar.gz)
# NP_MODES (default "halo all-gather") are run one process per GPU.
# BEFORE=path/to/another/augur also times that binary's halo mode (one process) beside, for an
# A/B of a change in one call. BUDGET (seconds, default 540) stops starting runs once spent, so
# the call ends inside the device tool's limit; the raw files are tarred after every matrix.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
source bench/unpack-carry.sh
left() { [ $((SECONDS - start)) -lt "${BUDGET:-540}" ] || { echo "budget spent: skipping $*"; return 1; }; }
A=.carry/augur
CG=.carry/cg
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=$(mktemp -d)
GPUS=${GPUS:-"1 2 4"}
ITERS=${ITERS:-300}
CG_MATRIX=${CG_MATRIX:-"stencil3d:nx=160,points=27"}
MATRICES=${MATRICES:-"stencil3d:nx=160,points=27 rmat:scale=23,ef=16,seed=1 banded:n=8000000,bw=13"}
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/device.txt"
nvidia-smi topo -m > "$R/topo.txt" 2>&1
echo "matrix,gpus,mode,processes,per_iteration_s,rc,wall_s" > "$OUT/scaling.csv"
# The run's JSON (NCCL_DEBUG prints lines of its own around it on stdout).
per_it() { python3 -c "import json,sys; t=open(sys.argv[1]).read(); print(json.JSONDecoder().raw_decode(t[t.index('{'):])[0]['per_iteration_s'])" "$1" 2>/dev/null || echo nan; }
port=29600
one() { # binary matrix tag gpus mode label
  local t0=$SECONDS f="$R/$3-$4-$6-1p.json"
  timeout 120 $1 run "$2" --gpus "$4" --gather-mode "$5" --iterations "$ITERS" --check \
    --profile --json > "$f" 2> "$f.err"; local rc=$?
  echo "\"$2\",$4,$6,1,$(per_it "$f"),$rc,$((SECONDS - t0))" | tee -a "$OUT/scaling.csv"
}
procs() { # matrix tag gpus mode
  local t0=$SECONDS pids=() rc=0 p r
  port=$((port + 1))
  for ((r = 0; r < $3; r++)); do
    env RANK=$r WORLD_SIZE=$3 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      timeout 120 $A run "$1" --distributed --gather-mode "$4" --iterations "$ITERS" \
      --check --timeout 90 --json > "$R/$2-$3-$4-np-r$r.json" 2> "$R/$2-$3-$4-np-r$r.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  echo "\"$1\",$3,$4,$3,$(per_it "$R/$2-$3-$4-np-r0.json"),$rc,$((SECONDS - t0))" | tee -a "$OUT/scaling.csv"
}
cg_runs() {
  local n halo pids r p rc
  for n in $GPUS; do
    left "cg $n" || continue
    for halo in "" "--halo"; do
      [ "$n" = 1 ] && [ -n "$halo" ] && continue
      timeout 120 $CG "$CG_MATRIX" --gpus "$n" $halo --iterations 3000 > "$R/cg-$n$halo.txt" 2>&1
      echo "cg --gpus $n $halo rc=$?: $(grep -h '^CG' "$R/cg-$n$halo.txt")"
    done
    [ "$n" = 1 ] && continue
    port=$((port + 1)); pids=(); rc=0
    for ((r = 0; r < n; r++)); do
      env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        timeout 120 $CG "$CG_MATRIX" --distributed --halo --iterations 3000 \
        > "$R/cg-np-$n-r$r.txt" 2>&1 &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=$?; done
    echo "cg $n processes rc=$rc: $(grep -h '^CG' "$R/cg-np-$n-r0.txt")"
  done
}
first=1
for m in $MATRICES; do
  tag=$(echo "$m" | tr ':=,' '___')
  for n in $GPUS; do
    if [ "$n" = 1 ]; then
      left "$m 1" && one $A "$m" "$tag" 1 all-gather all-gather
      continue
    fi
    for mode in ${MODES1:-auto all-gather halo}; do
      left "$m $n $mode" && one $A "$m" "$tag" "$n" "$mode" "$mode"
    done
    if [ -n "${BEFORE:-}" ]; then
      left "$m $n halo before" && one "$BEFORE" "$m" "$tag" "$n" halo halo-before
    fi
    for mode in ${NP_MODES:-halo all-gather}; do
      left "$m $n $mode processes" && procs "$m" "$tag" "$n" "$mode"
    done
  done
  tar czf "$OUT/scaling.tar.gz" -C "$R" .
  # CG right after the first matrix: its iteration counts are a target too.
  if [ -n "$first" ] && [ -x "$CG" ]; then cg_runs; first=; fi
done
tar czf "$OUT/scaling.tar.gz" -C "$R" .
