//! `augur collect comm`: check and time every communication pattern of each collective over a
//! sweep of message sizes on N GPUs, into a comm runs CSV for `augur train`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use augur_features::attention::Dtype;
use augur_features::message::{Collective, LinkProbe, MessageShape};
use augur_kernels::cuda::comm::{self, Case, CommGroup, GroupOptions, Pattern, SweepPlan};
use augur_kernels::cuda::DriverLinkProbe;
use augur_models::comm::{self as runs, CommRun};
use augur_models::ModelFile;
use clap::Args;

#[derive(Args, Debug)]
pub struct CommArgs {
    /// GPUs in the group: the first N the driver lists (see --devices).
    #[arg(long, default_value_t = 2)]
    gpus: usize,
    /// GPU ordinals instead of the first N, comma-separated (e.g. 0,2).
    #[arg(long)]
    devices: Option<String>,
    /// Message sizes (nccl-tests convention): `A..B` for every power of two from A to B and the
    /// size halfway between each two (1.5x), or a comma-separated list (`1KiB,3000,1MiB`).
    #[arg(long, default_value = "1KiB..1GiB")]
    sizes: String,
    /// Collectives, comma-separated.
    #[arg(long, default_value = "all-reduce,all-gather")]
    collectives: String,
    /// Element types, comma-separated (f32, bf16).
    #[arg(long, default_value = "f32,bf16")]
    dtypes: String,
    /// Patterns to run, comma-separated (default: every pattern of each collective:
    /// nccl, ll, one-shot, two-shot for all-reduce; nccl, ll, pull, push, copy-engine for
    /// all-gather).
    #[arg(long)]
    patterns: Option<String>,
    /// Largest message per GPU for the LL pattern (its staging buffers take 4 x GPUs x this on
    /// each GPU); larger LL cases are not run.
    #[arg(long, default_value = "4MiB")]
    ll_max: String,
    /// Untimed calls before the timed ones.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Timed batches (the median is kept).
    #[arg(long, default_value_t = 9)]
    reps: usize,
    /// Each batch lasts about this many microseconds of back-to-back calls.
    #[arg(long, default_value_t = 300.0)]
    batch_us: f64,
    /// Skip the check of every case against the host.
    #[arg(long)]
    no_check: bool,
    /// Output CSV (rows are appended as they come; must not exist unless --force).
    #[arg(long)]
    out: PathBuf,
    #[arg(long)]
    force: bool,
}

/// Parse `--sizes`.
pub fn parse_sizes(s: &str) -> anyhow::Result<Vec<usize>> {
    let count = |t: &str| {
        augur_features::parse_count(t)
            .filter(|&v| v > 0)
            .with_context(|| format!("--sizes: `{t}` is not a byte count like 4096, 64KiB or 1GiB"))
    };
    if let Some((a, b)) = s.split_once("..") {
        let (a, b) = (count(a)?, count(b)?);
        if a > b {
            bail!("--sizes {s}: the range is empty");
        }
        let mut v = Vec::new();
        let mut x = a.next_power_of_two();
        if x != a {
            v.push(a);
        }
        while x <= b {
            v.push(x);
            let mid = x + x / 2;
            if x >= 2 && mid < b {
                v.push(mid);
            }
            x *= 2;
        }
        if *v.last().expect("a <= b") != b && b > a {
            v.push(b);
        }
        v.sort_unstable();
        v.dedup();
        return Ok(v);
    }
    s.split(',').map(count).collect()
}

