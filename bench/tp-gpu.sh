#!/usr/bin/env bash
# A tensor-parallel layer's GEMM + collective between GPUs (issue 24): `augur overlap tp` (all-
# gather + GEMM and GEMM + reduce-scatter, every pattern, checked) on each GPU count in GPUS
# (default "2 4") and type in DTYPES (default bf16), the default grid (Llama-3-8B's QKV and
# gate+up with K 4096, an 8192 x 8192 layer; M 512 to 16384) unless TP_ARGS says otherwise.
# Through the device tool with carry [".carry"] (.carry/augur.xz) on a machine with enough GPUs:
#   GPUS="2 4" DTYPES="bf16 f16" bash bench/tp-gpu.sh   (writes $OUT/tp-<gpus>-<dtype>.csv, .err)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/unpack-carry.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
for g in ${GPUS:-2 4}; do
  for t in ${DTYPES:-bf16}; do
    f="$OUT/tp-$g-$t"
    timeout 280 .carry/augur overlap tp --gpus "$g" --dtype "$t" ${TP_ARGS:-} > "$f.csv" 2> "$f.err"
    echo "$g GPUs $t rc=$?"; tail -3 "$f.err"
  done
done
# The best pattern per shape (and bulk), every file.
python3 - "$OUT"/tp-*.csv <<'PY'
import csv, sys
for f in sys.argv[1:]:
    rows = list(csv.DictReader(open(f)))
    shapes = {}
    for r in rows:
        shapes.setdefault((r["op"], r["m"], r["n"], r["k"]), []).append(r)
    print(f)
    for key, rs in shapes.items():
        t = {r["pattern"]: float(r["us"]) for r in rs}
        pats = [p for p in t if p not in ("gemm", "comm")]
        best = min(pats, key=t.get)
        bad = [r["pattern"] for r in rs if r["passed"] != "true"]
        print(f"  {key[0]:20} {key[1]:>6}x{key[2]}x{key[3]}: bulk {t['bulk']:8.1f} best {best:10} "
              f"{t[best]:8.1f} ({t['bulk']/t[best]:.2f}x) bound {max(t['gemm'], t['comm']):8.1f}"
              + (f" FAILED {bad}" if bad else ""))
PY
