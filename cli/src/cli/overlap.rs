//! `augur overlap` (issue 24): GEMM + collective overlap in tensor-parallel layers: the GEMMs the
//! patterns build on, on one GPU (`gemm`), the producer/consumer overlap's GEMM side with rows
//! arriving on one GPU (`arrive`), the patterns between GPUs for all-gather + GEMM and GEMM +
//! reduce-scatter, checked and timed (`tp`), the pattern selector (`train`, `plan`), and the
//! all-gather + GEMM through the library's plan on a caller's buffers (`run`).

use std::process::ExitCode;

use anyhow::Context as _;
use augur_features::attention::Dtype;
use augur_kernels::cuda::gemm::{CudaGemm, GemmKernel};
use augur_kernels::cuda::TimingMode;
use augur_kernels::gemm::{check_rows, reference_rows, GemmProblem, GemmShape};
use clap::{Args, Subcommand, ValueEnum};

mod tp;
pub use tp::{OverlapRunArgs, TpArgs};

/// SMs per GPU assumed for the overlap features' tile waves unless told: an H100 SXM's and an
/// H200's. `overlap plan`, `overlap train` and `eval` of an overlap model take the same.
pub(crate) const DEFAULT_SMS: usize = 132;

#[derive(Subcommand, Debug)]
pub enum OverlapCommand {
    /// Check augur's tensor-core GEMMs (by default the persistent TMA kernel on Hopper in 128 x
    /// 256, 128 x 192 or 128 x 128 tiles, and as `augur_tma_auto` picks for the shape (`overlap
    /// gemm-plan` says why): those widths with k split in up to 16 ranges or the last wave's
    /// tiles cut, or the operands swapped at small M; by name also mma.sync and wgmma kernels) and cuBLASLt against the exact product C = A Bᵀ on each shape (B a
    /// linear layer's [N][K] weight) (inputs exact multiples of 1/8, so the only error allowed
    /// is the final rounding to the 16-bit type; rows sampled on large shapes), then time each
    /// (latency, throughput and graph; medians after warm-up) and check each again. CSV on
    /// stdout: microseconds, TFLOP/s and cuBLASLt's time over each kernel's (throughput and
    /// graph). Exits non-zero on a failed check.
    Gemm(GemmArgs),
    /// The producer/consumer overlap on one GPU: A's rows arrive in blocks (each a
    /// cuMemcpyAsync from a copy of A on a second stream, each block followed by its flag) while
    /// augur's TMA GEMM (tile and split as `augur_tma_auto` picks) runs beside, its producer
    /// waiting on each block's flag; against copy-then-GEMM on one stream, the copy alone and
    /// the GEMM alone. The all-gather + GEMM patterns have this shape with the copies coming
    /// from peers. Both orders are checked exactly with A poisoned (NaN) until its rows arrive;
    /// CSV on stdout (microseconds per call; the gain over copy-then-GEMM and the share of the
    /// perfect overlap's gain, max(copy, GEMM), that it reached). Exits non-zero on a failed
    /// check.
    Arrive(ArriveArgs),
    /// A tensor-parallel layer's GEMM and collective on `--gpus` GPUs of this process:
    /// all-gather + GEMM (column-parallel: A's M rows cut over the GPUs, B's N rows too) and
    /// GEMM + reduce-scatter (row-parallel: A and B cut along K, the sum's rows scattered).
    /// Patterns `bulk` (NCCL's collective and cuBLASLt one after the other) and `chunked:C` (the
    /// work in C pieces per GPU, the collective of one piece on a second stream while cuBLASLt
    /// works on another); for the all-gather also `pull:C` (each GPU pulls its peers' rows with
    /// the copy engines, C pieces per peer, multiplying each piece once it has arrived: no SMs
    /// taken from the GEMM), `pull-bulk` (the pulls, then one GEMM) and `push:C` (each GPU
    /// writes its rows into its peers' buffers, an arrival flag after each piece that the
    /// peer's GEMM of it waits for), `pc-push:C:S` / `pc-pull:C:S` (augur's copy kernel on S
    /// SMs beside GEMMs on the others), `own-bulk` and `fused-push:C:S` / `fused-pull:C:S` (one
    /// launch of augur's TMA GEMM per GPU whose first S blocks move the rows, each tile
    /// multiplied once its rows are there); for the reduce-scatter `pc-reduce:C:S`,
    /// `push-reduce:C` (each GPU's partials of its peers' rows first, pushed by the copy
    /// engines, then its own rows, each GEMM adding the received partials in its epilogue: no
    /// SMs taken, no reduce kernel; on one GPU, on more only with AUGUR_TP_UNVERIFIED=1) and
    /// `fused-reduce:S` (augur's TMA GEMM storing each tile into the staging of the GPU owning
    /// its rows, S blocks of the owner's launch summing each tile row once every GPU's is there;
    /// `fused-reduce:0`: each tile added into its owner's rows by tensor-memory reductions);
    /// for both `ll-bulk` (bulk with augur's LL collective in place of NCCL's: each 4-byte word
    /// sent with the call's epoch in one 8-byte store the receiver polls); with the GEMM alone
    /// and
    /// the collective alone (`gemm`, `comm`; max of the two: the perfect overlap). Each pattern checked on sampled rows, what has not arrived
    /// poisoned; CSV on stdout (microseconds per call, the slowest GPU's median; the gain over
    /// bulk and the share of the perfect overlap's gain). Exits non-zero on a failed check.
    Tp(TpArgs),
    /// Train the overlap-pattern selector on `augur overlap tp` CSVs (one machine): one tree per
    /// operation and GPU count over the layer's overlap features (schema `overlap`), from that
    /// GPU count's runs (timed one way: held or barrier), depth by cross-validation over the
    /// layers' weights (N, K); prints its rules and, held out by weight (every weight's
    /// layers picked by a model trained without it), selected / oracle, the gain over bulk
    /// (NCCL then cuBLASLt) and the share of the perfect overlap's gain, per GPU count.
    Train(OverlapTrainArgs),
    /// The pattern an overlap model (by default the built-in one, H200 groups of 2 and 4 GPUs)
    /// picks for each layer, and why: the tree's path and any note (another GPU, another group
    /// size). No GPU needed.
    Plan(OverlapPlanArgs),
    /// The TMA GEMM's kernel that `augur_tma_auto` picks for each shape (C = A Bᵀ, A M x K, B N
    /// x K: one GPU's product), and why: the rule that took it and the estimated times of the
    /// candidates it was weighed against. No GPU needed.
    GemmPlan(GemmPlanArgs),
    /// A layer (all-gather + GEMM, or GEMM + reduce-scatter with --op) through the library's
    /// plan (`augur::overlap::LayerPlan`) on buffers allocated as a caller allocates them
    /// (cuMemAlloc on each GPU, outside the plan): the model's pattern (or --pattern), checked
    /// on sampled rows after the first call and again after the timing, what has not arrived
    /// poisoned; timed as `tp` times the patterns,
    /// with the harness's own run of the same pattern beside it. CSV on stdout (microseconds
    /// per call, the slowest GPU's median; the plan's time over the harness's; the model's path
    /// and notes). With --measure, the plan times the model's pick against bulk as it is made
    /// and keeps the faster (`LayerPlan::measured`). Exits non-zero on a failed check.
    Run(OverlapRunArgs),
}

