#!/usr/bin/env bash
# Issue 24, NOT RUN YET: why `push-reduce` hangs on two GPUs once other patterns ran before it
# in the process (calls.log: after bulk, or gemm + fused-reduce:0; never when it ran alone).
# One call on nvidia-h200-x2 (~470 s at most: each hang costs its run's 60 s), carry
# [".carry/augur.xz"], a build of the commit this script is in NOT stripped (its symbols name
# our frames in the backtraces below; ~3.6 MB xz'd):
#   cargo build --release --locked -p augur-cli && xz -T0 -6 -c target/release/augur > .carry/augur.xz
#   bash bench/results/push-reduce-h200-2026-11-30/queued-diag.sh
# Every run traced (AUGUR_TP_TRACE: "enqueueing" as each of the first calls is enqueued, then
# each GPU's busy streams and words after it, bounded): a host blocked in the enqueue shows as
# an "enqueueing" line with no trace after it; a GPU waiting on a word shows the words.
source bench/tp-env.sh
export AUGUR_TP_UNVERIFIED=1 AUGUR_TP_TRACE=1
# run [VAR=value ...] timeout LIMIT CMD...: the run, its stderr and stdout (CSV headers left
# out); if it is still running 40 s in, where its threads wait: each thread's kernel wait
# channel, and every thread's backtrace where gdb is there.
run() {
  echo "== $*"
  env "$@" > /tmp/run.log 2>&1 &
  local pid=$! t=0
  while kill -0 $pid 2> /dev/null && [ $t -lt 40 ]; do sleep 1; t=$((t + 1)); done
  local aug
  aug=$(pgrep -f -n "^.carry/augur overlap") || true
  if [ -n "$aug" ]; then
    echo "-- still running after 40 s: pid $aug, threads (name: wait channel)"
    for d in /proc/$aug/task/*; do echo "  $(cat $d/comm): $(cat $d/wchan 2> /dev/null)"; done
    command -v gdb > /dev/null && timeout 20 gdb -p "$aug" -batch -ex "thread apply all bt 12" \
      2>&1 | grep -E "^Thread|^#" | cut -c1-160 | head -150
  fi
  wait $pid
  local rc=$?
  cut -c1-220 /tmp/run.log | grep -v "^device"
  echo "rc=$rc $((SECONDS - T0)) s"
}
A="overlap tp --gpus 2 --ops reduce-scatter --samples 3"
X=512,7168,7168
# Compile every module first (NVRTC, no cache on a fresh machine), untimed.
run timeout 150 .carry/augur $A --patterns bulk,fused-reduce:0,pc-reduce:1:16 1024,4096,4096
# (1) The hang reproduced: NCCL's reduce-scatter, then push-reduce.
run timeout 60 .carry/augur $A --patterns bulk,push-reduce:2 $X
# (2) After the GEMM alone (only its timing's barriers, NCCL all-reduces of one value, before).
run timeout 60 .carry/augur $A --patterns gemm,push-reduce:2 $X
# (3) After itself and bulk: does its own first call (no pattern before) set what hangs later?
run timeout 60 .carry/augur $A --patterns push-reduce:2,bulk,push-reduce:4 $X
# (4) The compute stream waiting through the communication stream and an event (as pc-reduce).
run AUGUR_TP_PR_WAIT=comm timeout 60 .carry/augur $A --patterns bulk,push-reduce:2 $X
# (5) More hardware queues (streams sharing one would order a wait before another's write).
run CUDA_DEVICE_MAX_CONNECTIONS=32 timeout 60 .carry/augur $A --patterns bulk,push-reduce:2 $X
