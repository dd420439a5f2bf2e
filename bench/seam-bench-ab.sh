#!/usr/bin/env bash
# A/B of `augur bench spmv` before (.carry/augur-old, 75577e3) and after it moved into the library
# through the device seam (augur::bench), ABBA over two rounds, latency (L2 flushed) and
# throughput timing, f32, on four matrices. After bench/prepare-carry.sh plus the old binary;
# through the device tool with carry [".carry"]. Writes $OUT/bench-{old,new}-{mode}-{round}.csv.
set -uo pipefail
cd "$(dirname "$0")/.."
M=.carry/matrices/suitesparse
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mats=("$M/bcsstk33.mtx.gz" "$M/power.mtx.gz" "stencil2d:nx=700" "rmat:scale=16,ef=8,seed=1")
for round in 1 2; do
  order="old new"; [ $round = 2 ] && order="new old"
  for b in $order; do
    bin=.carry/augur; [ $b = old ] && bin=.carry/augur-old
    for mode in latency throughput; do
      $bin bench spmv --backend cuda --precision f32 --timing $mode --floor "${mats[@]}" \
        > "$OUT/bench-$b-$mode-$round.csv" 2> /dev/null || echo "$b $mode $round failed"
    done
  done
done
python3 - "$OUT" <<'PY'
import csv, statistics as st, sys, os
d = sys.argv[1]
for mode in ("latency", "throughput"):
    def load(b):
        out = {}
        for r in (1, 2):
            for x in csv.DictReader(open(os.path.join(d, f"bench-{b}-{mode}-{r}.csv"))):
                assert x["passed"] == "true", x
                out.setdefault((x["matrix"], x["kernel"]), []).append(float(x["median_s"]))
        return {k: min(v) for k, v in out.items()}
    o, n = load("old"), load("new")
    rat = sorted(n[k] / o[k] for k in o if k in n)
    print(f"{mode}: {len(rat)} pairs, new/old median {st.median(rat):.3f}, quartiles "
          f"{rat[len(rat)//4]:.3f}-{rat[3*len(rat)//4]:.3f}, all checks passed")
PY
