//! The SuiteSparse downloader against a real HTTP server on loopback (no internet): success,
//! resume after a cut connection, a corrupt archive, a wrong nnz, a 404, a slow server, a complex
//! matrix, then a re-run that skips what is verified and repairs what is not.

use std::time::Duration;

use augur_datasets::catalog::Catalog;
use augur_datasets::fetch::{fetch, matrix_path, FetchOptions, Outcome, Quiet};
use augur_datasets::generate::Generator;
use augur_datasets::manifest::read_manifest;
use augur_datasets::mtx;
use augur_tests::{mtx_archive, temp_dir, LoopbackServer, Serve};

/// Matrix Market text of a generated matrix and its (rows, cols, nonzeros).
fn mtx_text(spec: &str) -> (Vec<u8>, usize, usize, usize) {
    let a = Generator::parse(spec).unwrap().generate::<f64>().unwrap();
    let p = temp_dir("mtx").join("m.mtx");
    mtx::write(&p, &a).unwrap();
    let nonzero = a.data().iter().filter(|v| **v != 0.0).count();
    (std::fs::read(&p).unwrap(), a.rows(), a.cols(), nonzero)
}

fn index_line(name: &str, rows: usize, cols: usize, nnz: usize, real: bool) -> String {
    format!(
        "Test,{name},{rows},{cols},{nnz},{},0,0,0,0,0,test problem,{nnz}",
        u8::from(real)
    )
}

