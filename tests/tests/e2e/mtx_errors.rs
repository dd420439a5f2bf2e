//! Every malformed input gives an error naming the file and line, never a panic.

use augur_datasets::{mtx, DatasetError};

use augur_tests::write_file;

/// Read `text` from a file; expect a Parse error at `line` whose message contains `needle`.
fn parse_error(name: &str, text: &str, line: u64, needle: &str) {
    let path = write_file(name, text.as_bytes());
    match mtx::read::<f64>(&path) {
        Err(e @ DatasetError::Parse { .. }) => {
            let DatasetError::Parse {
                path: p, line: l, ..
            } = &e
            else {
                unreachable!()
            };
            let msg = e.to_string();
            assert_eq!(p, &path);
            assert_eq!(*l, line, "line of `{msg}`");
            assert!(msg.contains(needle), "`{msg}` should mention `{needle}`");
            assert!(
                msg.starts_with(&format!("{}:{line}: ", path.display())),
                "`{msg}` names file:line"
            );
        }
        other => panic!("{name}: expected a parse error at line {line}, got {other:?}"),
    }
}

const BANNER: &str = "%%MatrixMarket matrix coordinate real general\n";

#[test]
fn empty_file() {
    parse_error("empty.mtx", "", 1, "empty file");
}

#[test]
fn bad_banner() {
    parse_error("b1.mtx", "3 3 1\n1 1 1.0\n", 1, "bad banner");
    parse_error(
        "b2.mtx",
        "%%MatrixMarket matrix coordinate real\n3 3 0\n",
        1,
        "bad banner",
    );
    parse_error(
        "b3.mtx",
        "%%MatrixMarket matrix coordinate float general\n",
        1,
        "unknown field",
    );
    parse_error(
        "b4.mtx",
        "%%MatrixMarket matrix coordinate real lower\n",
        1,
        "unknown symmetry",
    );
    parse_error(
        "b5.mtx",
        "%%MatrixMarket matrix sparse real general\n",
        1,
        "unknown format",
    );
}

#[test]
fn missing_size_line() {
    parse_error(
        "s1.mtx",
        &format!("{BANNER}% only comments\n\n"),
        3,
        "missing size line",
    );
    parse_error("s2.mtx", &format!("{BANNER}3 3\n"), 2, "bad size line");
    parse_error("s3.mtx", &format!("{BANNER}3 x 1\n"), 2, "cols `x`");
    parse_error("s4.mtx", &format!("{BANNER}3 -3 1\n"), 2, "cols `-3`");
    parse_error("s5.mtx", &format!("{BANNER}0 3 1\n1 1 1\n"), 2, "0 x 3");
}

#[test]
fn wrong_entry_count() {
    parse_error(
        "few.mtx",
        &format!("{BANNER}3 3 3\n1 1 1.0\n2 2 2.0\n"),
        4,
        "file ends after 2 of the 3 entries declared on line 2",
    );
    parse_error(
        "many.mtx",
        &format!("{BANNER}3 3 1\n1 1 1.0\n2 2 2.0\n"),
        4,
        "more entries than the 1 declared on line 2",
    );
}

#[test]
fn index_out_of_range_or_zero() {
    parse_error(
        "r.mtx",
        &format!("{BANNER}3 4 1\n4 1 1.0\n"),
        3,
        "row index 4 is out of range",
    );
    parse_error(
        "c.mtx",
        &format!("{BANNER}3 4 1\n1 5 1.0\n"),
        3,
        "column index 5 is out of range",
    );
    parse_error(
        "z.mtx",
        &format!("{BANNER}3 3 2\n1 1 1\n0 1 1.0\n"),
        4,
        "1-based",
    );
    parse_error(
        "n.mtx",
        &format!("{BANNER}3 3 1\n-1 1 1.0\n"),
        3,
        "not a positive integer",
    );
    parse_error(
        "h.mtx",
        &format!("{BANNER}3 3 1\n99999999999999999999999 1 1.0\n"),
        3,
        "row index",
    );
}

