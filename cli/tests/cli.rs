//! The `augur` binary, run as a user would (Cargo builds it for this test: CARGO_BIN_EXE_augur).

use std::process::{Command, Output};

use augur_tests::{shared_dir, temp_dir, write_file};

fn augur(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(args)
        .output()
        .unwrap()
}

/// `collect merge` of a runs file with itself writes the same rows (duplicates replace).
fn merge_twice_keeps_the_rows(dir: &std::path::Path, runs: &str) {
    let merged = dir.join("merged.csv");
    let o = augur(&[
        "collect",
        "merge",
        runs,
        runs,
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(&merged).unwrap().lines().count(),
        read_text(runs).lines().count()
    );
}

/// A text file's contents, gunzipped when its name ends in `.gz` (the committed results are
/// gzipped; augur writes plain files).
fn read_text(path: &str) -> String {
    if !path.ends_with(".gz") {
        return std::fs::read_to_string(path).unwrap();
    }
    let mut s = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()),
        &mut s,
    )
    .unwrap();
    s
}

/// `augur collect` at one sample and no warm-up (quick; the timings are not what is tested) of
/// `inputs` into `out`.
fn quick_collect<'a>(out: &'a str, inputs: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["collect", "--reps", "1", "--warmup", "0", "--out", out];
    a.extend_from_slice(inputs);
    a
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The standard output of a run that must succeed.
fn stdout_ok(args: &[&str]) -> String {
    let out = augur(args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// The standard output of a run that must succeed, as JSON.
fn json_ok(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&stdout_ok(args)).unwrap()
}

/// Every one of `wants` is in `s`.
fn contains_all(s: &str, wants: &[&str]) {
    for want in wants {
        assert!(s.contains(want), "missing {want:?} in:\n{s}");
    }
}

#[test]
fn matrix_info_json_on_specs_and_files() {
    let f = write_file(
        "tiny.mtx",
        b"%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1\n1 4 2\n3 2 3\n",
    );
    let v = json_ok(&[
        "matrix",
        "info",
        "--json",
        "stencil2d:nx=10",
        f.to_str().unwrap(),
    ]);
    let a = v.as_array().unwrap();
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["name"], "stencil2d:nx=10,ny=10,points=5");
    assert_eq!(a[0]["nnz"], 460);
    assert_eq!(a[0]["row_len_max"], 5);
    assert_eq!(a[1]["name"], "tiny");
    assert_eq!(
        (a[1]["rows"].as_u64(), a[1]["cols"].as_u64()),
        (Some(3), Some(4))
    );
    assert_eq!(a[1]["empty_rows"], 1);
    assert_eq!(a[1]["load"]["header"]["symmetry"], "general");
    assert!(a[1]["text_mb_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn matrix_info_text_and_a_bad_file_among_good_ones() {
    let bad = write_file(
        "bad.mtx",
        b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n4 1 1\n",
    );
    let out = augur(&[
        "matrix",
        "info",
        "arrowhead:n=5",
        bad.to_str().unwrap(),
        "banded:n=9",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    // The good ones are still reported; the bad one names file and line.
    assert!(so.contains("arrowhead:n=5,seed=1: 5 x 5, nnz 13"), "{so}");
    assert!(so.contains("banded:n=9"), "{so}");
    assert!(
        se.contains(&format!("{}:4: row index 4 is out of range", bad.display())),
        "{se}"
    );
}

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
fn clear_errors_for_bad_arguments() {
    let out = augur(&["spmv", "rmat:scale=10,ef=3,foo=1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown parameter `foo`"),
        "{}",
        text(&out.stderr)
    );

    let out = augur(&["spmv", "--backend", "cuda", "stencil2d:nx=4"]);
    assert_eq!(out.status.code(), Some(2));
    let se = text(&out.stderr);
    assert!(se.contains("cuda") && se.contains("--backend cpu"), "{se}");

    let out = augur(&["spmv", "--kernel", "warp-magic", "stencil2d:nx=4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown kernel `warp-magic`"));

    let out = augur(&["matrix", "info", "/no/such/file.mtx"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/no/such/file.mtx"));
}

#[test]
fn matrix_write_then_info_round_trip() {
    let p = temp_dir("cli-write").join("g.mtx.gz");
    let out = augur(&[
        "matrix",
        "write",
        "blockdiag:n=50,block=7",
        p.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = augur(&["matrix", "info", "--json", p.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["nnz"], 7 * 49 + 1);
}

#[test]
fn features_csv_and_json() {
    let out = augur(&["features", "stencil2d:nx=20", "arrowhead:n=100"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let so = text(&out.stdout);
    let lines: Vec<&str> = so.lines().collect();
    assert_eq!(lines.len(), 3, "{so}");
    assert!(
        lines[0].starts_with("name,rows,cols,nnz,density,mean_row_len,"),
        "{so}"
    );
    assert!(
        lines[2].starts_with("\"arrowhead:n=100,seed=1\",100,100,298,"),
        "{so}"
    );
    let v = json_ok(&["features", "--json", "--known-only", "banded:n=50,bw=2"]);
    assert_eq!(v[0]["schema_version"], 3);
    assert_eq!(v[0]["features"]["rows"], 50.0);
    assert!(
        v[0]["features"]["row_len_max"].is_null(),
        "not gathered: {v}"
    );
    assert!(v[0]["cost"]["gathered_s"].is_null());
}

#[test]
fn features_of_shapes_and_schemas() {
    let out = augur(&[
        "features",
        "--kind",
        "attention",
        "attention:q_heads=16,kv_heads=2,lens=100*3",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let so = text(&out.stdout);
    assert!(
        so.starts_with("name,batch,q_heads,kv_heads,gqa_group,"),
        "{so}"
    );
    assert!(so.contains("\",3,16,2,8,128,2,1,100,"), "{so}");

    let out = augur(&[
        "features",
        "--kind",
        "message",
        "--json",
        "message:collective=all-reduce,bytes=1MiB,world=2",
        "message:collective=all-reduce,bytes=1MiB,world=2,link=infiniband",
    ]);
    assert_eq!(out.status.code(), Some(1), "one bad spec among good ones");
    assert!(text(&out.stderr).contains("link `infiniband`"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["features"]["bus_bytes"], 1048576.0);

    for (kind, version) in [("spmv", 3), ("attention", 1), ("message", 1)] {
        let v = json_ok(&["features", "--kind", kind, "--schema"]);
        assert_eq!(v["name"], kind);
        assert_eq!(v["version"], version);
        assert!(v["features"].as_array().unwrap().len() >= 16);
    }
}

#[test]
fn devices_lists_gpus_or_says_clearly_there_are_none() {
    let out = augur(&["devices"]);
    if out.status.success() {
        assert!(text(&out.stdout).contains("GPU 0:"));
    } else {
        assert_eq!(out.status.code(), Some(2));
        let se = text(&out.stderr);
        // `devices` has no --backend flag: no hint to use one.
        assert!(
            se.contains("no CUDA device")
                && se.contains("no GPUs to list")
                && !se.contains("--backend"),
            "{se}"
        );
        assert!(!se.contains("panicked"), "{se}");
        let out = augur(&["kernels", "build"]);
        let se = text(&out.stderr);
        assert!(
            se.contains("needs only NVRTC") && !se.contains("--backend"),
            "{se}"
        );
    }
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
fn datasets_list_fetch_then_collect_the_directory() {
    use augur_tests::{mtx_archive, LoopbackServer, Serve};
    // `list` on the shared index, offline.
    if let Some(shared) = shared_dir("datasets_list") {
        let idx = shared.join("ssstats.csv");
        let r = augur(&[
            "datasets",
            "list",
            "--index",
            idx.to_str().unwrap(),
            "--min-nnz",
            "1e5",
            "--kind",
            "circuit simulation problem",
            "--json",
        ]);
        assert!(r.status.success(), "{}", text(&r.stderr));
        let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
        let a = v.as_array().unwrap();
        assert!(!a.is_empty());
        for m in a {
            assert!(m["nnz"].as_u64().unwrap() >= 100_000);
            assert!(m["kind"]
                .as_str()
                .unwrap()
                .contains("circuit simulation problem"));
            assert!(m["estimated_download_bytes"].as_u64().unwrap() > 0);
        }
        let r = augur(&[
            "datasets",
            "list",
            "--index",
            idx.to_str().unwrap(),
            "HB/bcsstk16",
        ]);
        let t = text(&r.stdout);
        assert!(
            t.contains("HB/bcsstk16") && t.contains("1 of 2893 matrices"),
            "{t}"
        );
    }
    // `fetch` from a loopback server, then `collect` on the fetched directory.
    let dir = temp_dir("datasets");
    let mut lines = Vec::new();
    let mut routes = Vec::new();
    for (name, spec) in [
        ("alpha1", "stencil2d:nx=12"),
        ("alpha2", "stencil2d:nx=15"),
        ("beta", "banded:n=200,bw=2"),
    ] {
        let p = dir.join(format!("{name}.mtx"));
        let r = augur(&["matrix", "write", spec, p.to_str().unwrap()]);
        assert!(r.status.success(), "{}", text(&r.stderr));
        let info = augur(&["matrix", "info", "--json", p.to_str().unwrap()]);
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        let (rows, cols, nnz) = (
            v[0]["rows"].as_u64().unwrap(),
            v[0]["cols"].as_u64().unwrap(),
            v[0]["nnz"].as_u64().unwrap(),
        );
        lines.push(format!(
            "Grp,{name},{rows},{cols},{nnz},1,0,0,0,0,0,test problem,{nnz}"
        ));
        routes.push((
            format!("/MM/Grp/{name}.tar.gz"),
            Serve::Ok(mtx_archive(name, &std::fs::read(&p).unwrap())),
        ));
    }
    let index = dir.join("index.csv");
    std::fs::write(&index, format!("3\nrev\n{}\n", lines.join("\n"))).unwrap();
    let index_text = format!("3\nrev\n{}\n", lines.join("\n"));
    routes.push((
        "/files/ssstats.csv".into(),
        Serve::Ok(index_text.into_bytes()),
    ));
    let server = LoopbackServer::start(routes);
    // `index` caches the index; `list` then works from the cache with no --index and no server.
    let cache = dir.join("cache");
    let with_cache = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_augur"))
            .args(args)
            .env("AUGUR_CACHE_DIR", &cache)
            .output()
            .unwrap()
    };
    let r = with_cache(&["datasets", "list"]);
    assert!(!r.status.success() && text(&r.stderr).contains("augur datasets index"));
    let r = with_cache(&["datasets", "index", "--base-url", &server.base_url]);
    assert!(
        r.status.success() && text(&r.stdout).contains("3 matrices"),
        "{}",
        text(&r.stderr)
    );
    drop(server.routes.lock().unwrap().remove("/files/ssstats.csv"));
    let r = with_cache(&["datasets", "list", "--group", "grp"]);
    assert!(
        text(&r.stdout).contains("3 of 3 matrices"),
        "{}",
        text(&r.stdout)
    );
    let fetched = dir.join("fetched");
    let (i, f) = (index.to_str().unwrap(), fetched.to_str().unwrap());
    let fetch_args = [
        "datasets",
        "fetch",
        "--index",
        i,
        "--group",
        "Grp",
        "--dir",
        f,
        "--base-url",
        &server.base_url,
        "--gzip",
    ];
    // The first run fetches all three, the second finds them verified.
    let r = augur(&fetch_args);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(
        text(&r.stderr).contains("3 fetched, 0 already there, 0 failed"),
        "{}",
        text(&r.stderr)
    );
    let r = augur(&fetch_args);
    assert!(
        text(&r.stderr).contains("0 fetched, 3 already there"),
        "{}",
        text(&r.stderr)
    );
    let r = augur(&["datasets", "fetch", "--index", i, "nope", "--dir", f]);
    assert!(!r.status.success() && text(&r.stderr).contains("`nope` is not in the index"));
    // A fetched directory holds matrices: train says to collect first.
    let r = augur(&["train", f, "--out", dir.join("m.json").to_str().unwrap()]);
    assert!(
        !r.status.success() && text(&r.stderr).contains("holds matrices, not runs"),
        "{}",
        text(&r.stderr)
    );
    let runs = dir.join("runs.csv");
    let r = augur(&quick_collect(runs.to_str().unwrap(), &[f]));
    assert!(r.status.success(), "{}", text(&r.stderr));
    let mut rd = csv::Reader::from_path(&runs).unwrap();
    let mut fams: Vec<(String, String)> = rd
        .records()
        .map(|x| {
            let x = x.unwrap();
            (x.get(0).unwrap().to_string(), x.get(1).unwrap().to_string())
        })
        .collect();
    fams.dedup();
    assert_eq!(
        fams,
        [
            ("alpha1".to_string(), "Grp/alpha".to_string()),
            ("alpha2".to_string(), "Grp/alpha".to_string()),
            ("beta".to_string(), "Grp/beta".to_string())
        ]
    );
}

#[test]
fn ctrl_c_during_fetch_removes_temporaries_and_keeps_partial_downloads() {
    use augur_tests::{mtx_archive, LoopbackServer, Serve};
    let dir = temp_dir("sigint");
    let p = dir.join("m.mtx");
    assert!(
        augur(&["matrix", "write", "stencil2d:nx=10", p.to_str().unwrap()])
            .status
            .success()
    );
    let server = LoopbackServer::start(vec![(
        "/MM/Grp/m.tar.gz".into(),
        Serve::Slow(
            mtx_archive("m", &std::fs::read(&p).unwrap()),
            std::time::Duration::from_secs(20),
        ),
    )]);
    let index = dir.join("index.csv");
    std::fs::write(
        &index,
        "1\nrev\nGrp,m,100,100,460,1,0,0,0,0,0,test problem,460\n",
    )
    .unwrap();
    let out = dir.join("fetched");
    let child = Command::new(env!("CARGO_BIN_EXE_augur"))
        .args([
            "datasets",
            "fetch",
            "m",
            "--index",
            index.to_str().unwrap(),
            "--dir",
        ])
        .arg(&out)
        .args(["--base-url", &server.base_url])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the request is in flight, plant an extraction temporary, interrupt.
    let t = std::time::Instant::now();
    while server.requests("/MM/Grp/m.tar.gz").0 == 0 && t.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let tmp = out.join(".partial/other.mtx.tmp");
    std::fs::write(&tmp, b"half").unwrap();
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let r = child.wait_with_output().unwrap();
    assert_eq!(r.status.code(), Some(130), "{}", text(&r.stderr));
    assert!(
        text(&r.stderr).contains("interrupted"),
        "{}",
        text(&r.stderr)
    );
    assert!(!tmp.exists());
    assert!(out.join(".partial").is_dir());
    assert_eq!(
        std::fs::read_dir(out.join("suitesparse")).unwrap().count(),
        0
    );
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
            "training samples reached this leaf",
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

#[test]
fn matrix_shards_reports_halo_and_all_gather_volumes() {
    let out = augur(&[
        "matrix",
        "shards",
        "--csv",
        "--parts",
        "2",
        "stencil2d:nx=10",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "matrix,parts,rank,first_row,rows,nnz,halo_entries,allgather_entries\n\
         \"stencil2d:nx=10,ny=10,points=5\",2,0,0,50,230,10,50\n\
         \"stencil2d:nx=10,ny=10,points=5\",2,1,50,50,230,10,50\n"
    );
    let out = augur(&["matrix", "shards", "tall:rows=50,cols=20,nnz=100"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("square"),
        "{}",
        text(&out.stderr)
    );
}

/// Attention runs measured on an H200 (committed under bench/results): train, export, eval
/// (with FlashAttention-2 varlen and PyTorch SDPA beside, in two timing modes) and merge.
#[test]
fn attention_runs_train_export_eval_and_merge() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let res = format!("{root}/bench/results/attention-grid-h200-2026-11-24");
    let runs = format!("{res}/attention-runs.csv.gz");
    let baselines = format!("{res}/baselines.csv");
    let dir = temp_dir("attention-cli");
    let model = dir.join("attention.json");
    let m = model.to_str().unwrap();
    let o = augur(&["train", &runs, "--out", m]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(
        t.contains("attention model for") && t.contains("groups held out"),
        "{t}"
    );
    let o = augur(&["export", m]);
    let t = text(&o.stdout);
    assert!(
        t.contains("decode-attention schedule model") && t.contains("-> "),
        "{t}"
    );
    let o = augur(&["export", m, "--format", "rust"]);
    assert!(text(&o.stdout).contains("pub fn select(f: &AttentionFeatures)"));
    let csv = dir.join("shapes.csv");
    let eval = |extra: &[&str]| {
        let base: [&str; 6] = ["eval", &runs, "--model", m, "--baselines", &baselines];
        let o = augur(&[&base[..], extra].concat());
        assert!(o.status.success(), "{}", text(&o.stderr));
        o
    };
    let t = text(&eval(&["--csv", csv.to_str().unwrap()]).stdout);
    assert!(
        t.contains("held-out groups")
            && t.contains("throughput timing")
            && t.contains("x fa2_varlen")
            && t.contains("x sdpa"),
        "{t}"
    );
    // A working trainer lands near the oracle on its own grid (0.975 measured; a broken one,
    // e.g. labels shuffled, lands near the best single schedule's 0.78).
    let all: f64 = t
        .lines()
        .find(|l| l.starts_with("all "))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(all >= 0.9, "{t}");
    let shapes = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(shapes.lines().count(), 283);
    assert!(
        shapes
            .lines()
            .next()
            .unwrap()
            .contains(",fa2_varlen_us,sdpa_us,"),
        "{shapes}"
    );
    // The graph mode compares graph figures on both sides: FlashAttention-2 varlen without
    // PyTorch's per-call host time is nearer augur's pick than in throughput mode.
    let geo = |timing: &str| -> f64 {
        let o = eval(&["--timing", timing, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["summary"][0]["vs_baselines"]["fa2_varlen"]["geomean"]
            .as_f64()
            .unwrap()
    };
    let (tp, graph) = (geo("throughput"), geo("graph"));
    assert!(graph < tp && graph > 1.0, "{graph} {tp}");
    let o = augur(&["eval", &runs, "--model", m, "--timing", "wall"]);
    assert!(!o.status.success() && text(&o.stderr).contains("timing `wall`"));
    // Runs of the first format (one per-launch figure) are refused with what to do.
    let old =
        format!("{root}/bench/results/attention-grid-h200-2026-11-22-w3/attention-runs.csv.gz");
    let o = augur(&["train", &old, "--out", m]);
    let e = text(&o.stderr);
    assert!(
        !o.status.success() && e.contains("format 1") && e.contains("re-run"),
        "{e}"
    );
    // So are SDPA-only files of the old script as baselines.
    let sdpa = format!("{root}/bench/results/attention-grid-h200-2026-11-22-w3/sdpa.csv");
    let o = augur(&["eval", &runs, "--model", m, "--baselines", &sdpa]);
    let e = text(&o.stderr);
    assert!(!o.status.success() && e.contains("baselines script"), "{e}");
    merge_twice_keeps_the_rows(&dir, &runs);
    // A damaged row names its file and line.
    let bad = dir.join("bad.csv");
    let damaged: Vec<String> = read_text(&runs)
        .lines()
        .take(4)
        .enumerate()
        .map(|(i, l)| {
            if i == 3 {
                l.replacen(",ok,", ",okay,", 1)
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&bad, damaged.join("\n") + "\n").unwrap();
    let o = augur(&["train", bad.to_str().unwrap(), "--out", m]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("bad.csv:4"), "{}", text(&o.stderr));
}

/// Comm runs measured on H200s (committed under bench/results): train, export, eval and merge
/// work on them like on SpMV runs.
#[test]
fn comm_runs_train_export_eval_and_merge() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let runs = format!("{root}/bench/results/comm-model-h200-2026-11-22/train-runs.csv");
    let dir = temp_dir("comm-cli");
    let model = dir.join("comm.json");
    let m = model.to_str().unwrap();
    let o = augur(&["train", &runs, "--out", m]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(
        t.contains("all-reduce: patterns") && t.contains("all-gather: patterns"),
        "{t}"
    );
    let o = augur(&["export", m]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(
        t.contains("if world_size < 3:") && t.contains("if bytes < "),
        "{t}"
    );
    let o = augur(&["export", m, "--format", "rust"]);
    assert!(text(&o.stdout).contains("pub fn select(f: &MessageFeatures)"));
    let o = augur(&["export", m, "--format", "dot"]);
    assert!(text(&o.stdout).starts_with("digraph"));
    let svg = dir.join("busbw.svg");
    let csv = dir.join("messages.csv");
    let o = augur(&[
        "eval",
        &runs,
        "--model",
        m,
        "--svg",
        svg.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(
        t.contains("all, unseen sizes") && t.contains("x NCCL"),
        "{t}"
    );
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    assert!(dir.join("busbw-bf16.svg").is_file());
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .starts_with("collective,dtype,world,bytes,unseen,selected,oracle,rule"));
    let o = augur(&["eval", &runs, "--model", m, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Values of the committed H200 runs: a working trainer lands within 1% of the per-size
    // oracle on the sizes it did not see (0.9965 measured) and at about half of NCCL's latency
    // for small messages (0.51); a broken one (labels shuffled, NCCL always) does not.
    let unseen = v["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "all, unseen sizes")
        .unwrap();
    assert_eq!(unseen["messages"], 160);
    assert!(unseen["oracle_ratio"].as_f64().unwrap() >= 0.99, "{unseen}");
    assert!(
        unseen["small_latency_vs_nccl"][0].as_f64().unwrap() < 0.6,
        "{unseen}"
    );
    merge_twice_keeps_the_rows(&dir, &runs);
    // A damaged row is an error naming the file and line.
    let bad = dir.join("bad.csv");
    let mut lines: Vec<String> = std::fs::read_to_string(&runs)
        .unwrap()
        .lines()
        .take(5)
        .map(String::from)
        .collect();
    lines[4] = lines[4].replacen("all-reduce,", "all-shuffle,", 1);
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let o = augur(&["train", bad.to_str().unwrap(), "--out", m]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains("bad.csv:5") && e.contains("all-shuffle"), "{e}");
}

#[test]
fn collect_comm_says_clearly_what_is_wrong() {
    let dir = temp_dir("comm-collect");
    let out = dir.join("c.csv");
    let o = augur(&[
        "collect",
        "comm",
        "--gpus",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("at least 2 GPUs"),
        "{}",
        text(&o.stderr)
    );
    let o = augur(&[
        "collect",
        "comm",
        "--sizes",
        "1KiB..zz",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        text(&o.stderr).contains("`zz` is not a byte count"),
        "{}",
        text(&o.stderr)
    );
    let o = augur(&[
        "collect",
        "comm",
        "--patterns",
        "ring",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        text(&o.stderr).contains("`ring` is not known"),
        "{}",
        text(&o.stderr)
    );
    if augur_kernels::cuda::available().is_err() {
        let o = augur(&["collect", "comm", "--out", out.to_str().unwrap()]);
        assert!(!o.status.success());
        let e = text(&o.stderr);
        assert!(
            e.contains("not available") && !e.contains("panicked"),
            "{e}"
        );
        // No `--backend cpu` hint for commands that have no CPU backend.
        assert!(
            e.contains("runs on CUDA GPUs only") && !e.contains("--backend cpu"),
            "{e}"
        );
        for args in [
            &["attention", "check"][..],
            &["collect", "attention", "--out", out.to_str().unwrap()][..],
        ] {
            let o = augur(args);
            assert!(!o.status.success());
            let e = text(&o.stderr);
            assert!(
                e.contains("runs on CUDA GPUs only") && !e.contains("--backend cpu"),
                "{e}"
            );
        }
        assert!(!out.exists(), "no runs file is created without a GPU");
    }
}

/// Output into a pipe closed early (`augur ... | head`) ends the process quietly (SIGPIPE), not
/// with a panic.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let res = format!("{root}/bench/results/attention-grid-h200-2026-11-24");
    let mut child = Command::new(env!("CARGO_BIN_EXE_augur"))
        .args([
            "eval",
            &format!("{res}/attention-runs.csv.gz"),
            "--model",
            &format!("{root}/models/trained/attention-h200.json"),
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read a little of the JSON (well over a pipe buffer in all), then close the pipe.
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.signal(), Some(libc_sigpipe()), "{status:?}");
}

#[cfg(unix)]
fn libc_sigpipe() -> i32 {
    13 // SIGPIPE on Linux and the BSDs
}

/// `augur matrix --help` lists every generator with its parameters (the top help points there).
#[test]
fn matrix_help_lists_every_generator() {
    let out = augur(&["matrix", "--help"]);
    assert!(out.status.success());
    let t = text(&out.stdout);
    for kind in augur_datasets::generate::KINDS {
        assert!(t.contains(kind), "`{kind}` missing from:\n{t}");
    }
    assert!(t.contains("order natural|random|rcm"), "{t}");
}

/// An input augur does not read by design (complex values) is reported and skipped with exit 0 by
/// `spmv`, `features`, `collect` and `check` alike; a malformed one is a failure (exit 1).
#[test]
fn skipped_by_design_is_not_failure_and_exit_codes_agree() {
    let complex = write_file(
        "complex.mtx",
        b"%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1.0 2.0\n",
    );
    let broken = write_file(
        "broken-exit.mtx",
        b"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n",
    );
    let c = complex.to_str().unwrap();
    let b = broken.to_str().unwrap();
    let dir = temp_dir("exit-codes");
    let runs = dir.join("runs.csv");
    let r = runs.to_str().unwrap();
    for args in [
        vec!["spmv", "--csv", "stencil2d:nx=8", c],
        vec!["features", "stencil2d:nx=8", c],
        vec!["check", "stencil2d:nx=8", c],
        quick_collect(r, &["stencil2d:nx=8", c]),
    ] {
        let out = augur(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("skipping"),
            "{}",
            text(&out.stderr)
        );
    }
    for args in [
        vec!["spmv", "--csv", b],
        vec!["features", b],
        vec!["check", b],
    ] {
        let out = augur(&args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = augur(&["--help"]);
    assert!(text(&out.stdout).contains("Exit codes: 0"));
}

/// `attention plan` (offline, the built-in model) names the shape in the words of its spec and
/// rounds the numbers of its reasons as `export` does.
#[test]
fn attention_plan_reads_like_its_spec() {
    let s = stdout_ok(&[
        "attention",
        "plan",
        "attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=32000;64*63",
        "attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=4096,page=16",
    ]);
    contains_all(
        &s,
        &[
            "dtype=bf16, 64 sequences, contiguous KV",
            "1 sequence, paged KV (16 tokens a page)",
            "because ",
        ],
    );
    assert!(!s.contains("Bf16") && !s.contains("Contiguous"), "{s}");
    // No number with more than 4 decimals.
    for w in s.split_whitespace() {
        if let Some((_, frac)) = w.split_once('.') {
            if w.parse::<f64>().is_ok() {
                assert!(frac.len() <= 4, "`{w}` in:\n{s}");
            }
        }
    }
}

/// Every built-in model is reachable by name in `export` (and `eval`), not only the SpMV ones.
#[test]
fn built_in_comm_and_attention_models_export_by_name() {
    for (name, want) in [
        ("default-comm", "communication-pattern model"),
        ("default-attention", "decode-attention schedule model"),
        ("default-cuda-h200", "NVIDIA H200"),
        ("default-overlap", "overlap-pattern model"),
    ] {
        let out = augur(&["export", name]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains(want), "{name}");
    }
    let out = augur(&["export", "default-overlap", "--format", "rust"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("pub fn select(f: &OverlapFeatures) -> Option<OverlapPattern>")
    );
}

/// `augur overlap gemm-plan` (no GPU): the TMA GEMM's kernel per shape and the rule that took
/// it; a bad shape is refused naming it.
#[test]
fn overlap_gemm_plan_says_which_kernel_and_why_without_a_gpu() {
    let o = stdout_ok(&[
        "overlap",
        "gemm-plan",
        "16,4096,4096",
        "2048,1536,4096",
        "2560,5120,3584",
    ]);
    contains_all(
        &o,
        &[
            "16x4096x4096 on 132 SMs: augur_tma_swap_32x128_k",
            "    operands swapped: M 16 <= 64",
            "2048x1536x4096 on 132 SMs: augur_tma_128x192 (",
            "128 x 192: 128 tiles, k in 1:",
            "2560x5120x3584 on 132 SMs: augur_tma_128x256_t8 (",
            "    tail split taken: 128 x 256",
        ],
    );
    let o = stdout_ok(&["overlap", "gemm-plan", "--sms", "114", "2048,1536,4096"]);
    assert!(o.starts_with("2048x1536x4096 on 114 SMs: "), "{o}");
    // The largest shape a GEMM takes is estimated, not an overflow.
    let o = stdout_ok(&["overlap", "gemm-plan", "2147483640,2147483640,131072"]);
    assert!(o.contains(" us estimated)"), "{o}");
    let out = augur(&["overlap", "gemm-plan", "2048,1536"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("2048,1536"),
        "{}",
        text(&out.stderr)
    );
    let out = augur(&["overlap", "gemm-plan", "--sms", "0", "16,16,16"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `augur overlap plan` (no GPU): the built-in model's pick per layer with the tree's path; a
/// layer that does not cut evenly and a model of another domain are refused, naming why.
#[test]
fn overlap_plan_picks_and_explains_without_a_gpu() {
    let out = augur(&[
        "overlap",
        "plan",
        "--gpus",
        "4",
        "16384,10240,8192",
        "16,6144,4096",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    let first = o.lines().next().unwrap();
    assert!(
        first.starts_with("all-gather+gemm 16384x10240x8192 on 4 GPUs: "),
        "{o}"
    );
    assert!(!first.ends_with(": bulk"), "{o}");
    // A 16-token layer: bulk with augur's LL collective (bench/results/ll-bulk-h200-2026-11-28/).
    assert!(
        o.contains("all-gather+gemm 16x6144x4096 on 4 GPUs: ll-bulk"),
        "{o}"
    );
    assert!(
        o.contains("gemm+reduce-scatter 16x6144x4096 on 4 GPUs: ll-bulk"),
        "{o}"
    );
    assert!(o.contains("    m = 16 < "), "{o}");
    let out = augur(&["overlap", "plan", "--gpus", "4", "8190,6144,4096"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("M and N must split evenly"),
        "{}",
        text(&out.stderr)
    );
    let out = augur(&[
        "overlap",
        "plan",
        "--model",
        "default-comm",
        "8192,6144,4096",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("a comm model, not an overlap one"));
}

/// `augur eval` of the built-in overlap model on `augur overlap tp` rows: the layers of weights
/// it was trained on are left out unless `--rows all`; options of other domains are refused.
#[test]
fn overlap_eval_leaves_out_the_weights_the_model_saw() {
    let mut t = String::from("device,gpus,op,dtype,m,n,k,pattern,passed,us\n");
    // N 6144, K 4096 is in the built-in model's training set; N 9600, K 3000 is not. At M 16
    // ll-bulk (the model's pick) is the fastest; at M 8192 push:1 beats the pick (pc-push:1:8).
    for (n, k) in [(6144, 4096), (9600, 3000)] {
        for (m, times) in [
            (
                16,
                [("bulk", 20.0), ("ll-bulk", 15.0), ("pc-push:1:8", 30.0)],
            ),
            (
                8192,
                [("bulk", 300.0), ("ll-bulk", 400.0), ("pc-push:1:8", 250.0)],
            ),
        ] {
            for (p, us) in times {
                t.push_str(&format!(
                    "NVIDIA H200,4,all-gather+gemm,bf16,{m},{n},{k},{p},true,{us}\n"
                ));
            }
            t.push_str(&format!(
                "NVIDIA H200,4,all-gather+gemm,bf16,{m},{n},{k},push:1,true,200\n"
            ));
        }
    }
    let runs = write_file("overlap-eval-tp.csv", t.as_bytes());
    let runs = runs.to_str().unwrap();
    let csv = temp_dir("overlap-eval").join("layers.csv");
    let out = augur(&[
        "eval",
        runs,
        "--model",
        "default-overlap",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.contains("on 2 layers (weights it was not trained on)"),
        "{o}"
    );
    assert!(
        o.contains("2 layers of weights (N, K) the model was trained on left out"),
        "{o}"
    );
    // M 16: ll-bulk, the oracle (1.000); M 8192: pc-push:1:8 at 250 us against push:1's 200.
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 3, "{rows}");
    assert!(
        rows.contains(",16,9600,3000,ll-bulk,15.000,ll-bulk,15.000,20.000,"),
        "{rows}"
    );
    assert!(
        rows.contains(",8192,9600,3000,pc-push:1:8,250.000,push:1,200.000,300.000,"),
        "{rows}"
    );
    let j = json_ok(&[
        "eval",
        runs,
        "--model",
        "default-overlap",
        "--rows",
        "all",
        "--json",
    ]);
    assert_eq!(j["layers"].as_array().unwrap().len(), 4, "{j}");
    for flag in ["--iterations", "--timing"] {
        let out = augur(&["eval", runs, "--model", "default-overlap", flag, "1"]);
        assert_eq!(out.status.code(), Some(2));
        let e = text(&out.stderr);
        assert!(
            e.contains(&format!("{flag} is not for an overlap model")),
            "{e}"
        );
    }
}

#[test]
fn overlap_run_refuses_bad_requests_before_looking_for_gpus() {
    // Each is said before any GPU is looked for: the same error on a machine with GPUs or none.
    for (args, want) in [
        (
            vec!["--pattern", "pc-reduce:2:8"],
            "pc-reduce:2:8: for the GEMM + reduce-scatter only",
        ),
        (vec!["--pattern", "gemm"], "a part of a layer"),
        (vec!["--pattern", "fused"], "pattern `fused`"),
        (vec!["--gpus", "4", "8190,6144,4096"], "8190"),
        (vec!["--gpus", "0"], "at least 1"),
    ] {
        let mut a = vec!["overlap", "run"];
        a.extend(args.iter().copied());
        let out = augur(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// The README's library example is `selector/examples/readme.rs` word for word (CI runs the
/// example, so the README's code compiles and works).
#[test]
fn readme_library_example_is_the_example_ci_runs() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let example = std::fs::read_to_string(format!("{root}/selector/examples/readme.rs")).unwrap();
    let at = readme.find("### Using augur from a program").unwrap();
    let start = readme[at..].find("```rust\n").unwrap() + at + "```rust\n".len();
    let end = readme[start..].find("\n```").unwrap() + start;
    assert_eq!(
        &readme[start..end],
        example.trim_end(),
        "README and the example differ"
    );
}

/// `augur comm plan` asks the built-in comm model offline, as `attention plan` does for
/// attention: the pattern per message and the path through its tree.
#[test]
fn comm_plan_answers_offline_with_its_reasons() {
    let s = stdout_ok(&[
        "comm",
        "plan",
        "message:collective=all-gather,bytes=4KiB,world=2",
        "message:collective=all-reduce,bytes=256MiB,world=4",
    ]);
    assert_eq!(s.matches("pattern   ").count(), 2, "{s}");
    contains_all(&s, &["(model for NVIDIA H200)", "because bus_bytes = "]);
    let out = augur(&[
        "comm",
        "plan",
        "message:collective=broadcast,bytes=4KiB,world=2",
    ]);
    assert!(!out.status.success());
}

/// `--backend hip` everywhere it exists: on these machines (no AMD GPU, maybe no ROCm) a clear
/// "not available" naming what is missing, exit code 2, never a panic.
#[test]
fn hip_backend_without_an_amd_gpu_says_what_is_missing() {
    for args in [
        vec!["check", "--backend", "hip"],
        vec!["run", "stencil2d:nx=10", "--backend", "hip"],
        vec!["bench", "spmv", "stencil2d:nx=10", "--backend", "hip"],
        vec!["bench", "dispatch", "stencil2d:nx=10", "--backend", "hip"],
    ] {
        let out = augur(&args);
        let se = text(&out.stderr);
        if out.status.success() {
            // A machine with an AMD GPU: the command ran.
            continue;
        }
        assert_eq!(out.status.code(), Some(2), "{args:?}: {se}");
        assert!(
            se.contains("backend `hip` is not available")
                && (se.contains("libamdhip64") || se.contains("no AMD GPU")),
            "{args:?}: {se}"
        );
        assert!(!se.contains("panicked"), "{args:?}: {se}");
    }
    let out = augur(&[
        "collect",
        "--backend",
        "hip",
        "--out",
        "/nonexistent/x.csv",
        "stencil2d:nx=10",
    ]);
    assert!(!text(&out.stderr).contains("panicked"));
}
