//! `augur collect`: features, feature-gathering cost, and every kernel's setup and per-iteration
//! medians per matrix, appended to a runs CSV one matrix at a time; `augur collect merge`.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use augur::collect::{CollectOptions, MatrixMeta, Measurer};
use augur_datasets::generate::Generator;
use augur_datasets::manifest::{read_manifest, ManifestEntry};
use augur_datasets::{Csr, MatrixSource};
use augur_features::spmv::SPMV_SCHEMA_VERSION;
use augur_kernels::cuda::GpuScalar;
use augur_models::runs::{self, KernelRun, MatrixInfo, Runs};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use super::spmv::Backend;
use super::Precision;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CollectCmd {
    #[command(subcommand)]
    sub: Option<CollectSub>,
    #[command(flatten)]
    args: Option<CollectArgs>,
}

#[derive(Subcommand, Debug)]
enum CollectSub {
    /// Merge runs CSVs (e.g. the shards of one collection) into one; a (matrix, kernel) row in a
    /// later file replaces the same row of an earlier one. Comm runs likewise, by (collective,
    /// dtype, GPUs, bytes, device, pattern).
    Merge(MergeArgs),
    /// Check and time every communication pattern (NCCL, one-shot and two-shot all-reduce;
    /// NCCL, pull, push and copy-engine all-gather) over a sweep of message sizes on N GPUs,
    /// into a comm runs CSV for `augur train`.
    Comm(super::comm::CommArgs),
    /// Check and time every decode-attention schedule (and FlashAttention-2's split rule on the
    /// split-KV kernel) on attention shapes, by default a built-in grid, into an attention runs
    /// CSV (issue 8).
    Attention(super::attention::CollectArgs),
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// Runs CSVs to merge (plain or gzipped, `.csv.gz`; the merge is written plain).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output CSV (must not exist unless --force).
    #[arg(long)]
    out: PathBuf,
    #[arg(long)]
    force: bool,
}

#[derive(Args, Debug)]
pub struct CollectArgs {
    /// Matrix Market files, directories of them (`*.mtx`, `*.mtx.gz`), or generator specs.
    #[arg(required = true, value_name = "MATRIX")]
    matrices: Vec<String>,
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    #[arg(long, value_enum, default_value = "f32")]
    precision: Precision,
    /// Iteration counts the selector is trained for (setup + k x per-iteration), recorded with
    /// the runs; `augur train` uses them by default.
    #[arg(long, default_value = "1,10,100")]
    iterations: String,
    /// Timed samples per kernel and mode (the medians are recorded). On a GPU: latency (one call
    /// from an idle stream), throughput (calls back to back; the label figure) and graph (calls
    /// replayed from a CUDA graph), a throughput/graph sample being as many calls as last ~0.5 ms.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Sweeps over the kernels per matrix; each kernel keeps its fastest sweep's median (a burst
    /// of interference during one sweep does not make a kernel look slow).
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// The runs CSV to append to.
    #[arg(long)]
    out: PathBuf,
    /// Continue an existing runs CSV: matrices with every kernel recorded are skipped.
    #[arg(long)]
    resume: bool,
    /// Take only every n-th matrix starting at the i-th (`i/n`, 1-based), to split a collection
    /// across machines; merge the outputs with `augur collect merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Only these kernels (repeatable; default all of the backend's).
    #[arg(long = "kernel", value_name = "NAME")]
    kernels: Vec<String>,
    /// GPU ordinal (with --backend cuda).
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// A MANIFEST.tsv giving the family of each file (default: one found beside the files or in
    /// their parent directory).
    #[arg(long)]
    manifest: Option<PathBuf>,
}

pub fn run(c: CollectCmd) -> anyhow::Result<ExitCode> {
    match c.sub {
        Some(CollectSub::Merge(m)) => merge(m),
        Some(CollectSub::Comm(a)) => super::comm::run(a),
        Some(CollectSub::Attention(a)) => super::attention::collect(a),
        None => collect(c.args.context("collect: give MATRIX arguments and --out")?),
    }
}

