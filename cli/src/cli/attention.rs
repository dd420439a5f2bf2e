//! `augur attention check|bench|plan` and `augur collect attention` (issue 8): every
//! decode-attention schedule on the GPU against the f64 reference, timed, collected over a grid,
//! and the attention model's pick for a shape.

use std::process::ExitCode;

use augur_features::attention::AttentionShape;
use augur_kernels::attention::{max_error, reference, DecodeBatch, ACCEPT_BOUND};
use augur_kernels::cuda::attention::{CudaAttention, Schedule};
use augur_models::ModelFile;
use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum AttentionCommand {
    /// Run every schedule on attention shapes and compare o with the f64 reference
    /// (|error| <= 4e-3: inputs are exact multiples of 1/256 in [-1, 1), o is an average of V
    /// rows in [-1, 1), accumulated in f32 with fast exponentials). Exits non-zero on a failure.
    Check(CheckArgs),
    /// Time every schedule on each shape (events, median after warm-up): CSV on stdout with
    /// microseconds, live-KV GB/s and its fraction of the measured copy bandwidth, and the
    /// FlashAttention-2 rule's split count.
    Bench(BenchArgs),
    /// The schedule the attention model (built in, or --model) picks for each shape, and why;
    /// with --run, run it on the GPU and check it against the f64 reference.
    Plan(PlanArgs),
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Shapes, as for `check`.
    #[arg(value_name = "SHAPE", required = true)]
    shapes: Vec<String>,
    /// An attention model file (default: the built-in one).
    #[arg(long)]
    model: Option<std::path::PathBuf>,
    /// Run the chosen schedule on the GPU (and check it).
    #[arg(long)]
    run: bool,
    #[arg(long, default_value_t = 0)]
    device: usize,
}

