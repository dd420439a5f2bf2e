//! `augur run`: plan SpMV for one matrix through the library API (select, set up), run it,
//! and report the decision, its explanation, setup and per-iteration time.

use std::process::ExitCode;
use std::time::Instant;

use augur::multi::{GatherMode, MultiOptions, ShardProfile};
use augur::{
    Backend, Dispatcher, GatherPolicy, MultiGpuSpmv, PlanOptions, Selector, SetupCost, ShardInfo,
    SpmvPlan,
};
use augur_datasets::{Csr, MatrixSource};
use augur_kernels::check::{self, CheckReport};
use augur_kernels::cuda::{self, GpuScalar, TimingPlan};
use augur_kernels::device::{BackendKind, SpmvDevice};
use augur_kernels::{median, spmv_bytes};
use augur_models::ModelFile;
use clap::{Args, ValueEnum};
use cudarc::nccl::NcclType;
use serde::Serialize;

use super::Precision;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunBackend {
    Cpu,
    Cuda,
    /// AMD GPUs through HIP (compiled, not yet run on AMD hardware).
    Hip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GatherModeArg {
    Auto,
    AllGather,
    Broadcasts,
    Ll,
    Pull,
    Push,
    CopyEngine,
    Halo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GatherArg {
    Auto,
    Always,
    Sample,
    Never,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A Matrix Market file or a generator spec.
    #[arg(value_name = "MATRIX")]
    matrix: String,
    /// Products to run, at least 1 (and the count the selector weighs setup and gathering
    /// against).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    iterations: u32,
    /// Default: cuda when a GPU is present, else cpu.
    #[arg(long, value_enum)]
    backend: Option<RunBackend>,
    /// Split the rows across this many GPUs (MultiGpuSpmv: all-gather of y or halo exchange).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    gpus: Option<u16>,
    /// With --gpus: chunks per shard, each all-gathered while the next one is computed.
    #[arg(long, default_value_t = 1)]
    chunks: usize,
    /// With --gpus: how y reaches every GPU: `auto` asks the communication-pattern model
    /// (the built-in H200 one unless --comm-model); or a padded ncclAllGather, one grouped
    /// ncclBroadcast per shard (all-gather-v), or augur's ll, pull, push or copy-engine
    /// all-gather over peer access; or `halo`: only the x entries each shard reads, by NCCL
    /// send/recv while the local block is multiplied (square matrices; auto takes it when the
    /// busiest shard's halo is at most a quarter of an all-gather of 4 MiB or more).
    #[arg(long, value_enum, default_value = "auto")]
    gather_mode: GatherModeArg,
    /// With --gpus and --gather-mode auto: a comm model file from `augur train` on comm runs.
    #[arg(long)]
    comm_model: Option<std::path::PathBuf>,
    /// First GPU (with one GPU).
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Print the path through the trees that chose each kernel.
    #[arg(long)]
    explain: bool,
    /// Use this kernel instead of asking the model.
    #[arg(long)]
    kernel: Option<String>,
    /// A model file from `augur train` (default: the one built in for the backend).
    #[arg(long)]
    model: Option<String>,
    /// Accept a model file trained on another GPU or precision.
    #[arg(long)]
    any_device: bool,
    /// The features beyond shape and nnz: the tier the model's policy says pays (auto), the exact
    /// features (always), the sampled tier alone (sample), or none (never).
    #[arg(long, value_enum, default_value = "auto")]
    gather: GatherArg,
    #[arg(long, value_enum, default_value = "f32")]
    precision: Precision,
    /// Check one product (and, on several GPUs, two iterated ones) against the f64 reference.
    #[arg(long)]
    check: bool,
    /// Per-shard device times (product alone, all-gather alone) on several GPUs.
    #[arg(long)]
    profile: bool,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    json: bool,
    /// One process per GPU under a launcher (torchrun, mpirun, srun, or RANK/WORLD_SIZE/
    /// LOCAL_RANK with MASTER_ADDR/MASTER_PORT): this process is one rank, on GPU LOCAL_RANK,
    /// exchanging through NCCL (--gather-mode halo, all-gather or broadcasts; auto: the halo by
    /// its traffic, else the all-gather). Rank 0 loads the matrix and sends each rank its part;
    /// rank 0 prints the report; --check checks each rank's rows.
    #[arg(long, conflicts_with = "gpus")]
    distributed: bool,
    /// With --distributed: every rank loads the whole matrix and cuts its part itself (no
    /// transfer from rank 0; each rank holds the whole matrix while it plans).
    #[arg(long, requires = "distributed")]
    every_rank_loads: bool,
    /// With --distributed: seconds any rank waits for the others, at any step.
    #[arg(long, default_value_t = 120.0)]
    timeout: f64,
}

#[derive(Serialize)]
struct Report {
    matrix: String,
    rows: usize,
    cols: usize,
    nnz: usize,
    precision: &'static str,
    load_s: f64,
    backend: &'static str,
    /// With --distributed: this process's rank, of `gpus`.
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<usize>,
    device: String,
    gpus: usize,
    iterations: u32,
    /// Chunks per shard and the all-gather (several GPUs).
    chunks: usize,
    gather_mode: Option<&'static str>,
    /// How the gather mode was chosen (several GPUs).
    gather: Option<augur::multi::GatherChoice>,
    /// One plan (single device), or one per shard.
    shards: Vec<ShardInfo>,
    setup: SetupCost,
    /// Wall-clock per product after warm-up (on GPUs: device vectors, y -> x on several GPUs).
    per_iteration_s: f64,
    /// Bytes one SpMV moves at least, over the time per iteration.
    gb_per_s: f64,
    check: Option<Vec<CheckReport>>,
    profile: Option<Vec<ShardProfile>>,
}

impl Report {
    /// Before any product: the matrix (rows, cols, nnz) and how long it took to load.
    fn new<T: GpuScalar>(
        a: &RunArgs,
        src: &MatrixSource,
        (rows, cols, nnz): (usize, usize, usize),
        load_s: f64,
        backend: &'static str,
    ) -> Report {
        Report {
            matrix: src.name(),
            rows,
            cols,
            nnz,
            precision: T::NAME,
            load_s,
            backend,
            rank: None,
            device: String::new(),
            gpus: 0,
            iterations: a.iterations,
            chunks: 1,
            gather_mode: None,
            gather: None,
            shards: Vec::new(),
            setup: SetupCost::default(),
            per_iteration_s: 0.0,
            gb_per_s: 0.0,
            check: None,
            profile: None,
        }
    }
}

pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let src = match MatrixSource::parse(&a.matrix) {
        Ok(s) => s,
        // Across processes only rank 0 reads the matrix (the others receive their part), so
        // another rank's host need not have the file: rank 0 says so if it cannot read it.
        Err(_) if a.distributed && !a.every_rank_loads && !launcher_rank_zero() => {
            MatrixSource::File(a.matrix.clone().into())
        }
        Err(e) => return Err(e.into()),
    };
    match a.precision {
        Precision::F32 => run_typed::<f32>(&a, &src),
        Precision::F64 => run_typed::<f64>(&a, &src),
    }
}

/// Whether the launcher's variables make this process rank 0 (or name no rank, or cannot be
/// read: then the matrix is checked here as on one process).
fn launcher_rank_zero() -> bool {
    !matches!(augur::multi::launch::RankEnv::from_env(), Ok(Some(e)) if e.rank != 0)
}

fn options(a: &RunArgs, backend: &str) -> anyhow::Result<PlanOptions> {
    let selector = a.model.as_deref().map(Selector::load).transpose()?;
    if let Some(s) = &selector {
        if s.model().backend != backend {
            anyhow::bail!(
                "--model {}: trained for backend `{}`, this run uses `{backend}` (--backend)",
                s.origin(),
                s.model().backend
            );
        }
    }
    let mut opts = PlanOptions::default()
        .expected_iterations(a.iterations.max(1))
        .gather(match a.gather {
            GatherArg::Auto => GatherPolicy::Auto,
            GatherArg::Always => GatherPolicy::Always,
            GatherArg::Sample => GatherPolicy::Sample,
            GatherArg::Never => GatherPolicy::Never,
        })
        .allow_other_device(a.any_device);
    opts.kernel = a.kernel.clone();
    opts.selector = selector;
    Ok(opts)
}

fn run_typed<T: GpuScalar + NcclType>(a: &RunArgs, src: &MatrixSource) -> anyhow::Result<ExitCode> {
    let gpus = a.gpus.map(usize::from);
    if a.distributed && a.backend.is_some_and(|b| b != RunBackend::Cuda) {
        anyhow::bail!("--distributed runs on CUDA GPUs (one per process)");
    }
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        anyhow::bail!("--timeout {}: a positive number of seconds", a.timeout);
    }
    let backend_kind = match (a.backend, gpus) {
        _ if a.distributed => RunBackend::Cuda,
        (Some(b), Some(n)) if n != 1 && b != RunBackend::Cuda => {
            anyhow::bail!("--gpus {n} needs --backend cuda")
        }
        (Some(b), _) => b,
        (None, Some(_)) => RunBackend::Cuda,
        (None, None) => {
            if cuda::available().is_ok() {
                RunBackend::Cuda
            } else {
                RunBackend::Cpu
            }
        }
    };
    let kind = match backend_kind {
        RunBackend::Cpu => "cpu",
        RunBackend::Cuda => "cuda",
        RunBackend::Hip => "hip",
    };
    let opts = options(a, kind)?;
    if let (Some(n), RunBackend::Cuda) = (gpus, backend_kind) {
        let present = cuda::available()?;
        if n == 0 || n > present {
            return Err(augur::AugurError::NotEnoughGpus { asked: n, present }.into());
        }
    }
    let iters = a.iterations.max(1) as usize;
    let warmup = iters.clamp(1, 5);
    if a.distributed {
        return run_distributed::<T>(a, src, warmup, iters);
    }
    let t = Instant::now();
    let (m, _) = src.load::<T>()?;
    let load_s = t.elapsed().as_secs_f64();
    let mut report = Report::new::<T>(a, src, (m.rows(), m.cols(), m.nnz()), load_s, kind);
    let x0 = check::test_vector::<T>(m.cols(), 1);
    if let Some(n) = gpus.filter(|_| backend_kind == RunBackend::Cuda) {
        let t = Instant::now();
        let ordinals: Vec<usize> = (0..n).collect();
        let comm_model = match &a.comm_model {
            Some(p) => Some(std::sync::Arc::new(augur_models::comm::CommModel::read(p)?)),
            None => None,
        };
        let mut mopts = MultiOptions::default()
            .plan(opts)
            .chunks(a.chunks)
            .gather(gather_mode(a.gather_mode));
        mopts.comm_model = comm_model;
        let mut mg = MultiGpuSpmv::<T>::on_devices(&m, &ordinals, mopts)?;
        report.chunks = if n == 1 { 1 } else { a.chunks };
        describe_multi(&mut report, &mg, t);
        if a.check {
            report.check = Some(check_multi(&m, &mut mg, &x0)?);
        }
        time_multi(&mut report, &mut mg, &x0, warmup, iters, a.profile)?;
    } else {
        let backend = match backend_kind {
            RunBackend::Cpu => Backend::cpu(),
            RunBackend::Cuda => Backend::cuda(a.device)?,
            RunBackend::Hip => Backend::hip(a.device)?,
        };
        report.device = backend.device();
        report.gpus = usize::from(backend_kind != RunBackend::Cpu);
        let mut plan = SpmvPlan::new(&m, &backend, opts)?;
        report.setup = plan.setup().clone();
        report.shards = vec![ShardInfo {
            rank: 0,
            chunk: 0,
            gpu: a.device,
            device: backend.device(),
            rows: 0..m.rows(),
            nnz: m.nnz(),
            decision: plan.decision().clone(),
            setup: plan.setup().clone(),
        }];
        let mut y = vec![T::nan(); m.rows()];
        if a.check {
            plan.run(&x0, &mut y)?;
            report.check = Some(vec![check::check(&m, &x0, &y)]);
        }
        // Back to back on the plan's own vectors (the CPU computes each at once; a GPU
        // enqueues, and the clock stops after a synchronisation).
        plan.write_x(&x0)?;
        let dev = backend.as_device().clone();
        let sync = || Ok(dev.synchronize()?);
        report.per_iteration_s = per_call(warmup, iters, || Ok(plan.launch()?), sync)?;
    }
    let bytes = spmv_bytes(m.rows(), m.cols(), m.nnz(), std::mem::size_of::<T>());
    report.gb_per_s = bytes as f64 / report.per_iteration_s / 1e9;
    let failed = report
        .check
        .as_ref()
        .is_some_and(|c| c.iter().any(|r| !r.passed));
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report, a.explain);
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn gather_mode(g: GatherModeArg) -> GatherMode {
    match g {
        GatherModeArg::Auto => GatherMode::Auto,
        GatherModeArg::AllGather => GatherMode::AllGather,
        GatherModeArg::Broadcasts => GatherMode::Broadcasts,
        GatherModeArg::Ll => GatherMode::Ll,
        GatherModeArg::Pull => GatherMode::Pull,
        GatherModeArg::Push => GatherMode::Push,
        GatherModeArg::CopyEngine => GatherMode::CopyEngine,
        GatherModeArg::Halo => GatherMode::Halo,
    }
}

