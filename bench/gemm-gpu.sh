#!/usr/bin/env bash
# augur's tensor-core GEMM against cuBLASLt on one GPU (issue 24): `augur overlap gemm` over the
# tensor-parallel layer grid in bf16 and f16, and odd shapes for the edges. After `bash
# bench/prepare-carry.sh`, through the device tool with carry [".carry"]; CSVs to $OUT.
# DTYPES (default "bf16 f16") and KERNELS (comma-separated names, default augur's defaults; e.g.
# the TMA kernel's tiles and splits: augur_tma_128x256_k4) narrow the run; EDGES=0 skips the odd
# shapes.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
A=.carry/augur
OUT=${OUT:-/tmp/out}
K=()
[ -n "${KERNELS:-}" ] && K=(--kernels "$KERNELS")
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
if [ "${EDGES:-1}" != 0 ]; then
  for t in ${DTYPES:-bf16 f16}; do
    $A overlap gemm --dtype $t "${K[@]}" 7,8,8 1000,136,40 129,264,1032 300,520,2056 > "$OUT/gemm-edges-$t.csv" 2>> "$OUT/gemm-edges.err"
    echo "edges $t rc=$?"
  done
fi
for t in ${DTYPES:-bf16 f16}; do
  $A overlap gemm --dtype $t "${K[@]}" > "$OUT/gemm-grid-$t.csv" 2> "$OUT/gemm-grid-$t.err"
  echo "grid $t rc=$?"; tail -2 "$OUT/gemm-grid-$t.err"
done
