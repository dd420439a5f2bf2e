#!/usr/bin/env bash
# augur's main job: the pipeline offline on the CPU backend, no GPU and no network needed.
#
#   datasets -> features -> kernels (timings) -> models -> selector
#
# Matrices come in, SpMV features are gathered, the CPU kernels are checked and timed, then the
# training pipeline runs: collect (every kernel's setup and per-iteration time on the training set)
# -> train (decision trees, family-grouped cross-validation) -> export (readable rules) -> eval
# (held-out families vs the oracle, the best single kernel and a hand rule) -> run (a plan through
# the library API, with the tree's reasons). Last, the communication-pattern selector is trained,
# exported and evaluated on the comm runs measured on H200s (committed; no GPU needed here), and
# the decode-attention schedule selector on the attention runs of one H200 against FlashAttention-2
# varlen and PyTorch SDPA timed the same way.
# Outputs go to $AUGUR_OUT (default out/main-job).
set -euo pipefail
cd "$(dirname "$0")/.."

# The dev profile (its hot crates fully optimised: Cargo.toml) and every target, as `cargo test
# --workspace` builds them: the same features are unified (dev-dependencies turn on features of
# shared crates), so the README's two commands compile the workspace once, whichever runs first.
cargo build --locked --workspace --all-targets
augur="${CARGO_TARGET_DIR:-target}/debug/augur"
out=${AUGUR_OUT:-out/main-job}
mkdir -p "$out"

# One matrix of every generator family, small enough for a laptop, large enough to time.
specs=(
  "stencil2d:nx=700"
  "stencil3d:nx=60,points=27"
  "banded:n=300000,bw=24"
  "uniform:rows=200000,row_len=16"
  "powerlaw:rows=200000,alpha=2.1,min=2"
  "rmat:scale=17,ef=16"
  "blockdiag:n=100000,block=48"
  "hubs:n=300000,hubs=8,short=5"
  "arrowhead:n=200000"
  "tall:rows=1000000,cols=5000,row_len=6"
  "wide:rows=500,cols=1000000,row_len=3000"
)
shared=${AUGUR_SHARED_MATRICES:-../shared/matrices}
files=()
if [ -f "$shared/MANIFEST.tsv" ]; then
  # The shared SuiteSparse matrices with nnz >= 50k (real, integer or pattern).
  while IFS=$'\t' read -r name _ _ _ _ nnz_full _ _ field _; do
    if [ "$field" != complex ] && [ "$nnz_full" -ge 50000 ]; then
      files+=("$shared/suitesparse/$name.mtx.gz")
    fi
  done < <(tail -n +2 "$shared/MANIFEST.tsv")
  specs+=("expand:k=8,file=$shared/suitesparse/bcsstk16.mtx.gz")
else
  echo "note: no shared matrices at $shared; generated matrices only"
fi

echo "== datasets: load and describe"
"$augur" matrix info "${specs[@]}" "${files[@]}"
"$augur" matrix info --csv "${specs[@]}" "${files[@]}" > "$out/matrices.csv"

echo
echo "== features: the versioned SpMV feature schema, gathered on the CPU, with their cost"
"$augur" features "${specs[@]}" "${files[@]}" > "$out/features.csv"
head -c 600 "$out/features.csv"; echo " ..."

echo
echo "== kernels: every CPU kernel, checked against the f64 reference, then timed (median)"
"$augur" spmv --backend cpu --precision f32 --iterations 20 "${specs[@]}" "${files[@]}"
"$augur" spmv --backend cpu --precision f32 --iterations 20 --csv "${specs[@]}" "${files[@]}" \
  > "$out/spmv-cpu.csv"

echo
echo "== kernels (timings): collect the training runs on the CPU backend"
# The generated training set up to 1e6 nonzeros (every generator family, several sizes) plus the
# shared matrices when present. A fresh collection each run (use --resume to continue one).
mapfile -t train_specs < <(bash scripts/training-specs.sh 1e6 "$shared")
train_files=()
[ -d "$shared/suitesparse" ] && train_files=("$shared/suitesparse")
[ -f "$shared/MANIFEST.tsv" ] || train_specs=("${train_specs[@]/expand:*/}")
rm -f "$out/runs-cpu.csv"
"$augur" collect --backend cpu --precision f32 --iterations 1,10,100 --reps 5 \
  --out "$out/runs-cpu.csv" "${train_files[@]}" ${train_specs[@]}

echo
echo "== models: train a selector (linfa-trees, family-grouped cross-validation)"
"$augur" train "$out/runs-cpu.csv" --out "$out/model-cpu.json"

echo
echo "== models: the tree, as rules a person can read"
"$augur" export "$out/model-cpu.json" --format text | tee "$out/model-cpu.txt"
"$augur" export "$out/model-cpu.json" --format dot --out "$out/model-cpu.dot"
"$augur" export "$out/model-cpu.json" --format rust --out "$out/model-cpu.rs"

echo
echo "== models: evaluation on the families held out of training"
"$augur" eval "$out/runs-cpu.csv" --model "$out/model-cpu.json" --svg "$out/eval-cpu.svg" \
  | tee "$out/eval-cpu.txt"

echo
echo "== selector: plan and run through the library API (CPU backend), with the tree's reasons"
"$augur" run 'stencil3d:nx=40,points=27' --backend cpu --iterations 200 --explain --check \
  --model "$out/model-cpu.json" | tee "$out/run-cpu.txt"

echo
echo "== communication patterns: train, export and evaluate the comm selector offline on the"
echo "   H200 comm runs committed under bench/results (collected with \`augur collect comm\` on GPUs)"
comm_runs=bench/results/comm-model-h200-2026-11-22/train-runs.csv
"$augur" train "$comm_runs" --out "$out/model-comm.json"
"$augur" export "$out/model-comm.json" --format text | tee "$out/model-comm.txt"
"$augur" eval "$comm_runs" --model "$out/model-comm.json" --svg "$out/eval-comm.svg" \
  --csv "$out/eval-comm.csv" | tee "$out/eval-comm.txt"

echo "== decode attention: train, export and evaluate the schedule selector offline on the H200"
echo "   attention runs committed under bench/results (\`augur collect attention\` on a GPU),"
echo "   with FlashAttention-2 varlen and PyTorch SDPA beside, in throughput and graph timing; then"
echo "   the built-in model's pick for two shapes"
att=bench/results/attention-grid-h200-2026-11-24
"$augur" train "$att/attention-runs.csv.gz" --out "$out/model-attention.json"
"$augur" export "$out/model-attention.json" --format text | tee "$out/model-attention.txt"
for timing in throughput graph; do
  "$augur" eval "$att/attention-runs.csv.gz" --model "$out/model-attention.json" \
    --baselines "$att/baselines.csv" --timing "$timing" \
    --csv "$out/eval-attention-$timing.csv" | tee "$out/eval-attention-$timing.txt"
done
"$augur" attention plan 'attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=131072' \
  'attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=32000;64*63' | tee "$out/plan-attention.txt"

echo
echo "wrote $out/: matrices.csv features.csv spmv-cpu.csv runs-cpu.csv model-cpu.{json,txt,dot,rs} eval-cpu.{txt,svg} run-cpu.txt model-comm.{json,txt} eval-comm.{txt,csv,svg} eval-comm-bf16.svg model-attention.{json,txt} eval-attention-{throughput,graph}.{txt,csv} plan-attention.txt"
