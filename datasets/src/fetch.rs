//! Downloading matrices of the SuiteSparse collection into a local directory.
//!
//! Layout of a fetched directory `DIR`:
//! - `DIR/suitesparse/<name>.mtx` (or `.mtx.gz` with `gzip`): the main Matrix Market file of each
//!   matrix's archive, verified (it parses; rows, columns and nonzeros match the catalog);
//! - `DIR/MANIFEST.tsv`: one row per verified matrix, in the format of the shared manifest
//!   (family key included), so `augur collect DIR` knows each file's family;
//! - `DIR/.partial/`: downloads in progress (`<name>.tar.gz.part`, resumed with an HTTP range
//!   request) and extraction temporaries. A file reaches `suitesparse/` only by a rename after
//!   verification, so an interrupted run never leaves a half-written matrix there.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::catalog::CatalogEntry;
use crate::manifest::ManifestEntry;
use crate::DatasetError;

// What only the downloader (the `download` feature) uses.
#[cfg(feature = "download")]
use {
    crate::manifest::read_manifest,
    crate::mtx::{self, Symmetry},
    md5::{Digest, Md5},
    std::io::{Read, Write},
    std::sync::atomic::{AtomicUsize, Ordering},
    std::sync::Mutex,
};

/// How to fetch.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FetchOptions {
    /// The collection's base URL (archives at `BASE/MM/<Group>/<Name>.tar.gz`).
    pub base_url: String,
    pub dir: PathBuf,
    /// Keep the matrix gzip-compressed (`.mtx.gz`).
    pub gzip: bool,
    /// Downloads at once.
    pub jobs: usize,
    /// Attempts after the first for a failure that may pass (connection cut, timeout, HTTP 5xx).
    pub retries: usize,
    /// Wait before the first retry; doubled for each next one.
    pub backoff: Duration,
    /// Longest wait for a connection, a response, or the next bytes of a body.
    pub timeout: Duration,
}

/// Builder-style setters (the struct is `#[non_exhaustive]`: start from the default and set
/// what differs, so new options do not break callers).
impl FetchOptions {
    /// Sets [`FetchOptions::base_url`].
    pub fn base_url(mut self, v: impl Into<String>) -> Self {
        self.base_url = v.into();
        self
    }

    /// Sets [`FetchOptions::gzip`].
    pub fn gzip(mut self, v: bool) -> Self {
        self.gzip = v;
        self
    }

    /// Sets [`FetchOptions::jobs`].
    pub fn jobs(mut self, v: usize) -> Self {
        self.jobs = v;
        self
    }

    /// Sets [`FetchOptions::retries`].
    pub fn retries(mut self, v: usize) -> Self {
        self.retries = v;
        self
    }

    /// Sets [`FetchOptions::backoff`].
    pub fn backoff(mut self, v: Duration) -> Self {
        self.backoff = v;
        self
    }

    /// Sets [`FetchOptions::timeout`].
    pub fn timeout(mut self, v: Duration) -> Self {
        self.timeout = v;
        self
    }
}

impl FetchOptions {
    pub fn new(dir: impl Into<PathBuf>) -> FetchOptions {
        FetchOptions {
            base_url: crate::catalog::DEFAULT_BASE_URL.into(),
            dir: dir.into(),
            gzip: false,
            jobs: 4,
            retries: 3,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(30),
        }
    }
}

/// What happened to one matrix.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Downloaded (`resumed_from` bytes were already there), extracted and verified.
    Fetched {
        bytes: u64,
        resumed_from: u64,
        attempts: usize,
        path: PathBuf,
    },
    /// Already in the directory, its checksum as recorded.
    AlreadyThere {
        path: PathBuf,
    },
    Failed {
        error: String,
        attempts: usize,
    },
}

/// Callbacks for progress display (the CLI draws bars; tests ignore them).
pub trait FetchProgress: Sync {
    /// A download starts: `total` bytes if the server said, `done` already there.
    fn start(&self, _name: &str, _total: Option<u64>, _done: u64) {}
    fn advance(&self, _name: &str, _bytes: u64) {}
    /// The matrix is finished (fetched, skipped or failed).
    fn finish(&self, _name: &str, _outcome: &Outcome) {}
}