fn merge(m: MergeArgs) -> anyhow::Result<ExitCode> {
    super::output::plain_runs_out(&m.out)?;
    if m.out.exists() && !m.force {
        bail!("{} exists; pass --force to replace it", m.out.display());
    }
    let first = m.inputs.first();
    let merged = if first.is_some_and(|f| augur_models::comm::is_comm_runs_file(f)) {
        let runs = augur_models::comm::CommRuns::read(&m.inputs)?;
        write_replacing(&m.out, |w| runs.write(w))?;
        format!(
            "{} comm runs files: {} messages, {} rows",
            m.inputs.len(),
            runs.messages().len(),
            runs.runs.len()
        )
    } else if first.is_some_and(|f| augur_models::attention::is_attention_runs_file(f)) {
        let runs = augur_models::attention::AttentionRuns::read(&m.inputs)?;
        write_replacing(&m.out, |w| runs.write(w))?;
        format!(
            "{} attention runs files: {} shapes, {} rows",
            m.inputs.len(),
            runs.cases().len(),
            runs.runs.len()
        )
    } else {
        let runs = Runs::read(&m.inputs)?;
        write_replacing(&m.out, |w| runs.write(w))?;
        let rows: usize = runs.matrices.iter().map(|x| x.kernels.len()).sum();
        format!(
            "{} files: {} matrices, {rows} rows",
            m.inputs.len(),
            runs.matrices.len()
        )
    };
    eprintln!("merged {merged} -> {}", m.out.display());
    Ok(ExitCode::SUCCESS)
}

/// Write `out` through `<out>.csv.tmp` and a rename: an existing file is replaced only by a
/// complete one.
fn write_replacing(
    out: &Path,
    write: impl FnOnce(std::io::BufWriter<std::fs::File>) -> Result<(), augur_models::ModelError>,
) -> anyhow::Result<()> {
    let tmp = out.with_extension("csv.tmp");
    let f = std::fs::File::create(&tmp).with_context(|| format!("create {}", tmp.display()))?;
    write(std::io::BufWriter::new(f))?;
    std::fs::rename(&tmp, out)?;
    Ok(())
}

/// Files of a directory argument, sorted (a directory made by `augur datasets fetch`, with its
/// matrices in `suitesparse/`, counts as that folder); other arguments as they are.
fn expand(args: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for a in args {
        let mut p = Path::new(a).to_path_buf();
        if p.join("MANIFEST.tsv").is_file() && p.join("suitesparse").is_dir() {
            p = p.join("suitesparse");
        }
        let a = &p.display().to_string();
        if p.is_dir() {
            let mut files: Vec<String> = std::fs::read_dir(p)
                .with_context(|| format!("read directory {a}"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let n = p.file_name().unwrap_or_default().to_string_lossy();
                    n.ends_with(".mtx") || n.ends_with(".mtx.gz")
                })
                .map(|p| p.display().to_string())
                .collect();
            files.sort();
            if files.is_empty() {
                bail!("directory {a} holds no .mtx or .mtx.gz files");
            }
            out.extend(files);
        } else {
            out.push(a.clone());
        }
    }
    Ok(out)
}

/// Every N-th item starting at the I-th (1-based) of `items`.
pub(crate) fn take_shard<T>(items: Vec<T>, (i, n): (usize, usize)) -> Vec<T> {
    items
        .into_iter()
        .enumerate()
        .filter(|(j, _)| j % n == i - 1)
        .map(|(_, x)| x)
        .collect()
}

/// `--shard I/N`: (I, N) with 1 <= I <= N.
pub(crate) fn parse_shard(s: &str) -> anyhow::Result<(usize, usize)> {
    let (i, n) = s
        .split_once('/')
        .with_context(|| format!("--shard `{s}`: expected I/N, e.g. 1/4"))?;
    let (i, n): (usize, usize) = (
        i.trim()
            .parse()
            .with_context(|| format!("--shard `{s}`: `{i}` is not a number"))?,
        n.trim()
            .parse()
            .with_context(|| format!("--shard `{s}`: `{n}` is not a number"))?,
    );
    if n == 0 || i == 0 || i > n {
        bail!("--shard `{s}`: need 1 <= I <= N");
    }
    Ok((i, n))
}

/// Generator parameters that set the size, not the structure: left out of the family key so that
/// sizes of one structure fall in one cross-validation group.
const SIZE_KEYS: [&str; 10] = [
    "seed", "rows", "cols", "n", "nx", "ny", "nz", "scale", "hub_len", "max",
];

/// The family key of a generator spec: kind and structural parameters.
pub fn generated_family(spec: &str) -> String {
    let (kind, params) = spec.split_once(':').unwrap_or((spec, ""));
    let kept: Vec<&str> = params
        .split(',')
        .filter(|kv| {
            let k = kv.split('=').next().unwrap_or("");
            !kv.is_empty() && !SIZE_KEYS.contains(&k)
        })
        .collect();
    format!("gen:{kind}:{}", kept.join(","))
}

