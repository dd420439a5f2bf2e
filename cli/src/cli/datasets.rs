//! `augur datasets list|fetch|index`: the SuiteSparse catalog and downloader.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use augur_datasets::catalog::{Catalog, CatalogEntry, Query, DEFAULT_BASE_URL};
use augur_datasets::fetch::{self, FetchOptions, FetchProgress, Outcome};
use clap::{Args, Subcommand};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

#[derive(Subcommand, Debug)]
pub enum DatasetsCommand {
    /// Matrices of the collection's index that match a query, with sizes and the download size.
    List(ListArgs),
    /// Download matrices (by name or query) into DIR: verified against the catalog, resumable,
    /// recorded in DIR/MANIFEST.tsv for `augur collect DIR`.
    Fetch(FetchArgs),
    /// Download the collection's index (ssstats.csv) into the cache, for offline `list`/`fetch`.
    Index(IndexArgs),
}

#[derive(Args, Debug)]
pub struct IndexSource {
    /// The index file to use (e.g. ../shared/matrices/ssstats.csv); default: the cached one.
    #[arg(long)]
    index: Option<PathBuf>,
}

#[derive(Args, Debug, Default)]
pub struct QueryArgs {
    /// Group (repeatable), e.g. HB, DIMACS10.
    #[arg(long = "group")]
    groups: Vec<String>,
    /// Substring of the kind, e.g. 'circuit simulation problem'.
    #[arg(long)]
    kind: Option<String>,
    #[arg(long, value_parser = count)]
    min_rows: Option<u64>,
    #[arg(long, value_parser = count)]
    max_rows: Option<u64>,
    #[arg(long, value_parser = count)]
    min_cols: Option<u64>,
    #[arg(long, value_parser = count)]
    max_cols: Option<u64>,
    /// Least nonzeros (the collection's count: both triangles), e.g. 1e5.
    #[arg(long, value_parser = count)]
    min_nnz: Option<u64>,
    #[arg(long, value_parser = count)]
    max_nnz: Option<u64>,
    /// Real values only (no complex).
    #[arg(long, conflicts_with = "complex")]
    real: bool,
    #[arg(long)]
    complex: bool,
    /// Binary (pattern-like) values only.
    #[arg(long)]
    binary: bool,
    /// Numerically symmetric only.
    #[arg(long, conflicts_with = "unsymmetric")]
    symmetric: bool,
    #[arg(long)]
    unsymmetric: bool,
    /// At most this many, smallest first.
    #[arg(long)]
    limit: Option<usize>,
}

fn count(s: &str) -> Result<u64, String> {
    augur_datasets::generate::parse_number(s)
        .filter(|v| *v >= 0.0 && v.fract() == 0.0 && *v < 1.8e19)
        .map(|v| v as u64)
        .ok_or_else(|| format!("`{s}` is not a count (e.g. 100000, 1e5, 2^20)"))
}

impl QueryArgs {
    fn query(&self, names: &[String]) -> Query {
        Query {
            groups: self.groups.clone(),
            names: names.to_vec(),
            kind: self.kind.clone(),
            min_rows: self.min_rows,
            max_rows: self.max_rows,
            min_cols: self.min_cols,
            max_cols: self.max_cols,
            min_nnz: self.min_nnz,
            max_nnz: self.max_nnz,
            real: if self.real {
                Some(true)
            } else if self.complex {
                Some(false)
            } else {
                None
            },
            binary: self.binary.then_some(true),
            symmetric: if self.symmetric {
                Some(true)
            } else if self.unsymmetric {
                Some(false)
            } else {
                None
            },
            limit: self.limit,
        }
    }

    fn is_empty(&self) -> bool {
        self.query(&[]) == Query::default()
    }
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    source: IndexSource,
    #[command(flatten)]
    query: QueryArgs,
    /// Only these matrices (`Name` or `Group/Name`).
    names: Vec<String>,
    /// JSON array on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct FetchArgs {
    /// Matrices by `Name` or `Group/Name` (with or instead of a query).
    names: Vec<String>,
    #[command(flatten)]
    query: QueryArgs,
    #[command(flatten)]
    source: IndexSource,
    /// Directory to fetch into.
    #[arg(long)]
    dir: PathBuf,
    /// Keep each matrix gzip-compressed (.mtx.gz).
    #[arg(long)]
    gzip: bool,
    /// Downloads at once (1 to 64).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    /// Retries of a failure that may pass (cut connection, timeout, HTTP 5xx), with doubling waits.
    #[arg(long, default_value_t = 3)]
    retries: usize,
    /// Seconds to wait for a connection or a response (0 < s <= 86400); a body may take this
    /// plus a second per 256 KiB of its size cap (8x the catalog's estimate, at least 4 MiB).
    #[arg(long, default_value_t = 30.0, value_parser = parse_timeout)]
    timeout: f64,
    /// The collection's base URL.
    #[arg(long, default_value = DEFAULT_BASE_URL)]
    base_url: String,
    /// Allow fetching the whole collection when no name or filter is given.
    #[arg(long)]
    all: bool,
}

