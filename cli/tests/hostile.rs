//! Hostile and careless use of the `augur` binary (issue 19): nothing the command reads is
//! overwritten, and files of another kind are replaced only when asked.

use std::process::{Command, Output};

use augur_tests::temp_dir;

/// A committed runs table (comm runs of two H200s) the tests copy and damage.
const COMM_RUNS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../bench/results/comm-model-h200-2026-11-22/train-runs.csv"
);

fn augur(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(args)
        .output()
        .unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `collect` with one quick CPU kernel, one sample, into `out`, then `rest`.
fn quick_collect<'a>(out: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "collect",
        "--reps",
        "1",
        "--warmup",
        "0",
        "--rounds",
        "1",
        "--kernel",
        "sequential",
        "--out",
        out,
    ];
    a.extend_from_slice(rest);
    a
}

/// `train --out`, `export --out` and `eval --csv/--svg` never replace one of the command's
/// inputs (also spelled another way), replace a runs table or a model only with --force, and
/// refuse a directory without leaving a temporary file.
#[test]
fn outputs_never_overwrite_inputs_or_other_kinds() {
    let dir = temp_dir("hostile-outputs");
    let committed = COMM_RUNS;
    let runs = dir.join("runs.csv");
    std::fs::copy(committed, &runs).unwrap();
    let original = std::fs::read(&runs).unwrap();
    let r = runs.to_str().unwrap();
    let model = dir.join("model.json");
    let m = model.to_str().unwrap();

    // A model written over its own runs file: refused, even with --force, the runs intact.
    for args in [
        vec!["train", r, "--out", r],
        vec!["train", r, "--out", r, "--force"],
    ] {
        let o = augur(&args);
        assert!(
            !o.status.success() && err(&o).contains("an input"),
            "{}",
            err(&o)
        );
    }
    let spelled = format!("{}/./runs.csv", dir.display());
    let o = augur(&["train", r, "--out", &spelled]);
    assert!(
        !o.status.success() && err(&o).contains("an input"),
        "{}",
        err(&o)
    );
    assert_eq!(std::fs::read(&runs).unwrap(), original);

    // A model may replace a model (retraining).
    let o = augur(&["train", r, "--out", m]);
    assert!(o.status.success(), "{}", err(&o));
    let o = augur(&["train", r, "--out", m]);
    assert!(o.status.success(), "{}", err(&o));
    let model_text = std::fs::read(&model).unwrap();

    // Export over the model it reads, or over a runs table: refused; a runs table with --force.
    let o = augur(&["export", m, "--out", m]);
    assert!(
        !o.status.success() && err(&o).contains("an input"),
        "{}",
        err(&o)
    );
    assert_eq!(std::fs::read(&model).unwrap(), model_text);
    let other_runs = dir.join("other-runs.csv");
    std::fs::copy(committed, &other_runs).unwrap();
    let o = augur(&["export", m, "--out", other_runs.to_str().unwrap()]);
    assert!(
        !o.status.success() && err(&o).contains("is a runs table") && err(&o).contains("--force"),
        "{}",
        err(&o)
    );
    assert_eq!(std::fs::read(&other_runs).unwrap(), original);
    let o = augur(&[
        "export",
        m,
        "--out",
        other_runs.to_str().unwrap(),
        "--force",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(std::fs::read_to_string(&other_runs)
        .unwrap()
        .contains("if "));

    // Eval's reports: never an input, a model only with --force.
    let o = augur(&["eval", r, "--model", m, "--csv", r]);
    assert!(
        !o.status.success() && err(&o).contains("an input"),
        "{}",
        err(&o)
    );
    let o = augur(&["eval", r, "--model", m, "--svg", m]);
    assert!(
        !o.status.success() && err(&o).contains("an input"),
        "{}",
        err(&o)
    );
    assert_eq!(std::fs::read(&runs).unwrap(), original);
    assert_eq!(std::fs::read(&model).unwrap(), model_text);

    // A directory as an output: a clear error naming it, and no temporary left beside it.
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let o = augur(&["export", m, "--out", sub.to_str().unwrap()]);
    assert!(
        !o.status.success() && err(&o).contains("is a directory") && err(&o).contains("sub"),
        "{}",
        err(&o)
    );
    let o = augur(&["train", r, "--out", sub.to_str().unwrap()]);
    assert!(!o.status.success() && err(&o).contains("is a directory"));
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Counts that would exhaust the machine are refused with the limit: more shards than rows (or
/// than MAX_SHARDS), and tens of thousands of worker threads.
#[test]
fn absurd_counts_are_refused_with_their_limit() {
    let o = augur(&["matrix", "shards", "--parts", "100000000", "stencil2d:nx=5"]);
    assert!(
        !o.status.success() && err(&o).contains("100000000 shards") && err(&o).contains("25 rows"),
        "{}",
        err(&o)
    );
    let o = augur(&["matrix", "shards", "--parts", "25", "stencil2d:nx=5"]);
    assert!(o.status.success(), "{}", err(&o));
    for n in ["100000", "0"] {
        let o = augur(&["--threads", n, "matrix", "info", "stencil2d:nx=5"]);
        assert!(
            !o.status.success() && err(&o).contains(&format!("--threads {n}: expected 1 to 1024")),
            "{}",
            err(&o)
        );
    }
    let o = augur(&["--threads", "2", "matrix", "info", "stencil2d:nx=5"]);
    assert!(o.status.success(), "{}", err(&o));
}

/// A runs file naming a kernel its backend does not have is refused before training.
#[test]
fn unknown_kernels_are_not_trained_in() {
    let dir = temp_dir("hostile-kernels");
    let committed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/runs/spmv-cpu-f32-vm.csv"
    );
    let text = std::fs::read_to_string(committed).unwrap();
    let runs = dir.join("runs.csv");
    std::fs::write(&runs, text.replacen(",sequential,ok,", ",sequental,ok,", 1)).unwrap();
    let model = dir.join("m.json");
    let o = augur(&[
        "train",
        runs.to_str().unwrap(),
        "--out",
        model.to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && err(&o).contains("kernel `sequental`") && err(&o).contains("cpu"),
        "{}",
        err(&o)
    );
    assert!(!model.exists());
}

/// Small things: zero iterations are refused; a seed takes the number forms counts take.
#[test]
fn zero_iterations_and_seed_forms() {
    let o = augur(&[
        "run",
        "stencil2d:nx=5",
        "--backend",
        "cpu",
        "--iterations",
        "0",
    ]);
    assert!(
        !o.status.success() && err(&o).contains("--iterations"),
        "{}",
        err(&o)
    );
    let info = |spec: &str| {
        let o = augur(&["matrix", "info", "--json", spec]);
        assert!(o.status.success(), "{spec}: {}", err(&o));
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v[0]["load"] = serde_json::Value::Null; // its time differs between runs
        v[0]["source"] = serde_json::Value::Null;
        v
    };
    // seed=1e3 is the matrix of seed=1000, not an error.
    assert_eq!(
        info("uniform:rows=100,row_len=4,seed=1e3"),
        info("uniform:rows=100,row_len=4,seed=1000")
    );
    let o = augur(&["matrix", "info", "uniform:rows=100,seed=1.5"]);
    assert!(
        !o.status.success() && err(&o).contains("seed=`1.5`"),
        "{}",
        err(&o)
    );
}

/// `--timeout` values that are not a usable number of seconds are refused by name (inf, NaN and
/// 1e30 panicked converting to a Duration); so are absurd `--jobs`.
#[test]
fn fetch_timeouts_and_jobs_are_checked() {
    for t in ["inf", "nan", "1e30", "5e18", "0", "-1"] {
        let flag = format!("--timeout={t}");
        for cmd in [
            vec!["datasets", "index", &flag],
            vec!["datasets", "fetch", "HB/1138_bus", &flag],
        ] {
            let o = augur(&cmd);
            let e = err(&o);
            assert!(
                !o.status.success() && e.contains("--timeout") && !e.contains("panicked"),
                "{cmd:?}: {e}"
            );
        }
    }
    let o = augur(&["datasets", "fetch", "HB/1138_bus", "--jobs", "100000"]);
    assert!(
        !o.status.success() && err(&o).contains("--jobs"),
        "{}",
        err(&o)
    );
}

/// A model file whose kernels are not the backend's is refused with its file named, before any
/// pick (it failed at the pick, without the file).
#[test]
fn a_model_with_foreign_kernels_names_its_file() {
    let dir = temp_dir("hostile-model-kernels");
    let shipped = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/trained/spmv-cpu-f32-vm.json"
    );
    let text = std::fs::read_to_string(shipped).unwrap();
    let model = dir.join("foreign.json");
    std::fs::write(&model, text.replace("\"sequential\"", "\"sequential2\"")).unwrap();
    let o = augur(&[
        "run",
        "stencil2d:nx=20",
        "--backend",
        "cpu",
        "--model",
        model.to_str().unwrap(),
    ]);
    let e = err(&o);
    assert!(
        !o.status.success() && e.contains("foreign.json") && e.contains("sequential2"),
        "{e}"
    );
}

/// Two files with one name in different folders are two matrices: both are collected, both stay
/// in the runs table, and `--resume` skips both (issue 19, item 7).
#[test]
fn same_named_files_in_two_folders_stay_two_matrices() {
    let dir = temp_dir("hostile-same-name");
    let (a, b) = (dir.join("a"), dir.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let write = |p: &std::path::Path, n: usize| {
        let mut s = format!("%%MatrixMarket matrix coordinate real general\n{n} {n} {n}\n");
        for i in 1..=n {
            s += &format!("{i} {} 1.5\n", (i % n) + 1);
        }
        std::fs::write(p, s).unwrap();
    };
    write(&a.join("foo.mtx"), 40);
    write(&b.join("foo.mtx"), 60);
    let out = dir.join("runs.csv");
    let (fa, fb) = (a.join("foo.mtx"), b.join("foo.mtx"));
    let args = quick_collect(
        out.to_str().unwrap(),
        &[fa.to_str().unwrap(), fb.to_str().unwrap()],
    );
    let o = augur(&args);
    assert!(o.status.success(), "{}", err(&o));
    assert!(err(&o).contains("2 matrices measured"), "{}", err(&o));
    let runs = augur_models::runs::Runs::read(std::slice::from_ref(&out)).unwrap();
    let mut sizes: Vec<usize> = runs.matrices.iter().map(|m| m.info.rows).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [40, 60], "both kept, under one name");
    assert!(runs.matrices.iter().all(|m| m.info.matrix == "foo"));
    let mut resume = args.clone();
    resume.push("--resume");
    let o = augur(&resume);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        err(&o).contains("0 matrices measured") && err(&o).contains("2 already in"),
        "{}",
        err(&o)
    );
}

/// A symbolic link loop is called what it is, each cause is printed once, and a runs file whose
/// header was cut short by an interrupted start is written again on --resume (issue 19, item 9).
#[test]
fn symlink_loops_single_causes_and_cut_headers() {
    let dir = temp_dir("hostile-item9");
    let link = dir.join("loop.mtx");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&link, &link).unwrap();
    let o = augur(&["matrix", "info", link.to_str().unwrap()]);
    let e = err(&o);
    assert!(!o.status.success());
    assert!(
        e.contains("symbolic link") && !e.contains("no such file"),
        "{e}"
    );
    let o = augur(&["matrix", "info", dir.join("absent.mtx").to_str().unwrap()]);
    let e = err(&o);
    assert_eq!(e.matches("not a generator spec").count(), 1, "{e}");

    let out = dir.join("runs.csv");
    let header = augur_models::runs::header().join(",");
    std::fs::write(&out, &header[..header.len() / 2]).unwrap();
    let o = augur(&quick_collect(
        out.to_str().unwrap(),
        &["--resume", "banded:n=50,bw=2"],
    ));
    assert!(o.status.success(), "{}", err(&o));
    assert!(err(&o).contains("cut short"), "{}", err(&o));
    let runs = augur_models::runs::Runs::read(&[out]).unwrap();
    assert_eq!(runs.matrices.len(), 1);
}

/// `augur overlap` refuses a kernel it does not have and a block count of zero before it looks
/// for a GPU, naming what was wrong.
#[test]
fn overlap_names_bad_kernels_and_block_counts_before_any_gpu() {
    let o = augur(&[
        "overlap",
        "gemm",
        "--kernels",
        "augur_tma_128x64",
        "64,64,64",
    ]);
    assert!(!o.status.success());
    let e = err(&o);
    assert!(e.contains("unknown GEMM kernel `augur_tma_128x64`"), "{e}");
    assert!(e.contains("augur_tma_auto"), "{e}");
    let o = augur(&[
        "overlap",
        "gemm",
        "--kernels",
        "augur_tma_128x256_k17",
        "64,64,64",
    ]);
    assert!(!o.status.success());
    assert!(err(&o).contains("augur_tma_128x256_k17"), "{}", err(&o));
    let o = augur(&["overlap", "arrive", "--blocks", "4,0", "64,64,64"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("--blocks"), "{}", err(&o));
    let o = augur(&["overlap", "tp", "--patterns", "bulk,fused", "512,64,64"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("pattern `fused`"), "{}", err(&o));
    // 768 rows over 2 GPUs are 384 each: not 5 pieces; N 72 over 4 GPUs is not a multiple of 8
    // (the all-gather cuts N; the reduce-scatter cuts K).
    let o = augur(&["overlap", "tp", "--patterns", "chunked:5", "768,64,64"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("384 rows per GPU do not split in 5"),
        "{}",
        err(&o)
    );
    let o = augur(&[
        "overlap",
        "tp",
        "--gpus",
        "4",
        "--patterns",
        "bulk",
        "512,72,64",
    ]);
    assert!(!o.status.success());
    assert!(err(&o).contains("split evenly"), "{}", err(&o));
    // The copy engines' patterns: pieces at most 64 for a push; pulls back to back only on 2 GPUs.
    let o = augur(&["overlap", "tp", "--patterns", "push:128", "1024,64,64"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("push:128: at most 64 pieces"),
        "{}",
        err(&o)
    );
    let o = augur(&[
        "overlap",
        "tp",
        "--gpus",
        "4",
        "--batch",
        "10",
        "--patterns",
        "pull:1",
        "512,64,64",
    ]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("--batch 10 with the pull patterns"),
        "{}",
        err(&o)
    );
    // Training on what is not an `augur overlap tp` CSV names the file, line and column.
    let dir = std::env::temp_dir().join(format!("augur-overlap-train-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("runs.csv");
    std::fs::write(&bad, "device,gpus,op\nX,two,all-gather\n").unwrap();
    let o = augur(&["overlap", "train", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("runs.csv:1") && err(&o).contains("no column `dtype`"),
        "{}",
        err(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs are read gzipped but written plain: `--out` ending in `.gz` is refused before anything is
/// measured or written (`collect`, `collect merge`, `collect attention`), naming the plain name
/// to use instead; a gzipped copy of a runs file merges like the file.
#[test]
fn runs_out_ending_in_gz_is_refused_and_gzipped_runs_merge() {
    use std::io::Write;
    let dir = temp_dir("hostile-gz-out");
    let committed = COMM_RUNS;
    let gz = dir.join("runs.csv.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&std::fs::read(committed).unwrap()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let out_gz = dir.join("out.csv.gz");
    let o = out_gz.to_str().unwrap();
    for args in [
        quick_collect(o, &["stencil2d:nx=20"]),
        vec!["collect", "merge", gz.to_str().unwrap(), "--out", o],
        vec!["collect", "attention", "--out", o],
    ] {
        let r = augur(&args);
        let e = err(&r);
        assert!(!r.status.success(), "{args:?}: {e}");
        assert!(
            e.contains("plain CSV") && e.contains("out.csv"),
            "{args:?}: {e}"
        );
        assert!(
            !out_gz.exists(),
            "{args:?}: {} was written",
            out_gz.display()
        );
    }
    let plain = dir.join("merged.csv");
    let r = augur(&[
        "collect",
        "merge",
        gz.to_str().unwrap(),
        "--out",
        plain.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", err(&r));
    assert_eq!(
        std::fs::read_to_string(&plain).unwrap().lines().count(),
        std::fs::read_to_string(committed).unwrap().lines().count()
    );
}