/// Family keys of files from manifests (cached per directory), else the name without trailing
/// digits.
struct Families {
    explicit: Option<Vec<ManifestEntry>>,
    by_dir: HashMap<PathBuf, Option<Vec<ManifestEntry>>>,
}

impl Families {
    fn family(&mut self, src: &MatrixSource) -> String {
        match src {
            // A real matrix grown k-fold or reordered: the family of the file it came from, so
            // that no expansion or permutation of a held-out matrix is trained on.
            MatrixSource::Generated(Generator::Expand { file, .. }) => {
                let stem = MatrixSource::File(file.clone()).name();
                self.file_family(file, &stem)
            }
            MatrixSource::Generated(g) => generated_family(&g.to_string()),
            MatrixSource::File(p) => self.file_family(p, &src.name()),
        }
    }

    fn file_family(&mut self, p: &Path, name: &str) -> String {
        let lookup =
            |m: &Vec<ManifestEntry>| m.iter().find(|e| e.name == name).map(|e| e.family.clone());
        if let Some(f) = self.explicit.as_ref().and_then(lookup) {
            return f;
        }
        let dir = p.parent().unwrap_or(Path::new(".")).to_path_buf();
        let m = self.by_dir.entry(dir.clone()).or_insert_with(|| {
            [
                dir.join("MANIFEST.tsv"),
                dir.join("..").join("MANIFEST.tsv"),
            ]
            .into_iter()
            .find(|f| f.is_file())
            .and_then(|f| read_manifest(f).ok())
        });
        if let Some(f) = m.as_ref().and_then(lookup) {
            return f;
        }
        format!("file:{}", augur_datasets::catalog::name_stem(name))
    }
}