/// No progress display.
pub struct Quiet;
impl FetchProgress for Quiet {}

/// Where a matrix lands in a fetched directory.
pub fn matrix_path(dir: &Path, name: &str, gzip: bool) -> PathBuf {
    dir.join("suitesparse")
        .join(format!("{name}.mtx{}", if gzip { ".gz" } else { "" }))
}

#[cfg(feature = "download")]
enum Failure {
    /// Worth another attempt.
    Transient(String),
    /// Will fail again (404, a matrix that does not match its catalog entry).
    Permanent(String),
}

/// A download may be this many times the catalog's size estimate (archives hold extra files,
/// and the estimate is rough), and at least [`MIN_BODY_CAP`] bytes: a body past it is stopped.
pub const BODY_CAP_FACTOR: u64 = 8;
pub const MIN_BODY_CAP: u64 = 4 << 20;
/// Decompressed bytes an archive may expand to: 128 bytes per stored entry and per row (the
/// matrix and the vectors some archives carry beside it), plus [`MIN_EXPANSION_CAP`].
pub const EXPANSION_BYTES_PER_ENTRY: u64 = 128;
pub const MIN_EXPANSION_CAP: u64 = 16 << 20;
/// The body's deadline grows with its expected size: `--timeout` plus a second per this many
/// bytes of the capped size (a slow but moving link is not cut off; a stalled one is).
pub const BODY_BYTES_PER_SECOND: u64 = 256 << 10;

/// The largest body accepted for an entry.
pub fn body_cap(e: &CatalogEntry) -> u64 {
    e.estimated_download_bytes()
        .saturating_mul(BODY_CAP_FACTOR)
        .max(MIN_BODY_CAP)
}

/// The most bytes an entry's archive may expand to.
pub fn expansion_cap(e: &CatalogEntry) -> u64 {
    e.pattern_entries
        .saturating_add(e.rows.saturating_mul(4))
        .saturating_mul(EXPANSION_BYTES_PER_ENTRY)
        .saturating_add(MIN_EXPANSION_CAP)
}

#[cfg(feature = "download")]
/// Fetch every entry (in parallel, `opts.jobs` at a time); one outcome per entry, in order. The
/// manifest of `opts.dir` is updated after each verified matrix.
pub fn fetch(
    entries: &[&CatalogEntry],
    opts: &FetchOptions,
    progress: &dyn FetchProgress,
) -> Result<Vec<Outcome>, DatasetError> {
    let io = |p: &Path, e: std::io::Error| DatasetError::Write {
        path: p.to_path_buf(),
        source: e,
    };
    let partial = opts.dir.join(".partial");
    std::fs::create_dir_all(opts.dir.join("suitesparse")).map_err(|e| io(&opts.dir, e))?;
    std::fs::create_dir_all(&partial).map_err(|e| io(&partial, e))?;
    // Extraction temporaries of an interrupted run are useless; partial downloads are kept.
    remove_temporaries(&opts.dir);
    let manifest_path = opts.dir.join("MANIFEST.tsv");
    let manifest = Mutex::new(if manifest_path.is_file() {
        read_manifest(&manifest_path)?
    } else {
        Vec::new()
    });
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(opts.timeout))
        .timeout_recv_response(Some(opts.timeout))
        .timeout_recv_body(Some(opts.timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let next = AtomicUsize::new(0);
    let outcomes: Vec<Mutex<Option<Outcome>>> = entries.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.clamp(1, 64).min(entries.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(e) = entries.get(i) else { break };
                let o = one(e, opts, &agent, &manifest, &manifest_path, progress);
                progress.finish(&e.name, &o);
                *outcomes[i].lock().expect("no panics hold this lock") = Some(o);
            });
        }
    });
    Ok(outcomes
        .into_iter()
        .map(|m| {
            m.into_inner()
                .expect("no panics hold this lock")
                .expect("every entry was taken by a worker")
        })
        .collect())
}

