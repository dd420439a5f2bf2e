#!/usr/bin/env bash
# Issue 24: the fused patterns (and bulk, the anchor of drift) re-timed on the overlap
# selector's training grids, for a build whose fused kernels changed since the grids were run,
# on the GPU counts in GPUS (default "2"): the grids' three weight sets (SETS, default "first
# second third": bench/tp-grid.sh's weights at M 16-16384, the second set of 2026-11-28, the
# third set at M 32-12288), one bench/tp-grid.sh call per set (both operations). A whole grid
# with every pattern takes 200-280 s per operation and GPU count; the fused patterns and bulk
# about a fifth of it. Then bench/splice-grid.py puts the new rows into the committed grids
# (bench/results/ll-bulk-h200-2026-11-28/, third-weights-h200-2026-11-28/; OLD NEW OUT) for
# `augur overlap train`. Through the device tool with carry [".carry/augur.xz"]:
#   GPUS=2 bash bench/regrid-fused.sh      (writes $OUT/<set>/grid-<gpus>-<op>.csv and .err)
# MIN_M (say 1024) keeps only the sets' M values from it on (splice-grid.py keeps the other rows).
# F replaces the patterns (default: the grids' fused ones, and `fused-reduce:0:2`, which the
# grids do not have yet: every layer's k / P of the three sets is an even count of 64-steps on 2
# and 4 GPUs; splice-grid.py adds its rows).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
F=${F:-bulk,fused-pull:1:8,fused-push:1:8,fused-pull:2:8,fused-push:2:8,fused-push:2:16,fused-reduce:0,fused-reduce:0:2,fused-reduce:8,fused-reduce:16,fused-reduce:32}
for set in ${SETS:-first second third}; do
  case "$set" in
    first) ms="16 64 256 1024 2048 4096 8192 16384"; ag="6144,4096 28672,4096 10240,8192 57344,8192"
      rs="4096,4096 4096,14336 8192,8192 8192,28672" ;;
    second) ms="16 64 256 1024 2048 4096 8192 16384"; ag="4608,3584 37888,3584 15360,5120 7168,5120"
      rs="3584,3584 3584,18944 5120,5120 5120,13824" ;;
    third) ms="32 128 512 1536 3072 6144 12288"; ag="8192,3584 28672,5120 9216,7168 40960,7168"
      rs="3584,4096 5120,14336 7168,7168 7168,20480" ;;
    *) echo "SETS: first, second or third, not $set" >&2; exit 2 ;;
  esac
  if [ -n "${MIN_M:-}" ]; then
    ms=$(for m in $ms; do [ "$m" -ge "$MIN_M" ] && echo -n "$m "; done)
  fi
  t0=$SECONDS
  OUT=$OUT/$set MS="$ms" AG_W="$ag" RS_W="$rs" GPUS="${GPUS:-2}" LIMIT=${LIMIT:-120} \
    TP_ARGS="--patterns $F" bash bench/tp-grid.sh
  echo "$set took $((SECONDS - t0)) s"
done
