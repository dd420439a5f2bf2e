#!/usr/bin/env bash
# Where feat_rows' time goes: the benchmark built against copies of features.cu with one stage
# of feat_rows cut (sed), each timed alone ("rows" mode). Diagnostic, not a benchmark of record.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
src=../../kernels/cuda/features.cu
cp "$src" "$tmp/base.cu"
sed 's|    u64 top = top_k_entries(k, bins, longs, n_long, __ldcg(acc + SUM_LONG), sh, scratch);|    u64 top = 0;|' "$src" > "$tmp/no_topk.cu"
sed -e 's|        bool binned = row \&\& len < LONG;|        bool binned = false;|' -e 's|        } else if (row) {|        } else if (false) {|' -e 's|        if (sh\[i\]) atomicAdd(bins + i, sh\[i\]);|        ;|' "$src" > "$tmp/no_bins.cu"
sed -e 's|    block_reduce(l2, 0, acc, ACC + 2, scratch);||' -e 's|    block_reduce(l3a, 0, acc, ACC + 3, scratch);||' -e 's|    block_reduce(l3b, 0, acc, ACC + 4, scratch);||' -e 's|    block_reduce(l3c, 0, acc, ACC + 5, scratch);||' -e 's|    block_reduce(h[0-5], 0, acc, ACC + [0-9]*, scratch);||' "$src" > "$tmp/few_reduce.cu"
sed 's|    if (!last_block(acc)) return;\n    u64 n_long|XX|' "$src" | python3 -c '
import sys; s=sys.stdin.read()
a=s.index("    if (!last_block(acc)) return;\n    u64 n_long")
b=s.index("// Column statistics (bandwidth")
s=s[:a]+"}\n\n"+s[b:]
print(s)' > "$tmp/no_last.cu"
for v in base no_topk no_bins few_reduce no_last; do
  nvcc -O3 -arch=sm_90 -DFEATURES_CU="\"$tmp/$v.cu\"" gather_one.cu -o "$tmp/$v" 2>&1 | grep -i error || true
  "$tmp/$v" rows | sed "s/^rows/$v/"
done
