#!/usr/bin/env bash
# A/B of changes to the halo mode's ordering (issue 23) on one multi-GPU machine, in one call:
# each binary's halo mode (one process, 300 iterations, checked against the f64 reference) on
# each matrix, in rotating order, beside the one-GPU time; then CG (vectors on the GPUs, to
# 1e-8) with each cg binary in the all-gather and halo modes. Binaries as NAME:PATH pairs in
# BINS (default: .carry/augur and .carry/augur-before); xz-compressed ones (PATH.xz) are
# unpacked first. Through the device tool with carry [".carry"]:
#   GPUS=2 bash bench/halo-ab.sh          (writes $OUT/ab.csv, $OUT/cg.txt, $OUT/ab-$TAG.tar.gz)
# ROUNDS (default 2) rounds of every binary; CGS="" skips CG.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/unpack-carry.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=$(mktemp -d)
N=${GPUS:-2}
ITERS=${ITERS:-300}
BINS=${BINS:-"new:.carry/augur before:.carry/augur-before"}
CGS=${CGS-"new:.carry/cg before:.carry/cg-before"}
MATRICES=${MATRICES:-"stencil3d:nx=160,points=27 banded:n=8000000,bw=13 rmat:scale=23,ef=16,seed=1"}
CG_MATRIX=${CG_MATRIX:-"stencil3d:nx=160,points=27"}
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/device.txt"
per_it() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['per_iteration_s'])" "$1" 2>/dev/null || echo nan; }
[ -e "$OUT/ab.csv" ] || echo "matrix,gpus,binary,round,per_iteration_s,rc" > "$OUT/ab.csv"
read -ra bins <<< "$BINS"
for m in $MATRICES; do
  tag=$(echo "$m" | tr ':=,' '___')
  first=${bins[0]#*:}
  timeout 120 "$first" run "$m" --gpus 1 --iterations "$ITERS" --check --json > "$R/$tag-1.json" 2> "$R/$tag-1.err"
  rc=$?
  echo "\"$m\",1,${bins[0]%%:*},0,$(per_it "$R/$tag-1.json"),$rc" | tee -a "$OUT/ab.csv"
  for ((round = 1; round <= ${ROUNDS:-2}; round++)); do
    # Rotate the order each round: a later run on a warm GPU can look a little slower.
    k=${#bins[@]}; order=()
    for ((i = 0; i < k; i++)); do order+=("${bins[$(( (i + round - 1) % k ))]}"); done
    for b in "${order[@]}"; do
      name=${b%%:*}; bin=${b#*:}; f="$R/$tag-$N-$name-r$round.json"
      timeout 120 "$bin" run "$m" --gpus "$N" --gather-mode halo --iterations "$ITERS" --check \
        --profile --json > "$f" 2> "$f.err"; rc=$?
      echo "\"$m\",$N,$name,$round,$(per_it "$f"),$rc" | tee -a "$OUT/ab.csv"
    done
  done
  tar czf "$OUT/ab-${TAG:-main}.tar.gz" -C "$R" .
done
for c in $CGS; do
  name=${c%%:*}; bin=${c#*:}
  for halo in "" "--halo"; do
    timeout 120 "$bin" "$CG_MATRIX" --gpus "$N" $halo --iterations 3000 > "$R/cg-$name$halo.txt" 2>&1
    echo "cg $name --gpus $N $halo rc=$?: $(grep -h '^CG' "$R/cg-$name$halo.txt")" | tee -a "$OUT/cg.txt"
  done
done
tar czf "$OUT/ab-${TAG:-main}.tar.gz" -C "$R" .
