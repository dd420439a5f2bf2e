#!/usr/bin/env bash
# Why the fused all-gather's GEMM is further from cuBLASLt on an H100 than on an H200 at large M
# (one GPU, no peer): the fused kernel with 1, 8 and 16 copy blocks beside cuBLASLt alone, and
# the standalone TMA kernel's widths and auto pick on the same per-GPU shapes, the SM clock and
# power sampled every 200 ms throughout. Carry [".carry/augur.xz"]:
#   bash bench/results/fused-bar-h100-2026-12-06/diag.sh
source bench/tp-env.sh
A=.carry/augur
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 200 > "$OUT/smi.csv" 2>&1 &
SMI=$!
L=(4096,5120,8192 4096,14336,4096 16384,5120,8192 1024,28672,8192)
echo "fused start $((SECONDS - T0)) s" | tee "$OUT/marks.txt"
timeout 150 "$A" overlap tp --gpus 1 --ops all-gather --samples 7 \
  --patterns gemm,fused-push:1:1,fused-push:1:8,fused-push:1:16 "${L[@]}" > "$OUT/fused.csv" 2> "$OUT/fused.err"
echo "fused rc=$? $((SECONDS - T0)) s" | tee -a "$OUT/marks.txt"
timeout 150 "$A" overlap gemm --reps 7 --warmup 2 \
  --kernels augur_tma_128x256,augur_tma_128x192,augur_tma_128x128,augur_tma_auto,cublaslt "${L[@]}" > "$OUT/gemm.csv" 2> "$OUT/gemm.err"
echo "gemm rc=$? $((SECONDS - T0)) s" | tee -a "$OUT/marks.txt"
kill $SMI
awk -F, 'NR>1{print $5","$6","$7","$8","$9","$11","$13}' "$OUT/fused.csv"
awk -F, 'NR>1{print $3","$4","$5","$6","$7","$8","$11","$12","$14}' "$OUT/gemm.csv"
tail -n 3 "$OUT"/*.err | cut -c1-200
(cd "$OUT" && tar czf /tmp/diag.tgz . && rm -rf ./* && mv /tmp/diag.tgz .)
