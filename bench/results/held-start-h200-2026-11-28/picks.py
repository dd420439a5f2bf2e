#!/usr/bin/env python3
"""Selected / oracle of a model's picks (`augur overlap plan --gpus G`, from target/release/augur)
on the layers of `augur overlap tp` CSVs (G: each file's GPU count), per M bucket, and bulk over the picks (geomean, least).
Usage: python3 picks.py MODEL.json|default-overlap FILE.csv...  (each file's dtype and GPU count are passed on)"""
import csv, math, subprocess, sys, collections
model, files = sys.argv[1], sys.argv[2:]
g = lambda v: math.exp(sum(map(math.log, v)) / len(v))
for f in files:
    sh = collections.defaultdict(dict); op = None; dtype = 'bf16'; gpus = '2'
    for r in csv.DictReader(open(f)):
        op = 'all-gather' if r['op'].startswith('all-gather') else 'reduce-scatter'
        dtype = r['dtype']; gpus = r['gpus']
        if r['pattern'] in ('gemm', 'comm') or r['passed'] != 'true': continue
        sh[(int(r['m']), int(r['n']), int(r['k']))][r['pattern']] = float(r['us'])
    shapes = sorted(sh)
    out = subprocess.run(['target/release/augur', 'overlap', 'plan', '--gpus', gpus, '--ops', op, '--dtype', dtype, '--model', model]
                         + [f'{m},{n},{k}' for m, n, k in shapes], capture_output=True, text=True, check=True).stdout
    import re
    rows = [re.match(r'^\S+ (\d+)x(\d+)x(\d+) on \d+ GPUs: (\S+)', l) for l in out.splitlines()]
    rows = [r for r in rows if r]
    b = collections.defaultdict(list); vb = collections.defaultdict(list)
    for s, r in zip(shapes, rows):
        assert tuple(map(int, r.groups()[:3])) == s, (r, s)
        t = sh[s]; pick = r.group(4); o = min(t.values())
        m = s[0]; k = '<256' if m < 256 else ('256-2047' if m < 2048 else '>=2048')
        for key in (k, 'all'):
            b[key].append(o / t[pick]); vb[key].append(t['bulk'] / t[pick])
    print(f, ' '.join(f'{k}: {g(v):.3f} (worst {min(v):.2f}, vs bulk {g(vb[k]):.3f}, least {min(vb[k]):.2f})' for k, v in sorted(b.items())))
