#!/usr/bin/env bash
# Issue 24, push-reduce (first diagnostic, 2026-11-30 call 4): after bulk, three ways, and on one GPU.
source bench/tp-env.sh
stamp() { while IFS= read -r l; do echo "$(( SECONDS - T0 ))s $l"; done; }
export AUGUR_TP_TRACE=1
run() { echo "== $*"; timeout 70 "$@" 2>&1 | cut -c1-160 | stamp; echo "rc=${PIPESTATUS[0]}"; }
run .carry/augur overlap tp --gpus 2 --ops reduce-scatter --samples 5 --patterns bulk,push-reduce:1 512,7168,7168
run .carry/augur overlap tp --gpus 2 --ops reduce-scatter --samples 5 --start barrier --patterns bulk,push-reduce:1 512,7168,7168
CUDA_MODULE_LOADING=EAGER run .carry/augur overlap tp --gpus 2 --ops reduce-scatter --samples 5 --patterns bulk,push-reduce:1 512,7168,7168
run .carry/augur overlap tp --gpus 1 --ops reduce-scatter --samples 5 --patterns bulk,push-reduce:1 512,7168,7168
