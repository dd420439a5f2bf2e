#!/usr/bin/env bash
# The examples (CG, power iteration) on one GPU and on --gpus 2, plus `augur run` on a banded
# 1e8 matrix for 1 and 2 GPUs; through the device tool on nvidia-h200-x2 with carry [".carry"]
# after bench/prepare-carry.sh and copying target/release/examples/{cg,power_iteration} there.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
S=.carry/matrices/suitesparse
( .carry/cg stencil3d:nx=160,points=27 ; .carry/cg stencil3d:nx=160,points=27 --gpus 2 ; .carry/cg $S/bcsstk16.mtx.gz --gpus 2 ; .carry/cg $S/bcsstk16.mtx.gz ) > $OUT/cg.txt 2>&1
( .carry/power_iteration stencil3d:nx=160,points=27 --gpus 2 --iterations 400 ; .carry/power_iteration $S/1138_bus.mtx.gz --gpus 2 --iterations 2000 ; .carry/power_iteration $S/1138_bus.mtx.gz --iterations 2000 ) > $OUT/power.txt 2>&1
for n in 1 2; do .carry/augur run banded:n=6e6,bw=16 --gpus $n --iterations 300 --profile --json > $OUT/banded-$n.json 2>&1; done
.carry/augur run stencil3d:nx=160,points=27 --iterations 300 --explain > $OUT/run-1gpu-explain.txt 2>&1
grep -h "CG:\|power iteration:\|kernel " $OUT/cg.txt $OUT/power.txt