fn collect(a: CollectArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(a.reps >= 1, "--reps must be at least 1");
    super::output::plain_runs_out(&a.out)?;
    let ks = augur_models::train::parse_iterations(&a.iterations).with_context(|| {
        format!(
            "--iterations `{}`: expected counts >= 1 separated by commas",
            a.iterations
        )
    })?;
    let iterations = ks
        .iter()
        .map(|k| k.to_string())
        .collect::<Vec<_>>()
        .join(";");
    let mut names = expand(&a.matrices)?;
    if let Some(s) = &a.shard {
        names = take_shard(names, parse_shard(s)?);
    }
    // Sources are parsed up front so that a typo fails before any work.
    let sources = super::parse_sources(&names)?;
    let measurer = match a.backend {
        Backend::Cpu => Measurer::cpu(&a.kernels)?,
        Backend::Cuda => {
            let (m, note) = Measurer::cuda(a.device, &a.kernels)?;
            if let Some(n) = note {
                eprintln!("augur: note: {n}");
            }
            m
        }
        // The same harness through the device seam (not yet run on AMD hardware).
        Backend::Hip => Measurer::hip(a.device, &a.kernels)?,
    };
    let (device, driver) = (measurer.device(), measurer.driver().to_string());
    let kernel_names = measurer.kernel_names();
    let done = prepare_out(
        &a.out,
        a.resume,
        &kernel_names,
        (
            match a.backend {
                Backend::Cpu => "cpu",
                Backend::Cuda => "cuda",
                Backend::Hip => "hip",
            },
            match a.precision {
                Precision::F32 => "f32",
                Precision::F64 => "f64",
            },
        ),
    )?;
    let mut fams = Families {
        explicit: match &a.manifest {
            Some(p) => Some(read_manifest(p)?),
            None => None,
        },
        by_dir: HashMap::new(),
    };
    let mut out = OpenOptions::new()
        .append(true)
        .open(&a.out)
        .with_context(|| format!("open {}", a.out.display()))?;
    let pb = ProgressBar::new(sources.len() as u64);
    pb.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} matrices, ETA {eta} {wide_msg}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    // Messages go above the bar on a terminal, else straight to stderr (a hidden bar drops them).
    let say = |pb: &ProgressBar, msg: String| {
        if pb.is_hidden() {
            eprintln!("{msg}");
        } else {
            pb.println(msg);
        }
    };
    let (mut written, mut skipped_done, mut load_failed, mut kernel_failed) = (0, 0, 0, 0);
    let mut measurer = measurer;
    for src in &sources {
        let name = src.name();
        pb.set_message(name.clone());
        let source = match src {
            MatrixSource::File(p) => p.display().to_string(),
            MatrixSource::Generated(g) => g.to_string(),
        };
        if done.contains(&(name.clone(), source.clone())) {
            skipped_done += 1;
            pb.inc(1);
            continue;
        }
        let family = fams.family(src);
        let meta = MatrixMeta {
            family,
            source,
            device: device.clone(),
            driver: driver.clone(),
            iterations: iterations.clone(),
        };
        let opts = CollectOptions::default()
            .warmup(a.warmup)
            .reps(a.reps)
            .rounds(a.rounds);
        let r = match a.precision {
            Precision::F32 => measure::<f32>(src, &meta, &mut measurer, &opts),
            Precision::F64 => measure::<f64>(src, &meta, &mut measurer, &opts),
        };
        match r {
            Ok((info, runs)) => {
                kernel_failed += runs.iter().filter(|r| r.timing.is_none()).count();
                for r in runs.iter().filter(|r| r.timing.is_none()) {
                    say(
                        &pb,
                        format!("augur: {name}: kernel {} failed: {}", r.kernel, r.error),
                    );
                }
                let bytes = runs::matrix_rows_csv(&info, &runs)?;
                out.write_all(&bytes)
                    .and_then(|()| out.flush())
                    .and_then(|()| out.sync_data())
                    .with_context(|| format!("append to {}", a.out.display()))?;
                written += 1;
            }
            Err(e) => {
                load_failed += 1;
                say(&pb, format!("augur: skipping {name}: {e:#}"));
            }
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    eprintln!(
        "collect: {written} matrices measured, {skipped_done} already in {}, {load_failed} skipped (could not be loaded), {kernel_failed} kernel failures recorded",
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Create the runs CSV with its header, or check an existing one for --resume (dropping a partial
/// last line) and return the matrices already complete, by identity (name, source).
fn prepare_out(
    path: &Path,
    resume: bool,
    kernels: &[String],
    (backend, precision): (&str, &str),
) -> anyhow::Result<std::collections::HashSet<(String, String)>> {
    let header = runs::header().join(",") + "\n";
    let exists = path.metadata().map(|m| m.len() > 0).unwrap_or(false);
    if !exists {
        std::fs::write(path, &header).with_context(|| format!("create {}", path.display()))?;
        return Ok(Default::default());
    }
    if !resume {
        bail!(
            "{} exists; pass --resume to continue it, or choose another --out",
            path.display()
        );
    }
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("open {}", path.display()))?;
    let mut text = String::new();
    f.read_to_string(&mut text)
        .with_context(|| format!("read {}", path.display()))?;
    if header.starts_with(&text) {
        // Only a part of the header: a run interrupted as it created the file. Nothing was
        // measured; start the file again.
        eprintln!(
            "augur: {}: its header was cut short ({} of {} bytes, a run interrupted at its start); writing it again",
            path.display(),
            text.len(),
            header.len()
        );
        drop(f);
        std::fs::write(path, &header).with_context(|| format!("rewrite {}", path.display()))?;
        return Ok(Default::default());
    }
    if !text.starts_with(&header) {
        bail!(
            "{}: its header is not this augur's (SpMV schema v{SPMV_SCHEMA_VERSION}); collect into a new file",
            path.display()
        );
    }
    if !text.ends_with('\n') {
        let keep = text.rfind('\n').map_or(0, |i| i + 1);
        eprintln!(
            "augur: {}: dropping a partial last line ({} bytes) left by an interrupted run",
            path.display(),
            text.len() - keep
        );
        f.set_len(keep as u64)?;
        f.seek(SeekFrom::End(0))?;
    }
    drop(f);
    let runs = Runs::read(&[path.to_path_buf()])?;
    if let Some(m) = runs
        .matrices
        .iter()
        .find(|m| m.info.backend != backend || m.info.precision != precision)
    {
        bail!(
            "{}: `{}` was collected on {} in {}, this run is {backend} in {precision}: one runs file per backend and precision",
            path.display(),
            m.info.matrix,
            m.info.backend,
            m.info.precision
        );
    }
    Ok(runs
        .matrices
        .iter()
        .filter(|m| {
            kernels
                .iter()
                .all(|k| m.kernels.iter().any(|r| &r.kernel == k))
        })
        .map(|m| m.info.key())
        .collect())
}

/// Load `src` and measure it.
fn measure<T: GpuScalar>(
    src: &MatrixSource,
    meta: &MatrixMeta,
    measurer: &mut Measurer,
    opts: &CollectOptions,
) -> anyhow::Result<(MatrixInfo, Vec<KernelRun>)> {
    let (m, _): (Csr<T>, _) = src.load()?;
    Ok(measurer.measure(src.name(), &m, meta, opts)?)
}