#[cfg(feature = "download")]
/// Lower-case hex of a digest, as the manifest records md5s.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(feature = "download")]
fn md5_file(path: &Path) -> std::io::Result<String> {
    let f = std::fs::File::open(path)?;
    let mut r: Box<dyn Read> = if path.extension().is_some_and(|x| x == "gz") {
        Box::new(flate2::read::GzDecoder::new(f))
    } else {
        Box::new(f)
    };
    let mut h = Md5::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

#[cfg(feature = "download")]
fn one(
    e: &CatalogEntry,
    opts: &FetchOptions,
    agent: &ureq::Agent,
    manifest: &Mutex<Vec<ManifestEntry>>,
    manifest_path: &Path,
    progress: &dyn FetchProgress,
) -> Outcome {
    let dest = matrix_path(&opts.dir, &e.name, opts.gzip);
    if !e.real {
        return Outcome::Failed {
            error: "complex values: augur's kernels are real-valued, so it does not fetch complex matrices"
                .into(),
            attempts: 0,
        };
    }
    // Already there and verified: recorded in the manifest with this checksum.
    let recorded = manifest
        .lock()
        .expect("no panics hold this lock")
        .iter()
        .find(|m| m.name == e.name && m.group == e.group)
        .map(|m| m.md5.clone());
    if let Some(md5) = recorded {
        if dest.is_file() && md5_file(&dest).is_ok_and(|h| h == md5) {
            return Outcome::AlreadyThere { path: dest };
        }
    }
    let part = opts
        .dir
        .join(".partial")
        .join(format!("{}.tar.gz.part", e.name));
    let url = e.archive_url(&opts.base_url);
    let mut attempts = 0;
    let mut wait = opts.backoff;
    let mut resumed_from = 0;
    loop {
        attempts += 1;
        let have = part.metadata().map(|m| m.len()).unwrap_or(0);
        if attempts == 1 {
            resumed_from = have;
        }
        let r = download(agent, &url, &part, e, opts.timeout, progress)
            .and_then(|bytes| finish(e, opts, &part, &dest).map(|(m, path)| (bytes, m, path)));
        match r {
            Ok((bytes, entry, path)) => {
                let mut all = manifest.lock().expect("no panics hold this lock");
                all.retain(|m| !(m.name == e.name && m.group == e.group));
                all.push(entry);
                all.sort_by(|a, b| a.name.cmp(&b.name));
                if let Err(err) = write_manifest(manifest_path, &all) {
                    return Outcome::Failed {
                        error: format!("fetched, but the manifest could not be written: {err}"),
                        attempts,
                    };
                }
                let _ = std::fs::remove_file(&part);
                return Outcome::Fetched {
                    bytes,
                    resumed_from,
                    attempts,
                    path,
                };
            }
            Err(Failure::Permanent(error)) => return Outcome::Failed { error, attempts },
            Err(Failure::Transient(error)) => {
                if attempts > opts.retries {
                    return Outcome::Failed {
                        error: format!("{error} (gave up after {attempts} attempts)"),
                        attempts,
                    };
                }
                std::thread::sleep(wait);
                wait *= 2;
            }
        }
    }
}

#[cfg(feature = "download")]
/// One download attempt into `part`, resuming from its length with a range request. Returns the
/// archive's size.
fn download(
    agent: &ureq::Agent,
    url: &str,
    part: &Path,
    e: &CatalogEntry,
    timeout: Duration,
    progress: &dyn FetchProgress,
) -> Result<u64, Failure> {
    let name = e.name.as_str();
    let cap = body_cap(e);
    let have = part.metadata().map(|m| m.len()).unwrap_or(0);
    let deadline = timeout + Duration::from_secs(cap / BODY_BYTES_PER_SECOND);
    let mut req = agent
        .get(url)
        .config()
        .timeout_recv_body(Some(deadline))
        .build();
    if have > 0 {
        req = req.header("Range", format!("bytes={have}-"));
    }
    let resp = req
        .call()
        .map_err(|e| Failure::Transient(format!("GET {url}: {e}")))?;
    let status = resp.status().as_u16();
    let header = |h: &str| {
        resp.headers()
            .get(h)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    let (append, total) = match status {
        200 => (
            false,
            header("content-length").and_then(|v| v.parse::<u64>().ok()),
        ),
        206 => {
            // Content-Range: bytes START-END/TOTAL
            let cr = header("content-range").unwrap_or_default();
            let start = cr
                .strip_prefix("bytes ")
                .and_then(|r| r.split('-').next())
                .and_then(|s| s.parse::<u64>().ok());
            if start != Some(have) {
                let _ = std::fs::remove_file(part);
                return Err(Failure::Transient(format!(
                    "GET {url}: the server resumed at `{cr}`, not at byte {have}; starting over"
                )));
            }
            (
                true,
                cr.rsplit('/').next().and_then(|t| t.parse::<u64>().ok()),
            )
        }
        // The part file is already whole.
        416 if have > 0 => return Ok(have),
        404 | 410 => {
            return Err(Failure::Permanent(format!(
                "GET {url}: HTTP {status}: not in the collection at this base URL"
            )))
        }
        s if (400..500).contains(&s) && s != 408 && s != 429 => {
            return Err(Failure::Permanent(format!("GET {url}: HTTP {s}")))
        }
        s => return Err(Failure::Transient(format!("GET {url}: HTTP {s}"))),
    };
    let too_big = |n: u64| {
        Failure::Permanent(format!(
            "GET {url}: the body is {n} bytes or more, past the cap of {cap} ({BODY_CAP_FACTOR}x \
             the catalog's estimate of {} bytes for `{name}`, at least {MIN_BODY_CAP}): stopped \
             (a wrong URL or a misbehaving server?)",
            e.estimated_download_bytes()
        ))
    };
    if let Some(t) = total.filter(|&t| t > cap) {
        let _ = std::fs::remove_file(part);
        return Err(too_big(t));
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(part)
        .map_err(|e| Failure::Permanent(format!("{}: {e}", part.display())))?;
    let start = if append { have } else { 0 };
    progress.start(name, total, start);
    let mut body = resp.into_body().into_reader();
    let mut buf = vec![0u8; 1 << 16];
    let mut got = start;
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                let _ = f.flush();
                return Err(Failure::Transient(format!(
                    "GET {url}: connection lost after {got} bytes: {e}"
                )));
            }
        };
        if got + n as u64 > cap {
            drop(f);
            let _ = std::fs::remove_file(part);
            return Err(too_big(got + n as u64));
        }
        f.write_all(&buf[..n])
            .map_err(|e| Failure::Permanent(format!("{}: {e}", part.display())))?;
        got += n as u64;
        progress.advance(name, n as u64);
    }
    f.sync_all()
        .map_err(|e| Failure::Permanent(format!("{}: {e}", part.display())))?;
    if let Some(t) = total {
        if got < t {
            return Err(Failure::Transient(format!(
                "GET {url}: connection closed after {got} of {t} bytes"
            )));
        }
    }
    Ok(got)
}