#[derive(Args, Debug)]
pub struct IndexArgs {
    #[arg(long, default_value = DEFAULT_BASE_URL)]
    base_url: String,
    /// Where to write it (default: the cache, where `list` and `fetch` look).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seconds to wait for a connection, a response or the body (0 < s <= 86400; the whole
    /// download at most 4x this).
    #[arg(long, default_value_t = 60.0, value_parser = parse_timeout)]
    timeout: f64,
}

/// `--timeout`: seconds, finite, > 0 and at most a day (inf, NaN and 1e30 panicked converting
/// to a Duration).
fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "`{s}`: expected seconds, more than 0 and at most 86400"
        )),
    }
}

pub fn run(c: DatasetsCommand) -> anyhow::Result<ExitCode> {
    match c {
        DatasetsCommand::List(a) => list(a),
        DatasetsCommand::Fetch(a) => fetch_cmd(a),
        DatasetsCommand::Index(a) => {
            let out = a.out.unwrap_or_else(fetch::cached_index_path);
            let n = fetch::fetch_index(&a.base_url, &out, Duration::from_secs_f64(a.timeout))?;
            println!("{n} matrices -> {}", out.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn load(src: &IndexSource) -> anyhow::Result<Catalog> {
    let path = match &src.index {
        Some(p) => p.clone(),
        None => {
            let p = fetch::cached_index_path();
            if !p.is_file() {
                bail!(
                    "no cached index at {}: run `augur datasets index` (needs the network) or pass --index FILE (e.g. ../shared/matrices/ssstats.csv)",
                    p.display()
                );
            }
            p
        }
    };
    Ok(Catalog::read(&path)?)
}

fn human(bytes: u64) -> String {
    let b = bytes as f64;
    match b {
        b if b >= 1e9 => format!("{:.1} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1} kB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

fn list(a: ListArgs) -> anyhow::Result<ExitCode> {
    let c = load(&a.source)?;
    let sel = c.select(&a.query.query(&a.names));
    let total: u64 = sel.iter().map(|e| e.estimated_download_bytes()).sum();
    if a.json {
        #[derive(serde::Serialize)]
        struct Item<'a> {
            #[serde(flatten)]
            entry: &'a CatalogEntry,
            family: String,
            estimated_download_bytes: u64,
        }
        let items: Vec<Item> = sel
            .iter()
            .map(|e| Item {
                entry: e,
                family: e.family(),
                estimated_download_bytes: e.estimated_download_bytes(),
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&items)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:>5}  {:<32} {:>10} {:>10} {:>12}  {:<5} {:<4} {:>9}  kind",
        "id", "group/name", "rows", "cols", "nnz", "field", "sym", "download"
    );
    for e in &sel {
        println!(
            "{:>5}  {:<32} {:>10} {:>10} {:>12}  {:<5} {:<4} {:>9}  {}",
            e.id,
            e.full_name(),
            e.rows,
            e.cols,
            e.nnz,
            if !e.real {
                "cplx"
            } else if e.binary {
                "bin"
            } else {
                "real"
            },
            if e.symmetric() { "yes" } else { "no" },
            human(e.estimated_download_bytes()),
            e.kind
        );
    }
    println!(
        "{} of {} matrices (index revision {}); download about {} in all (estimate)",
        sel.len(),
        c.entries.len(),
        c.revision,
        human(total)
    );
    Ok(ExitCode::SUCCESS)
}

/// One bar per file in flight and one for the total.
struct Bars {
    multi: MultiProgress,
    total: ProgressBar,
    files: std::sync::Mutex<std::collections::HashMap<String, ProgressBar>>,
}

impl FetchProgress for Bars {
    fn start(&self, name: &str, total: Option<u64>, done: u64) {
        let pb = self
            .multi
            .insert_before(&self.total, ProgressBar::new(total.unwrap_or(0)));
        pb.set_style(
            ProgressStyle::with_template(
                "{msg:24} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        pb.set_message(name.to_string());
        pb.set_position(done);
        if let Some(old) = self
            .files
            .lock()
            .expect("no panics")
            .insert(name.into(), pb)
        {
            old.finish_and_clear();
        }
    }
    fn advance(&self, name: &str, bytes: u64) {
        if let Some(pb) = self.files.lock().expect("no panics").get(name) {
            pb.inc(bytes);
        }
    }
    fn finish(&self, name: &str, outcome: &Outcome) {
        if let Some(pb) = self.files.lock().expect("no panics").remove(name) {
            pb.finish_and_clear();
        }
        self.total.inc(1);
        let line = match outcome {
            Outcome::Fetched {
                bytes,
                resumed_from,
                attempts,
                path,
            } => format!(
                "fetched {name}: {} -> {}{}{}",
                human(*bytes),
                path.display(),
                if *resumed_from > 0 {
                    format!(", resumed at {}", human(*resumed_from))
                } else {
                    String::new()
                },
                if *attempts > 1 {
                    format!(", {attempts} attempts")
                } else {
                    String::new()
                }
            ),
            Outcome::AlreadyThere { path } => {
                format!("skipped {name}: already in {} and verified", path.display())
            }
            Outcome::Failed { error, .. } => format!("FAILED {name}: {error}"),
        };
        if self.total.is_hidden() {
            eprintln!("{line}");
        } else {
            self.total.println(line);
        }
    }
}

fn fetch_cmd(a: FetchArgs) -> anyhow::Result<ExitCode> {
    if a.names.is_empty() && a.query.is_empty() && !a.all {
        bail!("no matrices named and no filter given: that is the whole collection (thousands of matrices, tens of GB); pass --all if you mean it");
    }
    anyhow::ensure!(a.timeout > 0.0, "--timeout must be positive");
    let c = load(&a.source)?;
    for n in &a.names {
        if c.find(n).is_none() {
            bail!("`{n}` is not in the index (give `Name` or `Group/Name`; see `augur datasets list`)");
        }
    }
    let q = a.query.query(&a.names);
    let sel = c.select(&q);
    if sel.is_empty() {
        bail!("no matrix of the index matches");
    }
    let total_bytes: u64 = sel.iter().map(|e| e.estimated_download_bytes()).sum();
    eprintln!(
        "fetching {} matrices (about {}) into {}",
        sel.len(),
        human(total_bytes),
        a.dir.display()
    );
    let opts = FetchOptions::new(&a.dir)
        .base_url(a.base_url.clone())
        .gzip(a.gzip)
        .jobs(usize::from(a.jobs))
        .retries(a.retries)
        .timeout(Duration::from_secs_f64(a.timeout));
    // Ctrl-C: matrices reach DIR/suitesparse only by a rename after verification, so what an
    // interruption can leave half-written is an extraction temporary (or the manifest's
    // replacement): remove those and exit; partial downloads stay for the next run to resume.
    let dir = a.dir.clone();
    ctrlc::set_handler(move || {
        let n = fetch::remove_temporaries(&dir);
        eprintln!(
            "\naugur: interrupted; removed {n} temporary file(s); partial downloads in {} are resumed by the next run",
            dir.join(".partial").display()
        );
        std::process::exit(130);
    })
    .context("install the Ctrl-C handler")?;
    let multi = MultiProgress::new();
    let total = multi.add(ProgressBar::new(sel.len() as u64));
    total.set_style(
        ProgressStyle::with_template("total [{bar:30}] {pos}/{len} matrices, ETA {eta}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    let bars = Bars {
        multi,
        total,
        files: Default::default(),
    };
    let out = fetch::fetch(&sel, &opts, &bars)?;
    bars.total.finish_and_clear();
    let failed = out
        .iter()
        .filter(|o| matches!(o, Outcome::Failed { .. }))
        .count();
    let fetched = out
        .iter()
        .filter(|o| matches!(o, Outcome::Fetched { .. }))
        .count();
    eprintln!(
        "{fetched} fetched, {} already there, {failed} failed; manifest: {}",
        out.len() - fetched - failed,
        a.dir.join("MANIFEST.tsv").display()
    );
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
