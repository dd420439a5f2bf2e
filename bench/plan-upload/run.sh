#!/usr/bin/env bash
# A plan's setup with and without gathering, through the library API as users make it
# (`augur run --json`, one process per plan, alternated): what gathering during the upload adds
# to `upload_s` (the gather runs inside it) next to the device pass `collect` records.
# After `bash bench/prepare-carry.sh`, through the device tool with carry [".carry"]:
#   bash bench/plan-upload/run.sh      (writes $OUT/plan-upload.csv)
set -uo pipefail
A=.carry/augur
M=.carry/matrices/suitesparse
OUT=${OUT:-/tmp/out}
REPS=${REPS:-5}
specs=(
  "$M/bcsstk33.mtx.gz"
  "stencil2d:nx=700"
  "expand:k=1137,pattern=identity,file=$M/power.mtx.gz"
  "uniform:rows=1000000,cols=1000000,row_len=16,seed=1"
  "tall:rows=10000000,cols=100,row_len=8,seed=1"
)
echo "matrix,nnz,gather,rep,upload_s,features_s,modules_s,kernel_setup_s,total_s" > "$OUT/plan-upload.csv"
for s in "${specs[@]}"; do
  for ((r = 0; r < REPS; r++)); do
    for g in never always; do
      $A run "$s" --backend cuda --precision f32 --iterations 1 --gather "$g" --json 2> /dev/null |
        python3 -c '
import json, sys
d = json.load(sys.stdin); s = d["setup"]
print(",".join([json.dumps(d["matrix"]), str(d["nnz"]), sys.argv[1], sys.argv[2]] +
    ["%.9f" % s[k] for k in ("upload_s", "features_s", "modules_s", "kernel_setup_s", "total_s")]))' "$g" "$r" >> "$OUT/plan-upload.csv"
    done
  done
done
python3 - "$OUT/plan-upload.csv" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for m in dict.fromkeys(r["matrix"] for r in rows):
    f = lambda g: [float(r["upload_s"]) for r in rows if r["matrix"] == m and r["gather"] == g]
    n, a = f("never"), f("always")
    print(f"{m[:60]:60s} upload never {st.median(n)*1e6:9.1f} us  always {st.median(a)*1e6:9.1f} us  added {(st.median(a)-st.median(n))*1e6:8.1f} us")
PY