#[test]
fn non_numeric_value() {
    parse_error(
        "v.mtx",
        &format!("{BANNER}3 3 1\n1 1 abc\n"),
        3,
        "value `abc` is not a real number",
    );
    parse_error(
        "nan.mtx",
        &format!("{BANNER}3 3 1\n1 1 NaN\n"),
        3,
        "not finite",
    );
    parse_error(
        "i.mtx",
        "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n",
        3,
        "not a integer number",
    );
    parse_error(
        "f.mtx",
        &format!("{BANNER}3 3 1\n1 1\n"),
        3,
        "expected 3 fields",
    );
    parse_error(
        "g.mtx",
        &format!("{BANNER}3 3 1\n1 1 2.0 3.0\n"),
        3,
        "expected 3 fields",
    );
    parse_error(
        "p.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1.0\n",
        3,
        "expected 2 fields",
    );
}

#[test]
fn value_overflowing_f32_is_an_error_when_reading_as_f32() {
    let p = write_file(
        "o.mtx",
        format!("{BANNER}2 2 2\n1 1 1\n2 2 1e39\n").as_bytes(),
    );
    assert!(mtx::read::<f64>(&p).is_ok());
    match mtx::read::<f32>(&p) {
        Err(e @ DatasetError::Parse { line: 4, .. }) => {
            assert!(e.to_string().contains("overflows f32"))
        }
        other => panic!("expected an overflow error, got {other:?}"),
    }
}

#[test]
fn symmetric_must_be_square() {
    parse_error(
        "sq.mtx",
        "%%MatrixMarket matrix coordinate real symmetric\n% c\n3 4 1\n1 1 1\n",
        3,
        "must be square",
    );
}

#[test]
fn truncated_gzip() {
    let mut text = String::from(BANNER);
    text.push_str("2000 2000 20000\n");
    for k in 0..20000 {
        text.push_str(&format!("{} {} {}.25\n", k % 2000 + 1, k / 10 + 1, k));
    }
    let full = write_file("full.mtx.gz", text.as_bytes());
    assert_eq!(mtx::read::<f64>(&full).unwrap().matrix.nnz(), 20000);
    let bytes = std::fs::read(&full).unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 4, 12] {
        let p = full.with_file_name(format!("cut{cut}.mtx.gz"));
        std::fs::write(&p, &bytes[..cut]).unwrap();
        match mtx::read::<f64>(&p) {
            Err(e @ DatasetError::Read { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(&p.display().to_string()), "{msg}");
                assert!(msg.contains("truncated or corrupt"), "{msg}");
            }
            // A cut exactly at a line end inside the stream may also surface as too few entries.
            Err(e @ DatasetError::Parse { .. }) => {
                assert!(e.to_string().contains("file ends after"), "{e}")
            }
            other => panic!("cut at {cut}: expected an error, got {other:?}"),
        }
    }
    // A corrupted byte in the middle of the deflate stream.
    let mut bad = bytes.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xFF;
    let p = full.with_file_name("corrupt.mtx.gz");
    std::fs::write(&p, &bad).unwrap();
    assert!(
        mtx::read::<f64>(&p).is_err(),
        "a corrupt gzip stream must be an error"
    );
}

/// A byte-order mark, CR-only line endings and junk after a gzip stream are named for what they
/// are (issue 19, item 9), and CRLF line endings still read.
#[test]
fn bom_cr_only_and_junk_after_gzip_say_what_they_are() {
    parse_error(
        "bom.mtx",
        &format!("\u{feff}{BANNER}2 2 1\n1 1 1.5\n"),
        1,
        "byte-order mark",
    );
    parse_error(
        "cr.mtx",
        &format!("{BANNER}2 2 1\n1 1 1.5\n").replace('\n', "\r"),
        1,
        "CR alone",
    );
    let crlf = write_file(
        "crlf.mtx",
        format!("{BANNER}2 2 1\n1 1 1.5\n")
            .replace('\n', "\r\n")
            .as_bytes(),
    );
    assert_eq!(mtx::read::<f64>(&crlf).unwrap().matrix.nnz(), 1);
    let full = write_file(
        "junk.mtx.gz",
        format!("{BANNER}2 2 1\n1 1 1.5\n").as_bytes(),
    );
    let mut bytes = std::fs::read(&full).unwrap();
    bytes.extend_from_slice(b"JUNK APPENDED");
    std::fs::write(&full, &bytes).unwrap();
    match mtx::read::<f64>(&full) {
        Err(e @ DatasetError::Read { .. }) => {
            assert!(
                e.to_string().contains("after the end of the gzip stream"),
                "{e}"
            )
        }
        other => panic!("expected a read error, got {other:?}"),
    }
}

