#!/usr/bin/env python3
"""nnz_split's timings and the gathered tier's cost (gather_upload_s) in a runs CSV (before) against
a re-timing of nnz_split with the tier costs (`KERNEL=nnz_split TIMING=" " bash
bench/tier-cost-gpu.sh`, shards merged with `augur collect merge`): old/new time per nnz bucket,
geomeans, the slowest matrices, and the median tier cost per decade of nonzeros.
Usage: python3 bench/nnz_split_compare.py RUNS_BEFORE.csv RETIMED.csv"""
import csv,statistics as st,math,sys
runs,newf=sys.argv[1],sys.argv[2]
old={}
for r in csv.DictReader(open(runs)):
    if r['kernel']=='nnz_split': old[r['matrix']]=r
new={r['matrix']:r for r in csv.DictReader(open(newf))}
print(len(old),len(new), 'missing', len(set(old)-set(new)))
ratios=[];gu={}
for m,n in new.items():
    o=old.get(m)
    if not o: continue
    if n['status']!='ok' or o['status']!='ok': print('status',m,n['status'],o['status']); continue
    ratios.append((float(o['throughput_s'])/float(n['throughput_s']), float(o['latency_s'])/float(n['latency_s']), int(n['nnz']), m))
    d=int(math.log10(max(1,int(n['nnz']))))
    gu.setdefault(d,[]).append((float(o['gather_upload_s']),float(n['gather_upload_s'])))
print('nnz_split old/new time: throughput geomean %.3f, latency %.3f'%(math.exp(st.mean(math.log(r[0]) for r in ratios)),math.exp(st.mean(math.log(r[1]) for r in ratios))))
for lo,hi in [(0,1e4),(1e4,1e5),(1e5,1e6),(1e6,1e12)]:
    b=[r for r in ratios if lo<=r[2]<hi]
    print('nnz >= %g: %d, throughput old/new %.3f (min %.3f max %.3f), latency %.3f'%(lo, len(b), math.exp(st.mean(math.log(r[0]) for r in b)), min(r[0] for r in b), max(r[0] for r in b), math.exp(st.mean(math.log(r[1]) for r in b))))
for d in sorted(gu): print('nnz 1e%d: %d matrices, gather_upload_s median old %.1f new %.1f us'%(d, len(gu[d]), st.median(x[0] for x in gu[d])*1e6, st.median(x[1] for x in gu[d])*1e6))
w=sorted(ratios)[:6]
for r in w: print('slowest: old/new throughput %.3f latency %.3f nnz %d %s'%r)
