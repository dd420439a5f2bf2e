//! The shipped models and the headline figures of the docs, recomputed from the committed runs
//! (issue 17): a model that its runs file no longer trains, or a figure in README.md or
//! docs/BENCHMARKS.md that its runs no longer give, fails here.

use std::process::{Command, Output};

use augur_tests::temp_dir;
use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn augur(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(args)
        .output()
        .unwrap()
}

fn json(args: &[&str]) -> Value {
    let o = augur(args);
    assert!(
        o.status.success(),
        "augur {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn path(rel: &str) -> String {
    format!("{ROOT}/{rel}")
}

/// The shipped models, the committed runs each was trained on, and the training options beyond
/// the defaults (the GPU SpMV models: gathered trees on row statistics, charged as the host's
/// row pass beside the upload, one policy tree per iteration count; issue 18).
const GPU_SPMV: &[&str] = &["--gather-cost", "host-rows", "--policy", "per-k"];
const SHIPPED: [(&str, &str, &[&str]); 5] = [
    (
        "models/trained/spmv-cuda-f32-h100.json",
        "datasets/runs/spmv-cuda-f32-h100.csv",
        GPU_SPMV,
    ),
    (
        "models/trained/spmv-cuda-f32-h200.json",
        "datasets/runs/spmv-cuda-f32-h200.csv",
        GPU_SPMV,
    ),
    (
        "models/trained/spmv-cpu-f32-vm.json",
        "datasets/runs/spmv-cpu-f32-vm.csv",
        &[],
    ),
    (
        "models/trained/attention-h200.json",
        "bench/results/attention-grid-h200-2026-11-24/attention-runs.csv.gz",
        &[],
    ),
    (
        "models/trained/comm-h200.json",
        "bench/results/comm-model-h200-2026-11-22/train-runs.csv",
        &[],
    ),
];

/// `v` without the cross-validation scores (their fourth digit moves between trainings: equal
/// splits inside a fold tie by rounding) and the augur version.
fn stable(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.contains("cv") && k.as_str() != "augur_version")
                .map(|(k, v)| (k.clone(), stable(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(stable).collect()),
        other => other.clone(),
    }
}

#[test]
fn shipped_models_are_what_their_committed_runs_train() {
    let dir = temp_dir("shipped-models");
    for (model, runs, extra) in SHIPPED {
        let shipped: Value =
            serde_json::from_str(&std::fs::read_to_string(path(model)).unwrap()).unwrap();
        let out = dir.join("retrained.json");
        let runs_path = path(runs);
        let mut args = vec!["train", &runs_path, "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = augur(&args);
        assert!(
            o.status.success(),
            "{model}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let again: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let digest = |v: &Value| v["training"]["digest"].as_str().unwrap().to_string();
        assert_eq!(
            digest(&again),
            digest(&shipped),
            "{model}: its committed runs {runs} no longer give its training digest"
        );
        assert!(
            stable(&again) == stable(&shipped),
            "{model}: retraining on {runs} gives another model"
        );
    }
}

/// The shipped overlap model (issue 24) and the committed grids it was trained on: the 2- and
/// 4-GPU grids of three weight sets, the 2-GPU reduce-scatter ones with the fused patterns
/// re-timed and spliced in (bench/results/fused-rs-2gpu-h200-2026-11-29/README.md), then the
/// k splits of `fused-reduce:0` added (bench/results/split-prezeroed-h200-2026-11-29/README.md),
/// the 4-GPU ones' fused patterns re-timed once the launch zeroes there too
/// (bench/results/fused-4gpu-h200-2026-11-29/README.md), and the all-gather's `own-bulk`
/// re-timed on both counts once its copy kernel waits itself
/// (bench/results/own-bulk-grid-h200-2026-11-29/README.md), and on two GPUs the one-piece pc
/// patterns re-timed once the last piece's GEMMs take every SM
/// (bench/results/pc-tail-h200-2026-11-29/README.md); and the GEMM + all-reduce's 2-GPU grids
/// with `fused-all` spliced in (bench/results/all-reduce-h200-2026-11-29/README.md).
const OVERLAP_GRIDS: [&str; 15] = [
    "bench/results/pc-tail-h200-2026-11-29/spliced-first-grid-2-all-gather.csv",
    "bench/results/pc-tail-h200-2026-11-29/spliced-second-grid-2-all-gather.csv",
    "bench/results/pc-tail-h200-2026-11-29/spliced-third-grid-2-all-gather.csv",
    "bench/results/auto-split-h200-2026-11-29/spliced-first-grid-2-reduce-scatter.csv",
    "bench/results/auto-split-h200-2026-11-29/spliced-second-grid-2-reduce-scatter.csv",
    "bench/results/auto-split-h200-2026-11-29/spliced-third-grid-2-reduce-scatter.csv",
    "bench/results/own-bulk-grid-h200-2026-11-29/spliced-first-grid-4-all-gather.csv",
    "bench/results/fused-4gpu-h200-2026-11-29/spliced-first-grid-4-reduce-scatter.csv",
    "bench/results/own-bulk-grid-h200-2026-11-29/spliced-second-grid-4-all-gather.csv",
    "bench/results/fused-4gpu-h200-2026-11-29/spliced-second-grid-4-reduce-scatter.csv",
    "bench/results/own-bulk-grid-h200-2026-11-29/spliced-third-grid-4-all-gather.csv",
    "bench/results/fused-4gpu-h200-2026-11-29/spliced-third-grid-4-reduce-scatter.csv",
    "bench/results/fused-all-split-h200-2026-11-30/spliced-first-grid-2-all-reduce.csv",
    "bench/results/fused-all-split-h200-2026-11-30/spliced-second-grid-2-all-reduce.csv",
    "bench/results/fused-all-split-h200-2026-11-30/spliced-third-grid-2-all-reduce.csv",
];

#[test]
fn the_shipped_overlap_model_is_what_its_committed_grids_train() {
    let dir = temp_dir("shipped-overlap");
    let out = dir.join("overlap.json");
    let grids: Vec<String> = OVERLAP_GRIDS.iter().map(|g| path(g)).collect();
    let mut args = vec!["overlap", "train"];
    args.extend(grids.iter().map(String::as_str));
    args.extend(["--out", out.to_str().unwrap()]);
    let o = augur(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let shipped: Value = serde_json::from_str(
        &std::fs::read_to_string(path("models/trained/overlap-h200.json")).unwrap(),
    )
    .unwrap();
    let again: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(
        stable(&again) == stable(&shipped),
        "models/trained/overlap-h200.json: its committed grids train another model"
    );
}

/// The summary group `name` of an attention or comm `eval --json`.
fn group<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["summary"]
        .as_array()
        .and_then(|s| s.iter().find(|g| g["group"] == name))
        .unwrap_or_else(|| panic!("no group `{name}` in {v}"))
}

/// Lines that README.md and docs/BENCHMARKS.md must both hold word for word.
fn headline_lines() -> Vec<String> {
    let mut lines = Vec::new();
    for (dev, runs, model) in [
        (
            "NVIDIA H100 80GB HBM3",
            "datasets/runs/spmv-cuda-f32-h100.csv",
            "models/trained/spmv-cuda-f32-h100.json",
        ),
        (
            "NVIDIA H200",
            "datasets/runs/spmv-cuda-f32-h200.csv",
            "models/trained/spmv-cuda-f32-h200.json",
        ),
        (
            "the 2-core CPU VM",
            "datasets/runs/spmv-cpu-f32-vm.csv",
            "models/trained/spmv-cpu-f32-vm.json",
        ),
    ] {
        // Inference charged at a fixed time per pick (GPU 100 ns, CPU 50 ns: above the 14-45 ns
        // measured on the development VM), so that the figures do not move with the speed or
        // load of the machine that checks them. The time eval measures is only checked to be
        // there: bounded, it failed on a machine busy with other tests (914 ns against a bound
        // of 400), and speed is the benchmarks' to show, not a test's.
        let charge = if dev.contains("CPU") { 50.0 } else { 100.0 };
        let v = json(&[
            "eval",
            &path(runs),
            "--model",
            &path(model),
            "--charge-inference-ns",
            &charge.to_string(),
            "--json",
        ]);
        let measured = v["inference_ns"].as_f64().unwrap();
        assert!(
            measured.is_finite() && measured > 0.0,
            "{model}: inference measured at {measured} ns"
        );
        let all = v["overall"]["oracle_ratio"].as_f64().unwrap();
        let big = v["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["bucket"] == "nnz >= 1e6")
            .unwrap()["oracle_ratio"]
            .as_f64()
            .unwrap();
        let mut line = if dev.contains("CPU") {
            format!(
                "SpMV on {dev} (wall-clock timing, held-out families, {charge} ns inference \
                 charged): {all:.3} of the oracle, {big:.3} at nnz >= 1e6"
            )
        } else {
            format!(
                "SpMV on {dev} (throughput timing, held-out families, {charge} ns inference \
                 charged): {all:.3} of the oracle, {big:.3} at nnz >= 1e6"
            )
        };
        if let Some(alg1) = v["vs_alg1_nnz_ge_1e5"].as_f64() {
            line += &format!(", {alg1:.2}x cuSPARSE ALG1 at nnz >= 1e5");
        }
        lines.push(line);
    }
    let res = "bench/results/attention-grid-h200-2026-11-24";
    for timing in ["throughput", "graph"] {
        let v = json(&[
            "eval",
            &path(&format!("{res}/attention-runs.csv.gz")),
            "--model",
            &path("models/trained/attention-h200.json"),
            "--baselines",
            &path(&format!("{res}/baselines.csv")),
            "--timing",
            timing,
            "--json",
        ]);
        let held = group(&v, "held-out groups");
        let b = |name: &str, what: &str| held["vs_baselines"][name][what].as_f64().unwrap();
        lines.push(format!(
            "Decode attention on NVIDIA H200 ({timing} timing, held-out groups): {:.3} of the \
             per-shape oracle; FlashAttention-2 varlen {:.2}x augur's time (least {:.2}x), \
             SDPA {:.2}x (least {:.2}x)",
            held["oracle_ratio"].as_f64().unwrap(),
            b("fa2_varlen", "geomean"),
            b("fa2_varlen", "least"),
            b("sdpa", "geomean"),
            b("sdpa", "least"),
        ));
    }
    let v = json(&[
        "eval",
        &path("bench/results/comm-model-h200-2026-11-22/train-runs.csv"),
        "--model",
        &path("models/trained/comm-h200.json"),
        "--json",
    ]);
    let unseen = group(&v, "all, unseen sizes");
    lines.push(format!(
        "Collectives on H200 x2 and x4 (throughput timing, held-out sizes): {:.3} of the \
         per-size oracle, {:.2} of NCCL's latency at <= 64 KiB",
        unseen["oracle_ratio"].as_f64().unwrap(),
        unseen["small_latency_vs_nccl"][0].as_f64().unwrap(),
    ));
    lines
}

#[test]
fn headline_figures_in_the_docs_are_the_committed_runs() {
    let lines = headline_lines();
    for doc in ["README.md", "docs/BENCHMARKS.md"] {
        let text = std::fs::read_to_string(path(doc)).unwrap();
        // Markdown may wrap a line: compare with white space folded.
        let fold = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let text = fold(&text);
        for l in &lines {
            assert!(
                text.contains(&fold(l)),
                "{doc} does not say, word for word, what the committed runs give:\n{l}"
            );
        }
    }
}
