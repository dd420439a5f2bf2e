#!/usr/bin/env bash
# Where a CG iteration's time goes on the GPUs (issue 23): `cg` on NP GPUs driven by one process
# and on NP processes (rank 0 loads the matrix and sends each rank its part), in the halo and the
# all-gather mode, with AUGUR_CG_PHASES=1 (an event after each phase of every iteration; the
# GPU's and the host's mean time per phase, printed per rank); beside, `augur run` in f64 on the
# same pattern (products alone), one process and NP processes.
# Through the device tool with carry [".carry"] (.carry/cg.xz, the release `cg` example, and
# .carry/augur.xz) on a machine with NP GPUs:  NP=2 bash bench/cg-phases.sh
# Writes $OUT/cg-phases.tar.gz (every output) and prints the summary lines.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/unpack-carry.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; D=$(mktemp -d)
NP=${NP:-2}
M=${CG_MATRIX:-stencil3d:nx=160,points=27}
MODES=${MODES:-"--halo -"}
export NCCL_NVLS_ENABLE=0 AUGUR_CG_PHASES=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee "$D/device.txt"
port=$((29800 + RANDOM % 100))
procs() { # tag command...
  local tag=$1 pids=() r; shift
  port=$((port + 1))
  for ((r = 0; r < NP; r++)); do
    env RANK=$r WORLD_SIZE=$NP LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port ${ENVS:-} \
      timeout 150 "$@" > "$D/$tag-r$r.txt" 2>&1 &
    pids+=($!)
  done
  for ((r = 0; r < NP; r++)); do wait "${pids[$r]}"; echo "$tag rank $r rc=$?"; done
}
timeout 150 .carry/cg "$M" --gpus 1 --iterations 3000 > "$D/one-gpu.txt" 2>&1
echo "== cg one GPU rc=$?"; grep -h "^CG" "$D/one-gpu.txt"
for mode in $MODES; do
  if [ "$mode" = - ]; then h=; t=-allgather; else h=$mode; t=-halo; fi
  timeout 150 .carry/cg "$M" --gpus "$NP" $h --iterations 3000 > "$D/one$t.txt" 2>&1
  echo "== cg one process, $NP GPUs $t rc=$?"; grep -h "^CG\|phases, rank 0" "$D/one$t.txt"
  procs "np$t" .carry/cg "$M" --distributed $h --iterations 3000
  echo "== cg $NP processes $t"; grep -h "^CG\|phases, rank 0" "$D/np$t-r0.txt"; grep -h "^CG" "$D"/np$t-r*.txt
done
for mode in halo all-gather; do
  timeout 150 .carry/augur run "$M" --precision f64 --gpus "$NP" --gather-mode $mode \
    --iterations 300 --json > "$D/run-one-$mode.txt" 2>&1
  procs "run-np-$mode" .carry/augur run "$M" --precision f64 --distributed --gather-mode $mode \
    --iterations 300 --timeout 90 --json
  for f in "$D/run-one-$mode.txt" "$D/run-np-$mode-r0.txt"; do
    echo "$(basename $f): $(grep -o '"per_iteration_s": [0-9.e-]*' $f)"
  done
done
ENVS="NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,TUNING" procs "np-nccl-info" .carry/cg "$M" \
  --distributed --halo --iterations 3000
grep -h "^CG\|phases, rank 0" "$D/np-nccl-info-r0.txt"
tar czf "$OUT/cg-phases.tar.gz" -C "$D" .
