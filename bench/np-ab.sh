#!/usr/bin/env bash
# A/B of two builds across processes (issue 23): per round, in rotating order, one process
# driving NP GPUs and NP processes with each of .carry/augur and .carry/augur-before, `augur run
# --gather-mode halo` on the stencil, f32 then f64. Through the device tool with carry
# [".carry"] (both binaries xz-compressed):  NP=4 ROUNDS=2 bash bench/np-ab.sh
# CHECKS="none --check" also runs each process build with `--check` (one product checked before
# the timing); PRECISIONS (default "f32 f64").
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/unpack-carry.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NP=${NP:-4}; ROUNDS=${ROUNDS:-2}; M=${MATRIX:-stencil3d:nx=160,points=27}
export NCCL_NVLS_ENABLE=0
echo "precision,round,build,processes,per_iteration_us" > "$OUT/np-ab.csv"
CHECKS=${CHECKS:-""}; PRECISIONS=${PRECISIONS:-"f32 f64"}
per_it() { python3 -c "import json,sys; t=open(sys.argv[1]).read(); print(round(json.JSONDecoder().raw_decode(t[t.index('{'):])[0]['per_iteration_s']*1e6, 2))" "$1" 2>/dev/null || echo nan; }
one() { timeout 120 .carry/augur run "$M" --precision $1 --gpus $NP --gather-mode halo --iterations 300 --json > /tmp/ab.json 2>/dev/null; echo "$1,$2,new,1,$(per_it /tmp/ab.json)" | tee -a "$OUT/np-ab.csv"; }
np() { # precision round build binary
  local c
  for c in ${CHECKS:-none}; do np1 "$@" "${c/none/}"; done
}
np1() { # precision round build binary [--check]
  local port=$((29900 + RANDOM % 90)) pids=() r
  for ((r = 0; r < NP; r++)); do
    env RANK=$r WORLD_SIZE=$NP LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 \
      $4 run "$M" --precision $1 --distributed --gather-mode halo --iterations 300 --timeout 90 \
      ${5:-} --json > /tmp/ab-r$r.json 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  echo "$1,$2,$3${5:-},$NP,$(per_it /tmp/ab-r0.json)" | tee -a "$OUT/np-ab.csv"
}
for prec in $PRECISIONS; do
  for ((round = 1; round <= ROUNDS; round++)); do
    case $(( round % 3 )) in
      1) one $prec $round; np $prec $round new .carry/augur; np $prec $round before .carry/augur-before ;;
      2) np $prec $round before .carry/augur-before; one $prec $round; np $prec $round new .carry/augur ;;
      0) np $prec $round new .carry/augur; np $prec $round before .carry/augur-before; one $prec $round ;;
    esac
  done
done
