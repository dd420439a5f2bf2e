# Sourced by heldout.sh and validate.sh: K, every candidate of both TMA kernels (the swapped one
# in both token tiles and every split; the 128-row one in both widths and the splits tma_choice
# takes from) beside augur_tma_auto and cuBLASLt, for `augur overlap gemm --kernels "$K"`.
K=cublaslt,augur_tma_auto
for mt in 32 64; do for s in $(seq 1 16); do K+=",augur_tma_swap_${mt}x128_k$s"; done; done
for bn in 256 128; do for s in 1 2 4 8 16; do K+=",augur_tma_128x${bn}_k$s"; done; done
