//! Peak memory of the `augur` processes fed small hostile inputs (issue 19): each must stay a
//! small process, under 256 MiB, however much its input claims. Its own test binary, so that the
//! peak of this process's children (getrusage) is the peak of these runs alone.

use std::io::Write;
use std::process::Command;

use augur_tests::temp_dir;

/// The largest resident set of any child process waited for so far, in MiB.
fn children_peak_mib() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    assert_eq!(rc, 0);
    u.ru_maxrss as f64 / 1024.0 // kilobytes on Linux
}

#[test]
fn small_hostile_inputs_stay_small_processes() {
    let dir = temp_dir("hostile-memory");
    let huge_dims = dir.join("huge-dims.mtx");
    std::fs::write(
        &huge_dims,
        "%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 3\n1 1 1\n2 2 2\n3 3 3\n",
    )
    .unwrap();
    let rows_2e8 = dir.join("rows-2e8.mtx");
    std::fs::write(
        &rows_2e8,
        "%%MatrixMarket matrix coordinate real general\n200000000 5 3\n1 1 1\n2 2 2\n3 3 3\n",
    )
    .unwrap();
    // 256 MiB of NULs without a newline, gzipped to a few hundred KB.
    let nuls = dir.join("nuls.mtx.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&nuls).unwrap(),
        flate2::Compression::fast(),
    );
    let zeros = vec![0u8; 1 << 20];
    gz.write_all(b"%%MatrixMarket matrix coordinate real general\n%")
        .unwrap();
    for _ in 0..256 {
        gz.write_all(&zeros).unwrap();
    }
    gz.finish().unwrap();
    let index = dir.join("ssstats.csv");
    std::fs::write(&index, "1000000000000\n2026-01-01\n").unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec![
            "matrix".into(),
            "info".into(),
            huge_dims.display().to_string(),
        ],
        vec![
            "matrix".into(),
            "info".into(),
            rows_2e8.display().to_string(),
        ],
        vec!["matrix".into(), "info".into(), nuls.display().to_string()],
        vec![
            "matrix".into(),
            "info".into(),
            "uniform:rows=1e9,row_len=8".into(),
        ],
        vec!["matrix".into(), "info".into(), "banded:n=1e9,bw=1e9".into()],
        vec!["matrix".into(), "info".into(), "stencil3d:nx=1000".into()],
        vec![
            "datasets".into(),
            "list".into(),
            "--index".into(),
            index.display().to_string(),
        ],
    ];
    for args in &cases {
        let o = Command::new(env!("CARGO_BIN_EXE_augur"))
            .args(args)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{args:?} should be refused");
        let peak = children_peak_mib();
        assert!(
            peak < 256.0,
            "{args:?}: the peak resident set of augur reached {peak:.0} MiB"
        );
        eprintln!("{args:?}: refused; peak so far {peak:.1} MiB");
    }
}
