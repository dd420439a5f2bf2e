#!/usr/bin/env bash
# Issue 7: MultiGpuSpmv's copy-engine all-gather hung in some checks (3 of 8 on nvidia-h200-x2,
# 2026-11-22). One device call on 2 GPUs with carry [".carry"]: the same checks, each REPEAT
# times under a 20 s limit, with the binary before the fix (.carry/augur-old, where one exists:
# the SpMV products on the legacy default stream) and after (.carry/augur: their own
# non-blocking stream); on the first hang of each binary, the host threads' stacks (gdb, where
# installed). Writes ce-hang.csv (binary, matrix, precision, try, rc) and ce-hang.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
REPEAT=${REPEAT:-3}
echo "binary,matrix,precision,try,rc" > "$OUT/ce-hang.csv"
for bin in .carry/augur-old .carry/augur; do
  [ -x "$bin" ] || continue
  stacks=0
  for m in wide:rows=400,cols=5000,nnz=20000 uniform:rows=7,cols=7,nnz=0 stencil2d:nx=50 powerlaw:rows=30000,alpha=1.8; do
    for p in f32 f64; do
      for t in $(seq "$REPEAT"); do
        "$bin" run "$m" --precision $p --gpus 2 --gather-mode copy-engine --iterations 3 --check >> "$OUT/ce-hang.log" 2>&1 &
        pid=$!; rc=
        for _ in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
        if kill -0 $pid 2>/dev/null; then
          rc=hang
          if [ $stacks = 0 ] && command -v gdb > /dev/null; then
            stacks=1
            echo "== stacks of $bin $m $p (hung 20 s)" >> "$OUT/ce-hang.log"
            timeout 60 gdb -p $pid -batch -ex "thread apply all bt 12" >> "$OUT/ce-hang.log" 2>&1
          fi
          kill -9 $pid; wait $pid 2>/dev/null
        else
          wait $pid; rc=$?
        fi
        echo "\"$(basename "$bin")\",\"$m\",$p,$t,$rc" >> "$OUT/ce-hang.csv"
      done
    done
  done
  echo "$bin: $(grep -c "^\"$(basename "$bin")\".*,0$" "$OUT/ce-hang.csv") passed, $(grep -c "^\"$(basename "$bin")\".*,hang$" "$OUT/ce-hang.csv") hung"
done