#[derive(Args, Debug)]
pub struct GemmPlanArgs {
    /// Shapes M,N,K of one GPU's product.
    #[arg(required = true, value_name = "SHAPE")]
    shapes: Vec<String>,
    /// SMs of the GPU (132 on an H100 SXM and an H200).
    #[arg(long, default_value_t = DEFAULT_SMS)]
    sms: usize,
}

#[derive(Args, Debug)]
pub struct OverlapPlanArgs {
    /// Shapes M,N,K of the whole layer.
    #[arg(required = true, value_name = "SHAPE")]
    shapes: Vec<String>,
    #[command(flatten)]
    layer: LayerGroup,
    /// An overlap model file, or `default-overlap` (the built-in one).
    #[arg(long, default_value = "default-overlap")]
    model: String,
    /// The GPUs' name, to be told when the model was trained on others (default: none said).
    #[arg(long, default_value = "")]
    device: String,
    /// SMs per GPU (132 on an H100 SXM and an H200).
    #[arg(long, default_value_t = DEFAULT_SMS)]
    sms: usize,
}

#[derive(Args, Debug)]
pub struct OverlapTrainArgs {
    /// `augur overlap tp` CSVs.
    #[arg(required = true, value_name = "RUNS")]
    runs: Vec<std::path::PathBuf>,
    /// Where to write the model (JSON, replaced atomically; an existing file that is not an
    /// overlap model only with --force).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    #[arg(long)]
    force: bool,
    /// SMs per GPU (for the tile waves): 132 on an H100 SXM and an H200.
    #[arg(long, default_value_t = DEFAULT_SMS)]
    sms: usize,
    /// Deepest tree tried.
    #[arg(long, default_value_t = 4)]
    max_depth: usize,
    /// Margins tried by cross-validation with the depth, comma-separated: under a margin m a
    /// pattern other than bulk labels a layer only where it beats bulk by more than m (near-
    /// ties go to bulk, the safe default; the folds are scored on the measured times).
    #[arg(long, value_delimiter = ',', default_value = "0,0.02,0.05,0.1")]
    bulk_margins: Vec<f64>,
    /// Split criteria tried by cross-validation with the depth and margin, comma-separated:
    /// regret (each split cuts the summed log slowdown of its children's best patterns), gini
    /// (the fastest pattern's impurity, the trees' rule before the thirty-fourth session).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "regret")]
    criteria: Vec<super::model::CriterionArg>,
    /// The floor under bulk (NCCL then cuBLASLt) the folds are scored against: a pick slower
    /// than bulk / floor is charged its shortfall below it, --floor-weight times, beside its
    /// ratio to the oracle (0.98: the "never below 0.98x of bulk").
    #[arg(long, default_value_t = 0.98)]
    bulk_floor: f64,
    /// The weight of that shortfall in the folds' score (0: the ratio to the oracle alone).
    #[arg(long, default_value_t = 1.0)]
    floor_weight: f64,
}

