#!/usr/bin/env python3
"""The tier policy against each tier alone and the cheapest tier per sample (hindsight), over the
ten splits' held-out samples of seeds.sh (`per_tier` of `augur eval --json`), per nnz bucket and k.
Usage: python3 tiers.py DIR"""
import collections, json, math, sys
d = sys.argv[1]
res = collections.defaultdict(lambda: collections.defaultdict(list))
for s in range(10):
    for x in json.load(open(f'{d}/e{s}.json'))['samples']:
        k = int(x['iterations'])
        b = '>=1e6' if x['nnz'] >= 1e6 else ('1e5-1e6' if x['nnz'] >= 1e5 else '<1e5')
        o, pt = x['oracle_s'], [c for _, c in x['per_tier']]
        vals = {'policy': x['selected_s'], 'known': pt[0], 'sampled': pt[1], 'gathered': pt[2], 'hindsight': min(pt)}
        for key in [('all', 'all k'), (b, 'all k'), (b, f'k = {k}')]:
            for n, v in vals.items():
                res[key][n].append(math.log(o / v))
print(f"{'bucket':<9} {'k':<8} {'samples':>7} " + ' '.join(f'{n:>9}' for n in ['policy', 'known', 'sampled', 'gathered', 'hindsight']))
order = ['all', '<1e5', '1e5-1e6', '>=1e6']
for key in sorted(res, key=lambda kk: (order.index(kk[0]), kk[1])):
    r = res[key]
    print(f'{key[0]:<9} {key[1]:<8} {len(r["policy"]):>7} ' + ' '.join(f'{math.exp(sum(v)/len(v)):>9.3f}' for v in r.values()))
