#!/usr/bin/env bash
# The cost of the feature tiers with the current sampler on a GPU machine, without re-timing the
# pool: `augur collect` with one kernel (scalar), one sample, over the whole training set, so the
# runs CSV records known_s, sample_s, gather_s (the GPU pass), upload_s and upload_gather_s (the
# upload alone and with the gather during it) per matrix as a full
# collection would. Compare with the committed runs by `python3 bench/tier_costs.py`; merge into
# them with `python3 bench/patch_tier_costs.py RUNS.csv $OUT/tier-cost.csv`.
# After `bash bench/prepare-carry.sh`, through the device tool with carry [".carry"]:
#   SHARD=1/1 bash bench/tier-cost-gpu.sh
# KERNEL (default scalar) and TIMING ("--reps 1 --warmup 0 --rounds 1") choose the kernel timed
# beside the tiers: KERNEL=nnz_split TIMING=" " re-times one changed kernel with the collection's
# own sample counts, for `augur collect merge` into the runs (its rows replace the old ones).
# MAX_NNZ (default 1e8) bounds the generated and grown matrices: a sweep of the sizes a change
# can affect, merged with `patch_tier_costs.py --subset`. Binaries carried xz-compressed are
# unpacked first (bench/unpack-carry.sh).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
A=.carry/augur
M=.carry/matrices
OUT=${OUT:-/tmp/out}
SHARD=${SHARD:-1/1}
source bench/unpack-carry.sh
mapfile -t specs < <(bash scripts/training-specs.sh "${MAX_NNZ:-1e8}" "$M")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
timeout "${LIMIT:-540}" $A collect --backend cuda --precision f32 --kernel "${KERNEL:-scalar}" \
  ${TIMING:---reps 1 --warmup 0 --rounds 1} --shard "$SHARD" --out "$OUT/tier-cost.csv" \
  "$M/suitesparse" "${specs[@]}" 2> "$OUT/tier-cost.err"
echo "collect rc=$?"
tail -2 "$OUT/tier-cost.err"
