#!/usr/bin/env bash
# per seed: all, >=1e6, large k=1/10/100 for given TRAIN args and EVAL args
R=$1; shift
A=target/release/augur
for s in ${SEEDS:-0 1 2 3 4}; do
  $A train $R --out ${TMPD:-/tmp/hy}/mk$s.json --split-seed $s $TRAIN > /dev/null 2>&1
  $A eval $R --model ${TMPD:-/tmp/hy}/mk$s.json --charge-inference-ns 100 $EVAL --json | python3 -c '
import json,sys
r=json.load(sys.stdin); o=r["overall"]; big=[b for b in r["buckets"] if b["bucket"]=="nnz >= 1e6"][0]
lk={b["bucket"]:b["oracle_ratio"] for b in r["large_by_k"]}
k={b["bucket"]:b["oracle_ratio"] for b in r["by_k"]}
print(sys.argv[1], "%.3f %.3f | k: %.3f %.3f %.3f | large k: %.3f %.3f %.3f | worst %.3f"%(o["oracle_ratio"],big["oracle_ratio"],k["k = 1"],k["k = 10"],k["k = 100"],lk["k = 1"],lk["k = 10"],lk["k = 100"],o["worst"]))' $s
done
