#!/usr/bin/env bash
# Issue 24, push-reduce's hang on two GPUs at 512 x 7168 x 7168 (diagnostic; AUGUR_TP_TRACE
# prints each GPU's busy streams and words after the pattern's first call).
source bench/tp-env.sh
export AUGUR_TP_TRACE=1
run() { echo "== $*"; timeout 25 "$@" 2>&1 | cut -c1-220 | grep -v "^device"; echo "rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"; }
A="overlap tp --gpus 2 --ops reduce-scatter --samples 3 --warmup 2"
run .carry/augur $A --patterns push-reduce:1 512,7168,7168
run .carry/augur $A --patterns push-reduce:1 256,8192,8192
run .carry/augur $A --patterns push-reduce:2 512,7168,7168
AUGUR_TP_PR_WAIT=comm run .carry/augur $A --patterns push-reduce:1 512,7168,7168
CUDA_DEVICE_MAX_CONNECTIONS=32 run .carry/augur $A --patterns push-reduce:1 512,7168,7168
run .carry/augur $A --patterns push-reduce:1 16384,5120,13824
