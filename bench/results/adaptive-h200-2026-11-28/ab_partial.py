# The first 100 matrices of shard 1/2 timed twice on H200 machines: the partial run of 2026-11-28
# (build 723792d: the kernel computed its lanes from nnz) and this one (build 1007469: the host
# passes them). Median and spread of new/old per matrix, per_iter and latency, by nnz bucket.
# python3 ab_partial.py OLD.csv NEW.csv
import csv, statistics as st, sys
def load(p):
    return {(r["matrix"], r["source"]): r for r in csv.DictReader(open(p)) if r["status"] == "ok"}
old, new = load(sys.argv[1]), load(sys.argv[2])
both = sorted(set(old) & set(new))
print(f"{len(both)} matrices in both (old {len(old)}, new {len(new)})")
for col in ("per_iter_s", "latency_s"):
    for lo, hi in ((0, 1e5), (1e5, 1e6), (1e6, 1e12)):
        q = [float(new[m][col]) / float(old[m][col]) for m in both if lo <= int(new[m]["nnz"]) < hi]
        if q:
            q.sort()
            print(f"{col:10s} nnz [{lo:.0e},{hi:.0e}): n={len(q):3d} median new/old {st.median(q):.3f}"
                  f"  10%-90% {q[len(q)//10]:.3f}-{q[(9*len(q))//10]:.3f}  min {q[0]:.3f} max {q[-1]:.3f}")
