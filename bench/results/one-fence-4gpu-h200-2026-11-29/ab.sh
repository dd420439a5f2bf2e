#!/usr/bin/env bash
# Issue 24, GPUS (default 4) H200s, one call: the copy kernel (comm.cu's tp_copy_pieces) with one
# system fence and count per piece after its copies to every peer (.carry/fence.xz: a build with
# one-fence.diff applied) against one per piece and peer (.carry/augur.xz, the build without it),
# alternating, two rounds, 12 all-gather layers (M 512-4096), `own-bulk` and the pc patterns; odd
# shapes checked first with the new build (both types; one and two pieces). From the repository
# root, carry [".carry/augur.xz", ".carry/fence.xz"]:
#   bash bench/results/one-fence-4gpu-h200-2026-11-29/ab.sh   (writes $OUT/odd-*.csv, $OUT/ab.csv)
source bench/tp-env.sh
G=${GPUS:-4}
ODD=fence odd odd ab 60 --gpus $G --ops all-gather \
  --patterns bulk,own-bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8,pc-pull:2:16 \
  16,2048,4096 40,4096,4096 $((64 + 2 * G)),6144,4096 200,2048,2056
layers "512 1024 2048 4096" "6144,4096 10240,8192 28672,4096"
ab ab ab by_build ${LIMIT:-100} "augur fence" --gpus $G --ops all-gather \
  --patterns gemm,bulk,own-bulk,pc-push:1:8,pc-pull:1:8,pc-push:2:8 "${L[@]}"