fn list<T>(s: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> anyhow::Result<Vec<T>> {
    s.split(',')
        .map(|t| parse(t.trim()).with_context(|| format!("--{what}: `{t}` is not known")))
        .collect()
}

pub fn run(a: CommArgs) -> anyhow::Result<ExitCode> {
    let sizes = parse_sizes(&a.sizes)?;
    let collectives = list(&a.collectives, "collectives", |t| {
        match Collective::parse(t) {
            Some(Collective::ReduceScatter) | None => None,
            c => c,
        }
    })?;
    let dtypes = list(&a.dtypes, "dtypes", |t| match Dtype::parse(t) {
        Some(d @ (Dtype::F32 | Dtype::Bf16)) => Some(d),
        _ => None,
    })?;
    let only = match &a.patterns {
        None => None,
        Some(p) => Some(list(p, "patterns", Pattern::parse)?),
    };
    let ordinals: Vec<usize> = match &a.devices {
        Some(d) => list(d, "devices", |t| t.parse().ok())?,
        None => (0..a.gpus).collect(),
    };
    if ordinals.len() < 2 {
        bail!("a collective needs at least 2 GPUs (--gpus or --devices)");
    }
    super::output::plain_runs_out(&a.out)?;
    if a.out.exists() && !a.force {
        bail!("{} exists; pass --force to replace it", a.out.display());
    }
    let world = ordinals.len();
    let ll_max = augur_features::parse_count(&a.ll_max)
        .with_context(|| format!("--ll-max: `{}` is not a byte count", a.ll_max))?;
    let per_rank = |c: &Case| match c.collective {
        Collective::AllGather => c.real_bytes(world).div_ceil(world),
        _ => c.real_bytes(world),
    };
    let mut cases = Vec::new();
    for &collective in &collectives {
        for &dtype in &dtypes {
            for &bytes in &sizes {
                for &pattern in Pattern::of(collective) {
                    if only.as_ref().is_some_and(|o| !o.contains(&pattern)) {
                        continue;
                    }
                    let case = Case {
                        collective,
                        dtype,
                        bytes,
                        pattern,
                    };
                    if case.elements(world) == 0 {
                        eprintln!(
                            "augur: note: {bytes} bytes is less than one {} element per GPU; skipped",
                            runs::dtype_name(dtype)
                        );
                        continue;
                    }
                    if pattern == Pattern::Ll && per_rank(&case) > ll_max {
                        continue;
                    }
                    cases.push(case);
                }
            }
        }
    }
    if cases.is_empty() {
        bail!("nothing to run: no pattern of the collectives passed --patterns");
    }
    let capacity = cases
        .iter()
        .map(|c| c.real_bytes(world))
        .max()
        .expect("cases");
    let needs_scratch = cases.iter().any(|c| c.pattern == Pattern::TwoShot);
    let needs_nccl = cases.iter().any(|c| c.pattern == Pattern::Nccl);
    let devices = augur_kernels::cuda::devices().map_err(super::gpu_only("augur collect comm"))?;
    let link = DriverLinkProbe.group_link(&ordinals)?;
    let device = devices
        .get(ordinals[0])
        .map(|d| d.name.clone())
        .unwrap_or_default();
    let driver = augur_kernels::cuda::driver_version()?;
    let ranks = CommGroup::new(
        &ordinals,
        &GroupOptions::new(capacity)
            .scratch(needs_scratch)
            .nccl(needs_nccl)
            .ll_bytes(
                cases
                    .iter()
                    .filter(|c| c.pattern == Pattern::Ll)
                    .map(per_rank)
                    .max()
                    .unwrap_or(0),
            ),
    )?;
    let gpus = ordinals
        .iter()
        .map(|o| o.to_string())
        .collect::<Vec<_>>()
        .join(";");
    let file =
        std::fs::File::create(&a.out).with_context(|| format!("create {}", a.out.display()))?;
    let out = std::sync::Mutex::new(std::io::BufWriter::new(file));
    {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(runs::header())?;
        let mut o = out.lock().expect("no panic");
        o.write_all(&w.into_inner()?)?;
        o.flush()?;
    }
    let failures = std::sync::atomic::AtomicUsize::new(0);
    let write_err = std::sync::Mutex::new(None::<String>);
    let started = std::time::Instant::now();
    let progress = |r: &comm::CaseResult| {
        let at = started.elapsed().as_secs_f64();
        let shape = MessageShape {
            collective: r.case.collective,
            dtype: r.case.dtype,
            bytes: r.bytes,
            world_size: world,
            link,
            gemm: None,
        };
        let run = CommRun {
            shape,
            gpus: gpus.clone(),
            device: device.clone(),
            driver: driver.clone(),
            augur_version: env!("CARGO_PKG_VERSION").into(),
            pattern: r.case.pattern.name().into(),
            median_s: r.median_s,
            error: r.error.clone(),
            reps: r.reps,
            batch: r.batch,
            check: r.check.clone(),
        };
        let (alg, bus) = run.bandwidths().unwrap_or((0.0, 0.0));
        match r.median_s {
            Some(t) => eprintln!(
                "[{at:7.1} s] {:>10} {:>4} {:>11} B {:>11}: {:>10.2} us  algbw {:>7.1} GB/s  busbw {:>7.1} GB/s  [{}]",
                runs::collective_name(r.case.collective),
                runs::dtype_name(r.case.dtype),
                r.bytes,
                r.case.pattern.name(),
                t * 1e6,
                alg,
                bus,
                r.check
            ),
            None => {
                failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                eprintln!(
                    "[{at:7.1} s] {:>10} {:>4} {:>11} B {:>11}: FAILED: {}",
                    runs::collective_name(r.case.collective),
                    runs::dtype_name(r.case.dtype),
                    r.bytes,
                    r.case.pattern.name(),
                    r.error
                )
            }
        }
        let res = runs::row_csv(&run)
            .map_err(|e| e.to_string())
            .and_then(|b| {
                let mut o = out.lock().expect("no panic");
                o.write_all(&b)
                    .and_then(|_| o.flush())
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = res {
            write_err.lock().expect("no panic").get_or_insert(e);
        }
    };
    eprintln!(
        "augur: {} cases on {world} x {device} (GPUs {gpus}, link {link:?}), buffers of {capacity} bytes",
        cases.len()
    );
    let results = comm::sweep(
        ranks,
        &cases,
        SweepPlan {
            warmup: a.warmup,
            reps: a.reps,
            batch_s: a.batch_us * 1e-6,
            check: !a.no_check,
        },
        &progress,
    );
    if let Some(e) = write_err.into_inner().expect("no panic") {
        bail!("writing {}: {e}", a.out.display());
    }
    let failed = failures.into_inner();
    eprintln!(
        "augur: {} cases, {failed} failed; wrote {}",
        results.len(),
        a.out.display()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::parse_sizes;

    #[test]
    fn sizes_ranges_and_lists() {
        assert_eq!(
            parse_sizes("1KiB..8KiB").unwrap(),
            vec![1024, 1536, 2048, 3072, 4096, 6144, 8192]
        );
        assert_eq!(
            parse_sizes("1000..4096").unwrap(),
            vec![1000, 1024, 1536, 2048, 3072, 4096]
        );
        assert_eq!(parse_sizes("4,1MiB,3000").unwrap(), vec![4, 1 << 20, 3000]);
        assert!(parse_sizes("8KiB..1KiB").is_err());
        assert!(parse_sizes("0..1KiB").is_err());
        assert!(parse_sizes("1KiB,x").is_err());
    }
}

#[derive(clap::Subcommand, Debug)]
pub enum CommCommand {
    /// The pattern the comm model (built in, or --model) picks for each message, and why.
    Plan(CommPlanArgs),
}

#[derive(Args, Debug)]
pub struct CommPlanArgs {
    /// Messages `message:collective=all-gather,bytes=4MiB,world=4[,dtype=bf16,link=nvlink|pcie]`.
    #[arg(required = true, value_name = "MESSAGE")]
    messages: Vec<String>,
    /// A comm model file (default: the built-in one).
    #[arg(long)]
    model: Option<PathBuf>,
}

/// `augur comm plan`: the model's pick per message and the path through its tree, offline.
pub fn plan(a: CommPlanArgs) -> anyhow::Result<ExitCode> {
    let model = match &a.model {
        Some(p) => std::sync::Arc::new(augur_models::comm::CommModel::read(p)?),
        None => augur::defaults::comm_model()?,
    };
    for spec in &a.messages {
        let shape = MessageShape::parse(spec)?;
        let Some(pattern) = model.choose(&shape) else {
            anyhow::bail!(
                "{spec}: the comm model ({}) has no tree for this collective",
                model.device
            );
        };
        println!("message   {spec}");
        println!("pattern   {pattern} (model for {})", model.device);
        for step in model.path(&shape) {
            println!("  because {}", augur::Step::from(step));
        }
        if let Some(e) = model.leaf_evidence(&shape) {
            println!("  {}", super::leaf_line(e, "messages", pattern));
        }
    }
    Ok(ExitCode::SUCCESS)
}
