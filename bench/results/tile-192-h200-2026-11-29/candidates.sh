# Sourced by fit.sh and validate.sh: K, the 128-row TMA kernel in each tile width (256, 192, 128)
# and split 1, 2, 4, 8 beside augur_tma_auto and cuBLASLt, for `augur overlap gemm --kernels "$K"`.
K=cublaslt,augur_tma_auto
for bn in 256 192 128; do for s in 1 2 4 8; do K+=",augur_tma_128x${bn}_k$s"; done; done
