#!/usr/bin/env bash
# The generated matrices augur trains on: every generator family, several structures each, sizes
# from ~1e4 nonzeros up to about MAX_NNZ (first argument, default 1e8; the size estimate of the
# heavy-tailed power-law with alpha = 1.8 is low: at 1e8 it admits one of 1.9e9 nonzeros). One spec per line on stdout;
# pass them to `augur collect`. The size keys (rows, n, nx, scale, ...) are left out of the family
# key `augur collect` records, so all sizes of one structure share a cross-validation group.
#   scripts/training-specs.sh [MAX_NNZ] [MATRICES_DIR]
set -euo pipefail
max=${1:-1e8}
dir=${2:-}
python3 - "$max" "$dir" <<'PY'
import sys
mx = float(sys.argv[1]); d = sys.argv[2]
out = []
def e(x):
    m, p = f"{x:.0e}".split("e")
    return f"{m}e{int(p)}"
def add(spec, nnz):
    if nnz <= mx * 1.3:
        out.append(spec)
for rl in (4, 16, 64):
    for rows in (1e3, 1e4, 1e5, 1e6, 1e7):
        add(f"uniform:rows={e(rows)},row_len={rl}", rows * rl)
for rows in (1e5, 1e6, 1e7, 3e7):
    add(f"tall:rows={e(rows)},cols=1000,row_len=3", rows * 3)
for rl in (500, 5000):
    for cols in (1e5, 1e6, 1e7):
        add(f"wide:rows=1000,cols={e(cols)},row_len={rl}", 1000 * rl)
for pts in (5, 9):
    for nx in (50, 200, 700, 2000, 4000):
        add(f"stencil2d:nx={nx},points={pts}", nx * nx * pts)
for pts in (7, 27):
    for nx in (10, 25, 60, 120, 160, 250):
        add(f"stencil3d:nx={nx},points={pts}", nx ** 3 * pts)
for bw in (2, 16, 64):
    for n in (1e3, 1e4, 1e5, 1e6, 1e7):
        add(f"banded:n={e(n)},bw={bw}", n * (2 * bw + 1))
for alpha, mn in ((1.8, 2), (2.1, 2), (2.5, 4)):
    for rows in (1e4, 1e5, 1e6, 1e7):
        add(f"powerlaw:rows={e(rows)},alpha={alpha},min={mn}", rows * mn * 4)
for ef in (4, 16):
    for scale in (10, 13, 16, 19, 22):
        add(f"rmat:scale={scale},ef={ef}", 2 ** scale * ef)
for block in (8, 48, 128):
    for n in (1e4, 1e5, 1e6):
        add(f"blockdiag:n={e(n)},block={block}", n * block)
for hubs, short in ((4, 6), (64, 3)):
    for n in (1e4, 1e5, 1e6, 4e6):
        add(f"hubs:n={e(n)},hubs={hubs},short={short}", n * (short + hubs))
for n in (1e4, 1e5, 1e6, 1e7):
    add(f"arrowhead:n={e(n)}", 3 * n)
# More structures, so that a held-out family has relatives in training: one or a few dense rows
# among short ones, rows of 8 and 50 in tall and wide shapes, light-tailed rows, symmetric graphs.
for hubs, short in ((1, 3), (16, 10)):
    for n in (1e4, 1e5, 1e6):
        add(f"hubs:n={e(n)},hubs={hubs},short={short}", n * (short + hubs))
for rows in (1e4, 1e5, 1e6, 1e7):
    add(f"tall:rows={e(rows)},cols=100,row_len=8", rows * 8)
for cols in (1e5, 1e6, 1e7):
    add(f"wide:rows=20000,cols={e(cols)},row_len=50", 20000 * 50)
for rows in (1e4, 1e5, 1e6, 1e7):
    add(f"powerlaw:rows={e(rows)},alpha=3,min=1", rows * 1.5)
for scale in (12, 15, 18, 21):
    add(f"rmat:scale={scale},ef=8,sym=1", 2 ** scale * 16)
for n in (1e4, 1e5, 1e6, 4e6):
    add(f"blockdiag:n={e(n)},block=16", n * 16)
for rl in (8,):
    for rows in (1e4, 1e5, 1e6, 1e7):
        add(f"uniform:rows={e(rows)},row_len={rl}", rows * rl)
if d:
    for name, nnz, k in (("bcsstk16", 3e5, 8), ("rgg_n_2_15_s0", 3.2e5, 16), ("luxembourg_osm", 2.4e5, 32)):
        add(f"expand:k={k},file={d}/suitesparse/{name}.mtx.gz", nnz * k)
    # Real structure at scale (issue 18): the two largest matrices of every family in the
    # manifest (of at least 200 stored entries), grown to ~1.5e6 and ~1.5e7 entries by A (x) I_k,
    # with a dense k x k block per entry (A (x) ones(k): several unknowns per node), and at
    # ~1.5e6 with the locality destroyed (a random symmetric permutation) and restored (reverse
    # Cuthill-McKee). `augur collect` gives each the family of the matrix it came from.
    import csv, collections, os
    man = os.path.join(d, "MANIFEST.tsv")
    if os.path.isfile(man):
        fams = collections.defaultdict(list)
        with open(man) as fh:
            for r in csv.DictReader(fh, delimiter="\t"):
                nz = int(r["nnz_full"])
                if nz >= 200:
                    fams[r["family"]].append((nz, r["name"], r["rows"] == r["cols"]))
        for fam in sorted(fams):
            for nz, name, square in sorted(fams[fam], reverse=True)[:2]:
                f = f"{d}/suitesparse/{name}.mtx.gz"
                for target in (1.5e6, 1.5e7):
                    k = max(2, round(target / nz))
                    add(f"expand:k={k},file={f}", nz * k)
                kd = min(8, max(2, round((1.5e6 / nz) ** 0.5)))
                add(f"expand:k={kd},pattern=dense,file={f}", nz * kd * kd)
                k = max(2, round(1.5e6 / nz))
                add(f"expand:k={k},order=random,seed=1,file={f}", nz * k)
                if square:
                    add(f"expand:k={k},order=rcm,file={f}", nz * k)
print("\n".join(out))
PY
