//! `augur datasets`: the catalogue, fetching (from a local mirror) and interruption.

use super::*;

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
