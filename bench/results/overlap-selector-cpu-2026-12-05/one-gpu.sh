#!/usr/bin/env bash
# One GPU (the thirty-fourth session's only kind lent): LayerPlan::measured's mechanics on a
# real GPU (both plans made on the caller's buffers, each timed, the faster kept, the check's
# poison after), and the reduce-scatter patterns whose calls moved to rs/copies.rs, traced.
# What one GPU cannot show: any pattern's behaviour between GPUs, or the model's picks. One call, carry [".carry/augur.xz"]:
#   cargo build --release --locked -p augur-cli && xz -T0 -6 -c target/release/augur > .carry/augur.xz
#   bash bench/results/overlap-selector-cpu-2026-12-05/one-gpu.sh
source bench/tp-env.sh
A=.carry/augur
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# One GPU has no model's pick (an overlap needs two): each measured plan is of a pattern given,
# timed against bulk (the GEMM, then NCCL's collective of one rank).
R=("$A" overlap run --gpus 1 --measure --samples 9)
for c in "reduce-scatter fused-reduce:0" "reduce-scatter push-reduce:2" "reduce-scatter pc-reduce:2:16" \
  "all-gather pull:1" "all-gather fused-push:1:8" "all-reduce fused-all"; do
  set -- $c
  f="$OUT/measure-1gpu-$1-${2//:/_}"
  timeout 120 "${R[@]}" --op "$1" --pattern "$2" 16,4096,4096 1024,4096,4096 4096,5120,13824 \
    > "$f.csv" 2> "$f.err"
  echo "measure $1 $2 rc=$? $((SECONDS - T0)) s"
done
AUGUR_TP_TRACE=1 timeout 200 "$A" overlap tp --gpus 1 --ops reduce-scatter --samples 5 \
  --patterns gemm,bulk,pc-reduce:2:16,push-reduce:2,push-reduce:4,fused-reduce:0 1024,4096,4096 4096,5120,13824 \
  > "$OUT/tp-1gpu-rs.csv" 2> "$OUT/tp-1gpu-rs.err"
echo "tp rs rc=$? $((SECONDS - T0)) s"
for f in "$OUT"/measure-1gpu-*.csv; do echo "== $f"; cut -d, -f5-14 "$f" | tail -n +2; awk -F'"' 'NR>1{print "   why: " $2}' "$f"; done
echo "== tp"; cut -d, -f5-13 "$OUT/tp-1gpu-rs.csv"
tail -n 5 "$OUT"/*.err | cut -c1-200
(cd "$OUT" && tar czf /tmp/one-gpu.tgz . && rm -rf ./* && mv /tmp/one-gpu.tgz .)
