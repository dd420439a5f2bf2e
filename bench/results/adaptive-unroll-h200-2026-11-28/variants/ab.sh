#!/usr/bin/env bash
# adaptive's long-row rule, two variants (augur_a: AD_REL 2 AD_FAR 4; augur_b: AD_REL 2 AD_FAR 2) on
# the training matrices with a row of more than 32 x L entries, alternated per variant
set -uo pipefail
source bench/unpack-carry.sh
rm -rf .carry/matrices && mv .carry/msub .carry/matrices
mapfile -t specs < .carry/adsub.txt
for v in a b; do
  timeout 250 .carry/augur_$v collect --backend cuda --precision f32 --kernel adaptive --out "$OUT/ad-$v.csv" "${specs[@]}" 2> "$OUT/ad-$v.err"
  echo "$v rc=$?"; tail -1 "$OUT/ad-$v.err"
done
