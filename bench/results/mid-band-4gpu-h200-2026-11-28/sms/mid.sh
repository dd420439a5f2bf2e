#!/usr/bin/env bash
# mid band (M 512-2048), 4 GPUs, all-gather: pc-push / pc-pull / fused-push with more copy SMs (issue 24; from the repository root through the device tool, carry [".carry/augur.xz"]: bash bench/results/mid-band-4gpu-h200-2026-11-28/sms/mid.sh).
set -uo pipefail
source bench/unpack-carry.sh
O=$OUT/mid; mkdir -p $O; export NCCL_NVLS_ENABLE=0
L=""
for m in 512 1024 2048; do for w in 4608,3584 6144,4096 10240,8192 15360,5120 28672,4096 37888,3584; do L="$L $m,$w"; done; done
P=gemm,comm,bulk,pc-push:1:8,pc-push:1:16,pc-push:1:32,pc-push:2:16,pc-push:2:32,pc-pull:1:16,pc-pull:1:32,fused-push:1:16,fused-push:1:32
timeout 280 .carry/augur overlap tp --gpus 4 --ops all-gather --samples 15 --patterns $P $L > $O/ag-mid-4.csv 2> $O/ag-mid-4.err; echo "rc=$?"; tail -2 $O/ag-mid-4.err
python3 - $O/ag-mid-4.csv <<'PY'
import csv,sys,collections
by=collections.defaultdict(dict); ok=True
for r in csv.DictReader(open(sys.argv[1])):
    by[(int(r['m']),int(r['n']),int(r['k']))][r['pattern']]=float(r['us']); ok&=r['passed']=='true'
print('all passed',ok)
for k in sorted(by):
    d=by[k]; b=d['bulk']
    print(k, ' '.join(f"{p}:{b/u:.2f}" for p,u in sorted(d.items(),key=lambda x:x[1]) if p not in('gemm','comm'))[:200])
PY
