#!/usr/bin/env bash
# A/B of the device seam (issue 21) on one GPU, in one call: the build before the seam
# (.carry/augur-old, 75577e3) and the current one (.carry/augur) alternated (ABBA, ROUNDS rounds,
# default 2), each collecting the
# same six shared matrices (every kernel, f32, throughput labels) and running bench dispatch.
# After bench/prepare-carry.sh plus the old binary copied to .carry/augur-old; through the device
# tool with carry [".carry"]. Writes $OUT/ab-{old,new}-{1,2}.csv and $OUT/dispatch-{old,new}.csv.
set -uo pipefail
cd "$(dirname "$0")/.."
M=.carry/matrices/suitesparse
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mats=("$M/bcsstk33.mtx.gz" "$M/1138_bus.mtx.gz" "$M/power.mtx.gz" "$M/494_bus.mtx.gz" "$M/Erdos971.mtx.gz" "$M/USAir97.mtx.gz")
ROUNDS=${ROUNDS:-2}
for round in $(seq 1 "$ROUNDS"); do
  # ABBA order, so a drift of the machine over the call does not favour one build.
  order="old new"; [ $((round % 2)) = 0 ] && order="new old"
  for b in $order; do
    bin=.carry/augur; [ $b = old ] && bin=.carry/augur-old
    $bin collect --backend cuda --precision f32 --out "$OUT/ab-$b-$round.csv" "${mats[@]}" 2>&1 | tail -1
  done
done
for b in old new; do
  bin=.carry/augur; [ $b = old ] && bin=.carry/augur-old
  $bin bench dispatch --backend cuda "$M/bcsstk33.mtx.gz" "stencil2d:nx=300" > "$OUT/dispatch-$b.csv" 2>/dev/null
done
ROUNDS=$ROUNDS python3 - "$OUT" <<'PY'
import csv, statistics as st, sys, os
d = sys.argv[1]
def load(b):
    out = {}
    for r in range(1, 1 + int(os.environ.get("ROUNDS", "2"))):
        for x in csv.DictReader(open(os.path.join(d, f"ab-{b}-{r}.csv"))):
            if x["per_iter_s"]:
                out.setdefault((x["matrix"], x["kernel"]), []).append(float(x["per_iter_s"]))
    return {k: min(v) for k, v in out.items()}
o, n = load("old"), load("new")
rat = [n[k] / o[k] for k in o if k in n]
print(f"collect: {len(rat)} (matrix, kernel) pairs, new/old per-call median {st.median(rat):.3f}, "
      f"quartiles {sorted(rat)[len(rat)//4]:.3f}-{sorted(rat)[3*len(rat)//4]:.3f}")
for b in ("old", "new"):
    for x in csv.DictReader(open(os.path.join(d, f"dispatch-{b}.csv"))):
        print(b, x["matrix"][:30], "bare", round(float(x["bare_us"]), 2), "dispatched", round(float(x["dispatched_us"]), 2), "us")
PY
