#!/usr/bin/env bash
# Issue 24, for the next 2- or 4-GPU machine: what the swapped TMA GEMM (2026-11-29,
# bench/results/small-m-gemm-h200-2026-11-29/) does to the fused all-gather between GPUs at small
# M, where it was measured on one GPU only. The build before it (128-row tiles in the fused
# kernel) against this one, alternating, two rounds, every GPU count in GPUS (default "4 2"), M
# 16-64 (and 128 as a control, unchanged) on the third weight set's and the default grid's
# all-gathered weights, beside the GEMM alone, the collective alone, bulk and ll-bulk (the small-M
# winner on 4 GPUs). Prepare both binaries here (no Rust on the device):
#   git worktree add /tmp/augur-old 998a5b2 && (cd /tmp/augur-old && cargo build --release --locked -p augur-cli)
#   strip -o /tmp/old.s /tmp/augur-old/target/release/augur && xz -T0 -6 -c /tmp/old.s > .carry/augur_old.xz
#   cargo build --release --locked -p augur-cli && strip -o /tmp/new.s target/release/augur && xz -T0 -6 -c /tmp/new.s > .carry/augur.xz
# then through the device tool (kind nvidia-h200-x4), carry [".carry/augur.xz", ".carry/augur_old.xz"]:
#   bash bench/fused-small-m-ab.sh      (writes $OUT/ab-<gpus>.csv: a `build` and a `round` column first)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/unpack-carry.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
P=gemm,comm,bulk,ll-bulk,fused-push:1:8,fused-pull:1:8,fused-push:2:8
S=()
for m in ${MS:-16 32 64 128}; do
  for w in ${AG_W:-8192,3584 28672,5120 9216,7168 40960,7168 6144,4096 10240,8192}; do S+=("$m,$w"); done
done
for g in ${GPUS:-4 2}; do
  f="$OUT/ab-$g.csv"; : > "$f"
  for round in 1 2; do
    for b in old new; do
      A=.carry/augur; [ $b = old ] && A=.carry/augur_old
      timeout ${LIMIT:-200} $A overlap tp --gpus "$g" --ops all-gather --patterns $P "${S[@]}" \
        > "$OUT/part.csv" 2>> "$OUT/ab-$g.err"
      echo "$g GPUs $b round $round rc=$?"
      [ -s "$f" ] || head -1 "$OUT/part.csv" | sed 's/^/build,round,/' > "$f"
      tail -n +2 "$OUT/part.csv" | sed "s/^/$b,$round,/" >> "$f"
    done
  done
  rm -f "$OUT/part.csv"
done
