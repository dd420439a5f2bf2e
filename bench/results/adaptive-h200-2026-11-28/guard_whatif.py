import csv,collections,math,json,sys
src=sys.argv[1]; evals=sys.argv[2:]
L={"scalar":1,"vector2":2,"vector4":4,"vector8":8,"vector16":16,"vector32":32,"block":256}
rows=[r for r in csv.DictReader(open(src)) if r["status"]=="ok"]
by=collections.defaultdict(dict); info={}
for r in rows:
    m=r["matrix"]; by[m][r["kernel"]]=r; info[m]=r
def cost(r,k): return float(r["setup_s"])+float(r["latency_s"])+(k-1)*float(r["per_iter_s"])
c={}
for k,l in L.items():
    q=[float(ks[k]["per_iter_s"])/(float(info[m]["f_row_len_max"])/l) for m,ks in by.items() if k in ks and float(info[m]["f_row_len_max"])/l>=2000]
    c[k]=min(q)
# safe per-iteration estimate of nnz_split: t0 + u (nnz + rows), u the 90th percentile at nnz>1e6, t0 its least time
q=sorted(float(ks["nnz_split"]["per_iter_s"])/(int(info[m]["nnz"])+int(info[m]["rows"])) for m,ks in by.items() if "nnz_split" in ks and int(info[m]["nnz"])>1e6)
u=q[9*len(q)//10]
t0=min(float(ks["nnz_split"]["per_iter_s"]) for ks in by.values() if "nnz_split" in ks)
bal=["nnz_split","merge_path","merge_tiled","binned","cusparse_alg1","cusparse_alg2"]
fb={}
for k in (1,10,100):
    g={}
    for b in bal:
        v=[cost(ks[b],k)/min(cost(x,k) for x in ks.values()) for m,ks in by.items() if b in ks and float(info[m]["f_row_len_max"])>=4096]
        g[b]=math.exp(sum(map(math.log,v))/len(v))
    fb[k]=min(g,key=g.get)
def maxrow(s,i):
    if s["tier"]=="gathered": return float(i["f_row_len_max"])
    if s["tier"]=="sampled": return float(i["f_sampled_max_mean_ratio"])*float(i["f_mean_row_len"])
    return float(i["f_mean_row_len"])
det=[]
for margin in (1e30,1,2,4):
  tot=[];W=[]
  for e in evals:
    S=json.load(open(e))["samples"]; lg=[];fired=0;worst=1
    for s in S:
        m=s["matrix"]; k=s["iterations"]; sel=s["selected_kernel"]; t=s["selected_s"]; i=info[m]
        if sel in L:
            bound=c[sel]*math.ceil(maxrow(s,i)/L[sel]); safe=t0+u*(int(i["nnz"])+int(i["rows"]))
            if bound>margin*safe:
                fired+=1; t2=cost(by[m][fb[int(k)]],k)+s["features_s"]+100e-9
                if margin==2: det.append((e[-11:],m[:45],k,s["tier"],sel,"%.3g -> %.3g oracle %.3g"%(t,t2,s["oracle_s"])))
                t=t2
        r=s["oracle_s"]/t; lg.append(math.log(r)); worst=min(worst,r)
    g=math.exp(sum(lg)/len(lg)); tot.append(g); W.append(worst)
    print(f"margin {margin} {e.split('/')[-1]}: {g:.3f} fired {fired} worst {worst:.3f}")
  print("margin",margin,"mean %.3f"%(sum(tot)/len(tot)), "worsts", " ".join("%.3f"%w for w in W))
print("c",{k:round(v*1e9,1) for k,v in c.items()},"u",u,"t0",t0,"fb",fb)
for d in det: print(*d)
