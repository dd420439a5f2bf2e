//! Helpers shared by augur's end-to-end tests (`tests/e2e/`) and the CLI tests of the `augur`
//! package (`cli/tests/cli/`, which needs Cargo to build the `augur` binary beside it).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use augur_datasets::manifest::{read_manifest, ManifestEntry};

/// Say that a test skips its work, in `cargo test`'s normal output: libtest captures what the
/// print macros write (and shows it only for failing tests), so the line goes to the standard
/// error handle directly and shows beside the test's `ok`.
pub fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// The shared matrices folder, or None after saying why the caller skips ([`skip`]).
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("AUGUR_SHARED_MATRICES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/matrices"));
    if dir.join("MANIFEST.tsv").is_file() {
        Some(dir)
    } else {
        skip(
            test,
            &format!(
                "no shared matrices at {} (set AUGUR_SHARED_MATRICES)",
                dir.display()
            ),
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

/// How the loopback server answers one path.
#[derive(Debug, Clone)]
pub enum Serve {
    /// The body, honouring `Range: bytes=N-` with 206.
    Ok(Vec<u8>),
    /// The first request gets the headers of the whole body but only `n` bytes, then the
    /// connection closes; later requests are answered as `Ok`.
    CutOnce(Vec<u8>, usize),
    /// Wait this long before answering anything.
    Slow(Vec<u8>, std::time::Duration),
    /// 404 Not Found.
    Missing,
}

/// (path, Range header) of every request a [`LoopbackServer`] received.
pub type RequestLog = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;

/// A minimal HTTP/1.1 server on 127.0.0.1 for download tests (no internet): GET only, one thread
/// per connection, `Connection: close`. Counts the requests per path and the range requests.
pub struct LoopbackServer {
    pub base_url: String,
    pub routes: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, Serve>>>,
    pub log: RequestLog,
}

impl LoopbackServer {
    pub fn start(routes: Vec<(String, Serve)>) -> LoopbackServer {
        use std::io::{BufRead, BufReader};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let routes = std::sync::Arc::new(std::sync::Mutex::new(
            routes
                .into_iter()
                .collect::<std::collections::HashMap<_, _>>(),
        ));
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (r2, l2) = (routes.clone(), log.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (routes, log) = (r2.clone(), l2.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    if reader.read_line(&mut line).is_err() {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let mut range = None;
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            if k.trim().eq_ignore_ascii_case("range") {
                                range = Some(v.trim().to_string());
                            }
                        }
                    }
                    log.lock().unwrap().push((path.clone(), range.clone()));
                    let serve = routes.lock().unwrap().get(&path).cloned();
                    let send = |stream: &mut std::net::TcpStream,
                                body: &[u8],
                                limit: Option<usize>| {
                        let start = range
                            .as_deref()
                            .and_then(|r| r.strip_prefix("bytes="))
                            .and_then(|r| r.split('-').next())
                            .and_then(|s| s.parse::<usize>().ok());
                        let head = match start {
                            Some(s) if s >= body.len() => {
                                format!("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", body.len())
                            }
                            Some(s) => format!(
                                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {s}-{}/{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                body.len() - 1,
                                body.len(),
                                body.len() - s
                            ),
                            None => format!(
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                body.len()
                            ),
                        };
                        let _ = stream.write_all(head.as_bytes());
                        if head.starts_with("HTTP/1.1 416") {
                            return;
                        }
                        let from = start.unwrap_or(0).min(body.len());
                        let to = limit.map_or(body.len(), |n| (from + n).min(body.len()));
                        let _ = stream.write_all(&body[from..to]);
                        let _ = stream.flush();
                    };
                    match serve {
                        None | Some(Serve::Missing) => {
                            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found");
                        }
                        Some(Serve::Ok(body)) => send(&mut stream, &body, None),
                        Some(Serve::CutOnce(body, n)) => {
                            routes
                                .lock()
                                .unwrap()
                                .insert(path.clone(), Serve::Ok(body.clone()));
                            send(&mut stream, &body, Some(n));
                        }
                        Some(Serve::Slow(body, d)) => {
                            std::thread::sleep(d);
                            send(&mut stream, &body, None);
                        }
                    }
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        LoopbackServer {
            base_url,
            routes,
            log,
        }
    }

    /// Requests made for `path`: (count, how many carried a Range header).
    pub fn requests(&self, path: &str) -> (usize, usize) {
        let log = self.log.lock().unwrap();
        let v: Vec<_> = log.iter().filter(|(p, _)| p == path).collect();
        (v.len(), v.iter().filter(|(_, r)| r.is_some()).count())
    }
}

/// A `.tar.gz` as the collection ships it: `<name>/<name>.mtx` (Matrix Market text) plus a
/// decoy `<name>/<name>_b.mtx`.
pub fn mtx_archive(name: &str, mtx_text: &[u8]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (file, data) in [
        (
            format!("{name}/{name}_b.mtx"),
            b"%%MatrixMarket matrix array real general\n1 1\n1\n".to_vec(),
        ),
        (format!("{name}/{name}.mtx"), mtx_text.to_vec()),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, file, data.as_slice()).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}
