set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export AUGUR_SHARED_MATRICES=.carry/matrices
A=.carry/augur
$A check --backend cuda | tail -22
$A bench spmv --backend cuda --kernel merge_path --kernel merge_tiled --kernel nnz_split --kernel binned --kernel cusparse_alg1 --precision f32 --iterations 20 --warmup 5 \
  "hubs:n=4e6,hubs=4,short=8" "powerlaw:rows=1e7,alpha=2.1,min=4" "rmat:scale=22,ef=16" "hubs:n=2e5,hubs=4,short=6" "rmat:scale=16,ef=16" "arrowhead:n=1e5" "uniform:rows=1e7,row_len=10" > $OUT/fixup.csv 2>/dev/null
python3 - $OUT/fixup.csv <<'PY'
import csv,sys
by={}
for r in csv.DictReader(open(sys.argv[1])): by.setdefault(r['matrix'][:36],{})[r['kernel']]=float(r['median_s'])*1e6
for m,d in by.items():
    best=min(d.values()); print(m.ljust(36), '  '.join(f"{k}={v:.1f}us({v/best:.2f}x)" for k,v in d.items()))
PY
