#!/usr/bin/env bash
# adaptive with unrolled group loops and the warp-relative long-row rule (AD_REL 2, AD_FAR 2):
# the subset of rows > 32 L first, then the check and every training matrix.
set -uo pipefail
source bench/unpack-carry.sh
mapfile -t specs < .carry/adsub.txt
export AUGUR_SHARED_MATRICES=.carry/matrices
timeout 200 .carry/augur collect --backend cuda --precision f32 --kernel adaptive --out "$OUT/ad-c.csv" "${specs[@]}" 2> "$OUT/ad-c.err"
echo "subset rc=$?"; tail -1 "$OUT/ad-c.err"
SHARDS="1/2 2/2" LIMIT=200 bash bench/adaptive-gpu.sh 2>&1 | grep -v "^  "
cd "$OUT" && tar czf errs.tgz *.err && rm -f *.err; ls "$OUT"
