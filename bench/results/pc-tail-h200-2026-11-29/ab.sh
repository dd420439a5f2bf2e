#!/usr/bin/env bash
# Issue 24, GPUS (default 2) H200s, one call: `pc-push:C:S` / `pc-pull:C:S` with the GEMMs of the
# last piece on every SM (cuBLASLt plans without an SM target: they follow the piece's arrival,
# which the copy kernel writes as it ends) -- .carry/augur.xz, this build -- against every GEMM
# leaving S SMs to the copy kernel (.carry/old.xz, the build before), alternating, two rounds,
# 15 all-gather layers (M 1024-16384); odd shapes checked first with the new build (both types,
# one and two pieces). From the repository root:
#   GPUS=2 bash bench/results/pc-tail-h200-2026-11-29/ab.sh   (writes $OUT/odd-*.csv, $OUT/ab.csv)
source bench/tp-env.sh
G=${GPUS:-2}
for t in bf16 f16; do
  timeout 60 .carry/augur overlap tp --gpus $G --dtype $t --ops all-gather \
    --patterns bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:16 \
    16,2048,4096 40,4096,4096 $((64 + 2 * G)),6144,4096 200,2048,2056 1024,6144,4096 \
    > "$OUT/odd-$t.csv" 2>> "$OUT/ab.err"
  echo "odd $t rc=$? $((SECONDS - T0)) s"
done
L=()
for m in 1024 2048 4096 8192 16384; do for w in 6144,4096 10240,8192 28672,4096; do L+=("$m,$w"); done; done
for round in 1 2; do
  for build in old augur; do
    timeout ${LIMIT:-110} .carry/$build overlap tp --gpus $G --ops all-gather \
      --patterns gemm,bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:8 "${L[@]}" \
      | sed "s/^/$build,$round,/" >> "$OUT/ab.csv" 2>> "$OUT/ab.err"
    echo "$build $round rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
  done
done
