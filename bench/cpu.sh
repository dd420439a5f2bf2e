#!/usr/bin/env bash
# CPU benchmarks, one command: `bash bench/cpu.sh`. Writes raw CSVs to bench/results/:
#   reader-<tag>.csv      Matrix Market read speed (median of 5 loads) on the largest shared
#                         matrices and on a generated 1e7-entry file, plain and gzip
#   generators-<tag>.csv  generation time and peak memory of matrices with ~1e8+ nonzeros
#   spmv-cpu-<tag>.csv    every CPU kernel, f32, median of 20 after warm-up, vs measured copy
#                         bandwidth (--floor)
# <tag> is the host name and date. Needs ~3 GiB of memory and ~1 GiB of temporary disk.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p augur-cli
augur="${CARGO_TARGET_DIR:-target}/release/augur"
tag="$(hostname)-$(date +%Y-%m-%d)"
res=bench/results
mkdir -p "$res"
shared=${AUGUR_SHARED_MATRICES:-../shared/matrices}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== reader"
"$augur" matrix write "uniform:rows=1e6,row_len=10" "$tmp/uniform1e7.mtx"
"$augur" matrix write "uniform:rows=1e6,row_len=10" "$tmp/uniform1e7.mtx.gz"
"$augur" matrix info --csv --repeat 5 \
  "$shared/suitesparse/bcsstk33.mtx.gz" "$shared/suitesparse/bcsstk16.mtx.gz" \
  "$tmp/uniform1e7.mtx" "$tmp/uniform1e7.mtx.gz" | tee "$res/reader-$tag.csv"

echo "== generators at 1e8 nonzeros"
echo "spec,nnz,seconds,peak_rss_mib" > "$res/generators-$tag.csv"
for s in "uniform:rows=1e7,row_len=10" "stencil3d:nx=160,points=27" "rmat:scale=23,ef=16" \
         "powerlaw:rows=1e7,alpha=2.1,min=4" "banded:n=1e7,bw=10"; do
  /usr/bin/time -f "%M" -o "$tmp/rss" "$augur" matrix info --csv --precision f32 "$s" > "$tmp/info"
  row=$(tail -1 "$tmp/info")
  nnz=$(echo "$row" | awk -F, '{print $(NF-10)}')
  secs=$(echo "$row" | awk -F, '{print $(NF-3)}')
  echo "\"$s\",$nnz,$secs,$(( $(cat "$tmp/rss") / 1024 ))" | tee -a "$res/generators-$tag.csv"
done

echo "== CPU SpMV"
"$augur" spmv --floor --csv --precision f32 --iterations 20 \
  "stencil3d:nx=150,points=27" "banded:n=4e6,bw=12" "uniform:rows=2e6,row_len=16" \
  "powerlaw:rows=2e6,alpha=2.1,min=4" "rmat:scale=21,ef=16" "hubs:n=2e6,hubs=4,short=8" \
  "$shared/suitesparse/bcsstk33.mtx.gz" "$shared/suitesparse/bcsstk16.mtx.gz" \
  | tee "$res/spmv-cpu-$tag.csv"
