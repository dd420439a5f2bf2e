#!/usr/bin/env bash
# On the GPU machine (PyTorch, CuPy, SciPy there; no network): install the wheel from .carry
# without dependencies into a folder of its own, run the check and benchmark, and the C API's
# CUDA example. After `bash bench/python-gpu/prepare.sh`, through the device tool with carry
# [".carry"]:  bash bench/python-gpu/run.sh   (writes $OUT/*.csv, *.txt)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
py=/opt/torch/.venv/bin/python
[ -x "$py" ] || py=python3
site=$(mktemp -d)
$py -m pip install --quiet --no-deps --no-index --target "$site" .carry/augur-*.whl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
PYTHONPATH="$site" $py bench/python-gpu/check_and_bench.py .carry/matrices/suitesparse "$OUT" \
  2>&1 | tee "$OUT/python-gpu.txt"
echo "python rc=${PIPESTATUS[0]}"
# The C API on device pointers and a stream (nvcc links the CUDA runtime; libaugur.so from .carry).
nvcc -O2 -I capi/include capi/examples/spmv_cuda.c -L .carry -laugur -o /tmp/spmv_cuda \
  && LD_LIBRARY_PATH=".carry:$LD_LIBRARY_PATH" /tmp/spmv_cuda 2>&1 | tee "$OUT/capi-cuda.txt"
echo "capi rc=${PIPESTATUS[0]}"
