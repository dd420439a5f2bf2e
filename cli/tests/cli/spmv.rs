//! SpMV end to end: `spmv`, `check`, `bench`, `collect`, `train` / `export` / `eval`, `run`.

use super::*;

#[test]
fn spmv_cpu_runs_checks_and_reports_every_kernel() {
    let v = json_ok(&[
        "spmv",
        "--backend",
        "cpu",
        "--json",
        "--iterations",
        "3",
        "powerlaw:rows=3000,alpha=1.8",
        "stencil3d:nx=9",
    ]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 8);
    for r in rows {
        assert_eq!(r["check"]["passed"], true, "{r}");
        assert!(r["median_s"].as_f64().unwrap() > 0.0);
        assert!(r["gb_per_s"].as_f64().unwrap() > 0.0);
    }
    let out = augur(&[
        "spmv",
        "--precision",
        "f32",
        "--kernel",
        "merge-path",
        "hubs:n=2000",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let so = text(&out.stdout);
    assert!(
        so.contains("merge-path") && so.contains(" ok") && !so.contains("row-split"),
        "{so}"
    );
}

#[test]
fn spmv_on_shared_matrices() {
    let Some(dir) = shared_dir("spmv_on_shared_matrices") else {
        return;
    };
    let m = |n: &str| {
        dir.join("suitesparse")
            .join(format!("{n}.mtx.gz"))
            .display()
            .to_string()
    };
    let out = augur(&["spmv", "--iterations", "2", &m("bcsstk16"), &m("1138_bus")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).matches(" ok").count(), 8);
}

#[test]
fn check_runs_the_suite_and_bench_writes_csv() {
    let out = augur(&["check", "stencil2d:nx=30", "rmat:scale=10,ef=4"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let so = text(&out.stdout);
    // 15 edge cases + 2 given matrices, 4 CPU kernels, 2 precisions.
    assert!(
        so.contains("17 matrices (15 edge cases), 136 checks"),
        "{so}"
    );
    assert!(so.contains("merge-path") && !so.contains("FAILED"), "{so}");

    let out = augur(&["check", "--backend", "cuda"]);
    if !out.status.success() {
        let se = text(&out.stderr);
        assert!(
            se.contains("use --backend cpu") && !se.contains("panicked"),
            "{se}"
        );
    }

    let out = augur(&["bench", "spmv", "--iterations", "2", "banded:n=2000,bw=3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let so = text(&out.stdout);
    let header = so.lines().next().unwrap();
    assert!(
        header.contains("speedup_vs_alg1") && header.contains("fraction_of_copy"),
        "{header}"
    );
    assert_eq!(so.lines().count(), 5, "{so}");
}

fn csv_matrices(p: &std::path::Path) -> Vec<String> {
    let mut r = csv::Reader::from_path(p).unwrap();
    let mut m: Vec<String> = r
        .records()
        .map(|x| x.unwrap().get(0).unwrap().to_string())
        .collect();
    m.dedup();
    m
}

#[test]
fn collect_skips_bad_files_resumes_shards_and_merges() {
    let dir = temp_dir("collect");
    let bad = write_file(
        "broken.mtx",
        b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n9 1 2\n",
    );
    let specs = [
        "stencil2d:nx=20",
        "uniform:rows=500,row_len=6",
        "powerlaw:rows=800,alpha=2.1,min=2",
        "banded:n=600,bw=3",
    ];
    let out = dir.join("runs.csv");
    let o = out.to_str().unwrap();
    let mut args = vec!["collect", "--reps", "2", "--warmup", "0", "--out", o];
    args.extend(specs);
    args.push(bad.to_str().unwrap());
    let r = augur(&args);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let err = text(&r.stderr);
    assert!(
        err.contains("skipping broken") && err.contains("broken.mtx:4"),
        "{err}"
    );
    assert!(
        err.contains("4 matrices measured") && err.contains("1 skipped"),
        "{err}"
    );
    assert_eq!(csv_matrices(&out).len(), 4);
    let rows = std::fs::read_to_string(&out).unwrap().lines().count();
    assert_eq!(rows, 1 + 4 * 4, "header + 4 kernels x 4 matrices");
    // Not without --resume: the file is kept as it was.
    let before = std::fs::read(&out).unwrap();
    let r = augur(&args);
    assert!(!r.status.success());
    assert!(text(&r.stderr).contains("--resume"), "{}", text(&r.stderr));
    assert_eq!(std::fs::read(&out).unwrap(), before);
    // An interrupted run's partial line is dropped, complete matrices are skipped.
    let mut cut = before.clone();
    cut.extend_from_slice(b"\"uniform:rows=9");
    std::fs::write(&out, &cut).unwrap();
    let mut resume = args.clone();
    resume.push("--resume");
    let r = augur(&resume);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let err = text(&r.stderr);
    assert!(
        err.contains("partial last line") && err.contains("4 already in"),
        "{err}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), before);
    // Another precision may not join the file.
    let mut other = resume.clone();
    other.extend(["--precision", "f64"]);
    let r = augur(&other);
    assert!(!r.status.success(), "{}", text(&r.stderr));
    assert!(
        text(&r.stderr).contains("one runs file per backend and precision"),
        "{}",
        text(&r.stderr)
    );
    assert_eq!(std::fs::read(&out).unwrap(), before);
    // Two shards merged hold the same matrices.
    let mut parts = Vec::new();
    for s in ["1/2", "2/2"] {
        let p = dir.join(format!("shard{}.csv", &s[..1]));
        let mut a = vec!["collect", "--reps", "1", "--warmup", "0", "--shard", s];
        let ps = p.to_str().unwrap().to_string();
        a.extend(["--out", ps.as_str()]);
        a.extend(specs);
        let r = augur(&a);
        assert!(r.status.success(), "{}", text(&r.stderr));
        assert_eq!(csv_matrices(&p).len(), 2);
        parts.push(ps);
    }
    let merged = dir.join("merged.csv");
    let r = augur(&[
        "collect",
        "merge",
        &parts[0],
        &parts[1],
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let mut a = csv_matrices(&merged);
    let mut b = csv_matrices(&out);
    a.sort();
    b.sort();
    assert_eq!(a, b);
    let r = augur(&["collect", "--shard", "3/2", "--out", o, "stencil2d:nx=5"]);
    assert!(!r.status.success() && text(&r.stderr).contains("1 <= I <= N"));
}

#[test]
fn train_export_eval_on_a_small_collection() {
    let dir = temp_dir("pipeline");
    let runs = dir.join("runs.csv");
    let specs = [
        "stencil2d:nx=30",
        "stencil2d:nx=60",
        "stencil3d:nx=12,points=27",
        "uniform:rows=2000,row_len=4",
        "uniform:rows=4000,row_len=32",
        "powerlaw:rows=3000,alpha=2.1,min=2",
        "rmat:scale=11,ef=8",
        "banded:n=3000,bw=8",
        "blockdiag:n=2000,block=16",
        "hubs:n=3000,hubs=2,short=3",
        "arrowhead:n=3000",
        "tall:rows=20000,cols=100,row_len=2",
        "wide:rows=50,cols=20000,row_len=400",
    ];
    let mut args = vec![
        "collect",
        "--reps",
        "3",
        "--iterations",
        "1,100",
        "--out",
        runs.to_str().unwrap(),
    ];
    args.extend(specs);
    let r = augur(&args);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let model = dir.join("model.json");
    let (rs, ms) = (runs.to_str().unwrap(), model.to_str().unwrap());
    let r = augur(&[
        "train",
        rs,
        "--out",
        ms,
        "--folds",
        "3",
        "--max-depth",
        "3",
        "--holdout",
        "0.3",
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let so = text(&r.stdout);
    assert!(
        so.contains("family-grouped 3-fold CV") && so.contains("chosen for gathered"),
        "{so}"
    );
    let r = augur(&["export", ms]);
    let t = text(&r.stdout);
    assert!(
        r.status.success()
            && t.contains("Which features pay for their cost?")
            && t.contains("samples, mean regret"),
        "{t}"
    );
    let r = augur(&["export", ms, "--format", "rust"]);
    assert!(
        text(&r.stdout).contains("pub fn select(f: &SpmvFeatures, iterations: u32) -> SpmvKernel")
    );
    let r = augur(&["export", ms, "--format", "dot"]);
    assert!(text(&r.stdout).starts_with("digraph augur"));
    let svg = dir.join("eval.svg");
    let r = augur(&[
        "eval",
        rs,
        "--model",
        ms,
        "--json",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    // The summary is what its samples say: the geomean of oracle / selected over every sample.
    let ratio = v["overall"]["oracle_ratio"].as_f64().unwrap();
    let samples = v["samples"].as_array().unwrap();
    assert_eq!(
        samples.len() as u64,
        v["overall"]["samples"].as_u64().unwrap()
    );
    let logs: f64 = samples
        .iter()
        .map(|s| (s["oracle_s"].as_f64().unwrap() / s["selected_s"].as_f64().unwrap()).ln())
        .sum();
    let geo = (logs / samples.len() as f64).exp();
    assert!((geo - ratio).abs() < 1e-9 * ratio, "{geo} vs {ratio}");
    assert_eq!(v["iterations"], serde_json::json!([1, 100]));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let r = augur(&["eval", rs, "--model", ms, "--rows", "all"]);
    assert!(text(&r.stdout).contains("nnz < 1e4"), "{}", text(&r.stdout));
    // Damaged inputs: a truncated model, a runs file of another schema.
    let half = dir.join("half.json");
    let m = std::fs::read_to_string(&model).unwrap();
    std::fs::write(&half, &m[..m.len() / 3]).unwrap();
    let r = augur(&["export", half.to_str().unwrap()]);
    assert!(
        !r.status.success() && text(&r.stderr).contains("half.json"),
        "{}",
        text(&r.stderr)
    );
    let other = dir.join("other.csv");
    let csv_text = std::fs::read_to_string(&runs)
        .unwrap()
        .replacen("f_nnz", "f_entries", 1);
    std::fs::write(&other, csv_text).unwrap();
    let r = augur(&["train", other.to_str().unwrap(), "--out", ms]);
    let e = text(&r.stderr);
    assert!(
        !r.status.success() && e.contains("other.csv:1:") && e.contains("f_entries"),
        "{e}"
    );
    assert_eq!(
        std::fs::read_to_string(&model).unwrap(),
        m,
        "a failed train keeps the old model"
    );
    // A model of another backend is refused by eval.
    let r = augur(&["eval", rs, "--model", "default-cuda"]);
    assert!(
        !r.status.success() && text(&r.stderr).contains("for the cuda backend"),
        "{}",
        text(&r.stderr)
    );
    // The attention-only options are refused, not ignored.
    let r = augur(&["eval", rs, "--model", ms, "--timing", "graph"]);
    assert!(
        !r.status.success()
            && text(&r.stderr).contains("--timing is for an attention model's evaluation"),
        "{}",
        text(&r.stderr)
    );
    // The built-in models export.
    let r = augur(&["export", "default-cuda"]);
    assert!(r.status.success() && text(&r.stdout).contains("cuda backend"));
}

#[test]
fn run_plans_explains_checks_and_reports() {
    let s = stdout_ok(&[
        "run",
        "stencil2d:nx=60",
        "--backend",
        "cpu",
        "--iterations",
        "20",
        "--explain",
        "--check",
    ]);
    contains_all(
        &s,
        &[
            "matrix    stencil2d:nx=60,ny=60,points=5: 3600 x 3600, 17760 nonzeros (f32)",
            "backend   cpu (",
            "chosen by model default-cpu",
            "features: ",
            " reached this leaf, mean regret ",
            "setup     ",
            "run       20 iterations: ",
            "check     y = A x: passed",
        ],
    );
    // One plan: its setup is said once.
    let setups = s
        .lines()
        .filter(|l| l.trim_start().starts_with("setup "))
        .count();
    assert_eq!(setups, 1, "{s}");
    // JSON, a forced kernel, f64, gathering always.
    let v = json_ok(&[
        "run",
        "powerlaw:rows=2000,alpha=1.8",
        "--backend",
        "cpu",
        "--iterations",
        "5",
        "--kernel",
        "nnz-balanced",
        "--precision",
        "f64",
        "--check",
        "--json",
    ]);
    assert_eq!(v["shards"][0]["decision"]["kernel"], "nnz-balanced");
    assert_eq!(v["shards"][0]["decision"]["forced"], true);
    assert_eq!(v["precision"], "f64");
    assert_eq!(v["check"][0]["passed"], true);
    assert!(v["per_iteration_s"].as_f64().unwrap() > 0.0);
    assert!(v["gb_per_s"].as_f64().unwrap() > 0.0);
    let v = json_ok(&[
        "run",
        "hubs:n=3000",
        "--backend",
        "cpu",
        "--gather",
        "always",
        "--json",
    ]);
    assert_eq!(v["shards"][0]["decision"]["gathered"], true);
}

#[test]
fn run_refuses_bad_requests_clearly() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "stencil2d:nx=10", "--backend", "cpu", "--gpus", "2"],
            "--gpus 2 needs --backend cuda",
        ),
        (
            vec![
                "run",
                "stencil2d:nx=10",
                "--backend",
                "cpu",
                "--kernel",
                "warp9",
            ],
            "unknown kernel `warp9`",
        ),
        (
            vec![
                "run",
                "stencil2d:nx=10",
                "--backend",
                "cpu",
                "--model",
                "default-cuda",
            ],
            "trained for backend `cuda`",
        ),
        (
            vec![
                "run",
                "stencil2d:nx=10",
                "--backend",
                "cpu",
                "--model",
                "/no/such/model.json",
            ],
            "/no/such/model.json",
        ),
        (vec!["run", "nosuchgen:n=3"], "nosuchgen"),
        (vec!["run", "stencil2d:nx=10", "--gpus", "0"], "--gpus"),
    ];
    for (args, want) in cases {
        let out = augur(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let e = text(&out.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
    }
    // More rows than i32 allows: refused by the reader, naming the file and line.
    let f = write_file(
        "huge-rows.mtx",
        b"%%MatrixMarket matrix coordinate real general\n3000000000 2 1\n1 1 1.0\n",
    );
    let out = augur(&["run", f.to_str().unwrap(), "--backend", "cpu"]);
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(e.contains("huge-rows.mtx:2"), "{e}");
    // Without a GPU, GPU runs say so.
    if !text(&augur(&["devices"]).stdout).contains("GPU 0") {
        for args in [
            vec!["run", "stencil2d:nx=10", "--gpus", "2"],
            vec!["run", "stencil2d:nx=10", "--backend", "cuda"],
        ] {
            let out = augur(&args);
            assert!(!out.status.success());
            let e = text(&out.stderr);
            assert!(e.contains("not available"), "{args:?}: {e}");
        }
    }
}

#[test]
fn bench_dispatch_reports_the_cached_plan_overhead() {
    let out = augur(&[
        "bench",
        "dispatch",
        "--backend",
        "cpu",
        "--calls",
        "50",
        "--blocks",
        "3",
        "stencil2d:nx=20",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    let mut rd = csv::Reader::from_reader(s.as_bytes());
    let head = rd.headers().unwrap().clone();
    assert!(s.starts_with("matrix,backend,device,kernel"), "{s}");
    let row = rd.records().next().unwrap().unwrap();
    let col = |name: &str| {
        let i = head.iter().position(|h| h == name).unwrap();
        row[i].to_string()
    };
    let num = |name: &str| col(name).parse::<f64>().unwrap();
    assert_eq!(col("matrix"), "stencil2d:nx=20,ny=20,points=5");
    assert_eq!(col("backend"), "cpu");
    // rows, nnz of the 20 x 20 5-point stencil; the times are positive; the overhead is the
    // median of paired block differences, reported with its noise, and called resolved only when
    // it stands out of that noise (a negative overhead within the noise is not a speed-up).
    assert_eq!((col("rows"), col("nnz")), ("400".into(), "1920".into()));
    let (lookup, bare, dispatched) = (num("lookup_ns"), num("bare_us"), num("dispatched_us"));
    assert!(lookup > 0.0 && bare > 0.0 && dispatched > 0.0, "{s}");
    let (over, noise) = (num("overhead_us"), num("noise_us"));
    assert!(over.is_finite() && noise >= 0.0, "{s}");
    assert_eq!(
        col("overhead_resolved"),
        (over.abs() > 2.0 * noise).to_string(),
        "{s}"
    );
}