/// The report's fields of a `MultiGpuSpmv` made since `t`: GPUs, exchange, set-up, shards.
fn describe_multi<T: GpuScalar + NcclType>(report: &mut Report, mg: &MultiGpuSpmv<T>, t: Instant) {
    report.gpus = mg.gpus();
    report.gather_mode = Some(mg.gather().mode.name());
    report.gather = Some(mg.gather().clone());
    report.setup.total_s = t.elapsed().as_secs_f64();
    report.device = mg.shards()[0].device.clone();
    report.shards = mg.shards().to_vec();
}

/// Time per iteration (square: `iterate`, y -> x on the GPUs, values may grow and speed does
/// not depend on them; else `run` from the host), and with `profile` the per-shard profile.
fn time_multi<T: GpuScalar + NcclType>(
    report: &mut Report,
    mg: &mut MultiGpuSpmv<T>,
    x0: &[T],
    warmup: usize,
    iters: usize,
    profile: bool,
) -> anyhow::Result<()> {
    if report.rows == report.cols {
        mg.set_x(x0)?;
        mg.iterate(warmup)?;
        mg.set_x(x0)?;
        // Across processes the clock starts when every rank is ready (each rank's own start
        // would count the others' lag as its time).
        mg.barrier()?;
        let t = Instant::now();
        mg.iterate(iters)?;
        report.per_iteration_s = t.elapsed().as_secs_f64() / iters as f64;
    } else {
        let mut y = vec![T::zero(); report.rows];
        report.per_iteration_s = per_call(warmup, iters, || Ok(mg.run(x0, &mut y)?), || Ok(()))?;
    }
    if profile {
        report.profile = Some(mg.profile(warmup, iters.min(50))?);
    }
    Ok(())
}

