#!/usr/bin/env bash
# Issue 6 on a multi-GPU machine (nvidia-h200-x2 or -x4), through the device tool with carry
# [".carry"] after `bash bench/prepare-carry.sh`:
# CHECK_MODES / SCALE_MODES: gather-mode:chunks lists (default: every mode); SMALL, BIG: matrices.
#   1. correctness: `augur run --check` through SpmvPlan (1 GPU) and MultiGpuSpmv (--gpus 1, 2, 4
#      where present; padded all-gather with 1 and 3 chunks per shard, grouped broadcasts) on
#      edge cases and shared matrices, f32 and f64; each --check compares one product and two
#      iterated ones (y -> x on the GPUs) with the f64 reference;
#   2. scaling: time per iteration (product + all-gather, y -> x on the GPUs) for 1, 2, 4 GPUs
#      on generated matrices with nnz >= 1e8, per all-gather mode and chunk count, with
#      per-shard device profiles (product alone, all-gather alone);
#   3. dispatch overhead of a cached plan over the bare kernel launch.
# Writes under $OUT (default ./out): checks.log, scaling.jsonl, scaling.csv, dispatch.csv,
# devices.json. QUICK=1: small matrices only (a smoke test); SHARED_LIMIT: shared matrices
# checked (default 40); SKIP_CHECKS=1: scaling and dispatch only.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
A=${AUGUR:-.carry/augur}
M=${MATRICES:-.carry/matrices/suitesparse}
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
ngpu=$(nvidia-smi -L | wc -l)
"$A" devices --json > "$OUT/devices.json" 2>&1 || true
multi="1"; [ "$ngpu" -ge 2 ] && multi="2"; [ "$ngpu" -ge 4 ] && multi="2 4"
fail=0
check() { # args: matrix precision flags...
  if ! "$A" run "$1" --iterations 3 --check --precision "$2" "${@:3}" >> "$OUT/checks.log" 2>&1; then
    echo "FAILED: $*" | tee -a "$OUT/checks.log"; fail=1
  fi
}
if [ "${SKIP_CHECKS:-0}" != 1 ]; then
  small=${SMALL:-"stencil2d:nx=50 tall:rows=3000,cols=500,nnz=20000 wide:rows=400,cols=5000,nnz=20000 hubs:n=20000 arrowhead:n=30000 powerlaw:rows=30000,alpha=1.8 uniform:rows=1,cols=1,nnz=1 uniform:rows=7,cols=7,nnz=0"}
  shared=""
  [ -d "$M" ] && shared=$(ls "$M"/*.mtx.gz | head -${SHARED_LIMIT:-40})
  for m in $small $shared; do
    for p in f32 f64; do
      check "$m" $p --backend cuda
      check "$m" $p --gpus 1
      for n in $multi; do
        for mc in ${CHECK_MODES:-auto:1 all-gather:1 all-gather:3 broadcasts:1 ll:1 pull:1 push:1 copy-engine:1}; do
          check "$m" $p --gpus "$n" --gather-mode "${mc%:*}" --chunks "${mc#*:}"
        done
      done
    done
  done
  echo "checks done, fail=$fail" | tee -a "$OUT/checks.log"
  echo "passed lines: $(grep -c ': passed' "$OUT/checks.log"), FAILED lines: $(grep -c 'FAILED' "$OUT/checks.log")"
fi

"$A" bench dispatch --backend cuda stencil2d:nx=32 stencil2d:nx=300 rmat:scale=14,ef=8,seed=1 > "$OUT/dispatch.csv" 2>> "$OUT/checks.log"
cat "$OUT/dispatch.csv"

if [ "${QUICK:-0}" = 1 ]; then
  big="stencil3d:nx=60,points=27 rmat:scale=16,ef=16,seed=1"
else
  big=${BIG:-"stencil3d:nx=160,points=27 rmat:scale=23,ef=16,seed=1 banded:n=6e6,bw=16"}
fi
echo "matrix,nnz,gpus,gather_mode,chunks,per_iteration_ms,gb_per_s,kernels,max_product_ms,max_gather_ms,max_step_ms" > "$OUT/scaling.csv"
for m in $big; do
  configs="1:all-gather:1"
  for n in $multi; do
    for mc in ${SCALE_MODES:-auto:1 all-gather:1 ll:1 pull:1 push:1 copy-engine:1}; do
      configs="$configs $n:$mc"
    done
  done
  for c in $configs; do
    IFS=: read -r n mode ch <<< "$c"
    "$A" run "$m" --gpus "$n" --gather-mode "$mode" --chunks "$ch" --iterations 300 --profile --json \
      > "$OUT/run.json" 2>> "$OUT/checks.log" || { echo "FAILED run $m $c" | tee -a "$OUT/checks.log"; fail=1; continue; }
    python3 - "$OUT/run.json" "$OUT/scaling.jsonl" "$OUT/scaling.csv" <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
open(sys.argv[2],"a").write(json.dumps(r)+"\n")
p=r["profile"] or []
ks=" ".join(s["decision"]["kernel"] for s in r["shards"])
row=[r["matrix"],r["nnz"],r["gpus"],r["gather_mode"],r["chunks"],"%.4f"%(r["per_iteration_s"]*1e3),"%.0f"%r["gb_per_s"],ks,
     "%.4f"%(max(x["kernel_s"] for x in p)*1e3),"%.4f"%(max(x["gather_s"] for x in p)*1e3),"%.4f"%(max(x["step_s"] for x in p)*1e3)]
line=",".join('"%s"'%v if isinstance(v,str) and "," in v else str(v) for v in row)
open(sys.argv[3],"a").write(line+"\n"); print(line)
PY
  done
done
rm -f "$OUT/run.json"
exit $fail
