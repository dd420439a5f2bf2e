#!/usr/bin/env bash
# What issue 7 still needs from a GPU machine, in one device call (nvidia-h200-x4; on -x2 the
# 4-GPU parts are skipped), after `bash bench/prepare-carry.sh`, with carry [".carry"]:
#   1. the 2-GPU all-gather sweep with LL (run 2 stopped inside its LL all-gather of 1 MiB):
#      comm-2-ag.csv, comm-2-ag.log (progress lines carry elapsed seconds: a stall shows);
#   2. the 4-GPU sweep with every pattern, LL included: comm-4.csv, comm-4.log;
#   3. MultiGpuSpmv: --check with auto, ll, pull, push (f32, f64) on 2 and 4 GPUs, copy-engine
#      on 2 GPUs under a short timeout (it hung once), and auto vs NCCL scaling on 4 GPUs:
#      checks.log, scaling.csv.
# Each step has its own time limit (seconds: AG2, SWEEP4, CHECKS, SCALE) so one stall cannot
# eat the call. STEPS picks steps (default "ag2 sweep4 checks scale", up to ~750 s: more than one
# device call may run, so split it, e.g. STEPS=sweep4 then STEPS="ag2 checks scale").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
A=${AUGUR:-.carry/augur}
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
ngpu=$(nvidia-smi -L | wc -l)
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1 || true
fail=0
STEPS=" ${STEPS:-ag2 sweep4 checks scale} "
step() { [[ "$STEPS" == *" $1 "* ]]; }
step ag2 && { timeout "${AG2:-150}" "$A" collect comm --devices 0,1 --sizes 1KiB..1GiB --collectives all-gather \
  --out "$OUT/comm-2-ag.csv" --force > "$OUT/comm-2-ag.log" 2>&1 || { echo "2-GPU all-gather sweep: rc $?"; fail=1; }
tail -2 "$OUT/comm-2-ag.log"; }
if step sweep4 && [ "$ngpu" -ge 4 ]; then
  timeout "${SWEEP4:-330}" "$A" collect comm --devices 0,1,2,3 --sizes 1KiB..1GiB \
    --out "$OUT/comm-4.csv" --force > "$OUT/comm-4.log" 2>&1 || { echo "4-GPU sweep: rc $?"; fail=1; }
  tail -2 "$OUT/comm-4.log"
fi
worlds="2"; [ "$ngpu" -ge 4 ] && worlds="2 4"
check() { # args: seconds, then augur run arguments
  local t=$1; shift
  if timeout "$t" "$A" run "$@" --iterations 3 --check >> "$OUT/checks.log" 2>&1; then
    echo "passed: $*" >> "$OUT/checks.log"
  else
    echo "FAILED (rc $?): $*" | tee -a "$OUT/checks.log"; fail=1
  fi
}
end=$((SECONDS + ${CHECKS:-120}))
step checks || end=0
for m in stencil2d:nx=50 wide:rows=400,cols=5000,nnz=20000 powerlaw:rows=30000,alpha=1.8 uniform:rows=7,cols=7,nnz=0; do
  for p in f32 f64; do
    for n in $worlds; do
      for mode in auto ll pull push; do
        [ $SECONDS -lt $end ] && check 30 "$m" --precision $p --gpus $n --gather-mode $mode
      done
    done
    [ $SECONDS -lt $end ] && check 15 "$m" --precision $p --gpus 2 --gather-mode copy-engine
  done
done
touch "$OUT/checks.log"
echo "checks: $(grep -c '^passed' "$OUT/checks.log") passed, $(grep -c '^FAILED' "$OUT/checks.log") failed"
echo "matrix,gpus,gather_mode,per_iteration_ms,max_gather_ms" > "$OUT/scaling.csv"
end=$((SECONDS + ${SCALE:-150}))
step scale || end=0
for m in "stencil3d:nx=160,points=27" "rmat:scale=23,ef=16,seed=1"; do
  for c in 1:all-gather 2:auto 4:auto 4:all-gather; do
    n=${c%%:*}; mode=${c#*:}
    [ "$n" -le "$ngpu" ] && [ $SECONDS -lt $end ] || continue
    timeout 60 "$A" run "$m" --gpus "$n" --gather-mode "$mode" --iterations 300 --profile --json > "$OUT/run.json" 2>> "$OUT/checks.log" \
      && python3 - "$OUT/run.json" "$m" >> "$OUT/scaling.csv" <<'PY'
import json,sys
r=json.load(open(sys.argv[1])); p=r["profile"] or []
print('"%s",%d,%s,%.4f,%.4f'%(sys.argv[2],r["gpus"],r["gather_mode"],r["per_iteration_s"]*1e3,max(x["gather_s"] for x in p)*1e3))
PY
  done
done
cat "$OUT/scaling.csv"
exit $fail
