#!/usr/bin/env bash
# augur's main job: the pipeline offline on the CPU backend, no GPU and no network needed.
#
#   datasets -> features -> kernels (timings) -> models -> selector
#
# Today matrices come in, SpMV features are gathered, and the CPU kernels are checked and timed.
# The training and dispatch stages join this script as their issues land.
# Outputs go to $AUGUR_OUT (default out/main-job).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p augur
augur=target/release/augur
out=${AUGUR_OUT:-out/main-job}
mkdir -p "$out"

# One matrix of every generator family, small enough for a laptop, large enough to time.
specs=(
  "stencil2d:nx=700"
  "stencil3d:nx=60,points=27"
  "banded:n=300000,bw=24"
  "uniform:rows=200000,row_len=16"
  "powerlaw:rows=200000,alpha=2.1,min=2"
  "rmat:scale=17,ef=16"
  "blockdiag:n=100000,block=48"
  "hubs:n=300000,hubs=8,short=5"
  "arrowhead:n=200000"
  "tall:rows=1000000,cols=5000,row_len=6"
  "wide:rows=500,cols=1000000,row_len=3000"
)
shared=${AUGUR_SHARED_MATRICES:-../shared/matrices}
files=()
if [ -f "$shared/MANIFEST.tsv" ]; then
  # The shared SuiteSparse matrices with nnz >= 50k (real, integer or pattern).
  while IFS=$'\t' read -r name _ _ _ _ nnz_full _ _ field _; do
    if [ "$field" != complex ] && [ "$nnz_full" -ge 50000 ]; then
      files+=("$shared/suitesparse/$name.mtx.gz")
    fi
  done < <(tail -n +2 "$shared/MANIFEST.tsv")
  specs+=("expand:k=8,file=$shared/suitesparse/bcsstk16.mtx.gz")
else
  echo "note: no shared matrices at $shared; generated matrices only"
fi

echo "== datasets: load and describe"
"$augur" matrix info "${specs[@]}" "${files[@]}"
"$augur" matrix info --csv "${specs[@]}" "${files[@]}" > "$out/matrices.csv"

echo
echo "== features: the versioned SpMV feature schema, gathered on the CPU, with their cost"
"$augur" features "${specs[@]}" "${files[@]}" > "$out/features.csv"
head -c 600 "$out/features.csv"; echo " ..."

echo
echo "== kernels: every CPU kernel, checked against the f64 reference, then timed (median)"
"$augur" spmv --backend cpu --precision f32 --iterations 20 "${specs[@]}" "${files[@]}"
"$augur" spmv --backend cpu --precision f32 --iterations 20 --csv "${specs[@]}" "${files[@]}" \
  > "$out/spmv-cpu.csv"

echo
echo "== models, selector: not built yet (issues 5 and 6)"
echo "wrote $out/matrices.csv, $out/features.csv and $out/spmv-cpu.csv"
