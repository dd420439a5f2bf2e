#!/usr/bin/env bash
# One process per GPU with the matrix loaded by rank 0 only (issue 23): `augur run --distributed
# --check` on NP processes (default 2) over TCP and a file meeting place, the halo and the
# all-gather, a square and a rectangular matrix; each rank's peak resident memory (rank 0 holds
# the matrix, the others their part; and with --every-rank-loads, where each rank loads the
# whole matrix); one process driving NP GPUs beside, for the time; and a
# rank 0 that cannot load its matrix (the others must fail within their timeout, not hang).
# Through the device tool with carry [".carry"] (the release binary xz-compressed as
# .carry/augur.xz) on a machine with NP GPUs:  bash bench/distributed-check.sh
# Writes $OUT/distributed.csv and the ranks' JSON and stderr ($OUT/distributed-runs.tar.gz).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/unpack-carry.sh
A=.carry/augur
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; RUNS=$(mktemp -d)
NP=${NP:-2}
ITERS=${ITERS:-300}
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee "$OUT/device.txt"
echo "matrix,mode,meeting,processes,rank,per_iteration_s,check,rc,maxrss_kb,wall_s" > "$OUT/distributed.csv"
port=29700
# A rank under a wrapper that reports its peak resident memory on the last line of stderr.
W=$(mktemp --suffix=.py)
cat > "$W" <<'PY'
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:])
print("maxrss_kb", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(p.returncode)
PY
field() { python3 -c 'import json, sys
t = open(sys.argv[1]).read()
try:
    j = json.JSONDecoder().raw_decode(t[t.index("{"):])[0]
    c = j.get("check") or []
    print(j["per_iteration_s"], "passed" if c and all(x["passed"] for x in c) else ("FAILED" if c else ""), sep=",")
except Exception:
    print("nan,")' "$1"; }
group() { # matrix mode meeting(tcp|file) [timeout] [more flags]
  local tag t0=$SECONDS pids=() rcs=() r meet
  tag=$(echo "$1-$2-$3${5:-}" | tr ':=,/ ' '_____')
  port=$((port + 1))
  if [ "$3" = file ]; then meet="AUGUR_RENDEZVOUS=file:$RUNS/rdv-$port"; else meet="MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"; fi
  for ((r = 0; r < NP; r++)); do
    env RANK=$r WORLD_SIZE=$NP LOCAL_RANK=$r $meet timeout 150 python3 "$W" $A run "$1" \
      --distributed --gather-mode $2 --iterations $ITERS --check --timeout ${4:-90} ${5:-} --json \
      > "$RUNS/$tag-r$r.json" 2> "$RUNS/$tag-r$r.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
  for ((r = 0; r < NP; r++)); do
    local f=nan,
    [ "$r" = 0 ] && f=$(field "$RUNS/$tag-r0.json")
    [ "$r" != 0 ] && f="nan,$(grep -q 'check passed' "$RUNS/$tag-r$r.err" && echo passed)"
    echo "\"$1\",$2,$3,$NP,$r,$f,${rcs[$r]},$(grep maxrss_kb "$RUNS/$tag-r$r.err" | awk '{print $2}'),$((SECONDS - t0))" | tee -a "$OUT/distributed.csv"
  done
}
one() { # matrix mode: one process driving NP GPUs
  local tag t0=$SECONDS
  tag=$(echo "$1-$2-1p" | tr ':=,/' '____')
  python3 "$W" $A run "$1" --gpus $NP --gather-mode $2 --iterations $ITERS --check --json \
    > "$RUNS/$tag.json" 2> "$RUNS/$tag.err"
  local rc=$?
  echo "\"$1\",$2,-,1,all,$(field "$RUNS/$tag.json"),$rc,$(grep maxrss_kb "$RUNS/$tag.err" | awk '{print $2}'),$((SECONDS - t0))" | tee -a "$OUT/distributed.csv"
}
S=${SQUARE:-stencil3d:nx=160,points=27}
group "$S" halo tcp
group "$S" halo tcp 90 --every-rank-loads
one "$S" halo
group "rmat:scale=20,ef=8" all-gather file
group "rmat:scale=20,ef=8" halo tcp
group "wide:rows=20000,cols=1e6,row_len=200" all-gather tcp
# Rank 0 cannot load its matrix: rank 0 says why; the others give up after their timeout.
group "$RUNS/no-such-matrix.mtx" halo tcp 10
tail -n 3 "$RUNS"/*no-such*-r*.err
tar czf "$OUT/distributed-runs.tar.gz" -C "$RUNS" .
