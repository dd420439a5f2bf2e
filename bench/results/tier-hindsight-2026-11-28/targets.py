#!/usr/bin/env python3
"""Issue 18's targets over seeds.sh's ten splits: per bucket the mean selected / oracle (and the
range over seeds), the least worst sample, vs the best single kernel, vs cuSPARSE ALG1 and the
oracle's own ALG1 ratio. Usage: python3 targets.py DIR [DIR...]"""
import json, sys
keys = ['all', '1e5 <= nnz < 1e6', 'nnz >= 1e6']
for d in sys.argv[1:]:
    acc = {k: [] for k in keys}
    for s in range(10):
        r = json.load(open(f'{d}/e{s}.json'))
        bs = {b['bucket']: b for b in r['buckets']}
        bs['all'] = r['overall']
        for k in keys:
            b = bs[k]
            acc[k].append((b['oracle_ratio'], b['worst'], b['vs_single'], b['vs_alg1'], b['oracle_vs_alg1']))
    print(d)
    for k in keys:
        v, n = acc[k], len(acc[k])
        m = lambda i: sum(x[i] for x in v) / n
        print(f'  {k:<18} sel/oracle {m(0):.3f} (seeds {min(x[0] for x in v):.3f}-{max(x[0] for x in v):.3f})'
              f'  least worst {min(x[1] for x in v):.3f}  vs single {m(2):.3f}x  vs ALG1 {m(3):.3f}x (oracle {m(4):.3f}x)')