#[cfg(feature = "download")]
/// A reader that fails once more than `cap` bytes were read through it: an archive that expands
/// past its cap (a decompression bomb) stops there, with an error that says so.
struct Capped<R> {
    inner: R,
    left: u64,
    cap: u64,
}

#[cfg(feature = "download")]
impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(std::io::Error::other(format!(
                "the archive expands past {} bytes, the cap for this matrix ({EXPANSION_BYTES_PER_ENTRY} \
                 bytes per stored entry and per row, plus {MIN_EXPANSION_CAP}): stopped",
                self.cap
            )));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(feature = "download")]
/// Extract the main `.mtx` of the archive, verify it against the catalog, move it in place.
fn finish(
    e: &CatalogEntry,
    opts: &FetchOptions,
    part: &Path,
    dest: &Path,
) -> Result<(ManifestEntry, PathBuf), Failure> {
    let tmp = opts.dir.join(".partial").join(format!(
        "{}.mtx{}.tmp",
        e.name,
        if opts.gzip { ".gz" } else { "" }
    ));
    let corrupt = |msg: String| {
        // A damaged archive is not resumed: the next attempt downloads it afresh. One that
        // expands past its cap would do so again: not retried.
        let _ = std::fs::remove_file(part);
        let _ = std::fs::remove_file(&tmp);
        if msg.contains("expands past") {
            Failure::Permanent(msg)
        } else {
            Failure::Transient(format!("corrupt archive: {msg}"))
        }
    };
    let file = std::fs::File::open(part).map_err(|x| corrupt(x.to_string()))?;
    let cap = expansion_cap(e);
    let mut archive = tar::Archive::new(Capped {
        inner: flate2::read::GzDecoder::new(file),
        left: cap,
        cap,
    });
    let want = format!("{}.mtx", e.name);
    let mut found = false;
    let mut md5 = Md5::new();
    for entry in archive.entries().map_err(|x| corrupt(x.to_string()))? {
        let mut entry = entry.map_err(|x| corrupt(x.to_string()))?;
        let path = entry
            .path()
            .map_err(|x| corrupt(x.to_string()))?
            .into_owned();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy() == want)
        {
            let out = std::fs::File::create(&tmp)
                .map_err(|x| Failure::Permanent(format!("{}: {x}", tmp.display())))?;
            let mut w: Box<dyn Write> = if opts.gzip {
                Box::new(flate2::write::GzEncoder::new(
                    out,
                    flate2::Compression::default(),
                ))
            } else {
                Box::new(std::io::BufWriter::new(out))
            };
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = entry.read(&mut buf).map_err(|x| corrupt(x.to_string()))?;
                if n == 0 {
                    break;
                }
                md5.update(&buf[..n]);
                w.write_all(&buf[..n])
                    .map_err(|x| Failure::Permanent(format!("{}: {x}", tmp.display())))?;
            }
            w.flush()
                .map_err(|x| Failure::Permanent(format!("{}: {x}", tmp.display())))?;
            drop(w);
            found = true;
            break;
        }
    }
    if !found {
        let _ = std::fs::remove_file(part);
        return Err(Failure::Permanent(format!(
            "the archive holds no {}/{want}",
            e.name
        )));
    }
    let mismatch = |msg: String| {
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(part);
        Failure::Permanent(msg)
    };
    let m = mtx::read::<f64>(&tmp).map_err(|x| mismatch(format!("does not parse: {x}")))?;
    let nonzero = m.matrix.data().iter().filter(|v| **v != 0.0).count() as u64;
    let (rows, cols) = (m.matrix.rows() as u64, m.matrix.cols() as u64);
    if (rows, cols) != (e.rows, e.cols) || nonzero != e.nnz {
        return Err(mismatch(format!(
            "does not match the catalog: the file has {rows} x {cols} with {nonzero} nonzeros, the catalog says {} x {} with {}",
            e.rows, e.cols, e.nnz
        )));
    }
    std::fs::rename(&tmp, dest)
        .map_err(|x| Failure::Permanent(format!("{}: {x}", dest.display())))?;
    let h = &m.header;
    let entry = ManifestEntry {
        name: e.name.clone(),
        group: e.group.clone(),
        rows: rows as usize,
        cols: cols as usize,
        nnz: h.entries,
        nnz_full: m.matrix.nnz(),
        nnz_nonzero: nonzero as usize,
        symmetry: match h.symmetry {
            Symmetry::General => "general",
            Symmetry::Symmetric => "symmetric",
            Symmetry::SkewSymmetric => "skew-symmetric",
            Symmetry::Hermitian => "hermitian",
        }
        .into(),
        field: format!("{:?}", h.field).to_lowercase(),
        kind: e.kind.clone(),
        ss_id: e.id,
        md5: hex(&md5.finalize()),
        family: e.family(),
    };
    Ok((entry, dest.to_path_buf()))
}

