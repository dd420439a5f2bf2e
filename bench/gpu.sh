#!/usr/bin/env bash
# One GPU session (after `bash bench/prepare-carry.sh` here, through the device tool with carry
# [".carry"]): devices, kernel build, correctness of every GPU kernel in f32 and f64 on all shared
# matrices and edge cases, then timing with --floor on large generated matrices. CSVs go to $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
# cuSPARSE: the CUDA toolkit's, else the one a Python package ships.
cs=$(ls /usr/local/cuda/lib64/libcusparse.so.* 2>/dev/null | head -1)
[ -n "$cs" ] || cs=$(find /usr /opt -name 'libcusparse.so.*' 2>/dev/null | head -1)
[ -n "$cs" ] && export LD_LIBRARY_PATH="$(dirname "$cs")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "libcusparse: ${cs:-not found}"
A=.carry/augur
M=.carry/matrices
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $OUT/gpu.txt
$A devices | tee -a $OUT/gpu.txt
$A kernels build 2>&1 | tee -a $OUT/gpu.txt
files=$(awk -F'\t' 'NR>1 && $9!="complex" {print "'$M'/suitesparse/"$1".mtx.gz"}' $M/MANIFEST.tsv)
edge=("uniform:rows=1,cols=1,row_len=1" "uniform:rows=1000,row_len=0" "hubs:n=1000,hubs=1,short=0"
      "hubs:n=1000000,hubs=1,hub_len=1000000,short=0" "tall:rows=100000,cols=7,row_len=3"
      "wide:rows=3,cols=100000,row_len=40000" "arrowhead:n=100000" "rmat:scale=16,ef=8")
for p in f32 f64; do
  $A spmv --backend cuda --precision $p --iterations 10 --csv $files "${edge[@]}" > $OUT/check-$p.csv 2> $OUT/check-$p.err
  echo "precision $p: rc=$? rows=$(wc -l < $OUT/check-$p.csv) failed=$(grep -c ',false,' $OUT/check-$p.csv)"
  tail -3 $OUT/check-$p.err
done
big=("stencil3d:nx=160,points=27" "banded:n=1e7,bw=10" "uniform:rows=1e7,row_len=10"
     "powerlaw:rows=1e7,alpha=2.1,min=4" "rmat:scale=22,ef=16" "hubs:n=4e6,hubs=4,short=8"
     "stencil2d:nx=4000" "blockdiag:n=2e6,block=48")
$A spmv --backend cuda --floor --precision f32 --iterations 20 --warmup 5 --csv "${big[@]}" > $OUT/big-f32.csv 2> $OUT/big-f32.err
echo "big: rc=$?"; tail -3 $OUT/big-f32.err
python3 - "$OUT/big-f32.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(f"{r['matrix'][:40]:40} {r['kernel']:9} {float(r['median_s'])*1e3:9.3f} ms {float(r['gb_per_s']):8.1f} GB/s {float(r['fraction_of_copy'])*100:5.1f}% {r['passed']}")
PY