#[test]
fn sizes_beyond_i32() {
    for (size, what) in [
        ("2147483648 10 1", "rows"),
        ("10 2147483648 1", "cols"),
        ("10 10 2147483648", "nnz"),
    ] {
        let p = write_file("big.mtx", format!("{BANNER}{size}\n").as_bytes());
        match mtx::read::<f64>(&p) {
            Err(e @ DatasetError::TooLarge { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(what) && msg.contains("i32"), "{msg}");
                assert!(msg.contains(&format!("{}:2", p.display())), "{msg}");
            }
            other => panic!("{size}: expected TooLarge, got {other:?}"),
        }
    }
}

#[test]
fn complex_and_array_are_refused_clearly() {
    for (banner, needle) in [
        (
            "%%MatrixMarket matrix coordinate complex general",
            "complex",
        ),
        (
            "%%MatrixMarket matrix coordinate complex hermitian",
            "complex",
        ),
        ("%%MatrixMarket matrix array real general", "array"),
    ] {
        let p = write_file("c.mtx", format!("{banner}\n2 2 1\n1 1 1 0\n").as_bytes());
        match mtx::read::<f64>(&p) {
            Err(e @ DatasetError::Unsupported { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(needle) && msg.contains("not supported"),
                    "{msg}"
                );
                assert!(msg.contains(":1:"), "{msg} names line 1");
            }
            other => panic!("{banner}: expected Unsupported, got {other:?}"),
        }
    }
}

#[test]
fn missing_file() {
    let p = std::env::temp_dir().join("augur-no-such-file.mtx");
    match mtx::read::<f64>(&p) {
        Err(e @ DatasetError::Open { .. }) => assert!(e.to_string().contains("augur-no-such-file")),
        other => panic!("expected Open error, got {other:?}"),
    }
}

#[test]
fn binary_garbage_is_an_error_not_a_panic() {
    let mut junk: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let p = write_file("junk.mtx", &junk);
    assert!(mtx::read::<f64>(&p).is_err());
    junk.splice(0..0, BANNER.bytes().chain("5 5 3\n".bytes()));
    let p = write_file("junk2.mtx", &junk);
    assert!(mtx::read::<f64>(&p).is_err());
}

/// A line without a break (a gzip of megabytes of NULs, a binary file) is an error at that line
/// once it passes the cap, in the banner, a comment or the data, and the reader's memory stays
/// bounded by the cap, not by the file.
#[test]
fn endless_lines_are_errors_at_their_line() {
    let nuls = "\0".repeat(3 << 20);
    let cases = [
        ("nul-banner.mtx.gz", nuls.clone(), 1),
        ("nul-comment.mtx.gz", format!("{BANNER}%{nuls}"), 2),
        (
            "nul-data.mtx.gz",
            format!("{BANNER}3 3 2\n1 1 1\n{nuls}"),
            4,
        ),
        ("nul-data.mtx", format!("{BANNER}3 3 2\n1 1 1\n{nuls}"), 4),
    ];
    for (name, text, line) in cases {
        parse_error(name, &text, line, "longer than 1048576 bytes");
    }
    // A long but legal comment line is still read.
    let long = format!("{BANNER}%{}\n2 2 1\n1 2 3.5\n", "x".repeat(100_000));
    let p = write_file("long-comment.mtx", long.as_bytes());
    assert_eq!(mtx::read::<f64>(&p).unwrap().matrix.nnz(), 1);
}

/// A tiny file declaring billions of rows is refused at its size line, before anything of that
/// size is allocated; a sparse but plausible one (few rows per entry) is read.
#[test]
fn declared_sizes_far_beyond_the_entries_are_refused() {
    for size in ["2000000000 2000000000 3", "200000000 5 3", "5 300000000 3"] {
        let text = format!("{BANNER}{size}\n1 1 1\n2 2 2\n3 3 3\n");
        let t = std::time::Instant::now();
        parse_error(
            &format!("huge-{}.mtx", size.len()),
            &text,
            2,
            "rows or columns per entry",
        );
        assert!(t.elapsed().as_secs_f64() < 1.0, "{size}: {:?}", t.elapsed());
    }
    let ok = format!("{BANNER}10000000 10000000 3\n1 1 1\n2 2 2\n3 3 3\n");
    let p = write_file("sparse-ok.mtx", ok.as_bytes());
    assert_eq!(mtx::read::<f32>(&p).unwrap().matrix.rows(), 10_000_000);
}
