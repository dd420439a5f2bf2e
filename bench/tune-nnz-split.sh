#!/usr/bin/env bash
# Tuning nnz_split's nonzeros per warp (NS_STEPS in kernels/cuda/spmv_csr.cu and NS_WARP_ITEMS in
# kernels/src/cuda/spmv.rs): one binary per value in .carry/augurN (built from a copy of the tree
# with both constants changed), the matrices staged by bench/prepare-carry.sh; run on the device
# with carry [".carry"]. Each variant is checked on the skewed edge cases and timed with cuSPARSE
# ALG1 in the same process, on the matrices of bench/gpu.sh. Results: $OUT/tune-ns-N.csv.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
M=.carry/matrices
mats=("rmat:scale=16,ef=16" "powerlaw:rows=2e5,alpha=2.1,min=2" "uniform:rows=1e5,row_len=16"
      "stencil3d:nx=50,points=7" "banded:n=1e5,bw=8" "hubs:n=2e5,hubs=4,short=6"
      "blockdiag:n=1e5,block=16" "arrowhead:n=1e5" "tall:rows=1e6,cols=1000,row_len=4"
      "wide:rows=1000,cols=1e6,row_len=2000" $M/suitesparse/bcsstk33.mtx.gz
      $M/suitesparse/luxembourg_osm.mtx.gz "powerlaw:rows=1e7,alpha=2.1,min=4"
      "rmat:scale=22,ef=16" "hubs:n=4e6,hubs=4,short=8" "uniform:rows=1e7,row_len=10"
      "stencil2d:nx=4000")
for v in ${VARIANTS:-2 4 8 16}; do
  .carry/augur$v check --backend cuda "hubs:n=2e5,hubs=4,short=6" "arrowhead:n=1e5" \
      "rmat:scale=16,ef=16" 2>&1 | grep -E "checks|FAIL" | head -3
  .carry/augur$v bench spmv --backend cuda --kernel nnz_split --kernel cusparse_alg1 \
      --precision f32 --iterations 20 --warmup 5 "${mats[@]}" > $OUT/tune-ns-$v.csv 2>/dev/null
done
python3 - $OUT ${VARIANTS:-2 4 8 16} <<'PY'
import csv, sys, math
out, vs = sys.argv[1], sys.argv[2:]
res = {}
for v in vs:
    for r in csv.DictReader(open(f"{out}/tune-ns-{v}.csv")):
        if r['kernel'] == 'nnz_split':
            res.setdefault(r['matrix'][:40], {})[v] = (float(r['median_s']) * 1e6, float(r['speedup_vs_alg1']))
print('matrix'.ljust(40), *[f'NS={v:>2} us (xALG1)'.rjust(20) for v in vs])
for m, d in res.items():
    print(m.ljust(40), *[f'{d[v][0]:9.1f} ({d[v][1]:.2f})'.rjust(20) for v in vs])
PY
