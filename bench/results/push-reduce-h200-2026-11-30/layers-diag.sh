#!/usr/bin/env bash
# Issue 24: push-reduce's hang is at a later LAYER of a process (run.sh's second call: the
# checks and both sweeps stopped on their 2nd-4th layer, no harness message; queued-diag.sh's
# one-layer runs all ran clean). Each layer opens its GPUs, NCCL and buffers anew and closes
# them at its end. Every run traced by step (AUGUR_TP_TRACE: "tp trace: T s rank R: STEP" as
# each GPU's thread reaches set-up, NCCL, each pattern's check and timing, the close), so the
# last step said is where a thread blocks. One call on nvidia-h200-x2 (~300 s at most), carry
# [".carry/augur.xz"] (an unstripped build):
#   cargo build --release --locked -p augur-cli && xz -T0 -6 -c target/release/augur > .carry/augur.xz
#   bash bench/results/push-reduce-h200-2026-11-30/layers-diag.sh
source bench/tp-env.sh
export AUGUR_TP_UNVERIFIED=1 AUGUR_TP_TRACE=1
# run PROBE [VAR=value ...] timeout LIMIT CMD...: the run; if still going PROBE s in, its
# threads' wait channels and (gdb there) backtraces; then its output, trace steps last 40 lines.
run() {
  local probe=$1
  shift
  echo "== $*"
  env "$@" > /tmp/run.log 2>&1 &
  local pid=$! t=0
  while kill -0 $pid 2> /dev/null && [ $t -lt "$probe" ]; do sleep 1; t=$((t + 1)); done
  local aug
  aug=$(pgrep -f -n "^.carry/augur overlap") || true
  if [ -n "$aug" ]; then
    echo "-- still running after $probe s: pid $aug, threads (name: wait channel)"
    for d in /proc/$aug/task/*; do echo "  $(cat $d/comm): $(cat $d/wchan 2> /dev/null)"; done
    command -v gdb > /dev/null && timeout 20 gdb -p "$aug" -batch -ex "thread apply all bt 14" \
      2>&1 | grep -E "^Thread|^#" | cut -c1-170 | head -120
  fi
  wait $pid
  local rc=$?
  grep -v "^device\|tp trace" /tmp/run.log | cut -c1-200
  grep "tp trace" /tmp/run.log | tail -40 | cut -c1-200
  echo "rc=$rc $((SECONDS - T0)) s"
}
A="overlap tp --gpus 2 --ops reduce-scatter --samples 3"
L="256,8192,8192 512,7168,7168 1024,5120,13824 2048,4096,14336 4096,5120,5120 4096,5120,13824"
# Compile every module first (NVRTC, no cache on a fresh machine), one layer.
run 100 timeout 150 .carry/augur $A --patterns bulk,fused-reduce:0,pc-reduce:2:16,push-reduce:2 1024,4096,4096
# (1) push-reduce alone over six layers (the sweeps stopped at the 4th).
run 45 timeout 75 .carry/augur $A --patterns push-reduce:2 $L
# (2) Control: pc-reduce with copy-engine pushes (the same pieces, staging and words).
run 45 timeout 60 .carry/augur $A --patterns pc-reduce:2:16 $L
# (3) push-reduce, the compute stream waiting through the communication stream.
run 45 timeout 75 env AUGUR_TP_PR_WAIT=comm .carry/augur $A --patterns push-reduce:2 $L
