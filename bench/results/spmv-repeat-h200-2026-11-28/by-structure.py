#!/usr/bin/env python3
"""Where the held-out loss is, by structure: cross-run.sh's evaluations (ten family splits, on the
committed runs restricted to the repeat's matrices, `Asub<seed>.json` in ${TMPD:-/tmp/rep}), per nnz
bucket, the structures (a generator, `expand:<pattern>` for a grown real matrix, `real` for a real
one as it is) with the largest shares of the summed log slowdown, and the bucket without each.
Usage: python3 bench/results/spmv-repeat-h200-2026-11-28/by-structure.py [E]   (E: Asub or B)"""
import collections, json, math, os, sys
t = os.environ.get('TMPD', '/tmp/rep'); e = sys.argv[1] if len(sys.argv) > 1 else 'Asub'
by = collections.defaultdict(lambda: collections.defaultdict(list))
for s in range(10):
    for x in json.load(open(f'{t}/{e}{s}.json'))['samples']:
        b = '>=1e6' if x['nnz'] >= 1e6 else ('1e5-1e6' if x['nnz'] >= 1e5 else '<1e5')
        m = x['matrix']
        g = 'real' if ':' not in m else ('expand:' + m.split('pattern=')[1].split(',')[0] if m.startswith('expand') else m.split(':')[0])
        l = math.log(x['oracle_s'] / x['selected_s'])
        by[b][g].append(l); by['all'][g].append(l)
for b in ['<1e5', '1e5-1e6', '>=1e6', 'all']:
    allv = [v for g in by[b] for v in by[b][g]]
    print(f'{b}: {len(allv)} samples, selected / oracle {math.exp(sum(allv) / len(allv)):.3f}')
    for g, v in sorted(by[b].items(), key=lambda kv: sum(kv[1]))[:6]:
        rest = [u for h in by[b] if h != g for u in by[b][h]]
        print(f'   {g:<18} {len(v):5d} samples  {math.exp(sum(v) / len(v)):.3f}  {100 * sum(v) / sum(allv):3.0f}% of the loss  the bucket without it {math.exp(sum(rest) / len(rest)):.3f}')
