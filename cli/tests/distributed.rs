//! `augur distributed check` as separate processes on this host (issue 23: one process per GPU;
//! the rendezvous over loopback runs without GPUs).

use std::process::{Child, Command, Output, Stdio};

use augur_tests::temp_dir;

/// Launcher variables of the machine running the tests, which must not leak into the ranks.
const FOREIGN: [&str; 13] = [
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "MASTER_ADDR",
    "MASTER_PORT",
    "AUGUR_RENDEZVOUS",
];

/// `augur distributed check` with none of the machine's launcher variables.
fn check_command(timeout: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_augur"));
    c.args(["distributed", "check", "--timeout", timeout]);
    for k in FOREIGN {
        c.env_remove(k);
    }
    c
}

fn rank(r: usize, world: usize, meeting: &[(&str, String)], timeout: &str) -> Child {
    let mut c = check_command(timeout);
    c.env("RANK", r.to_string())
        .env("WORLD_SIZE", world.to_string())
        .env("LOCAL_RANK", r.to_string());
    for (k, v) in meeting {
        c.env(k, v);
    }
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A port free now and never handed to another test of this binary: the tests run in parallel,
/// and the system may give a port just released to the next bind, which would let one test's
/// ranks meet another test's rank 0.
fn free_port() -> String {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap();
    loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        if !given.contains(&p) {
            given.push(p);
            return p.to_string();
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn digest(o: &Output) -> String {
    let s = String::from_utf8_lossy(&o.stdout);
    s.split("digest ")
        .nth(1)
        .map(|d| d.trim().to_string())
        .unwrap_or_else(|| panic!("no digest in {s:?}"))
}

#[test]
fn ranks_in_separate_processes_meet_over_tcp_and_through_a_file() {
    let tcp = vec![
        ("MASTER_ADDR", "127.0.0.1".to_string()),
        ("MASTER_PORT", free_port()),
    ];
    let dir = temp_dir("distributed");
    let file = vec![(
        "AUGUR_RENDEZVOUS",
        format!("file:{}", dir.join("id").display()),
    )];
    for meeting in [tcp, file] {
        // Rank 0 last: the others wait for it.
        let kids: Vec<Child> = (0..3).rev().map(|r| rank(r, 3, &meeting, "60")).collect();
        let out: Vec<Output> = kids
            .into_iter()
            .map(|k| k.wait_with_output().unwrap())
            .collect();
        for o in &out {
            assert!(o.status.success(), "{}", text(o));
        }
        let d: Vec<String> = out.iter().map(digest).collect();
        assert!(d.iter().all(|x| x == &d[0]), "{d:?}");
        assert!(text(&out[2]).contains("rank 0 of 3 (local rank 0, torchrun)"));
    }
}

#[test]
fn a_rank_that_never_starts_is_named_and_nobody_hangs() {
    let meeting = vec![
        ("MASTER_ADDR", "127.0.0.1".to_string()),
        ("MASTER_PORT", free_port()),
    ];
    // World 3, rank 2 never launched: rank 0 gives up after its timeout, naming it; rank 1 got
    // the id and is done.
    let root = rank(0, 3, &meeting, "3");
    let one = rank(1, 3, &meeting, "30");
    let (root, one) = (
        root.wait_with_output().unwrap(),
        one.wait_with_output().unwrap(),
    );
    assert!(!root.status.success());
    assert!(
        text(&root).contains("rank 2 did not reach"),
        "{}",
        text(&root)
    );
    assert!(one.status.success(), "{}", text(&one));
    // A rank whose rank 0 never comes.
    let lone = rank(1, 2, &meeting, "1").wait_with_output().unwrap();
    assert!(!lone.status.success());
    assert!(
        text(&lone).contains("rank 1: rank 0 did not answer"),
        "{}",
        text(&lone)
    );
    // No launcher: says what to set.
    let o = check_command("60").output().unwrap();
    assert!(!o.status.success());
    assert!(text(&o).contains("no launcher set a rank"), "{}", text(&o));
}

/// `augur run --distributed` without a launcher says what to set; one rank of two whose partner
/// never comes is told which rank is missing after its timeout (the rendezvous precedes any
/// GPU work, so this runs without a GPU), and leaves no output behind.
#[test]
fn run_distributed_needs_a_launcher_and_names_a_missing_rank() {
    // `augur run --distributed` with none of the machine's launcher variables.
    let run = |extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_augur"));
        c.args([
            "run",
            "stencil2d:nx=20",
            "--distributed",
            "--iterations",
            "2",
        ])
        .args(extra);
        for k in FOREIGN {
            c.env_remove(k);
        }
        c
    };
    let o = run(&[]).output().unwrap();
    assert!(!o.status.success());
    let t = text(&o);
    assert!(
        t.contains("no launcher set a rank") && t.contains("RANK"),
        "{t}"
    );

    let port = free_port();
    let mut c = run(&["--timeout", "2", "--json"]);
    c.env("RANK", "0")
        .env("WORLD_SIZE", "2")
        .env("LOCAL_RANK", "0")
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", &port);
    let t0 = std::time::Instant::now();
    let o = c.output().unwrap();
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(o.stdout.is_empty(), "a report was printed: {t}");
    // Without libnccl (CI), the id cannot be made: said so, at once.
    if t.contains("libnccl") {
        return;
    }
    assert!(t.contains("rank 1"), "{t}");
    assert!(t0.elapsed().as_secs_f64() < 30.0);
}

/// Only rank 0 reads the matrix: another rank does not need the file (a multi-host launch may
/// have it on rank 0's host alone) and waits for rank 0 instead; rank 0, and every rank with
/// `--every-rank-loads`, names a file it cannot read.
#[test]
fn only_rank_0_needs_the_matrix_file() {
    let missing = temp_dir("rank-file").join("only-on-rank-0.mtx");
    let run = |rank: &str, extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_augur"));
        c.arg("run")
            .arg(&missing)
            .args(["--distributed", "--timeout", "2"])
            .args(extra);
        for k in FOREIGN {
            c.env_remove(k);
        }
        c.env("RANK", rank)
            .env("WORLD_SIZE", "2")
            .env("LOCAL_RANK", rank)
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", free_port());
        c.output().unwrap()
    };
    let named = |t: &str| t.contains("only-on-rank-0.mtx") && t.contains("no such file");
    let o = run("1", &[]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(!named(&t), "rank 1 refused the path itself: {t}");
    // Without libnccl (CI) the NCCL id cannot be shared; else rank 0 never answers.
    assert!(t.contains("libnccl") || t.contains("rank 0"), "{t}");
    for (rank, extra) in [("0", &[][..]), ("1", &["--every-rank-loads"][..])] {
        let o = run(rank, extra);
        let t = text(&o);
        assert!(
            !o.status.success() && named(&t),
            "rank {rank} {extra:?}: {t}"
        );
    }
}