/// A tensor-parallel layer's group and operations, as `tp` runs them and `plan` picks for them.
#[derive(Args, Debug)]
pub struct LayerGroup {
    /// GPUs sharing the layer (`tp`: GPUs 0 to N-1 of this machine).
    #[arg(long, default_value_t = 2)]
    gpus: usize,
    /// Operations, comma-separated: all-gather (all-gather + GEMM), reduce-scatter (GEMM +
    /// reduce-scatter), all-reduce (GEMM + all-reduce: not in the default).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "all-gather,reduce-scatter"
    )]
    ops: Vec<TpOpArg>,
    #[arg(long, value_enum, default_value = "bf16")]
    dtype: GemmDtype,
}

impl LayerGroup {
    fn ops(&self) -> Vec<augur_features::overlap::OverlapOp> {
        use augur_features::overlap::OverlapOp;
        self.ops
            .iter()
            .map(|o| match o {
                TpOpArg::AllGather => OverlapOp::AllGatherGemm,
                TpOpArg::ReduceScatter => OverlapOp::GemmReduceScatter,
                TpOpArg::AllReduce => OverlapOp::GemmAllReduce,
            })
            .collect()
    }

    fn dtype(&self) -> Dtype {
        self.dtype.dtype()
    }
}

#[derive(Args, Debug)]
pub struct ArriveArgs {
    /// Shapes M,N,K (default: M 2048, 8192 and 16384 on the grid's o_proj, gate+up and 8192 x
    /// 8192 layers).
    #[arg(value_name = "SHAPE")]
    shapes: Vec<String>,
    /// Blocks of rows A arrives in, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    blocks: Vec<usize>,
    #[command(flatten)]
    run: GemmRunArgs,
}

/// What every `augur overlap` GEMM run takes: the type, the timing, the GPU and the inputs' seed.
#[derive(Args, Debug)]
pub struct GemmRunArgs {
    #[arg(long, value_enum, default_value = "bf16")]
    dtype: GemmDtype,
    /// Timed samples per mode.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Seed of the inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TpOpArg {
    AllGather,
    ReduceScatter,
    /// The GEMM + all-reduce (row-parallel without sequence parallelism).
    AllReduce,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GemmDtype {
    Bf16,
    F16,
}

impl GemmDtype {
    fn dtype(self) -> Dtype {
        match self {
            GemmDtype::Bf16 => Dtype::Bf16,
            GemmDtype::F16 => Dtype::F16,
        }
    }

