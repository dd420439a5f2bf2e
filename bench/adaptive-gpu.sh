#!/usr/bin/env bash
# The adaptive SpMV kernel (issue 18) on a GPU machine: `augur check` with it in the pool (the
# shared matrices and edge cases, then long-row generators), then the kernel timed on the training
# set with the collection's own sample counts (bench/tier-cost-gpu.sh with KERNEL=adaptive), for
# `augur collect merge` into the committed runs. After `bash bench/prepare-carry.sh` (or the
# binary carried as .carry/augur.xz and the matrices in .carry/matrices), through the device
# tool with carry [".carry"]:
#   SHARDS="1/2 2/2" bash bench/adaptive-gpu.sh     (SKIP_CHECK=1 for the timings alone;
#   KERNELS="adaptive scalar:1/2" adds scalar on shard 1/2 as a drift reference)
# A shard cut by LIMIT resumes from .carry/resume.csv (the cut shard's tier-cost.csv) if present.
set -uo pipefail
A=.carry/augur
OUT=${OUT:-/tmp/out}
source bench/unpack-carry.sh
export AUGUR_SHARED_MATRICES=.carry/matrices
long=(
  "hubs:n=100000,hubs=4,hub_len=100000,short=6,seed=1"
  "powerlaw:rows=1e5,alpha=1.8,min=2"
  "wide:rows=1000,cols=100000,row_len=5000"
  "uniform:rows=1e4,row_len=33"
  "uniform:rows=1e4,row_len=1025"
  "uniform:rows=1e4,row_len=70"
  "hubs:n=1000000,hubs=64,hub_len=1000000,short=3,seed=1"
)
if [ -z "${SKIP_CHECK:-}" ]; then
  timeout 200 $A check --backend cuda > "$OUT/check.txt" 2> "$OUT/check.err"
  echo "check rc=$?"; grep -E "adaptive|matrices|fail" "$OUT/check.txt" | head -20
  timeout 100 $A check --backend cuda "${long[@]}" > "$OUT/check-long.txt" 2>> "$OUT/check.err"
  echo "check long rc=$?"; grep -E "adaptive|matrices|fail" "$OUT/check-long.txt" | head
fi
resume=" "
[ -f .carry/resume.csv ] && cp .carry/resume.csv "$OUT/tier-cost.csv" && resume="--resume"
# KERNELS "adaptive scalar:1/2" times scalar on the first shard only: a reference for drift
# between this machine and the one that timed the committed runs.
for k in ${KERNELS:-adaptive}; do
  kernel=${k%%:*}; shards=${SHARDS:-${SHARD:-1/1}}
  [ "$k" != "$kernel" ] && shards=${k#*:}
  for sh in $shards; do
    SHARD=$sh KERNEL=$kernel TIMING="$resume" bash bench/tier-cost-gpu.sh
    resume=" "
    tag=$kernel-${sh/\//of}
    mv "$OUT/tier-cost.csv" "$OUT/$tag.csv"; mv "$OUT/tier-cost.err" "$OUT/$tag.err"
  done
done