#[test]
fn fetch_against_a_loopback_server() {
    let (good, r1, c1, n1) = mtx_text("stencil2d:nx=20");
    let (cut, r2, c2, n2) = mtx_text("powerlaw:rows=3000,alpha=2.1,min=2,seed=4");
    let (wrong, r3, c3, n3) = mtx_text("banded:n=500,bw=3");
    let (slow, r4, c4, n4) = mtx_text("uniform:rows=300,row_len=4");
    let cut_archive = mtx_archive("cut", &cut);
    assert!(
        cut_archive.len() > 2000,
        "the cut must fall inside the body"
    );
    let lines = [
        index_line("good", r1, c1, n1, true),
        index_line("cut", r2, c2, n2, true),
        index_line("corrupt", 10, 10, 10, true),
        index_line("wrongnnz", r3, c3, n3 + 1, true),
        index_line("missing", 5, 5, 5, true),
        index_line("slow", r4, c4, n4, true),
        index_line("cplx", 5, 5, 5, false),
    ];
    let index = format!("{}\nrev\n{}\n", lines.len(), lines.join("\n"));
    let catalog = Catalog::parse(&index, "test index").unwrap();
    let mut garbage = mtx_archive("corrupt", b"x");
    let mid = garbage.len() / 2;
    for b in &mut garbage[mid..] {
        *b ^= 0x5a;
    }
    let server = LoopbackServer::start(vec![
        (
            "/MM/Test/good.tar.gz".into(),
            Serve::Ok(mtx_archive("good", &good)),
        ),
        (
            "/MM/Test/cut.tar.gz".into(),
            Serve::CutOnce(cut_archive, 1500),
        ),
        ("/MM/Test/corrupt.tar.gz".into(), Serve::Ok(garbage)),
        (
            "/MM/Test/wrongnnz.tar.gz".into(),
            Serve::Ok(mtx_archive("wrongnnz", &wrong)),
        ),
        (
            "/MM/Test/slow.tar.gz".into(),
            Serve::Slow(mtx_archive("slow", &slow), Duration::from_millis(1500)),
        ),
    ]);
    let dir = temp_dir("fetch");
    let opts = FetchOptions::new(&dir)
        .base_url(server.base_url.clone())
        .jobs(3)
        .retries(2)
        .backoff(Duration::from_millis(20))
        .timeout(Duration::from_millis(400))
        .gzip(true);
    let all: Vec<_> = catalog.entries.iter().collect();
    let out = fetch(&all, &opts, &Quiet).unwrap();
    let by = |name: &str| &out[catalog.entries.iter().position(|e| e.name == name).unwrap()];
    let failed = |name: &str| match by(name) {
        Outcome::Failed { error, attempts } => (error.clone(), *attempts),
        o => panic!("{name}: {o:?}"),
    };
    assert!(
        matches!(
            by("good"),
            Outcome::Fetched {
                attempts: 1,
                resumed_from: 0,
                ..
            }
        ),
        "{:?}",
        by("good")
    );
    // The cut connection is resumed where it stopped, with a range request.
    assert!(
        matches!(by("cut"), Outcome::Fetched { attempts: 2, .. }),
        "{:?}",
        by("cut")
    );
    assert_eq!(server.requests("/MM/Test/cut.tar.gz"), (2, 1));
    let (e, a) = failed("corrupt");
    assert!(e.contains("corrupt archive") && a == 3, "{e} after {a}");
    let (e, a) = failed("wrongnnz");
    assert!(
        e.contains("does not match the catalog")
            && e.contains(&format!("with {n3} nonzeros"))
            && a == 1,
        "{e}"
    );
    let (e, a) = failed("missing");
    assert!(e.contains("404") && a == 1, "{e}");
    let (e, a) = failed("slow");
    assert!(a == 3 && e.contains("gave up"), "{e} after {a}");
    let (e, a) = failed("cplx");
    assert!(e.contains("complex") && a == 0, "{e}");
    assert_eq!(server.requests("/MM/Test/cplx.tar.gz").0, 0);

    // Only verified matrices reach suitesparse/, nothing temporary is left, the manifest has them.
    let mut files: Vec<String> = std::fs::read_dir(dir.join("suitesparse"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["cut.mtx.gz", "good.mtx.gz"]);
    let leftovers: Vec<_> = std::fs::read_dir(dir.join(".partial"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n.starts_with("good") || n.starts_with("cut"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let m = read_manifest(dir.join("MANIFEST.tsv")).unwrap();
    assert_eq!(m.len(), 2);
    let g = m.iter().find(|x| x.name == "good").unwrap();
    assert_eq!(
        (g.rows, g.nnz_nonzero, g.family.as_str()),
        (r1, n1, "Test/good")
    );
    let back = mtx::read::<f64>(matrix_path(&dir, "good", true)).unwrap();
    assert_eq!(back.matrix.nnz(), n1);

    // A re-run skips what is there and verified; a damaged file is fetched again.
    let before = server.log.lock().unwrap().len();
    std::fs::write(matrix_path(&dir, "cut", true), b"damaged").unwrap();
    let two: Vec<_> = ["good", "cut"]
        .iter()
        .map(|n| catalog.find(n).unwrap())
        .collect();
    let out = fetch(&two, &opts, &Quiet).unwrap();
    assert!(
        matches!(out[0], Outcome::AlreadyThere { .. }),
        "{:?}",
        out[0]
    );
    assert!(matches!(out[1], Outcome::Fetched { .. }), "{:?}", out[1]);
    assert_eq!(server.log.lock().unwrap().len(), before + 1);
}

#[test]
fn a_partial_download_is_resumed_not_restarted() {
    let (text, r, c, n) = mtx_text("rmat:scale=10,ef=8");
    let archive = mtx_archive("part", &text);
    let index = format!("1\nrev\n{}\n", index_line("part", r, c, n, true));
    let catalog = Catalog::parse(&index, "idx").unwrap();
    let server = LoopbackServer::start(vec![(
        "/MM/Test/part.tar.gz".into(),
        Serve::Ok(archive.clone()),
    )]);
    let dir = temp_dir("resume");
    std::fs::create_dir_all(dir.join(".partial")).unwrap();
    let half = archive.len() / 2;
    std::fs::write(dir.join(".partial/part.tar.gz.part"), &archive[..half]).unwrap();
    let opts = FetchOptions::new(&dir).base_url(server.base_url.clone());
    let out = fetch(&[&catalog.entries[0]], &opts, &Quiet).unwrap();
    match &out[0] {
        Outcome::Fetched {
            resumed_from,
            bytes,
            ..
        } => {
            assert_eq!((*resumed_from, *bytes), (half as u64, archive.len() as u64));
        }
        o => panic!("{o:?}"),
    }
    assert_eq!(server.requests("/MM/Test/part.tar.gz"), (1, 1));
    assert!(matrix_path(&dir, "part", false).is_file());
}

/// A body far past the catalog's size estimate and an archive that expands past its cap are
/// stopped with errors that say so, leave no partial file, and are not retried (issue 19, item 5).
#[test]
fn oversized_bodies_and_decompression_bombs_are_stopped() {
    use augur_datasets::fetch::{body_cap, expansion_cap};
    let index = format!(
        "2\nrev\n{}\n{}\n",
        index_line("huge", 10, 10, 10, true),
        index_line("bomb", 10, 10, 10, true)
    );
    let catalog = Catalog::parse(&index, "idx").unwrap();
    let (huge, bomb) = (&catalog.entries[0], &catalog.entries[1]);
    // Incompressible bytes past the body cap; a gigantic run of spaces that gzips to little.
    let mut x = 0x2545f4914f6cdd1du64;
    let junk: Vec<u8> = (0..body_cap(huge) + (1 << 20))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let spaces = vec![b' '; (expansion_cap(bomb) + (4 << 20)) as usize];
    let bomb_archive = mtx_archive("bomb", &spaces);
    assert!(
        bomb_archive.len() < (1 << 20),
        "{} bytes",
        bomb_archive.len()
    );
    let server = LoopbackServer::start(vec![
        ("/MM/Test/huge.tar.gz".into(), Serve::Ok(junk)),
        ("/MM/Test/bomb.tar.gz".into(), Serve::Ok(bomb_archive)),
    ]);
    let dir = temp_dir("caps");
    let opts = FetchOptions::new(&dir)
        .base_url(server.base_url.clone())
        .retries(2)
        .backoff(Duration::from_millis(10));
    let out = fetch(&[huge, bomb], &opts, &Quiet).unwrap();
    for (o, needle) in out.iter().zip(["past the cap", "expands past"]) {
        match o {
            Outcome::Failed { error, attempts } => {
                assert!(error.contains(needle), "{error}");
                assert_eq!(*attempts, 1, "not retried: {error}");
            }
            o => panic!("{o:?}"),
        }
    }
    let left: Vec<_> = std::fs::read_dir(dir.join(".partial"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
