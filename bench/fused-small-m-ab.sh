#!/usr/bin/env bash
# Issue 24, for the next 2- or 4-GPU machine: what the twenty-first and twenty-second sessions'
# GEMM changes, measured on one GPU only, do to the fused patterns between GPUs. The swapped TMA
# GEMM at small M (bench/results/small-m-gemm-h200-2026-11-29/) and the 128 x 192 tiles in the
# mid band (bench/results/tile-192-h200-2026-11-29/) are both in the fused kernels. The build
# before both (998a5b2: 128-row tiles 256 or 128 wide) against this one, alternating, two rounds,
# every GPU count in GPUS (default "4 2"), beside the GEMM alone, the collective alone and ll-bulk
# (the new build only: the same code in both) and bulk (in both, the anchor of drift). By default
# the all-gather at M 16-64 (and 128 as a control, unchanged) on the third weight set's and the
# default grid's all-gathered weights; the mid band, one call per operation:
#   OPS=all-gather MS="512 1536 3072" LIMIT=280 bash bench/fused-small-m-ab.sh
#   OPS=reduce-scatter MS="512 1536 3072" LIMIT=280 bash bench/fused-small-m-ab.sh
# (the reduce-scatter on the weights in RS_W: the third set's and the default grid's). Prepare
# both binaries here (no Rust on the device):
#   git worktree add /tmp/augur-old 998a5b2 && (cd /tmp/augur-old && cargo build --release --locked -p augur-cli)
#   strip -o /tmp/old.s /tmp/augur-old/target/release/augur && xz -T0 -6 -c /tmp/old.s > .carry/augur_old.xz
#   cargo build --release --locked -p augur-cli && strip -o /tmp/new.s target/release/augur && xz -T0 -6 -c /tmp/new.s > .carry/augur.xz
# then through the device tool (kind nvidia-h200-x4), carry [".carry/augur.xz", ".carry/augur_old.xz"]:
#   bash bench/fused-small-m-ab.sh      (writes $OUT/ab-<op>-<gpus>.csv: a `build` and a `round` column first)
# Run on 2 H200s at small M (all-gather): bench/results/fused-small-m-2gpu-h200-2026-11-29/.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/unpack-carry.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
OPS=${OPS:-all-gather}
case "$OPS" in
  all-gather)
    F=fused-push:1:8,fused-pull:1:8,fused-push:2:8
    W=${AG_W:-8192,3584 28672,5120 9216,7168 40960,7168 6144,4096 10240,8192} ;;
  reduce-scatter)
    F=fused-reduce:0,fused-reduce:16
    W=${RS_W:-3584,4096 5120,14336 7168,7168 7168,20480 4096,14336 8192,8192} ;;
  *) echo "OPS: all-gather or reduce-scatter, not $OPS" >&2; exit 2 ;;
esac
S=()
for m in ${MS:-16 32 64 128}; do
  for w in $W; do S+=("$m,$w"); done
done
for g in ${GPUS:-4 2}; do
  f="$OUT/ab-$OPS-$g.csv"; : > "$f"
  for round in 1 2; do
    for b in old new; do
      # The patterns whose code differs between the builds (the fused ones) run in both, with
      # bulk as the anchor of the machine's drift; the others (the same code) in the new only.
      A=.carry/augur; P=gemm,comm,bulk,ll-bulk,$F
      [ $b = old ] && A=.carry/augur_old && P=bulk,$F
      timeout ${LIMIT:-200} $A overlap tp --gpus "$g" --ops "$OPS" --patterns $P "${S[@]}" \
        > "$OUT/part.csv" 2>> "$OUT/ab-$OPS-$g.err"
      echo "$g GPUs $OPS $b round $round rc=$?"
      [ -s "$f" ] || head -1 "$OUT/part.csv" | sed 's/^/build,round,/' > "$f"
      tail -n +2 "$OUT/part.csv" | sed "s/^/$b,$round,/" >> "$f"
    done
  done
  rm -f "$OUT/part.csv"
done
