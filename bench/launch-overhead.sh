#!/usr/bin/env bash
# Host launch cost, side by side in one call (issue 17): the 20 smallest shared matrices, every
# kernel, f32, timed in the three modes by two builds of augur, alternated twice:
# .carry/augur-old (entry points looked up and named on every launch) and .carry/augur (looked
# up once at prepare). Through the device tool with carry [".carry"] after staging both binaries
# and `bash bench/prepare-carry.sh`'s matrices. Writes $OUT/launch-overhead.csv (every row, with
# build and round) and prints the per-mode medians of the best kernel per matrix.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mapfile -t m < bench/smallest20.txt
out="$OUT/launch-overhead.csv"; : > "$out"
for round in 1 2; do
  for build in old new; do
    bin=.carry/augur; [ $build = old ] && bin=.carry/augur-old
    for mode in throughput graph latency; do
      $bin bench spmv --backend cuda --precision f32 --timing $mode --csv "${m[@]}" 2>> "$OUT/launch-overhead.err" \
        | awk -v b=$build -v r=$round -v t=$mode 'NR==1{ if (!h) print "build,round,mode," $0 } NR>1{print b "," r "," t "," $0}' h=$([ -s "$out" ] && echo 1) >> "$out"
    done
  done
done
python3 - "$out" <<'PY'
import csv, sys, statistics as st
rows = list(csv.DictReader(open(sys.argv[1])))
best = {}
for r in rows:
    if r["passed"] != "true": continue
    key = (r["build"], r["mode"], r["matrix"])
    t = float(r["median_s"])
    best[key] = min(best.get(key, t), t)
print("mode        build  median best-kernel us  below 4 us (of 20)")
for mode in ("throughput", "graph", "latency"):
    for b in ("old", "new"):
        v = [t for (bb, mm, _), t in best.items() if bb == b and mm == mode]
        print(f"{mode:<11} {b:<5}  {st.median(v)*1e6:8.2f}               {sum(t < 4e-6 for t in v)}")
PY
