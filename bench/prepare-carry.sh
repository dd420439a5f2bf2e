#!/usr/bin/env bash
# Stage what a GPU run needs in .carry/ (ignored by git): the release binary and the shared
# matrices. Then, through the device tool, run `bash bench/gpu.sh` with carry [".carry"]; it writes
# its CSVs to $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p augur-cli
rm -rf .carry/augur .carry/matrices && mkdir -p .carry/matrices
cp "${CARGO_TARGET_DIR:-target}/release/augur" .carry/augur && strip .carry/augur
shared=${AUGUR_SHARED_MATRICES:-../shared/matrices}
cp -r "$shared/suitesparse" "$shared/MANIFEST.tsv" .carry/matrices/
du -sh .carry
