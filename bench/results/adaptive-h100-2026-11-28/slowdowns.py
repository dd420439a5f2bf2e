import csv,math,collections,sys
rows=list(csv.DictReader(open(sys.argv[1])))
by=collections.defaultdict(dict); nn={}; info={}
for r in rows:
    if r["status"]!="ok": continue
    k=(r["matrix"],r["source"]); nn[k]=int(r["nnz"]); info[k]=r
    by[k][r["kernel"]]=(float(r["setup_s"]),float(r["latency_s"]),float(r["per_iter_s"]))
for mode in ("thr","k1","k10"):
  for lo,hi in ((0,1e5),(1e5,1e6),(1e6,1e12)):
    agg=collections.defaultdict(list); best_ad=0; n=0
    for m,ks in by.items():
        if not(lo<=nn[m]<hi): continue
        if mode=="thr": c={k:p for k,(s,l,p) in ks.items()}
        elif mode=="k1": c={k:s+l for k,(s,l,p) in ks.items()}
        else: c={k:s+l+9*p for k,(s,l,p) in ks.items()}
        o=min(v for k,v in c.items() if k!="adaptive")
        n+=1; best_ad+= c["adaptive"]<o
        for k,v in c.items(): agg[k].append(v/o)
    out=sorted(((math.exp(sum(map(math.log,v))/len(v)),max(v),k) for k,v in agg.items()))
    print(mode, lo, f"n={n} adaptive beats all={best_ad}", " ".join(f"{k}:{g:.2f}/{w:.1f}" for g,w,k in out[:7]))
res=[]
for m,ks in by.items():
    o=min(v[2] for k,v in ks.items() if k!="adaptive"); res.append((ks["adaptive"][2]/o,m))
res.sort(reverse=True)
for s,m in res[:int(sys.argv[2]) if len(sys.argv)>2 else 15]:
    i=info[m]; ks=by[m]; best=min((v[2],k) for k,v in ks.items() if k!="adaptive")
    print(f"{s:6.2f} {m[0][:55]:55s} rows={i['rows']} nnz={i['nnz']} mean={float(i['f_mean_row_len']):.1f} max={i['f_row_len_max']} ad={ks['adaptive'][2]*1e6:.1f} best={best[1]}:{best[0]*1e6:.1f} nnz_split={ks['nnz_split'][2]*1e6:.1f}")
