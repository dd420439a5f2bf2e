#!/usr/bin/env bash
# Issue 24, one H200: the fused all-gather's GEMM with the swapped TMA kernel at M <= 64, old
# build (.carry/augur_old.xz: 128-row tiles) against new (.carry/augur.xz), one GPU (no peer: the
# copy blocks idle, the gate never waits), held start, on one GPU's share of the third weight
# set's 4-GPU layers, each build's fused-push:1:8 and fused-pull:1:8 beside cuBLASLt alone
# (fused-old.csv, fused-new.csv, alternating rounds); then the new build's checks: the swapped
# kernels on odd shapes after the producer change (edges.csv) and `augur overlap arrive` (A's rows
# gating the swapped GEMM, arrive.csv).
# From the repository root:  bash bench/results/small-m-gemm-h200-2026-11-29/fused.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
S=()
for m in 16 32 64 128; do S+=("$m,2048,3584" "$m,2304,7168" "$m,7168,5120" "$m,10240,7168"); done
for round in 1 2; do
  for b in old new; do
    A=.carry/augur; [ $b = old ] && A=.carry/augur_old
    timeout 150 $A overlap tp --gpus 1 --ops all-gather --start held --samples 15 \
      --patterns gemm,fused-push:1:8,fused-pull:1:8 "${S[@]}" > "$OUT/f-$b-$round.csv" 2>> "$OUT/fused.err"
    echo "$b $round rc=$?"
  done
done
for b in old new; do head -1 "$OUT/f-$b-1.csv" > "$OUT/fused-$b.csv"
  for r in 1 2; do tail -n +2 "$OUT/f-$b-$r.csv" | sed "s/^/$r,/" >> "$OUT/fused-$b.rounds"; done; done
for b in old new; do (head -1 "$OUT/f-$b-1.csv" | sed 's/^/round,/'; cat "$OUT/fused-$b.rounds") > "$OUT/fused-$b.csv"; done
rm -f "$OUT"/f-*-*.csv "$OUT"/*.rounds
E=augur_tma_swap_32x128,augur_tma_swap_64x128,augur_tma_swap_32x128_k3,augur_tma_swap_64x128_k5,augur_tma_auto,cublaslt
for t in bf16 f16; do
  timeout 100 .carry/augur overlap gemm --dtype $t --kernels $E 7,8,8 1000,136,40 129,264,1032 300,520,2056 \
    1,4096,4096 33,1000,520 65,2056,3000 64,128,64 16,10240,7168 >> "$OUT/edges.csv" 2>> "$OUT/edges.err"
  echo "edges $t rc=$?"
done
timeout 150 .carry/augur overlap arrive --blocks 1,4 16,4096,4096 32,10240,7168 64,7168,5120 128,4096,3584 \
  > "$OUT/arrive.csv" 2> "$OUT/arrive.err"
echo "arrive rc=$?"
