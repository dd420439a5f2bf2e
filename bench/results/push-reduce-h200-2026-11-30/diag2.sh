#!/usr/bin/env bash
# Issue 24, push-reduce on two GPUs: (1) after bulk, traced (the case that hung); (2) timed on
# four compute-bound-to-balanced layers beside the GEMM alone and fused-reduce:0.
source bench/tp-env.sh
run() { echo "== $*"; timeout "$L" "$@" 2>&1 | cut -c1-200 | grep -v "^device"; echo "rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"; }
A="overlap tp --gpus 2 --ops reduce-scatter"
export AUGUR_TP_TRACE=1; L=60 run .carry/augur $A --samples 3 --patterns bulk,push-reduce:1 512,7168,7168
unset AUGUR_TP_TRACE; L=150 run .carry/augur $A --samples 10 --patterns gemm,fused-reduce:0,push-reduce:2,push-reduce:4 \
  16384,5120,13824 8192,3584,18944 4096,5120,13824 16384,4096,4096