/// `augur run --distributed`: this process is one rank of a group (see
/// `MultiGpuSpmv::distributed_from_root`): rank 0 loads the matrix and sends each rank its part;
/// every rank checks its own rows and times the same iterations; rank 0 prints the report, the
/// others one line on stderr.
fn run_distributed<T: GpuScalar + NcclType>(
    a: &RunArgs,
    src: &MatrixSource,
    warmup: usize,
    iters: usize,
) -> anyhow::Result<ExitCode> {
    let timeout = std::time::Duration::from_secs_f64(a.timeout);
    let t = Instant::now();
    let group = augur::multi::Group::join(timeout)?.ok_or_else(|| {
        anyhow::anyhow!(
            "--distributed: no launcher set a rank: run under torchrun, mpirun or srun, or set \
             RANK and WORLD_SIZE (and LOCAL_RANK) with MASTER_ADDR and MASTER_PORT"
        )
    })?;
    let rank = group.env.rank;
    if a.comm_model.is_some() {
        anyhow::bail!("--comm-model: across processes the exchange is NCCL's (no model asked)");
    }
    let mopts = MultiOptions::default()
        .plan(options(a, "cuda")?)
        .chunks(a.chunks)
        .gather(gather_mode(a.gather_mode));
    // Rank 0 alone loads the matrix (and says how long it took); the others get their part.
    let load_s = std::cell::Cell::new(0.0);
    let load = || {
        let t = Instant::now();
        let m = src
            .load::<T>()
            .map(|(m, _)| m)
            .map_err(|e| augur::AugurError::Invalid(format!("rank {rank}: {e}")))?;
        load_s.set(t.elapsed().as_secs_f64());
        Ok(m)
    };
    let (mut mg, share) = if a.every_rank_loads {
        let m = load()?;
        let mg = MultiGpuSpmv::<T>::distributed(&m, &group, mopts)?;
        let own = mg.row_bounds()[rank]..mg.row_bounds()[rank + 1];
        let share = augur::multi::RankShare {
            rows: m.rows(),
            cols: m.cols(),
            nnz: m.nnz(),
            own_rows: a
                .check
                .then(|| augur::multi::shard(&m, own.clone()))
                .transpose()?,
            own,
        };
        (mg, share)
    } else {
        MultiGpuSpmv::<T>::distributed_from_root(load, &group, mopts, a.check)?
    };
    let mut report = Report::new::<T>(
        a,
        src,
        (share.rows, share.cols, share.nnz),
        load_s.get(),
        "cuda",
    );
    let x0 = check::test_vector::<T>(share.cols, 1);
    report.rank = Some(rank);
    report.chunks = a.chunks;
    describe_multi(&mut report, &mg, t);
    let own = share.own.clone();
    if let Some(mine) = &share.own_rows {
        // This rank's rows of one product (the halo mode fills only those).
        let mut y = vec![T::nan(); share.rows];
        mg.run(&x0, &mut y)?;
        let (reference, scale) = check::reference_product(mine, &x0);
        report.check = Some(vec![check::compare(
            mine,
            &reference,
            &scale,
            &y[own.clone()],
        )]);
    }
    drop(share);
    time_multi(&mut report, &mut mg, &x0, warmup, iters, a.profile)?;
    let failed = report
        .check
        .as_ref()
        .is_some_and(|c| c.iter().any(|r| !r.passed));
    if rank == 0 {
        if a.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print_report(&report, a.explain);
        }
    } else {
        eprintln!(
            "augur: rank {rank} of {} (GPU {}): rows {own:?}, {} per iteration{}",
            report.gpus,
            group.env.local_rank,
            ms(report.per_iteration_s),
            match &report.check {
                Some(c) if c.iter().all(|r| r.passed) => ", check passed",
                Some(_) => ", CHECK FAILED",
                None => "",
            }
        );
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Wall-clock seconds per call of `f` over `iters` calls after `warmup` untimed ones; `sync`
/// waits for the device before the clock starts and before it stops.
fn per_call(
    warmup: usize,
    iters: usize,
    mut f: impl FnMut() -> anyhow::Result<()>,
    sync: impl Fn() -> anyhow::Result<()>,
) -> anyhow::Result<f64> {
    for _ in 0..warmup {
        f()?;
    }
    sync()?;
    let t = Instant::now();
    for _ in 0..iters {
        f()?;
    }
    sync()?;
    Ok(t.elapsed().as_secs_f64() / iters.max(1) as f64)
}

/// One product through `run`, then two iterated ones (y -> x on the devices), each against the
/// f64 reference of its own input.
fn check_multi<T: GpuScalar + NcclType>(
    m: &Csr<T>,
    mg: &mut MultiGpuSpmv<T>,
    x0: &[T],
) -> anyhow::Result<Vec<CheckReport>> {
    let mut y = vec![T::nan(); m.rows()];
    mg.run(x0, &mut y)?;
    let mut out = vec![check::check(m, x0, &y)];
    if m.rows() == m.cols() {
        mg.set_x(x0)?;
        let mut prev = x0.to_vec();
        for _ in 0..2 {
            mg.iterate(1)?;
            let next = mg.x()?;
            out.push(check::check(m, &prev, &next));
            prev = next;
        }
    }
    Ok(out)
}

fn ms(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// The parts of a setup's cost, in the order they are paid.
fn setup_parts(c: &SetupCost) -> String {
    let modules = if c.modules_s > 0.0 {
        format!(", kernel modules loaded once {}", ms(c.modules_s))
    } else {
        String::new()
    };
    format!(
        "model {}, features {}, select {}, upload {}, kernel setup {}{modules}",
        ms(c.model_s),
        ms(c.features_s),
        ms(c.select_s),
        ms(c.upload_s),
        ms(c.kernel_setup_s)
    )
}

fn print_report(r: &Report, explain: bool) {
    println!(
        "matrix    {}: {} x {}, {} nonzeros ({}), loaded in {}",
        r.matrix,
        r.rows,
        r.cols,
        r.nnz,
        r.precision,
        ms(r.load_s)
    );
    println!(
        "backend   {}{}",
        if r.backend == "cpu" {
            r.device.clone()
        } else {
            format!("cuda ({})", r.device)
        },
        if r.gpus > 1 {
            format!(
                ", {} GPUs, {}, {} chunk(s) per shard",
                r.gpus,
                r.gather_mode.unwrap_or(""),
                r.chunks
            )
        } else {
            String::new()
        }
    );
    if let Some(g) = r.gather.as_ref().filter(|_| r.gpus > 1) {
        println!(
            "gather    {} for {} bytes on {} GPUs{}{}",
            g.mode.name(),
            g.bytes,
            g.gpus,
            if g.path.is_empty() {
                String::new()
            } else {
                format!(" (comm model: {})", g.path.join(", "))
            },
            g.notes
                .iter()
                .map(|n| format!("; note: {n}"))
                .collect::<String>()
        );
    }
    for s in &r.shards {
        let who = if r.shards.len() > 1 {
            format!(
                "shard {}{} (GPU {}, rows {}..{}, {} nnz): ",
                s.rank,
                if r.chunks > 1 {
                    format!(" chunk {}", s.chunk)
                } else {
                    String::new()
                },
                s.gpu,
                s.rows.start,
                s.rows.end,
                s.nnz
            )
        } else {
            String::new()
        };
        println!(
            "kernel    {who}{}{}",
            s.decision.kernel,
            if s.decision.forced {
                " (forced)"
            } else {
                match s.decision.tier {
                    augur_models::model::Tier::Known => " (known features)",
                    augur_models::model::Tier::Sampled => " (sampled features)",
                    augur_models::model::Tier::Gathered => " (gathered features)",
                }
            }
        );
        if explain {
            for line in s.decision.to_string().lines() {
                println!("          {line}");
            }
        }
        // Per shard only when there are several: one plan's setup is the line below.
        if r.shards.len() > 1 {
            println!(
                "          setup {}: {}",
                ms(s.setup.total_s),
                setup_parts(&s.setup)
            );
        }
    }
    let c = &r.setup;
    if r.shards.len() > 1 {
        println!(
            "setup     {} (threads, NCCL, shards planned in parallel)",
            ms(c.total_s)
        );
    } else {
        println!("setup     {} ({})", ms(c.total_s), setup_parts(c));
    }
    println!(
        "run       {} iterations: {} per iteration, {:.1} GB/s",
        r.iterations,
        ms(r.per_iteration_s),
        r.gb_per_s
    );
    if let Some(p) = &r.profile {
        for s in p {
            println!(
                "profile   shard {}: product {}, all-gather {}, both {}",
                s.rank,
                ms(s.kernel_s),
                ms(s.gather_s),
                ms(s.step_s)
            );
        }
    }
    if let Some(checks) = &r.check {
        for (i, c) in checks.iter().enumerate() {
            let what = match i {
                0 => "y = A x".to_string(),
                n => format!("iterated product {n} (y -> x on the GPUs)"),
            };
            println!(
                "check     {what}: {} (max relative error {:.2e}, {:.3} of the bound)",
                if c.passed { "passed" } else { "FAILED" },
                c.max_rel_err,
                c.max_bound_ratio
            );
        }
    }
}

/// `augur bench dispatch`: the per-call cost of dispatching through a cached plan
/// ([`Dispatcher`]) over the bare kernel call, on small matrices where the call dominates.
#[derive(Args, Debug)]
pub struct DispatchArgs {
    /// Matrices (small ones show the overhead best).
    #[arg(required = true, value_name = "MATRIX")]
    matrices: Vec<String>,
    #[arg(long, value_enum, default_value = "cpu")]
    backend: RunBackend,
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Calls per block; blocks alternate bare / dispatched.
    #[arg(long, default_value_t = 2000)]
    calls: usize,
    #[arg(long, default_value_t = 15)]
    blocks: usize,
}

#[derive(Serialize)]
struct DispatchRow {
    matrix: String,
    backend: &'static str,
    device: String,
    kernel: String,
    rows: usize,
    nnz: usize,
    /// Dispatcher::plan on a cached matrix (key + lookup), host time per call.
    lookup_ns: f64,
    /// Per call, median over blocks: the bare kernel call, and through the dispatcher.
    bare_us: f64,
    dispatched_us: f64,
    /// Per call, the median over blocks of (dispatched - bare) of adjacent blocks, and the noise
    /// of that difference (its median absolute deviation over blocks).
    overhead_us: f64,
    noise_us: f64,
    /// Whether the overhead stands out of the noise (|overhead| > 2 x noise); when it does not,
    /// the dispatcher's cost is below what this machine can resolve (a negative overhead included).
    overhead_resolved: bool,
    /// Device time of one kernel alone (events, median), GPU only.
    kernel_us: Option<f64>,
}

pub fn dispatch(a: DispatchArgs) -> anyhow::Result<ExitCode> {
    let srcs = super::parse_sources(&a.matrices)?;
    let backend = match a.backend {
        RunBackend::Cpu => Backend::cpu(),
        RunBackend::Cuda => Backend::cuda(a.device)?,
        RunBackend::Hip => Backend::hip(a.device)?,
    };
    let mut w = csv::Writer::from_writer(std::io::stdout());
    for src in &srcs {
        let (m, _) = src.load::<f32>()?;
        let x = check::test_vector::<f32>(m.cols(), 1);
        let y = vec![0.0f32; m.rows()];
        let mut d = Dispatcher::<f32>::new(backend.clone(), PlanOptions::default());
        let kernel = d.plan(&m)?.decision().kernel.clone();
        // Host cost of finding the cached plan.
        let n = 100_000;
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(d.plan(&m)?);
        }
        let lookup_ns = t.elapsed().as_secs_f64() / n as f64 * 1e9;
        let (mut bare, mut disp) = (Vec::new(), Vec::new());
        let mut kernel_us = None;
        // Bare: the kernel prepared by hand through the device seam on device vectors (host
        // vectors on the CPU); dispatched: the cached plan found by the dispatcher, launched on
        // its own vectors. The same calls on every backend.
        let dev = backend.as_device();
        let da = dev.upload(&m)?;
        let dx = dev.vector(&x)?;
        let mut dy = dev.vector(&y)?;
        let mut p = dev.prepare(&kernel, &da, &dx, &mut dy)?;
        let times = dev.time(
            TimingPlan {
                warmup: 10,
                iterations: 101,
            },
            || dev.launch(&mut p, &da, &dx, &mut dy),
        )?;
        if dev.kind() != BackendKind::Cpu {
            kernel_us = Some(median(times) * 1e6);
        }
        let sync = || Ok::<_, anyhow::Error>(dev.synchronize()?);
        for _ in 0..a.blocks {
            sync()?;
            let t = Instant::now();
            for _ in 0..a.calls {
                dev.launch(&mut p, &da, &dx, &mut dy)?;
            }
            sync()?;
            bare.push(t.elapsed().as_secs_f64() / a.calls as f64);
            let t = Instant::now();
            for _ in 0..a.calls {
                d.plan(&m)?.launch()?;
            }
            sync()?;
            disp.push(t.elapsed().as_secs_f64() / a.calls as f64);
        }
        let diffs: Vec<f64> = disp.iter().zip(&bare).map(|(d, b)| (d - b) * 1e6).collect();
        let over = median(diffs.clone());
        let noise = median(diffs.iter().map(|x| (x - over).abs()).collect());
        let (b, dd) = (median(bare) * 1e6, median(disp) * 1e6);
        w.serialize(DispatchRow {
            matrix: src.name(),
            backend: backend.kind(),
            device: backend.device(),
            kernel,
            rows: m.rows(),
            nnz: m.nnz(),
            lookup_ns,
            bare_us: b,
            dispatched_us: dd,
            overhead_us: over,
            noise_us: noise,
            overhead_resolved: over.abs() > 2.0 * noise,
            kernel_us,
        })?;
        w.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}
