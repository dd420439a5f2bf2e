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
