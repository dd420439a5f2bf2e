#!/usr/bin/env bash
# The producer/consumer overlap on one GPU (issue 24): `augur overlap arrive`, A's rows arriving
# by cuMemcpyAsync in blocks while the row-gated TMA GEMM runs beside, against copy-then-GEMM.
# After `bash bench/prepare-carry.sh`, through the device tool with carry [".carry"]; CSVs to
# $OUT. DTYPES (default "bf16") and BLOCKS (default "1,4,16") narrow or widen the run.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
A=.carry/augur
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
$A overlap arrive --blocks 1,3,8 1000,136,40 129,264,1032 300,520,2056 > "$OUT/arrive-edges.csv" 2> "$OUT/arrive.err"
echo "edges rc=$?"
for t in ${DTYPES:-bf16}; do
  $A overlap arrive --dtype $t --blocks "${BLOCKS:-1,4,16}" > "$OUT/arrive-$t.csv" 2>> "$OUT/arrive.err"
  echo "grid $t rc=$?"
done
tail -5 "$OUT/arrive.err"
