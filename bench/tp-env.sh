#!/usr/bin/env bash
# Sourced (from the repository root) by the issue-24 GPU scripts under bench/results/: strict
# mode, NVLink multicast off (NCCL_NVLS_ENABLE=0), AUGUR_TP_UNVERIFIED unset (a script sets it
# per run where it compares), $OUT made, the carried binaries unpacked (unpack-carry.sh), T0 the
# start in seconds.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
unset AUGUR_TP_UNVERIFIED
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
T0=$SECONDS

# layers "M..." "N,K...": every layer M,N,K of those M values and weights, into the array L.
layers() {
  L=()
  local m w
  for m in $1; do for w in $2; do L+=("$m,$w"); done; done
}

# odd NAME ERR SECONDS ARGS...: `augur overlap tp ARGS` in bf16 and in f16 (the checks before and
# after the timed calls are the point), into $OUT/NAME-<type>.csv, errors to $OUT/ERR.err; with
# the carried build .carry/$ODD (default augur).
odd() {
  local name=$1 err=$2 limit=$3 t
  shift 3
  for t in bf16 f16; do
    timeout "$limit" ".carry/${ODD:-augur}" overlap tp --dtype $t "$@" > "$OUT/$name-$t.csv" 2>> "$OUT/$err.err"
    echo "$name $t rc=$? $((SECONDS - T0)) s"
  done
}

# ab NAME ERR RUN SECONDS "LABEL..." ARGS...: two rounds of `RUN LABEL SECONDS ARGS...` per label
# in turn (alternating), every row prefixed "LABEL,ROUND," into $OUT/NAME.csv, errors to
# $OUT/ERR.err. RUN: by_build (LABEL a carried build, .carry/LABEL) or by_variable (LABEL `on`
# or `launch`: AUGUR_TP_UNVERIFIED=1, else unset; the build .carry/augur).
ab() {
  local name=$1 err=$2 run=$3 limit=$4 labels=$5 round l
  shift 5
  for round in 1 2; do
    for l in $labels; do
      $run "$l" "$limit" "$@" | sed "s/^/$l,$round,/" >> "$OUT/$name.csv" 2>> "$OUT/$err.err"
      echo "$l $round rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
    done
  done
}
by_build() { timeout "$2" ".carry/$1" overlap tp "${@:3}"; }
by_variable() {
  if [ "$1" = on ] || [ "$1" = launch ]; then
    AUGUR_TP_UNVERIFIED=1 timeout "$2" .carry/augur overlap tp "${@:3}"
  else
    timeout "$2" .carry/augur overlap tp "${@:3}"
  fi
}
# by_planes LABEL SECONDS ARGS...: as by_variable, LABEL `planes` setting AUGUR_TP_ALL_PLANES=1
# (`fused-all`'s plane per source GPU, forced on one or two GPUs), else unset.
by_planes() {
  if [ "$1" = planes ]; then
    AUGUR_TP_ALL_PLANES=1 timeout "$2" .carry/augur overlap tp "${@:3}"
  else
    timeout "$2" .carry/augur overlap tp "${@:3}"
  fi
}

# small_rs_layers: the three weight sets' row-parallel weights at their M values below 512 (16,
# 64, 256; 32, 128 for the third set), weight by weight, into the array L.
small_rs_layers() {
  L=()
  local m w
  for w in 4096,4096 4096,14336 8192,8192 8192,28672 3584,3584 3584,18944 5120,5120 5120,13824; do
    for m in 16 64 256; do L+=("$m,$w"); done
  done
  for w in 3584,4096 5120,14336 7168,7168 7168,20480; do
    for m in 32 128; do L+=("$m,$w"); done
  done
}
