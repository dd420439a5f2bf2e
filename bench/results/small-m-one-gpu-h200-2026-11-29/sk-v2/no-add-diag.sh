#!/usr/bin/env bash
# With .carry/augur.xz (stream k, ../stream-k.patch applied) and .carry/augur_b.xz (the same
# without sk_add's reductions), from the repository root.
source bench/unpack-carry.sh
S="512,4096,1024 512,10240,7168 16,1536,4096 2048,7168,4096"
K=augur_tma_auto,augur_tma_128x256_sk,augur_tma_128x256_k2,cublaslt
for b in augur augur_b; do echo "== $b"; .carry/$b overlap gemm --kernels $K $S 2>/dev/null | cut -d, -f3-7,10-12; done