/// Remove what an interrupted fetch leaves half-written in `dir`: extraction temporaries in
/// `.partial/` and a manifest being replaced. Partial downloads (`*.part`) stay for the next run
/// to resume. Returns how many files were removed.
pub fn remove_temporaries(dir: &Path) -> usize {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(dir.join(".partial")) {
        for e in rd.flatten() {
            if e.path().extension().is_some_and(|x| x == "tmp")
                && std::fs::remove_file(e.path()).is_ok()
            {
                n += 1;
            }
        }
    }
    if std::fs::remove_file(dir.join("MANIFEST.tsv.tmp")).is_ok() {
        n += 1;
    }
    n
}

/// Write a manifest (header + rows, tab-separated) through a temporary file and a rename.
pub fn write_manifest(path: &Path, entries: &[ManifestEntry]) -> Result<(), DatasetError> {
    let tmp = path.with_extension("tsv.tmp");
    let err = |e: String| DatasetError::Manifest {
        path: path.to_path_buf(),
        msg: e,
    };
    {
        let mut w = csv::WriterBuilder::new()
            .delimiter(b'\t')
            .quote_style(csv::QuoteStyle::Never)
            .from_path(&tmp)
            .map_err(|e| err(e.to_string()))?;
        for e in entries {
            w.serialize(e).map_err(|x| err(x.to_string()))?;
        }
        w.flush().map_err(|e| err(e.to_string()))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))
}

