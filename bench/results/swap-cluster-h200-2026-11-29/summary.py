"""Base over the variant (graph medians, the faster of two rounds) per kernel and layer, and
cuBLASLt over each: python3 summary.py PREFIX_BASE PREFIX_NEW [DIR] (e.g. split-base split-cs;
DIR: where the CSVs are, this folder by default)."""
import csv, collections, math, sys, os
here = os.path.dirname(os.path.abspath(__file__))
base, new = (sys.argv[1:3] if len(sys.argv) > 2 else ("split-base", "split-cs"))
if len(sys.argv) > 3:
    here = os.path.join(here, sys.argv[3])
def load(f):
    return {(r['m'], r['n'], r['k'], r['kernel']): (float(r['graph_us']), r['passed'], r['tma_choice'])
            for r in csv.DictReader(open(os.path.join(here, f)))}
b = [load(f'{base}-{i}.csv') for i in (1, 2)]; p = [load(f'{new}-{i}.csv') for i in (1, 2)]
print('every check passed:', all(v[1] == 'true' for d in b + p for v in d.values()))
ratios = collections.defaultdict(list)
for k in b[0]:
    bb = min(x[k][0] for x in b); pp = min(x[k][0] for x in p)
    cb = min(x[k[:3] + ('cublaslt',)][0] for x in b + p)
    print('%5s x %5s x %5s %-22s %7.2f -> %7.2f us (%.3f)  cuBLASLt over: %.3f -> %.3f %s' % (
        *k[:3], k[3], bb, pp, bb / pp, cb / bb, cb / pp, p[0][k][2]))
    ratios[k[3]].append(bb / pp)
for k, v in ratios.items():
    print('%-22s base over new geomean %.3f (%.3f-%.3f)' % (k, math.exp(sum(map(math.log, v)) / len(v)), min(v), max(v)))
