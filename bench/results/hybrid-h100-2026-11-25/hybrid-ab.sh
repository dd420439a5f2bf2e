#!/usr/bin/env bash
# The hybrid SpMV kernel checked and timed beside the kernels the selector picks for short rows
# (scalar, vector2-8), the long-row-safe ones (nnz_split, binned) and cuSPARSE ALG1, on the
# short-row and long-row matrices where the known tier loses (issue 18). After
# `bash bench/prepare-carry.sh`, through the device tool with carry [".carry"]:
#   bash bench/hybrid-ab.sh     (writes $OUT/check.txt, $OUT/bench.csv)
set -uo pipefail
A=.carry/augur
M=.carry/matrices/suitesparse
OUT=${OUT:-/tmp/out}
export AUGUR_SHARED_MATRICES=.carry/matrices
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
long=(
  "hubs:n=100000,hubs=4,hub_len=100000,short=6,seed=1"
  "powerlaw:rows=1e5,alpha=1.8,min=2"
  "wide:rows=1000,cols=100000,row_len=5000"
  "uniform:rows=1e4,row_len=33"
  "uniform:rows=1e4,row_len=1025"
)
if [ -z "${SKIP_CHECK:-}" ]; then
  timeout 240 $A check --backend cuda > "$OUT/check.txt" 2> "$OUT/check.err"
  echo "check rc=$?"; grep -E "hybrid|matrices" "$OUT/check.txt"
  timeout 120 $A check --backend cuda "${long[@]}" > "$OUT/check-long.txt" 2>> "$OUT/check.err"
  echo "check long rc=$?"; grep -E "hybrid|matrices" "$OUT/check-long.txt"
fi
specs=(
  "expand:k=114,pattern=identity,file=$M/power.mtx.gz"
  "expand:k=114,pattern=identity,order=rcm,file=$M/power.mtx.gz"
  "expand:k=114,pattern=identity,order=random,seed=1,file=$M/power.mtx.gz"
  "expand:k=204,pattern=identity,file=$M/west2021.mtx.gz"
  "expand:k=1137,pattern=identity,file=$M/power.mtx.gz"
  "stencil2d:nx=700,points=5"
  "stencil3d:nx=60,points=27"
  "tall:rows=1e6,cols=1000,row_len=3"
  "uniform:rows=1e6,row_len=4"
  "uniform:rows=1e6,row_len=16"
  "uniform:rows=1e5,row_len=64"
  "banded:n=1e5,bw=16"
  "blockdiag:n=100000,block=48"
  "hubs:n=100000,hubs=4,hub_len=100000,short=6,seed=1"
  "hubs:n=1000000,hubs=4,hub_len=1000000,short=6,seed=1"
  "hubs:n=1000000,hubs=64,hub_len=1000000,short=3,seed=1"
  "powerlaw:rows=1e6,alpha=2.1,min=2"
  "powerlaw:rows=1e5,alpha=2.5,min=4"
  "wide:rows=1000,cols=1000000,row_len=5000"
)
ks=(--kernel scalar --kernel vector2 --kernel vector4 --kernel vector8 --kernel hybrid --kernel nnz_split --kernel binned --kernel cusparse_alg1)
for t in throughput latency; do
  timeout 200 $A bench spmv --backend cuda "${ks[@]}" --timing $t --csv "${specs[@]}" > "$OUT/bench-$t.csv" 2> "$OUT/bench-$t.err"
  echo "bench $t rc=$?"
done
