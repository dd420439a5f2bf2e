#!/usr/bin/env bash
# Issue 24, GPUS (default 4) H200s, one call: the copy kernel (comm.cu's tp_copy_pieces) with one
# system fence and count per piece after its copies to every peer (.carry/augur.xz, this build)
# against one per piece and peer (.carry/old.xz, the build before), alternating, two rounds, 12
# all-gather layers (M 512-4096), `own-bulk` and the pc patterns; odd shapes checked first with
# the new build (both types; one and two pieces). From the repository root:
#   bash bench/results/one-fence-4gpu-h200-2026-11-29/ab.sh   (writes $OUT/odd-*.csv, $OUT/ab.csv)
source bench/tp-env.sh
G=${GPUS:-4}
for t in bf16 f16; do
  timeout 60 .carry/augur overlap tp --gpus $G --dtype $t --ops all-gather \
    --patterns bulk,own-bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:16 \
    16,2048,4096 40,4096,4096 $((64 + 2 * G)),6144,4096 200,2048,2056 > "$OUT/odd-$t.csv" 2>> "$OUT/ab.err"
  echo "odd $t rc=$? $((SECONDS - T0)) s"
done
L=()
for m in 512 1024 2048 4096; do for w in 6144,4096 10240,8192 28672,4096; do L+=("$m,$w"); done; done
for round in 1 2; do
  for build in old augur; do
    timeout ${LIMIT:-100} .carry/$build overlap tp --gpus $G --ops all-gather \
      --patterns gemm,bulk,own-bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8 "${L[@]}" \
      | sed "s/^/$build,$round,/" >> "$OUT/ab.csv" 2>> "$OUT/ab.err"
    echo "$build $round rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
  done
done
