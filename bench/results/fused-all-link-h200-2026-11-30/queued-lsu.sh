#!/usr/bin/env bash
# Issue 24, NOT RUN YET (the session's device time was spent): two H200s, one call (~250 s).
# Whether `fused-all`'s tensor-memory reductions into the peer's sum slow its GEMM by occupying
# the SM's tensor-memory unit, which also carries the GEMM's loads: `lsu.diff` adds the peers'
# partials by the warpgroup's threads instead (16-byte red.add.noftz.v4 from the staged box; the
# unit keeps only this GPU's own sum's additions and the loads). Builds: augur (the commit the
# diff is against), lsu (it with lsu.diff applied). Build the second one with
#   git worktree add /tmp/lsu-wt <commit> && (cd /tmp/lsu-wt && git apply \
#     /work/main/bench/results/fused-all-link-h200-2026-11-30/lsu.diff && \
#     CARGO_TARGET_DIR=/work/main/target/lsu cargo build --release --locked -p augur-cli)
#   strip -o /tmp/lsu.s target/lsu/release/augur && xz -T0 -6 -c /tmp/lsu.s > .carry/lsu.xz
# (1) The lsu build's `fused-all` checked (every GPU's sums compared bit for bit: a tensor-memory
# reduction and a thread's red.add must round alike) on odd and layer shapes, both types, one
# and two GPUs; (2) the two builds alternating, two rounds, the 10 layers of later.sh, bulk and
# `fused-all`. Tarred into one file. Through the device tool (kind nvidia-h200-x2), carry
# [".carry/augur.xz", ".carry/lsu.xz"]:
#   bash bench/results/fused-all-link-h200-2026-11-30/queued-lsu.sh
source bench/tp-env.sh
for g in 1 2; do
  ODD=lsu odd lsu-check-$g check 60 --gpus $g --ops all-reduce --patterns bulk,fused-all \
    --samples 3 1000,5120,5120 3000,7168,7168 4096,5120,5120 2048,4096,4096 1000,1024,512
done
L="1024,4096,4096 2048,5120,5120 4096,5120,5120 4096,8192,8192 8192,4096,14336 16384,5120,5120
2048,8192,8192 1536,7168,7168 8192,7168,7168 16384,8192,8192"
ab lsu-ab lsu by_build 80 "augur lsu" --gpus 2 --ops all-reduce --patterns bulk,fused-all \
  --samples 10 $L
echo "all $((SECONDS - T0)) s"
(cd "$OUT" && tar czf /tmp/lsu.tgz . && rm -rf ./* && mv /tmp/lsu.tgz .)
