#!/usr/bin/env bash
# nnz_split before and after the shuffle row search (issue 18, k = 1 at nnz >= 1e6): the old
# kernel (.carry/augur-old, built from the previous commit), the new one with NS_STEPS 8
# (.carry/augur) and 16 (.carry/augur16), each checked against the f64 reference and timed beside
# the row kernels and cuSPARSE ALG1 in the same process, on the short-row expansions the shipped
# H100 model lost at k = 1 and on the skewed matrices nnz_split exists for. Run on the device with
# carry [".carry"] after bench/prepare-carry.sh plus .carry/augur-old (the previous commit's build)
# and .carry/augur16 (NS_STEPS = 16 in kernels/src/cuda/spmv.rs), gzipped to fit the carry; CSVs to $OUT.
set -uo pipefail
for g in .carry/*.gz; do [ -e "$g" ] && gunzip -f "$g" && chmod +x "${g%.gz}"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
M=.carry/matrices/suitesparse
mats=("rmat:scale=16,ef=16" "rmat:scale=22,ef=16" "powerlaw:rows=2e5,alpha=2.1,min=2"
      "powerlaw:rows=1e7,alpha=2.1,min=4" "uniform:rows=1e7,row_len=10" "stencil2d:nx=4000"
      "hubs:n=2e5,hubs=4,short=6" "hubs:n=4e6,hubs=4,short=8" "arrowhead:n=1e5"
      "tall:rows=1e6,cols=1000,row_len=4" "wide:rows=1000,cols=1e6,row_len=2000"
      "blockdiag:n=1e5,block=16" "banded:n=1e5,bw=8")
for f in "nos4 2525" "bfwa62 3333" "mesh1e1 4902" "commanche_dual 2880" "bp_1600 310" "nos4 25253" "west2021 2040"; do
  set -- $f
  mats+=("expand:k=$2,pattern=identity,file=$M/$1.mtx.gz" "expand:k=$2,pattern=identity,order=random,seed=1,file=$M/$1.mtx.gz")
done
for b in augur-old augur augur16; do
  echo "== $b check"
  .carry/$b check --backend cuda "rmat:scale=16,ef=16" "hubs:n=2e5,hubs=4,short=6" "arrowhead:n=1e5" \
      "powerlaw:rows=2e5,alpha=2.1,min=2" "tall:rows=1e5,cols=100,row_len=1" $M/*.mtx.gz > $OUT/check-$b.txt 2>&1
  echo "rc=$?"; grep -E "checks|FAIL" $OUT/check-$b.txt | head -5
  for t in throughput latency; do
    .carry/$b bench spmv --backend cuda --kernel nnz_split --kernel scalar --kernel vector4 \
        --kernel vector8 --kernel merge_path --kernel cusparse_alg1 --precision f32 \
        --timing $t --iterations 20 --warmup 5 --csv "${mats[@]}" > $OUT/bench-$b-$t.csv 2> $OUT/bench-$b-$t.err
    echo "$b $t rc=$?"
  done
done
