#!/usr/bin/env bash
# Stage the Python wheel (release) and libaugur.so (release) in .carry beside the matrices
# (bench/prepare-carry.sh) for bench/python-gpu/run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash bench/prepare-carry.sh
cargo build --release --locked -p augur-capi
cp "${CARGO_TARGET_DIR:-target}/release/libaugur.so" .carry/ && strip .carry/libaugur.so
rm -f .carry/augur-*.whl
maturin build --release --locked --manifest-path python/Cargo.toml --out .carry
du -sh .carry