    /// The type as the CLI spells it (the CSVs' `dtype` column).
    fn name(self) -> String {
        self.to_possible_value()
            .map_or("?".into(), |v| v.get_name().to_string())
    }
}

#[derive(Args, Debug)]
pub struct GemmArgs {
    /// Shapes M,N,K (C = A Bᵀ, A M x K, B N x K; N and K multiples of 8). Default: the tensor-parallel
    /// layer grid (M 16 to 16384 tokens; the per-GPU N and K of Llama-3-8B's QKV, o_proj,
    /// gate+up and down projections at TP 4, and an 8192 x 8192 one).
    #[arg(value_name = "SHAPE")]
    shapes: Vec<String>,
    #[command(flatten)]
    run: GemmRunArgs,
    /// Kernels to compare, comma-separated (default: augur_tma_128x256, augur_tma_128x192,
    /// augur_tma_128x128, augur_tma_auto, cublaslt). The TMA kernel also with a split k
    /// (augur_tma_128x256_k4), a tail split (augur_tma_128x256_t4: the last wave's tiles cut in
    /// 4) or its operands swapped (augur_tma_swap_32x128_k4); the earlier steps as
    /// augur_128x128, augur_64x128 (mma.sync), augur_wgmma_128x128 and augur_wgmma_128x256.
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
}

impl GemmRunArgs {
    fn dtype(&self) -> Dtype {
        self.dtype.dtype()
    }

    /// The type as the CLI spells it (the CSVs' `dtype` column).
    fn dtype_name(&self) -> String {
        self.dtype.name()
    }

