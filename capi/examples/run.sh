#!/usr/bin/env bash
# Build libaugur.so (the C API) and the C example against include/augur.h, and run it (CI runs
# this). Usage: bash capi/examples/run.sh [GRID_N]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --locked -p augur-capi
lib="${CARGO_TARGET_DIR:-target}/debug"
out="${TMPDIR:-/tmp}/augur-capi-example"
cc -std=c99 -Wall -Wextra -Werror -O2 -I capi/include capi/examples/spmv.c -L "$lib" -laugur -lm \
  -o "$out"
LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$out" "$@"
