#!/usr/bin/env bash
# Issue 24, push-reduce's hang after other patterns (diagnostic, traced; stderr unbuffered).
source bench/tp-env.sh
export AUGUR_TP_TRACE=1
timeout 170 .carry/augur overlap tp --gpus 2 --ops reduce-scatter --samples 5 \
  --patterns gemm,fused-reduce:0,push-reduce:2 16384,5120,13824 2>&1 | cut -c1-250 | grep -v "^device"
echo "rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