fn plan(a: PlanArgs) -> anyhow::Result<ExitCode> {
    let model = match &a.model {
        Some(p) => std::sync::Arc::new(augur_models::attention::AttentionModel::read(p)?),
        None => augur::defaults::attention_model()?,
    };
    let mut failed = 0;
    for spec in &a.shapes {
        let shape = AttentionShape::parse(spec)?;
        let c = augur::attention::choose_schedule(&model, &shape, None, "")?;
        println!("shape     {}", spec_of(&shape));
        println!(
            "schedule  {} (model for {})",
            c.schedule.name(),
            model.device
        );
        for step in &c.path {
            println!("  because {step}");
        }
        if let Some(e) = c.evidence {
            println!("  {}", super::leaf_line(e, "shapes", &c.schedule.name()));
        }
        for n in &c.notes {
            println!("  note: {n}");
        }
        if a.run {
            let opts = augur::attention::AttentionOptions::default()
                .device(a.device)
                .model(model.clone());
            let p = augur::attention::AttentionPlan::new(&shape, opts).map_err(|e| match e {
                augur::AugurError::Kernel(k) => super::gpu_only("decode attention")(k),
                e => e.into(),
            })?;
            let b = DecodeBatch::random(&shape, 1)?;
            let mut d = p.upload(&b)?;
            p.run(&mut d)?;
            let (e, at) = max_error(&reference(&b), &p.output(&d)?);
            if e <= ACCEPT_BOUND {
                println!("check     passed (max |error| {e:.2e})");
            } else {
                failed += 1;
                println!(
                    "check     FAILED: max |error| {e:.2e} at output {at} (bound {ACCEPT_BOUND:e})"
                );
            }
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Shapes, as for `check`.
    #[arg(value_name = "SHAPE", required = true)]
    shapes: Vec<String>,
    /// Schedules (default: head, gqa, split-2..128, balanced; also balanced-N: chunks of N tokens).
    #[arg(long, value_delimiter = ',')]
    schedules: Vec<String>,
    #[arg(long, default_value_t = 0)]
    device: usize,
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Blocks of these many warps (2, 3, 4), each in turn; default: the built-in 3. For
    /// measuring that choice.
    #[arg(long, value_delimiter = ',')]
    warps: Vec<u32>,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Shapes (`attention:q_heads=..,kv_heads=..,head_dim=..,dtype=..,lens=..[,page=..]`);
    /// default: a built-in set with empty and one-token sequences, lengths off the tile,
    /// skewed batches, GQA 1/4/8, head_dim 64/128/256, f16 and bf16, contiguous and paged.
    #[arg(value_name = "SHAPE")]
    shapes: Vec<String>,
    /// Schedules (default: head, gqa, split-2..128, balanced, and balanced-1000, whose chunks
    /// hold whole and cut sequences of the built-in shapes; balanced-N: chunks of N tokens).
    #[arg(long, value_delimiter = ',')]
    schedules: Vec<String>,
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Blocks of these many warps (2, 3, 4), each in turn; default: the built-in 3. For
    /// measuring that choice.
    #[arg(long, value_delimiter = ',')]
    warps: Vec<u32>,
}

/// `--warps` as the list of settings to run (None: the built-in choice).
fn warp_settings(w: &[u32]) -> Vec<Option<u32>> {
    if w.is_empty() {
        vec![None]
    } else {
        w.iter().map(|&w| Some(w)).collect()
    }
}

/// The built-in shapes of the check.
pub fn default_shapes() -> Vec<String> {
    let mut v = Vec::new();
    for (dtype, d) in [("f16", 64), ("bf16", 128), ("f16", 256), ("bf16", 64)] {
        for (hq, hk) in [(4, 4), (8, 2), (16, 2)] {
            for layout in ["", ",page=16"] {
                v.push(format!(
                    "attention:q_heads={hq},kv_heads={hk},head_dim={d},dtype={dtype},lens=0;1;7;33;100;1000{layout}"
                ));
            }
        }
    }
    v.push("attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=5000;1*20".into());
    v.push("attention:q_heads=8,kv_heads=1,head_dim=128,dtype=f16,lens=3*64,page=32".into());
    v
}

fn parse_schedules(names: &[String]) -> anyhow::Result<Vec<Schedule>> {
    if names.is_empty() {
        return Ok(Schedule::all());
    }
    names
        .iter()
        .map(|s| {
            Schedule::parse(s).ok_or_else(|| {
                anyhow::anyhow!(
                    "--schedules: `{s}` is not head, gqa, split-N, balanced or balanced-N"
                )
            })
        })
        .collect()
}

/// `augur collect attention`.
#[derive(Args, Debug)]
pub struct CollectArgs {
    /// Shapes (`attention:q_heads=..,kv_heads=..,head_dim=..,dtype=..,lens=..[,page=..]`);
    /// default: the built-in grid (see --list-grid).
    #[arg(value_name = "SHAPE")]
    shapes: Vec<String>,
    /// Print the shapes (the built-in grid, or this shard of it), one per line, and exit.
    #[arg(long)]
    list_grid: bool,
    /// The built-in grid keeps shapes whose live K and V take at most this many bytes.
    #[arg(long, default_value = "1GiB")]
    max_kv_bytes: String,
    /// Schedules (default: head, gqa, split-2..128, balanced); the FlashAttention-2 rule's split
    /// count on the split-KV kernel is always run too (rows `fa2`).
    #[arg(long, value_delimiter = ',')]
    schedules: Vec<String>,
    #[arg(long, default_value_t = 0)]
    device: usize,
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Timed launches per schedule (the median is recorded).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Sequences per shape whose output is checked against the f64 reference (the longest, the
    /// first, the last, then evenly spaced; 0: no check), for every schedule before it is timed.
    #[arg(long, default_value_t = 4)]
    check_seqs: usize,
    /// Take only every n-th shape starting at the i-th (`i/n`, 1-based).
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// The attention runs CSV (rows are appended as they are measured).
    #[arg(long, required_unless_present = "list_grid")]
    out: Option<std::path::PathBuf>,
    /// Replace an existing --out.
    #[arg(long)]
    force: bool,
    /// Continue an existing --out: shapes with every schedule recorded are skipped.
    #[arg(long, conflicts_with = "force")]
    resume: bool,
}

/// The built-in grid of `augur collect attention` (issue 8): five head configurations
/// (GQA 4 and 8 at head_dim 128, MHA, GQA 8 at head_dim 256, GQA 2 at head_dim 64), batches 1
/// to 256, KV lengths 128 to 128k uniform, skewed (one long sequence, the rest 1/64 of it) and
/// spread (uniform at random between 16 and the length), some paged; shapes whose live K and V
/// exceed `max_kv_bytes` are left out. Deterministic.
pub fn default_grid(max_kv_bytes: f64) -> Vec<String> {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
    let mut v = Vec::new();
    let configs = [
        (32, 8, 128, "bf16", true),
        (64, 8, 128, "bf16", true),
        (32, 32, 128, "f16", false),
        (8, 1, 256, "bf16", false),
        (16, 8, 64, "f16", false),
    ];
    for (hq, hk, d, dtype, paged) in configs {
        for batch in [1usize, 4, 16, 64, 256] {
            for len in [128usize, 1024, 8192, 32768, 131072] {
                let dists: &[&str] = if batch == 1 {
                    &["uniform"]
                } else {
                    &["uniform", "skewed", "spread"]
                };
                for &dist in dists {
                    let lens = match dist {
                        "uniform" => format!("{len}*{batch}"),
                        "skewed" => format!("{len};{}*{}", (len / 64).max(16), batch - 1),
                        _ => (0..batch)
                            .map(|_| rng.random_range(16..=len).to_string())
                            .collect::<Vec<_>>()
                            .join(";"),
                    };
                    let spec = format!(
                        "attention:q_heads={hq},kv_heads={hk},head_dim={d},dtype={dtype},lens={lens}"
                    );
                    let tokens: usize = match AttentionShape::parse(&spec) {
                        Ok(s) => s.kv_lens.iter().sum(),
                        Err(_) => continue,
                    };
                    if (4 * tokens * hk * d) as f64 > max_kv_bytes {
                        continue;
                    }
                    v.push(spec.clone());
                    if paged && dist != "skewed" && batch >= 4 {
                        v.push(format!("{spec},page=16"));
                    }
                }
            }
        }
    }
    v
}

/// The sequences of a batch whose output a collect run checks: the longest, the first, the
/// last, then evenly spaced, `n` at most, no repeats.
fn checked_sequences(lens: &[usize], n: usize) -> Vec<usize> {
    if n == 0 || lens.is_empty() {
        return Vec::new();
    }
    let longest = (0..lens.len()).max_by_key(|&i| lens[i]).expect("non-empty");
    let mut v = vec![longest, 0, lens.len() - 1];
    let step = (lens.len() / n.max(1)).max(1);
    v.extend((0..lens.len()).step_by(step));
    let mut seen = std::collections::BTreeSet::new();
    v.retain(|s| seen.insert(*s));
    v.truncate(n);
    v
}

pub fn collect(a: CollectArgs) -> anyhow::Result<ExitCode> {
    use augur_kernels::attention::{fa2_splits_for, max_error_rows, reference_rows};
    use augur_models::attention::{row_csv, AttentionRun, AttentionRuns, FA2};
    use std::io::Write as _;
    let max_bytes = augur_features::parse_count(&a.max_kv_bytes).ok_or_else(|| {
        anyhow::anyhow!("--max-kv-bytes: `{}` is not a byte count", a.max_kv_bytes)
    })? as f64;
    let mut specs = if a.shapes.is_empty() {
        default_grid(max_bytes)
    } else {
        a.shapes.clone()
    };
    if let Some(sh) = &a.shard {
        specs = super::collect::take_shard(specs, super::collect::parse_shard(sh)?);
    }
    if a.list_grid {
        for s in &specs {
            println!("{s}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let shapes: Vec<(String, AttentionShape)> = specs
        .iter()
        .map(|s| Ok((s.clone(), AttentionShape::parse(s)?)))
        .collect::<anyhow::Result<_>>()?;
    let schedules = parse_schedules(&a.schedules)?;
    let names: Vec<String> = schedules
        .iter()
        .map(|s| s.name())
        .chain([FA2.to_string()])
        .collect();
    let out = a.out.clone().expect("--out (clap)");
    super::output::plain_runs_out(&out)?;
    // Shapes already complete in --out (with --resume).
    let mut done = std::collections::BTreeSet::new();
    if out.exists() {
        if a.resume {
            for c in AttentionRuns::read(std::slice::from_ref(&out))?.cases() {
                if names.iter().all(|n| c.runs.iter().any(|(s, _)| s == n)) {
                    done.insert(c.spec);
                }
            }
        } else if !a.force {
            anyhow::bail!(
                "{} exists; pass --force to replace it or --resume to continue it",
                out.display()
            );
        }
    }
    let gpu = CudaAttention::new(a.device).map_err(super::gpu_only("decode attention"))?;
    let info = augur_kernels::cuda::device_info(a.device)?;
    let driver = augur_kernels::cuda::driver_version()?;
    let sms = info.multiprocessors.max(1) as usize;
    let mut file = if a.resume && out.exists() {
        std::fs::OpenOptions::new().append(true).open(&out)?
    } else {
        let mut f = std::fs::File::create(&out)?;
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(augur_models::attention::header())?;
        f.write_all(&w.into_inner()?)?;
        f
    };
    let start = std::time::Instant::now();
    let (mut rows, mut failed) = (0usize, 0usize);
    for (i, (spec, shape)) in shapes.iter().enumerate() {
        if done.contains(spec) {
            continue;
        }
        let b = DecodeBatch::random(shape, i as u64 + 1)?;
        let kv_bytes = shape.features()?.kv_bytes;
        let mut d = gpu.upload(&b)?;
        let want = reference_rows(&b, &checked_sequences(&shape.kv_lens, a.check_seqs));
        let fa2 = fa2_splits_for(shape, sms);
        let mut best: Option<(String, f64)> = None;
        for name in &names {
            let sched = if name == FA2 {
                if fa2 <= 1 {
                    Schedule::Gqa
                } else {
                    Schedule::Split(fa2 as u32)
                }
            } else {
                Schedule::parse(name).expect("named from a schedule")
            };
            let measured = (|| -> anyhow::Result<(augur_kernels::cuda::ModeTimes, Option<f64>)> {
                let mut p = gpu.prepare(&d, sched)?;
                let mut err = None;
                if !want.is_empty() {
                    gpu.poison(&mut d)?;
                    gpu.launch(&mut d, &mut p)?;
                    let (e, at) = max_error_rows(&want, &gpu.output(&d)?);
                    if e.is_nan() || e > ACCEPT_BOUND {
                        anyhow::bail!(
                            "wrong result: |error| {e:.2e} at output {at} (bound {ACCEPT_BOUND:e})"
                        );
                    }
                    err = Some(e);
                }
                Ok((gpu.time_modes(&mut d, &mut p, a.warmup, a.reps)?, err))
            })();
            let mut run = AttentionRun {
                spec: spec.clone(),
                device: info.name.clone(),
                driver: driver.clone(),
                augur_version: env!("CARGO_PKG_VERSION").into(),
                schedule: name.clone(),
                median_s: None,
                latency_s: None,
                graph_s: None,
                batch: 0,
                error: String::new(),
                kv_bytes,
                reps: 0,
                check_max_error: None,
                fa2_splits: fa2,
            };
            match measured {
                Ok((m, err)) => {
                    let t = m.throughput_s;
                    if name != FA2 && best.as_ref().is_none_or(|b| t < b.1) {
                        best = Some((name.clone(), t));
                    }
                    run.median_s = Some(t);
                    run.latency_s = Some(m.latency_s);
                    run.graph_s = m.graph_s.ok();
                    run.batch = m.batch;
                    run.reps = a.reps;
                    run.check_max_error = err;
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("augur: {name} on {spec}: {e:#}");
                    run.error = format!("{e:#}");
                }
            }
            file.write_all(&row_csv(&run)?)?;
            rows += 1;
        }
        file.flush()?;
        if let Some((n, t)) = best {
            eprintln!(
                "[{:7.1} s] {}/{}: {n} {:.1} us ({:.0} GB/s)  {}",
                start.elapsed().as_secs_f64(),
                i + 1,
                shapes.len(),
                t * 1e6,
                kv_bytes / t / 1e9,
                spec_of(shape)
            );
        }
    }
    eprintln!(
        "augur: {rows} rows ({failed} failed) for {} shapes -> {}",
        shapes.len() - done.len(),
        out.display()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn run(c: AttentionCommand) -> anyhow::Result<ExitCode> {
    let a = match c {
        AttentionCommand::Check(a) => a,
        AttentionCommand::Bench(b) => return bench(b),
        AttentionCommand::Plan(p) => return plan(p),
    };
    let shapes = if a.shapes.is_empty() {
        default_shapes()
    } else {
        a.shapes.clone()
    };
    let shapes: Vec<AttentionShape> = shapes
        .iter()
        .map(|s| AttentionShape::parse(s).map_err(anyhow::Error::from))
        .collect::<anyhow::Result<_>>()?;
    let mut schedules = parse_schedules(&a.schedules)?;
    if a.schedules.is_empty() {
        // Chunks of 1000 tokens: sequences inside a chunk, written directly, and sequences
        // across chunks, merged by the combine, in the small built-in shapes.
        schedules.push(Schedule::Balanced(1000));
    }
    let mut gpu = CudaAttention::new(a.device).map_err(super::gpu_only("decode attention"))?;
    let (mut passed, mut failed) = (0usize, 0usize);
    for (i, shape) in shapes.iter().enumerate() {
        let b = DecodeBatch::random(shape, i as u64 + 1)?;
        let want = reference(&b);
        for w in warp_settings(&a.warps) {
            gpu.set_warps(w)?;
            let wname = w.map_or(String::new(), |w| format!(" {w} warps"));
            for &s in &schedules {
                let verdict = (|| -> anyhow::Result<(f64, usize)> {
                    let mut d = gpu.upload(&b)?;
                    gpu.run(&mut d, s)?;
                    Ok(max_error(&want, &gpu.output(&d)?))
                })();
                match verdict {
                    Ok((e, _)) if e <= ACCEPT_BOUND => {
                        passed += 1;
                        println!(
                            "passed  {:<12} max |error| {e:.2e}  {}{wname}",
                            s.name(),
                            spec_of(shape)
                        );
                    }
                    Ok((e, at)) => {
                        failed += 1;
                        println!(
                        "FAILED  {:<12} max |error| {e:.2e} at output {at} (bound {ACCEPT_BOUND:e})  {}{wname}",
                        s.name(),
                        spec_of(shape)
                    );
                    }
                    Err(e) => {
                        failed += 1;
                        println!("FAILED  {:<12} {e}  {}{wname}", s.name(), spec_of(shape));
                    }
                }
            }
        }
    }
    println!("attention check: {passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn bench(a: BenchArgs) -> anyhow::Result<ExitCode> {
    let shapes: Vec<(String, AttentionShape)> = a
        .shapes
        .iter()
        .map(|s| Ok((s.clone(), AttentionShape::parse(s)?)))
        .collect::<anyhow::Result<_>>()?;
    let schedules = parse_schedules(&a.schedules)?;
    let mut gpu = CudaAttention::new(a.device).map_err(super::gpu_only("decode attention"))?;
    let spmv = augur_kernels::cuda::CudaSpmv::new(a.device)
        .map_err(super::gpu_only("decode attention"))?;
    // GB/s, read + written.
    let copy = spmv.copy_bandwidth()?;
    let sms = spmv.device.multiprocessors as usize;
    println!(
        "shape,schedule,median_us,live_kv_gb_per_s,fraction_of_copy,fa2_splits,copy_gb_per_s,warps"
    );
    for (i, (spec, shape)) in shapes.iter().enumerate() {
        let b = DecodeBatch::random(shape, i as u64 + 1)?;
        let mut d = gpu.upload(&b)?;
        let fa2 = augur_kernels::attention::fa2_splits_for(shape, sms);
        for w in warp_settings(&a.warps) {
            gpu.set_warps(w)?;
            for &s in &schedules {
                let mut p = gpu.prepare(&d, s)?;
                let t = gpu.time(&mut d, &mut p, a.warmup, a.reps)?;
                let gbs = b.kv_bytes() as f64 / t / 1e9;
                println!(
                    "\"{spec}\",{},{:.3},{gbs:.1},{:.3},{fa2},{:.1},{}",
                    s.name(),
                    t * 1e6,
                    gbs / copy,
                    copy,
                    p.warps
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn spec_of(s: &AttentionShape) -> String {
    let n = s.kv_lens.len();
    format!(
        "q_heads={} kv_heads={} head_dim={} dtype={}, {n} sequence{}, {}",
        s.q_heads,
        s.kv_heads,
        s.head_dim,
        format!("{:?}", s.dtype).to_lowercase(),
        if n == 1 { "" } else { "s" },
        match s.layout {
            augur_features::attention::KvLayout::Contiguous => "contiguous KV".to_string(),
            augur_features::attention::KvLayout::Paged { page_size } =>
                format!("paged KV ({page_size} tokens a page)"),
        }
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_grid_is_deterministic_and_within_its_byte_cap() {
        let g = super::default_grid((1u64 << 30) as f64);
        assert_eq!(g, super::default_grid((1u64 << 30) as f64));
        assert!(g.len() > 150, "{}", g.len());
        for s in &g {
            let f = augur_features::attention::AttentionShape::parse(s)
                .unwrap()
                .features()
                .unwrap();
            assert!(f.kv_bytes <= (1u64 << 30) as f64, "{s}");
        }
        // The ranges: batch 1..256, GQA 1..8, one 128k sequence, paged shapes.
        assert!(g
            .iter()
            .any(|s| s.contains("lens=131072*1,") || s.ends_with("lens=131072*1")));
        assert!(g.iter().any(|s| s.contains("page=16")));
        assert!(g.iter().any(|s| s.contains("q_heads=32,kv_heads=32")));
        assert!(super::default_grid(1e6).len() < g.len());
        // Shards of the grid cover it once.
        use crate::cli::collect::take_shard;
        let (a, b) = (take_shard(g.clone(), (1, 2)), take_shard(g.clone(), (2, 2)));
        assert_eq!(a.len() + b.len(), g.len());
        assert!(a.iter().all(|s| !b.contains(s)));
        assert!(crate::cli::collect::parse_shard("0/2").is_err());
    }

    #[test]
    fn checked_sequences_take_the_longest_and_the_ends() {
        assert_eq!(super::checked_sequences(&[5, 9, 1, 2], 3), vec![1, 0, 3]);
        assert_eq!(super::checked_sequences(&[5], 4), vec![0]);
        assert!(super::checked_sequences(&[5, 6], 0).is_empty());
        // Equal lengths: the longest is the last; then the first, then evenly spaced.
        let v = super::checked_sequences(&[1; 100], 6);
        assert_eq!(v, vec![99, 0, 16, 32, 48, 64]);
    }

    #[test]
    fn default_shapes_parse() {
        for s in super::default_shapes() {
            augur_features::attention::AttentionShape::parse(&s).unwrap();
        }
    }
}
