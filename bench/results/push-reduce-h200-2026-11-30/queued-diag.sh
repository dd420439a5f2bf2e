#!/usr/bin/env bash
# Issue 24, NOT RUN YET: why `push-reduce` hangs on two GPUs once other patterns ran before it
# in the process (calls.log: after bulk, or gemm + fused-reduce:0; never when it ran alone).
# One call on nvidia-h200-x2 (~450 s at most: each hang costs its run's limit), carry
# [".carry/augur.xz"] (a build of the commit this script is in):
#   bash bench/results/push-reduce-h200-2026-11-30/queued-diag.sh
# Every run traced (AUGUR_TP_TRACE: "enqueueing" as each of the first calls is enqueued, then
# each GPU's busy streams and words after it, bounded): a host blocked in the enqueue shows as
# an "enqueueing" line with no trace after it; a GPU waiting on a word shows the words.
source bench/tp-env.sh
export AUGUR_TP_UNVERIFIED=1 AUGUR_TP_TRACE=1
run() {
  echo "== $*"
  env "$@" 2>&1 | cut -c1-220 | grep -v "^device"
  echo "rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
}
A="overlap tp --gpus 2 --ops reduce-scatter --samples 3"
X=512,7168,7168
# Compile every module first (NVRTC, no cache on a fresh machine), untimed.
run timeout 150 .carry/augur $A --patterns bulk,fused-reduce:0,pc-reduce:1:16 1024,4096,4096
# (1) The hang reproduced: NCCL's reduce-scatter, then push-reduce.
run timeout 75 .carry/augur $A --patterns bulk,push-reduce:2 $X
# (2) After the GEMM alone (only its timing's barriers, NCCL all-reduces of one value, before).
run timeout 75 .carry/augur $A --patterns gemm,push-reduce:2 $X
# (3) After itself and bulk: does its own first call (no pattern before) set what hangs later?
run timeout 75 .carry/augur $A --patterns push-reduce:2,bulk,push-reduce:4 $X
# (4) The compute stream waiting through the communication stream and an event (as pc-reduce).
run AUGUR_TP_PR_WAIT=comm timeout 75 .carry/augur $A --patterns bulk,push-reduce:2 $X
# (5) More hardware queues (streams sharing one would order a wait before another's write).
run CUDA_DEVICE_MAX_CONNECTIONS=32 timeout 75 .carry/augur $A --patterns bulk,push-reduce:2 $X
