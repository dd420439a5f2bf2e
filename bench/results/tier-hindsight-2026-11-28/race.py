#!/usr/bin/env python3
"""What-if: at k >= 10 the plan races the policy's pick against a second kernel (the known tree's
pick, or a named one) on its first two products and keeps the faster, charged both setups, the
first pick's latency, the second's loop figure, the winner for the other k - 2, and OVER seconds
of timing; the race is assumed to pick right (optimistic). Usage: python3 race.py DIR RUNS [OVER]
[known|KERNEL]"""
import collections, csv, json, math, sys
d, runs_csv = sys.argv[1], sys.argv[2]
over = float(sys.argv[3]) if len(sys.argv) > 3 else 2e-6
mode = sys.argv[4] if len(sys.argv) > 4 else 'known'
runs = collections.defaultdict(dict)
for r in csv.DictReader(open(runs_csv)):
    if r['status'] == 'ok':
        runs[r['matrix']][r['kernel']] = (float(r['setup_s']), float(r['latency_s']), float(r['per_iter_s']))
res = collections.defaultdict(lambda: collections.defaultdict(list))
for s in range(10):
    for x in json.load(open(f'{d}/e{s}.json'))['samples']:
        k = int(x['iterations'])
        b = '>=1e6' if x['nnz'] >= 1e6 else ('1e5-1e6' if x['nnz'] >= 1e5 else '<1e5')
        o, pol, a_name = x['oracle_s'], x['selected_s'], x['selected_kernel']
        b_name = x['per_tier'][0][0] if mode == 'known' else mode
        R = runs[x['matrix']]
        race = pol
        if k >= 10 and a_name != b_name and a_name in R and b_name in R:
            a, bb = R[a_name], R[b_name]
            race = x['features_s'] + 100e-9 + a[0] + bb[0] + a[1] + bb[2] + (k - 2) * min(a[2], bb[2]) + over
        for key in [('all', 'all k'), (b, f'k = {k}')]:
            res[key]['policy'].append(math.log(o / pol)); res[key]['race'].append(math.log(o / race))
print(f'second candidate: {mode}, timing overhead {over * 1e6:.1f} us')
for key in sorted(res):
    r = res[key]
    print(f'{key[0]:<9} {key[1]:<8} {len(r["policy"]):>5}  policy {math.exp(sum(r["policy"]) / len(r["policy"])):.3f}  race {math.exp(sum(r["race"]) / len(r["race"])):.3f}')
