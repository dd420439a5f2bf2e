#!/usr/bin/env bash
# One GPU session (after `bash bench/prepare-carry.sh` here, through the device tool with carry
# [".carry"]): devices, kernel build, `augur check --backend cuda` (every GPU kernel in f32 and f64
# on the edge cases and all shared matrices), then `augur bench spmv` on mid-size and large
# generated matrices and the largest shared ones. CSVs and logs go to $OUT.
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
export AUGUR_SHARED_MATRICES=$M
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $OUT/gpu.txt
$A devices | tee -a $OUT/gpu.txt
$A kernels build 2>&1 | tee -a $OUT/gpu.txt
# SKIP_CHECK=1 skips the correctness run (the bench still checks each kernel once per matrix).
if [ "${SKIP_CHECK:-0}" != 1 ]; then
  $A check --backend cuda | tee $OUT/check-cuda.txt
  echo "check rc=${PIPESTATUS[0]}"
  $A check --backend cuda --json > $OUT/check-cuda.json 2>/dev/null
fi
mid=("rmat:scale=16,ef=16" "powerlaw:rows=2e5,alpha=2.1,min=2" "uniform:rows=1e5,row_len=16"
     "stencil3d:nx=50,points=7" "banded:n=1e5,bw=8" "hubs:n=2e5,hubs=4,short=6"
     "blockdiag:n=1e5,block=16" "arrowhead:n=1e5" "tall:rows=1e6,cols=1000,row_len=4"
     "wide:rows=1000,cols=1e6,row_len=2000"
     $M/suitesparse/bcsstk33.mtx.gz $M/suitesparse/bcsstk16.mtx.gz
     $M/suitesparse/rgg_n_2_15_s0.mtx.gz $M/suitesparse/luxembourg_osm.mtx.gz)
big=("stencil3d:nx=160,points=27" "banded:n=1e7,bw=10" "uniform:rows=1e7,row_len=10"
     "powerlaw:rows=1e7,alpha=2.1,min=4" "rmat:scale=22,ef=16" "hubs:n=4e6,hubs=4,short=8"
     "stencil2d:nx=4000" "blockdiag:n=2e6,block=48")
$A bench spmv --backend cuda --precision f32 --iterations 20 --warmup 5 "${mid[@]}" "${big[@]}" \
  > $OUT/bench-f32.csv 2> $OUT/bench-f32.err
echo "bench rc=$?"; tail -3 $OUT/bench-f32.err
python3 - "$OUT/bench-f32.csv" <<'PY'
import csv, sys, math
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault(r['matrix'], {})[r['kernel']] = r
ratios = []
for m, ks in by.items():
    ours = min((k for k in ks if not k.startswith('cusparse')), key=lambda k: float(ks[k]['median_s']))
    best = min(ks, key=lambda k: float(ks[k]['median_s']))
    r = float(ks[ours]['speedup_vs_alg1'] or 'nan')
    if int(ks[ours]['nnz']) >= 1e5:
        ratios.append(r)
    gf = float(ks[best]['fraction_of_gather_floor'] or 'nan')
    print(f"{m[:44]:44} nnz {int(ks[ours]['nnz']):>11,}  best {best:13} ours {ours:11} {float(ks[ours]['fraction_of_copy'])*100:5.1f}% of copy, {r:5.2f}x ALG1, best at {gf*100:5.1f}% of gather floor, gather {float(ks[ours]['gather_per_spmv']):.2f} SpMV")
print("geomean best-ours / ALG1 over nnz >= 1e5: %.3f (n=%d)" % (math.exp(sum(map(math.log, ratios)) / len(ratios)), len(ratios)))
PY