#[cfg(feature = "download")]
/// Download the collection's index to `path` (through a temporary file and a rename), checking
/// that it parses. Returns the number of matrices.
pub fn fetch_index(base_url: &str, path: &Path, timeout: Duration) -> Result<usize, DatasetError> {
    let url = crate::catalog::index_url(base_url);
    let err = |msg: String| DatasetError::Fetch {
        name: "index".into(),
        msg,
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout * 4))
        .timeout_recv_body(Some(timeout))
        .build()
        .into();
    let text = agent
        .get(&url)
        .call()
        .map_err(|e| err(format!("GET {url}: {e}")))?
        .into_body()
        .with_config()
        .limit(256 << 20)
        .read_to_string()
        .map_err(|e| err(format!("GET {url}: {e}")))?;
    let c = crate::catalog::Catalog::parse(&text, &url)?;
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| DatasetError::Write {
            path: d.to_path_buf(),
            source: e,
        })?;
    }
    let tmp = path.with_extension("csv.tmp");
    std::fs::write(&tmp, &text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| DatasetError::Write {
            path: path.to_path_buf(),
            source: e,
        })?;
    Ok(c.entries.len())
}

/// Where `augur datasets index` keeps the index: `$AUGUR_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/augur`, else `~/.cache/augur`; file `ssstats.csv`.
pub fn cached_index_path() -> PathBuf {
    let base = std::env::var_os("AUGUR_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("augur")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("augur")))
        .unwrap_or_else(|| PathBuf::from(".augur-cache"));
    base.join("ssstats.csv")
}

/// Without the `download` feature: no HTTP client is built in.
#[cfg(not(feature = "download"))]
fn not_built() -> DatasetError {
    DatasetError::Fetch {
        name: "suitesparse".into(),
        msg: "augur-datasets was built without its `download` feature (the HTTP client): \
              enable it (the augur library's default, always in the augur CLI) to fetch matrices"
            .into(),
    }
}

/// Without the `download` feature: an error saying so.
#[cfg(not(feature = "download"))]
pub fn fetch(
    _entries: &[&CatalogEntry],
    _opts: &FetchOptions,
    _progress: &dyn FetchProgress,
) -> Result<Vec<Outcome>, DatasetError> {
    Err(not_built())
}

/// Without the `download` feature: an error saying so.
#[cfg(not(feature = "download"))]
pub fn fetch_index(
    _base_url: &str,
    _path: &Path,
    _timeout: Duration,
) -> Result<usize, DatasetError> {
    Err(not_built())
}

#[cfg(all(test, not(feature = "download")))]
mod tests {
    /// Built without the HTTP client, the downloader says so instead of failing obscurely.
    #[test]
    fn without_the_download_feature_fetching_is_a_clear_error() {
        let e = super::fetch_index(
            "https://example.invalid",
            std::path::Path::new("/nonexistent/index.csv"),
            std::time::Duration::from_secs(1),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`download` feature"), "{e}");
    }
}