    /// The GEMMs of GPU `device` and its description, once every shape's device memory
    /// (`bytes` of a shape) was found to fit: said before any output.
    fn open(
        &self,
        shapes: &[GemmShape],
        bytes: impl Fn(&GemmShape) -> u128,
        what: &str,
    ) -> anyhow::Result<(CudaGemm, augur_kernels::cuda::DeviceInfo)> {
        let g = CudaGemm::new(self.device).map_err(super::gpu_only("the tensor-core GEMM"))?;
        let dev = augur_kernels::cuda::device_info(self.device)?;
        let gib = |b: u128| b as f64 / (1u64 << 30) as f64;
        for shape in shapes {
            if bytes(shape) > dev.memory_bytes as u128 {
                anyhow::bail!(
                    "GEMM {shape}: {what} take {:.1} GiB, more than GPU {}'s {:.1} GiB",
                    gib(bytes(shape)),
                    self.device,
                    gib(dev.memory_bytes as u128)
                );
            }
        }
        Ok((g, dev))
    }
}

/// The shapes named (M,N,K each), or `default` when none is.
fn shapes_or(named: &[String], default: Vec<GemmShape>) -> anyhow::Result<Vec<GemmShape>> {
    if named.is_empty() {
        return Ok(default);
    }
    Ok(named
        .iter()
        .map(|s| GemmShape::parse(s))
        .collect::<Result<Vec<_>, _>>()?)
}

/// C poisoned, `run` enqueued, and the checked rows compared with their exact values; a
/// failure is said on stderr with `what` (the kernel and the way it ran). The error relative to
/// the rounding bound (<= 1 passes).
fn check_product(
    g: &CudaGemm,
    d: &mut augur_kernels::cuda::gemm::DeviceGemm,
    p: &GemmProblem,
    rows: &[usize],
    want: &[Vec<f64>],
    what: &str,
    run: impl FnOnce(
        &mut augur_kernels::cuda::gemm::DeviceGemm,
    ) -> Result<(), augur_kernels::KernelError>,
) -> anyhow::Result<f64> {
    g.poison(d)?;
    run(d)?;
    let got = g.rows(d, rows)?;
    let (err, r, c) = check_rows(p, rows, want, &got);
    if err > 1.0 {
        eprintln!(
            "augur: {what} {} {:?}: C[{r}][{c}] off by {err:.2} of the rounding bound",
            p.shape, p.dtype
        );
    }
    Ok(err)
}

pub fn run(c: OverlapCommand) -> anyhow::Result<ExitCode> {
    match c {
        OverlapCommand::Gemm(a) => gemm(a),
        OverlapCommand::Arrive(a) => arrive(a),
        OverlapCommand::Tp(a) => tp::tp(a),
        OverlapCommand::Train(a) => train(a),
        OverlapCommand::Plan(a) => plan(a),
        OverlapCommand::GemmPlan(a) => gemm_plan(a),
        OverlapCommand::Run(a) => tp::run_plan(a),
    }
}

fn gemm_plan(a: GemmPlanArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        (1..=1024).contains(&a.sms),
        "--sms {}: 1 to 1024 SMs",
        a.sms
    );
    let shapes = shapes_or(&a.shapes, Vec::new())?;
    for shape in shapes {
        let pick = augur_kernels::cuda::gemm::tma_auto_explained(shape, a.sms);
        let est = pick
            .estimate_us
            .map_or(String::new(), |t| format!(" ({t:.1} us estimated)"));
        println!(
            "{}x{}x{} on {} SMs: {}{est}",
            shape.m,
            shape.n,
            shape.k,
            a.sms,
            pick.kernel.name()
        );
        for line in &pick.why {
            println!("    {line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn plan(a: OverlapPlanArgs) -> anyhow::Result<ExitCode> {
    use augur::features::message::LinkType;
    use augur::features::overlap::OverlapShape;
    let model = match augur::defaults::load_any(&a.model)? {
        augur_models::AnyModel::Overlap(m) => m,
        other => anyhow::bail!(
            "--model {}: a {} model, not an overlap one",
            a.model,
            other.domain()
        ),
    };
    let shapes = shapes_or(&a.shapes, Vec::new())?;
    let (dtype, gpus) = (a.layer.dtype(), a.layer.gpus);
    for op in a.layer.ops() {
        for s in &shapes {
            let shape = OverlapShape {
                op,
                m: s.m,
                n: s.n,
                k: s.k,
                dtype,
                world_size: gpus,
                link: LinkType::Nvlink,
                sms: a.sms,
            };
            let c = augur::overlap::choose_pattern(&model, &shape, &a.device)
                .with_context(|| format!("{} {s} on {gpus} GPUs", op.name()))?;
            println!("{} {s} on {gpus} GPUs: {}", op.name(), c.pattern.name());
            for step in &c.path {
                println!("    {step}");
            }
            if let Some(e) = c.evidence {
                println!("    {}", super::leaf_line(e, "layers", &c.pattern.name()));
            }
            for note in &c.notes {
                println!("    note: {note}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn train(a: OverlapTrainArgs) -> anyhow::Result<ExitCode> {
    use augur_models::overlap::{
        evaluate_held_out, is_overlap_csv, read_layers, summary, OverlapModel, OverlapTrainParams,
    };
    use augur_models::ModelFile as _;
    if let Some(out) = &a.out {
        if a.runs.contains(out) || is_overlap_csv(out) {
            anyhow::bail!("--out {}: that is a runs file, not a model", out.display());
        }
        if out.exists() && OverlapModel::read(out).is_err() && !a.force {
            anyhow::bail!(
                "--out {}: exists and is not an overlap model (--force replaces it)",
                out.display()
            );
        }
    }
    let layers = read_layers(&a.runs, a.sms)?;
    let params = OverlapTrainParams {
        max_depth: a.max_depth,
        bulk_margins: a.bulk_margins.clone(),
        criteria: a.criteria.iter().map(|&c| c.into()).collect(),
        bulk_floor: a.bulk_floor,
        floor_weight: a.floor_weight,
        ..Default::default()
    }
    .check()?;
    let model = params.fit(&layers, env!("CARGO_PKG_VERSION"))?;
    print!("{}", model.export_text());
    match evaluate_held_out(&params, &layers) {
        Ok(rows) => {
            println!("\nheld out by weight (N, K):\n{}", summary(&rows));
            for r in &rows {
                println!(
                    "  {} {}x{}x{} on {}: picked {} ({:.1} us), oracle {} ({:.1} us), bulk {}",
                    r.shape.op.name(),
                    r.shape.m,
                    r.shape.n,
                    r.shape.k,
                    r.shape.world_size,
                    r.selected,
                    r.selected_s * 1e6,
                    r.oracle,
                    r.oracle_s * 1e6,
                    r.bulk_s
                        .map_or("-".into(), |b| format!("{:.1} us", b * 1e6)),
                );
            }
        }
        Err(e) => println!("\nheld-out evaluation: {e}"),
    }
    if let Some(out) = &a.out {
        model.write(out)?;
        eprintln!("model written to {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Per-GPU GEMMs of tensor-parallel layers: (N, K) of Llama-3-8B (hidden 4096, 32 query and 8
/// KV heads of 128, MLP 14336) at TP 4: QKV 6144/4, o_proj K 4096/4, gate+up 2 x 14336/4, down
/// K 14336/4; and a square 8192 one; for M from 16 to 16384 tokens.
fn default_grid() -> Vec<GemmShape> {
    let nk = [
        (1536, 4096),
        (4096, 1024),
        (7168, 4096),
        (4096, 3584),
        (8192, 8192),
    ];
    let ms = [16, 128, 512, 2048, 8192, 16384];
    let mut v = Vec::new();
    for &(n, k) in &nk {
        for &m in &ms {
            v.push(GemmShape { m, n, k });
        }
    }
    v
}

fn gemm(a: GemmArgs) -> anyhow::Result<ExitCode> {
    let shapes = shapes_or(&a.shapes, default_grid())?;
    let dtype = a.run.dtype();
    let kernels: Vec<GemmKernel> = if a.kernels.is_empty() {
        GemmKernel::all().to_vec()
    } else {
        a.kernels
            .iter()
            .map(|k| GemmKernel::parse(k))
            .collect::<Result<_, _>>()?
    };
    // A, B and C of every shape must fit on the GPU (the host holds A and B twice as long as
    // that).
    let (g, dev) = a.run.open(&shapes, |s| s.device_bytes(), "A, B and C")?;
    println!(
        "device,dtype,m,n,k,kernel,tma_choice,passed,max_err_over_bound,latency_us,throughput_us,graph_us,\
         tflops,cublaslt_over_kernel,cublaslt_over_kernel_graph"
    );
    let mut failed = 0;
    // augur's best over cuBLASLt per shape: throughput, graph.
    let mut ratios: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for shape in shapes {
        let p = GemmProblem::random(shape, dtype, a.run.seed)?;
        let rows = p.check_rows(256, 24);
        let want = reference_rows(&p, &rows);
        let mut d = g.upload(&p)?;
        // Each kernel prepared and checked, then all timed together in rotating rounds.
        let mut ready = Vec::new();
        for &kernel in &kernels {
            let prep = match g.prepare(&d, kernel) {
                Err(augur_kernels::KernelError::Unsupported { what, .. }) => {
                    eprintln!(
                        "augur: skipping {}: {what} is not supported here",
                        kernel.name()
                    );
                    continue;
                }
                r => r?,
            };
            let err = check_product(&g, &mut d, &p, &rows, &want, &kernel.name(), |d| {
                g.launch(d, &prep)
            })?;
            let passed = err <= 1.0;
            failed += usize::from(!passed);
            ready.push((kernel, prep, passed, err));
        }
        let times = time_rotating(g.stream(), a.run.warmup, a.run.reps, ready.len(), |i| {
            g.launch(&mut d, &ready[i].1)
        })?;
        // Checked again after the timed launches: what one launch leaves behind (the split
        // runs' partials, a kernel's workspace) must not change the next one's result.
        for (kernel, prep, passed, err) in ready.iter_mut() {
            let again = check_product(&g, &mut d, &p, &rows, &want, &kernel.name(), |d| {
                g.launch(d, prep)
            })?;
            if *passed && again > 1.0 {
                *passed = false;
                failed += 1;
            }
            *err = err.max(again);
        }
        let results: Vec<_> = ready
            .iter()
            .zip(times)
            .map(|((kernel, prep, passed, err), t)| (*kernel, *passed, *err, t, prep))
            .collect();
        let lt = results.iter().find(|r| r.0 == GemmKernel::CublasLt);
        let lt_thr = lt.map(|r| r.3.throughput_s);
        let lt_graph = lt.and_then(|r| r.3.get(TimingMode::Graph));
        for (kernel, passed, err, t, prep) in &results {
            let thr = t.throughput_s;
            let g = t.get(TimingMode::Graph);
            let graph = g.map_or(String::new(), |g| format!("{:.2}", g * 1e6));
            let vs = lt_thr.map_or(String::new(), |l| format!("{:.3}", l / thr));
            let vs_graph = match (lt_graph, g) {
                (Some(l), Some(g)) => format!("{:.3}", l / g),
                _ => String::new(),
            };
            // What the auto kernel ran: the tile width and split count.
            let choice = match kernel {
                GemmKernel::TmaAuto => prep.resolved().tma_label().unwrap_or_default(),
                _ => String::new(),
            };
            println!(
                "{},{},{},{},{},{},{choice},{passed},{err:.3},{:.2},{:.2},{graph},{:.1},{vs},{vs_graph}",
                dev.name,
                a.run.dtype_name(),
                shape.m,
                shape.n,
                shape.k,
                kernel.name(),
                t.latency_s * 1e6,
                thr * 1e6,
                shape.flops() / thr / 1e12,
            );
        }
        // augur's best over cuBLASLt, in the throughput and the graph mode.
        let best = |mode: TimingMode| {
            results
                .iter()
                .filter(|r| r.0 != GemmKernel::CublasLt)
                .filter_map(|r| r.3.get(mode))
                .fold(f64::INFINITY, f64::min)
        };
        if let Some(l) = lt_thr {
            ratios[0].push(l / best(TimingMode::Throughput));
        }
        if let Some(l) = lt_graph {
            ratios[1].push(l / best(TimingMode::Graph));
        }
    }
    for (mode, r) in ["throughput", "graph"].iter().zip(&ratios) {
        if r.is_empty() {
            continue;
        }
        let geo = (r.iter().map(|x| x.ln()).sum::<f64>() / r.len() as f64).exp();
        let at_least = r.iter().filter(|&&x| x >= 0.8).count();
        eprintln!(
            "augur's best kernel over cuBLASLt ({mode}): geomean {geo:.3}, >= 0.8 on {at_least} \
             of {} shapes (the fused overlap pattern needs 0.8 on a shape to count there)",
            r.len()
        );
    }
    if failed > 0 {
        eprintln!("augur: {failed} check(s) failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn arrive(a: ArriveArgs) -> anyhow::Result<ExitCode> {
    let mut default = Vec::new();
    for (n, k) in [(4096, 1024), (7168, 4096), (8192, 8192)] {
        for m in [2048, 8192, 16384] {
            default.push(GemmShape { m, n, k });
        }
    }
    let shapes = shapes_or(&a.shapes, default)?;
    if a.blocks.is_empty() || a.blocks.contains(&0) {
        anyhow::bail!("--blocks: one or more counts >= 1");
    }
    let dtype = a.run.dtype();
    let (g, dev) = a.run.open(
        &shapes,
        |s| s.device_bytes() + (s.m * s.k * 2) as u128,
        "A, B, C and a copy of A",
    )?;
    let ty = a.run.dtype_name();
    println!(
        "device,dtype,m,n,k,kernel,blocks,passed,copy_us,gemm_us,copy_then_gemm_us,gated_us,\
         graph_copy_us,graph_gemm_us,graph_copy_then_gemm_us,graph_gated_us,gate_open_us,\
         graph_gate_open_us,gain,share_of_bound"
    );
    let mut failed = 0;
    for &shape in &shapes {
        let p = GemmProblem::random(shape, dtype, a.run.seed)?;
        let rows = p.check_rows(256, 24);
        let want = reference_rows(&p, &rows);
        let mut d = g.upload(&p)?;
        let prep = g.prepare(&d, GemmKernel::TmaAuto)?;
        let label = prep.resolved().tma_label();
        let kernel = format!(
            "augur_tma_{}",
            label.expect("the auto kernel is a TMA kernel")
        );
        for &blocks in &a.blocks {
            let arr = g.arrivals(&d, blocks.min(shape.m))?;
            let mut passed = true;
            for gated in [false, true] {
                let way = if gated { "gated" } else { "copy then GEMM" };
                let what = format!("{kernel}, {blocks} blocks, {way}");
                let err = check_product(&g, &mut d, &p, &rows, &want, &what, |d| {
                    g.launch_arriving(d, Some(&prep), &arr, gated, true)
                })?;
                if err > 1.0 {
                    passed = false;
                    failed += 1;
                }
            }
            // The five ways, timed together in rotating rounds.
            let mut t = time_rotating(g.stream(), a.run.warmup, a.run.reps, 5, |way| match way {
                0 => g.launch(&mut d, &prep),
                1 => g.launch_arriving(&mut d, None, &arr, false, false),
                2 => g.launch_arriving(&mut d, Some(&prep), &arr, false, false),
                3 => g.launch_arriving(&mut d, Some(&prep), &arr, true, false),
                _ => g.launch_gate_open(&mut d, &prep, &arr),
            })?
            .into_iter();
            let mut next = || t.next().expect("five ways timed");
            let (gemm_t, copy_t, serial_t, gated_t, open_t) =
                (next(), next(), next(), next(), next());
            let us = |t: &augur_kernels::cuda::ModeTimes, m: TimingMode| {
                t.get(m)
                    .map_or(String::new(), |v| format!("{:.2}", v * 1e6))
            };
            let (c, gm, se, ga) = (
                copy_t.throughput_s,
                gemm_t.throughput_s,
                serial_t.throughput_s,
                gated_t.throughput_s,
            );
            // The perfect overlap's time is max(copy, GEMM); the share of its gain reached.
            let bound = c.max(gm);
            let share = if se > bound {
                format!("{:.2}", (se - ga) / (se - bound))
            } else {
                String::new()
            };
            println!(
                "{},{ty},{},{},{},{kernel},{blocks},{passed},{:.2},{:.2},{:.2},{:.2},{},{},{},{},{:.2},{},{:.3},{share}",
                dev.name,
                shape.m,
                shape.n,
                shape.k,
                c * 1e6,
                gm * 1e6,
                se * 1e6,
                ga * 1e6,
                us(&copy_t, TimingMode::Graph),
                us(&gemm_t, TimingMode::Graph),
                us(&serial_t, TimingMode::Graph),
                us(&gated_t, TimingMode::Graph),
                open_t.throughput_s * 1e6,
                us(&open_t, TimingMode::Graph),
                se / ga,
            );
        }
    }
    if failed > 0 {
        eprintln!("augur: {failed} check(s) failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `ways` calls timed in ROUNDS rounds of the latency, throughput and graph modes
/// ([`augur_kernels::cuda::time_modes`], `reps` samples per way split over the rounds), each
/// round in another order (way i + round, modulo the count), and per way the median of the
/// rounds' medians: a large product heats the GPU and its clock drops over a run, so a way
/// timed after the others would look slower than it is.
fn time_rotating(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    warmup: usize,
    reps: usize,
    ways: usize,
    mut run: impl FnMut(usize) -> Result<(), augur_kernels::KernelError>,
) -> Result<Vec<augur_kernels::cuda::ModeTimes>, augur_kernels::KernelError> {
    use augur_kernels::cuda::{ModeTimes, TimingPlan};
    const ROUNDS: usize = 3;
    let plan = TimingPlan::new(warmup, reps.div_ceil(ROUNDS));
    let mut rounds: Vec<Vec<ModeTimes>> = vec![Vec::new(); ways];
    for r in 0..ROUNDS {
        for i in 0..ways {
            let way = (i + r) % ways;
            let t = augur_kernels::cuda::time_modes(stream, plan, None, || run(way))?;
            rounds[way].push(t);
        }
    }
    let median = |v: &[ModeTimes], f: &dyn Fn(&ModeTimes) -> Option<f64>| {
        let mut x: Vec<f64> = v.iter().filter_map(f).collect();
        x.sort_by(f64::total_cmp);
        x.get(x.len() / 2).copied()
    };
    Ok(rounds
        .iter()
        .map(|v| ModeTimes {
            latency_s: median(v, &|t| Some(t.latency_s)).unwrap_or(f64::NAN),
            throughput_s: median(v, &|t| Some(t.throughput_s)).unwrap_or(f64::NAN),
            graph_s: median(v, &|t| t.get(TimingMode::Graph))
                .ok_or_else(|| "no graph figure in any round".to_string()),
            batch: v.first().map_or(1, |t| t.batch),
            samples: v.iter().map(|t| t.samples).sum(),
        })
        .collect())
}
