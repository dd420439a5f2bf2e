#!/usr/bin/env bash
# One GPU (the thirty-fourth session's only kind lent): LayerPlan::measured's mechanics on a
# real GPU (both plans made on the caller's buffers, each timed, the faster kept, the check's
# poison after), and the reduce-scatter patterns whose calls moved to rs/copies.rs, traced.
# What one GPU cannot show: any pattern's behaviour between GPUs (the tree for 1 GPU is the
# nearest, 2's, noted). One call, carry [".carry/augur.xz"]:
#   cargo build --release --locked -p augur-cli && xz -T0 -6 -c target/release/augur > .carry/augur.xz
#   bash bench/results/overlap-selector-cpu-2026-12-05/one-gpu.sh
source bench/tp-env.sh
A=.carry/augur
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
R=("$A" overlap run --gpus 1 --measure --samples 9)
timeout 240 "${R[@]}" --op reduce-scatter 1024,4096,4096 4096,5120,13824 16,3584,18944 16384,8192,8192 \
  > "$OUT/measure-1gpu-rs.csv" 2> "$OUT/measure-1gpu-rs.err"
echo "measure rs rc=$? $((SECONDS - T0)) s"
timeout 150 "${R[@]}" --op all-gather 16,6144,4096 1024,28672,4096 8192,6144,4096 \
  > "$OUT/measure-1gpu-ag.csv" 2> "$OUT/measure-1gpu-ag.err"
echo "measure ag rc=$? $((SECONDS - T0)) s"
timeout 150 "${R[@]}" --op all-reduce 64,3584,3584 4096,8192,8192 \
  > "$OUT/measure-1gpu-ar.csv" 2> "$OUT/measure-1gpu-ar.err"
echo "measure ar rc=$? $((SECONDS - T0)) s"
AUGUR_TP_TRACE=1 timeout 200 "$A" overlap tp --gpus 1 --ops reduce-scatter --samples 5 \
  --patterns gemm,bulk,pc-reduce:2:16,push-reduce:2,push-reduce:4,fused-reduce:0 1024,4096,4096 4096,5120,13824 \
  > "$OUT/tp-1gpu-rs.csv" 2> "$OUT/tp-1gpu-rs.err"
echo "tp rs rc=$? $((SECONDS - T0)) s"
for f in "$OUT"/measure-1gpu-*.csv; do echo "== $f"; cut -d, -f1-14 "$f"; awk -F'"' 'NR>1{print "   why: " $2}' "$f"; done
echo "== tp"; cut -d, -f1-14 "$OUT/tp-1gpu-rs.csv"
tail -5 "$OUT"/*.err | cut -c1-200
