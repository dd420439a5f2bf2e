#!/usr/bin/env bash
# The overlap selector's split criterion and floor weight, held out by weight on the committed
# grids (the shipped model's, cli/tests/headlines.rs OVERLAP_GRIDS), and trained on the first and
# second weight sets only, then evaluated on the third's (8 weights it never saw). CPU only.
# Usage: bash bench/results/overlap-selector-cpu-2026-12-05/sweep.sh [augur binary]
set -euo pipefail
cd "$(dirname "$0")/../../.."
A=${1:-target/release/augur}
D=bench/results/overlap-selector-cpu-2026-12-05
G=$(sed -n '/^const OVERLAP_GRIDS/,/^];/p' cli/tests/headlines.rs | grep -o '"bench[^"]*"' | tr -d '"')
TR=$(echo "$G" | grep -v third)
TE=$(echo "$G" | grep third)
T=$(mktemp -d)
for crit in gini regret gini,regret; do
  for fw in 0 1 3 10; do
    echo "== criteria $crit, floor weight $fw: held out by weight, all 24 weights"
    # shellcheck disable=SC2086
    "$A" overlap train $G --criteria "$crit" --floor-weight "$fw" | sed -n '/^held out/,/^$/p' | grep -E '^(operation|all|both|gemm|all-gather)'
    echo "-- trained on the first and second sets, evaluated on the third"
    # shellcheck disable=SC2086
    "$A" overlap train $TR --criteria "$crit" --floor-weight "$fw" --out "$T/m.json" > /dev/null 2>&1
    # shellcheck disable=SC2086
    "$A" eval --model "$T/m.json" $TE | grep -E '^(operation|all|both|gemm|all-gather)'
  done
done
rm -rf "$T"
