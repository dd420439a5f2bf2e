#!/usr/bin/env bash
# The long-row guard on a GPU (issue 18): `augur run --check --explain` with the shipped model of
# the device, gathering forced, on held-out matrices where the guard overrules the gathered
# tree at k = 100 (bench/results/adaptive-h200-2026-11-28/eval-h200.txt) and on one where it
# does not; each product checked against the f64 reference. Through the device tool with carry
# [".carry"] (the binary as .carry/augur.xz, the matrices in .carry/matrices):
#   bash bench/guard-gpu.sh
set -uo pipefail
A=.carry/augur
OUT=${OUT:-/tmp/out}
source bench/unpack-carry.sh
export AUGUR_SHARED_MATRICES=.carry/matrices
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for spec in "hubs:n=100000,hubs=16,hub_len=100000,short=10,seed=1" \
  "hubs:n=1000000,hubs=16,hub_len=1000000,short=10,seed=1" \
  "expand:k=8,pattern=dense,file=.carry/matrices/suitesparse/hangGlider_2.mtx.gz" \
  "stencil2d:nx=1000"; do
  for k in 1 100; do
    echo "== $spec k=$k"
    timeout 120 $A run "$spec" --backend cuda --iterations $k --gather always --check --explain
    echo "rc=$?"
  done
done 2>&1 | tee "$OUT/guard-runs.txt"
