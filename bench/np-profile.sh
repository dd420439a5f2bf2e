#!/usr/bin/env bash
# One process driving 4 GPUs against 4 processes, f64 and f32, two rounds, with `augur run
# --profile` (per shard, event-timed: the products alone, the exchange alone, both): where the
# f64 gap across processes comes from (issue 23). Through the device tool with carry [".carry"]
# (.carry/augur.xz) on 4 GPUs:  bash bench/np-profile.sh   (writes $OUT/{one,np}-PREC-ROUND.json)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
export NCCL_NVLS_ENABLE=0
M="stencil3d:nx=160,points=27"
for prec in f64 f32; do for round in 1 2; do
  timeout 120 .carry/augur run "$M" --precision $prec --gpus 4 --gather-mode halo --iterations 300 --profile --json > $OUT/one-$prec-$round.json 2>/dev/null
  port=$((29900 + RANDOM % 50)); pids=()
  for r in 0 1 2 3; do
    env RANK=$r WORLD_SIZE=4 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 .carry/augur run "$M" --precision $prec --distributed --gather-mode halo --iterations 300 --profile --timeout 90 --json > /tmp/np-$prec-$round-r$r.json 2>&1 &
    pids+=($!)
  done
  wait ${pids[@]}
  cp /tmp/np-$prec-$round-r0.json $OUT/np-$prec-$round.json
  python3 - $OUT/one-$prec-$round.json $OUT/np-$prec-$round.json <<'PY'
import json,sys
for f in sys.argv[1:]:
    t=open(f).read(); j=json.JSONDecoder().raw_decode(t[t.index('{'):])[0]
    print(f.split('/')[-1], 'per_it %.1f us'%(j['per_iteration_s']*1e6), ' '.join('r%d k%.1f g%.1f s%.1f'%(p['rank'],p['kernel_s']*1e6,p['gather_s']*1e6,p['step_s']*1e6) for p in j.get('profile') or []))
PY
done; done
