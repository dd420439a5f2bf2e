#!/usr/bin/env python3
# The run-to-run noise ceiling of the SpMV labels: the committed H200 runs (A) against this repeat (B), per (matrix, k):
# the oracle kernel of one run scored on the other, and the per-kernel cost change. Usage: python3 bench/results/spmv-repeat-h200-2026-11-28/noise.py
import csv,glob,gzip,collections,math,sys
R='bench/results/spmv-repeat-h200-2026-11-28'
def load(files):
    D=collections.defaultdict(dict); nnz={}
    for f in files:
        for r in csv.DictReader(gzip.open(f,'rt') if f.endswith('.gz') else open(f)):
            if r['status']!='ok': continue
            c=lambda k: float(r['setup_s'])+float(r['latency_s'])+(k-1)*float(r['per_iter_s'])
            D[r['matrix']][r['kernel']]={k:c(k) for k in (1,10,100)}
            nnz[r['matrix']]=int(r['nnz'])
    return D,nnz
A,nnz=load(['datasets/runs/spmv-cuda-f32-h200.csv'])
B,_=load(sorted(glob.glob(R+'/runs-*.csv.gz')))
g=lambda v: math.exp(sum(map(math.log,v))/len(v))
def bucket(n): return 'nnz<1e5' if n<1e5 else ('1e5<=nnz<1e6' if n<1e6 else 'nnz>=1e6')
cross=collections.defaultdict(list); cross2=collections.defaultdict(list); dev=collections.defaultdict(list); ties=collections.defaultdict(list)
for m in B:
    if m not in A: continue
    ks=set(A[m])&set(B[m])
    for k in (1,10,100):
        a={q:A[m][q][k] for q in ks}; b={q:B[m][q][k] for q in ks}
        pa=min(a,key=a.get); pb=min(b,key=b.get)
        for key in (bucket(nnz[m]),'all',f'k={k}'):
            cross[key].append(min(b.values())/b[pa]); cross2[key].append(min(a.values())/a[pb])
            dev[key]+= [abs(math.log(b[q]/a[q])) for q in ks]
            ties[key].append(sum(1 for q in ks if a[q]<=min(a.values())*1.03))
print(f"{'bucket':14s} {'samples':>7s} {'A-oracle on B':>13s} {'worst':>6s} {'B-oracle on A':>13s} {'worst':>6s} {'median |dt|':>11s} {'p90 |dt|':>8s} {'kernels within 3% of best (A)':>10s}")
for key in ['nnz<1e5','1e5<=nnz<1e6','nnz>=1e6','k=1','k=10','k=100','all']:
    v=cross[key]; w=cross2[key]; d=sorted(dev[key])
    print(f"{key:14s} {len(v):7d} {g(v):13.3f} {min(v):6.2f} {g(w):13.3f} {min(w):6.2f} {100*(math.exp(d[len(d)//2])-1):10.1f}% {100*(math.exp(d[int(len(d)*.9)])-1):7.1f}% {sum(ties[key])/len(ties[key]):10.2f}")
