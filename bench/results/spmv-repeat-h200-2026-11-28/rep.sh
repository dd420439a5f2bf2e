#!/usr/bin/env bash
# A repeat of the H200 SpMV training runs, one shard of the training set (issue 18: the run-to-run noise ceiling). From the repository root through the device tool, carry [".carry/augur.xz", ".carry/matrices"] (bench/prepare-carry.sh stages the matrices): SHARD=i/5 bash bench/results/spmv-repeat-h200-2026-11-28/rep.sh
set -uo pipefail
source bench/unpack-carry.sh
SHARD=${SHARD:-1/5} LIMIT=${LIMIT:-520} bash bench/collect-gpu.sh
