//! Helpers shared by augur's end-to-end tests (`tests/e2e/`) and the CLI tests of the `augur`
//! package (`selector/tests/cli.rs`, which needs Cargo to build the `augur` binary beside it).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use augur_datasets::manifest::{read_manifest, ManifestEntry};

/// The shared matrices folder, or None after printing why the caller skips.
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("AUGUR_SHARED_MATRICES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/matrices"));
    if dir.join("MANIFEST.tsv").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED {test}: no shared matrices at {} (set AUGUR_SHARED_MATRICES)",
            dir.display()
        );
        None
    }
}

pub fn manifest(dir: &Path) -> Vec<ManifestEntry> {
    let m = read_manifest(dir.join("MANIFEST.tsv")).expect("manifest parses");
    assert_eq!(m.len(), 139, "the shared manifest lists 139 matrices");
    m
}

/// A fresh empty folder under the system temp dir.
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "augur-test-{}-{}-{}",
        std::process::id(),
        tag,
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Write `text` to `name` in a fresh temp folder (gzip-compressed when `name` ends in `.gz`).
pub fn write_file(name: &str, text: &[u8]) -> PathBuf {
    let p = temp_dir("file").join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    if name.ends_with(".gz") {
        let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::default());
        e.write_all(text).unwrap();
        e.finish().unwrap();
    } else {
        f.write_all(text).unwrap();
    }
    p
}

/// Dense form of a CSR matrix, for small comparisons.
pub fn dense<T: Copy + Default>(a: &augur_datasets::Csr<T>) -> Vec<Vec<T>> {
    let mut d = vec![vec![T::default(); a.cols()]; a.rows()];
    for (i, j, v) in triplets(a) {
        d[i][j] = v;
    }
    d
}

/// (row, col, value) of every stored entry, in row order.
pub fn triplets<T: Copy>(a: &augur_datasets::Csr<T>) -> Vec<(usize, usize, T)> {
    a.iter()
        .map(|(v, (i, j))| (i as usize, j as usize, *v))
        .collect()
}

/// Row lengths of a CSR matrix.
pub fn row_lengths<T>(a: &augur_datasets::Csr<T>) -> Vec<usize> {
    a.indptr()
        .raw_storage()
        .windows(2)
        .map(|w| (w[1] - w[0]) as usize)
        .collect()
}

/// Run `f` inside a rayon pool of `n` threads.
pub fn with_threads<R: Send>(n: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
        .install(f)
}
