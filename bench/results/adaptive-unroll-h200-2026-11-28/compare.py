#!/usr/bin/env python3
"""adaptive timed again against a runs CSV: per group (a row longer than 32 x L or not; nnz
bucket) the geomean of before / after per product and of the per-matrix best of the runs' pool
over adaptive, before and after; the largest changes. Usage: python3 compare.py RUNS.csv NEW.csv..."""
import csv, collections, math, sys
runs = sys.argv[1]; news = sys.argv[2:]
old=collections.defaultdict(dict); info={}
for r in csv.DictReader(open(runs)):
    if r['status']=='ok': old[r['matrix']][r['kernel']]=float(r['per_iter_s']); info[r['matrix']]=r
new={}
for f in news:
    for r in csv.DictReader(open(f)):
        if r['status']=='ok': new[r['matrix']]=float(r['per_iter_s'])
print(len(new), 'timed;', sum(1 for m in new if m in old), 'in the committed runs')
def lanes(rows,nnz):
    mean=nnz//max(rows,1); l=1
    if mean>=16:
        while l<32 and 2*l<=mean//4: l*=2
    return l
grp=collections.defaultdict(list)
for m,t in new.items():
    if m not in old or 'adaptive' not in old[m]: continue
    r=info[m]; n=int(r['nnz']); L=lanes(int(r['rows']),n); mx=float(r['f_row_len_max'])
    can = 'a row > 32 L' if mx > 32*L else 'no row > 32 L'
    b='nnz < 1e5' if n<1e5 else '1e5-1e6' if n<1e6 else 'nnz >= 1e6'
    best_old=min(old[m].values())
    grp[(can,b)].append((old[m]['adaptive']/t, best_old/old[m]['adaptive'], min(best_old,t)/t, m))
print('(before / after: > 1 faster now; of the best: the per-matrix best of the committed pool / adaptive)')
for k in sorted(grp):
    v=grp[k]; g=lambda i: math.exp(sum(math.log(x[i]) for x in v)/len(v))
    print(f'{k[0]:<14} {k[1]:<11} {len(v):4d} matrices  before/after {g(0):.3f} (least {min(x[0] for x in v):.3f}, most {max(x[0] for x in v):.3f})  of the best: before {g(1):.3f}, after {g(2):.3f}')
allv=sorted(x for v in grp.values() for x in v)
print('slowest now against before:'); [print(f'  {x[0]:.3f}  {x[3][:100]}') for x in allv[:6]]
print('fastest now against before:'); [print(f'  {x[0]:.3f}  {x[3][:100]}') for x in allv[-6:]]
