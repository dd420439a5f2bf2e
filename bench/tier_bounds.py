#!/usr/bin/env python3
"""What the feature tiers' cost takes from the SpMV selection (issue 18), offline from a runs CSV:
  free    - every tier free (sample_s = gather_s = 0): how far the trees themselves go;
  refine  - an estimate of "look while running": the known tree's pick runs at once, the gathered
            tree's pick takes over once the features are back (after 1 + ceil(gather_s / t) calls
            of the first pick), both kernels' setup charged, plus the gather's device work
            ((rows + nnz) x 4 bytes at 2.5 TB/s + 5 us) for k > 1.
Each variant retrains on altered runs (same split seed) and evaluates with `augur eval --json`,
100 ns inference charged; geomean of oracle / selected per (nnz >= 1e6 or not, k).
Usage: python3 bench/tier_bounds.py RUNS.csv [AUGUR_BINARY]"""
import csv, collections, json, math, os, subprocess, sys, tempfile

runs, augur = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "target/release/augur")
tmp = tempfile.mkdtemp()


def variant(name, gather, sample):
    path = os.path.join(tmp, f"runs-{name}.csv")
    with open(runs) as f, open(path, "w", newline="") as g:
        r, w = csv.reader(f), csv.writer(g, lineterminator="\n")
        h = next(r)
        gi, si = h.index("gather_s"), h.index("sample_s")
        # The upload's figures (when the runs have them) would override gather_s: cleared.
        up = [h.index(c) for c in ("upload_s", "upload_gather_s") if c in h]
        w.writerow(h)
        for row in r:
            row[gi], row[si] = repr(gather), repr(sample)
            for i in up:
                row[i] = ""
            w.writerow(row)
    model = os.path.join(tmp, f"model-{name}.json")
    subprocess.run([augur, "train", path, "--out", model], check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([augur, "eval", path, "--model", model, "--charge-inference-ns", "100",
                          "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["samples"]


geo = lambda v: math.exp(sum(map(math.log, v)) / len(v))
bucket = lambda s: ("nnz >= 1e6" if s["nnz"] >= 1e6 else "nnz < 1e6", int(s["iterations"]))

free = variant("free", 0.0, 0.0)
known = variant("known", 1e3, 1e3)      # the policy never pays: known picks
gathered = variant("gathered", 0.0, 1e3)  # free gathering: gathered picks (mostly)

timing, info = collections.defaultdict(dict), {}
for r in csv.DictReader(open(runs)):
    if r["status"] == "ok":
        timing[r["matrix"]][r["kernel"]] = (float(r["setup_s"]), float(r["latency_s"]),
                                            float(r["per_iter_s"]))
    info[r["matrix"]] = r
res = collections.defaultdict(lambda: collections.defaultdict(list))
for s in free:
    res[bucket(s)]["free"].append(s["oracle_s"] / s["selected_s"])
for a, b in zip(known, gathered):
    assert (a["matrix"], a["iterations"]) == (b["matrix"], b["iterations"])
    m, k, k0, k1 = a["matrix"], int(a["iterations"]), a["selected_kernel"], b["selected_kernel"]
    if k0 not in timing[m] or k1 not in timing[m]:
        continue
    (s0, l0, t0), (s1, _, t1) = timing[m][k0], timing[m][k1]
    i = info[m]
    device = (int(i["rows"]) * 4 + int(i["nnz"]) * 4) / 2.5e12 + 5e-6
    if k == 1 or k0 == k1:
        cost = s0 + l0 + (k - 1) * t0 + (device if k > 1 else 0.0)
    else:
        j = min(k, 1 + math.ceil(float(i["gather_s"]) / t0))
        cost = s0 + l0 + (j - 1) * t0 + s1 + (k - j) * t1 + device
    res[bucket(a)]["known only"].append(a["oracle_s"] / a["selected_s"])
    res[bucket(a)]["refine"].append(a["oracle_s"] / (cost + 1e-7))
print("bucket,k,samples,known only,refine (estimate),every tier free")
for key in sorted(res):
    v = res[key]
    print(f"{key[0]},{key[1]},{len(v['free'])},{geo(v['known only']):.3f},{geo(v['refine']):.3f},"
          f"{geo(v['free']):.3f}")
