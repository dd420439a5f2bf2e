#!/usr/bin/env bash
# Tuning merge_tiled's items per thread (MT_ITEMS in kernels/cuda/spmv_csr.cu and MT_TILE in
# kernels/src/cuda/spmv.rs): build one binary per value into .carry/augurN (here, from a copy of the
# tree with both constants changed), stage the matrices with bench/prepare-carry.sh, then run this
# on the device with carry [".carry"]. Each variant is checked (augur check) and timed against
# cuSPARSE ALG1 in the same process. Results: bench/results/tune/.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
M=(powerlaw:rows=1e7,alpha=2.1,min=4 rmat:scale=22,ef=16 hubs:n=4e6,hubs=4,short=8 powerlaw:rows=2e5,alpha=2.1,min=2 rmat:scale=16,ef=16 uniform:rows=1e7,row_len=10 stencil3d:nx=160,points=27)
for v in augur3 augur4 augur5; do
  .carry/$v check --backend cuda "${M[@]:3:2}" 2>&1 | grep -E "merge_tiled|FAILED" 
  .carry/$v bench spmv --backend cuda --kernel merge_tiled --kernel cusparse_alg1 --iterations 20 --warmup 5 "${M[@]}" > $OUT/tune-$v.csv
  python3 -c "
import csv,sys
rows=list(csv.DictReader(open('$OUT/tune-$v.csv')))
for r in rows:
    if r['kernel']=='merge_tiled': print('$v', r['matrix'][:30], round(float(r['median_s'])*1e3,3), 'ms', round(float(r['speedup_vs_alg1']),3),'x ALG1')
"
done
