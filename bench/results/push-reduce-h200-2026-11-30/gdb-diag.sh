#!/usr/bin/env bash
# Issue 24, NOT RUN YET: where push-reduce's host threads block (thirty-third session: the hang
# is inside a driver call, both GPUs' threads, no harness message; see README). Each run goes
# under gdb (the device has none: carried, with its libraries) from its start, so no ptrace
# rule stops the attach; PROBE s in, a still-running run gets SIGINT and every thread's
# backtrace (bt-NAME.txt under $OUT; the threads with augur frames printed). Cases:
# AUGUR_TP_WARM_PLANS (every GEMM run once at set-up), which hung at once (push-reduce:2 after
# :1, first layer), and push-reduce:2 alone over six layers (hung at the fifth); each as it is
# (backtraces), with AUGUR_TP_PR_FENCE (the threads meet once all have enqueued their ready
# words and again once all have enqueued their pushes: if it runs, a host call waiting for its
# GPU while that GPU waits on a peer's not-yet-enqueued work), and with AUGUR_TP_PR_SERIAL
# (one thread enqueues a call at a time: if it runs, two threads' driver calls blocking each
# other). Never both: a thread holding the lock would wait at the fence (60 s, then an
# error). Since the thirty-fourth session the fence is push-reduce's default on more than one
# GPU: the cases without it set AUGUR_TP_PR_FENCE=0. A known mechanism fits the first (found in the thirty-fourth session, which had no
# machine): under lazy loading (CUDA's default) a kernel's first launch loads its module under
# the context's lock and waits there for the GPU's queued work to drain, and every other
# thread's call on that context waits behind the lock (meta-pytorch/torchcomms pull request
# 2334, whose reproducer deadlocks a persistent kernel that way). If a GPU waits on a peer's
# word that the peer's host has not yet enqueued, and that host needs the lock (a push or a
# word into this GPU's memory), neither moves. Predictions: FENCE runs, SERIAL hangs (its lock
# holder waits for its GPU, which waits for the other thread's pushes, which wait for the
# lock), and the backtraces show a library or module load (cuLibraryLoadData, a cuBLASLt or
# cudart frame under cuLaunchKernel) in one thread and a peer call in the other. One call on
# nvidia-h200-x2 (~330 s at most), carry
# [".carry/augur.xz", ".carry/gdb.tar.xz"] (an unstripped build of this commit, and gdb):
#   cargo build --release --locked -p augur-cli && xz -T0 -6 -c target/release/augur > .carry/augur.xz
#   bash bench/pack-gdb.sh
#   bash bench/results/push-reduce-h200-2026-11-30/gdb-diag.sh
source bench/tp-env.sh
export AUGUR_TP_UNVERIFIED=1 AUGUR_TP_TRACE=1
tar xf .carry/gdb.tar -C /tmp
GDB=(env LD_LIBRARY_PATH=/tmp/gdbb/lib /tmp/gdbb/gdb -nx -batch -ex "set pagination off"
  -ex "set debuginfod enabled off" -ex "set disable-randomization off" -ex run
  -ex "thread apply all bt 40" -ex kill --args)
# gdbrun NAME PROBE "VAR=value ..." CMD...: CMD under gdb with those variables; PROBE s in,
# SIGINT if it is still running, then every thread's backtrace.
gdbrun() {
  local name=$1 probe=$2 vars=$3 t=0 inf
  shift 3
  echo "== $name: $vars $*"
  # shellcheck disable=SC2086
  env $vars "${GDB[@]}" "$@" > "$OUT/bt-$name.txt" 2>&1 &
  local g=$!
  while kill -0 $g 2> /dev/null && [ $t -lt "$probe" ]; do sleep 1; t=$((t + 1)); done
  inf=$(pgrep -P $g) || true
  if [ -n "$inf" ]; then
    echo "-- still running after $probe s: SIGINT, backtraces"
    kill -INT "$inf"
  fi
  timeout 90 tail --pid=$g -f /dev/null
  kill -9 $g 2> /dev/null
  # gdb could not run it (ptrace refused, a library missing): the case without gdb, so that
  # whether it hangs is still known.
  if ! grep -q "^tp trace" "$OUT/bt-$name.txt"; then
    echo "-- gdb did not run it: $(grep -v "^warning" "$OUT/bt-$name.txt" | head -3 | tr '\n' ' ')"
    # shellcheck disable=SC2086
    env $vars timeout "$probe" "$@" > "$OUT/bt-$name.txt" 2>&1
    echo "-- without gdb: rc=$?"
  fi
  grep -v "^\[\|^tp trace: rank\|^warning\|^Using\|^Downloading" "$OUT/bt-$name.txt" \
    | grep -E "^NVIDIA|^augur|^tp trace|error|Error" | cut -c1-200 | tail -12
  # The threads with a frame of ours: their first 14 frames.
  awk '/^Thread /{if (keep) printf "%s", buf; buf=$0 "\n"; keep=0; n=0; next}
    /^#/{n++; if (n <= 14) buf=buf substr($0, 1, 190) "\n"; if ($0 ~ /augur|cudarc|nccl/) keep=1}
    END{if (keep) printf "%s", buf}' "$OUT/bt-$name.txt" | head -150
  echo "rc $((SECONDS - T0)) s"
}
A=(.carry/augur overlap tp --gpus 2 --ops reduce-scatter --samples 3)
L6="256,8192,8192 512,7168,7168 1024,5120,13824 2048,4096,14336 4096,5120,5120 4096,5120,13824"
# Compile every module first (NVRTC, no cache on a fresh machine), one layer, not under gdb.
timeout 150 "${A[@]}" --patterns bulk,fused-reduce:0,pc-reduce:2:16,push-reduce:2 1024,4096,4096 \
  > /dev/null 2> "$OUT/compile.err"
echo "compile rc=$? $((SECONDS - T0)) s"
P=bulk,push-reduce:1,push-reduce:2,push-reduce:4
W="AUGUR_TP_WARM_PLANS=1"
gdbrun warm 30 "$W AUGUR_TP_PR_FENCE=0" "${A[@]}" --patterns $P 1000,5120,5120
gdbrun warm-fence 30 "$W AUGUR_TP_PR_FENCE=1" "${A[@]}" --patterns $P 1000,5120,5120
# shellcheck disable=SC2086
gdbrun six-fence 45 "AUGUR_TP_PR_FENCE=1" "${A[@]}" --patterns push-reduce:2 $L6
# shellcheck disable=SC2086
gdbrun six 45 "AUGUR_TP_PR_FENCE=0" "${A[@]}" --patterns push-reduce:2 $L6
gdbrun warm-serial 30 "$W AUGUR_TP_PR_FENCE=0 AUGUR_TP_PR_SERIAL=1" "${A[@]}" --patterns $P 1000,5120,5120
# shellcheck disable=SC2086
gdbrun six-serial 45 "AUGUR_TP_PR_FENCE=0 AUGUR_TP_PR_SERIAL=1" "${A[@]}" --patterns push-reduce:2 $L6
(cd "$OUT" && tar czf /tmp/gdb-diag.tgz . && rm -rf ./* && mv /tmp/gdb-diag.tgz .)
