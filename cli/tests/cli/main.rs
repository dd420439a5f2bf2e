//! The `augur` binary, run as a user would (Cargo builds it for this test: CARGO_BIN_EXE_augur):
//! the helpers and the behaviour every command shares here, each domain's commands in a module.

use std::process::{Command, Output};

use augur_tests::{shared_dir, temp_dir, write_file};

mod attention;
mod comm;
mod datasets;
mod matrix;
mod overlap;
mod spmv;

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
