#!/usr/bin/env bash
# augur's tensor-core GEMM against cuBLASLt on one GPU (issue 24): `augur overlap gemm` over the
# tensor-parallel layer grid in bf16 and f16, and odd shapes for the edges. After `bash
# bench/prepare-carry.sh`, through the device tool with carry [".carry"]; CSVs to $OUT.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
A=.carry/augur
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
$A overlap gemm --dtype bf16 7,8,8 1000,136,40 129,264,1032 > "$OUT/gemm-edges-bf16.csv" 2> "$OUT/gemm-edges.err"
echo "edges bf16 rc=$?"
$A overlap gemm --dtype f16 7,8,8 1000,136,40 129,264,1032 > "$OUT/gemm-edges-f16.csv" 2>> "$OUT/gemm-edges.err"
echo "edges f16 rc=$?"
for t in ${DTYPES:-bf16 f16}; do
  $A overlap gemm --dtype $t > "$OUT/gemm-grid-$t.csv" 2> "$OUT/gemm-grid-$t.err"
  echo "grid $t rc=$?"; tail -2 "$OUT/gemm-grid-$t.err"
done
