//! `augur overlap tp` and `augur overlap run`: a tensor-parallel layer on several GPUs, through
//! the harness (every pattern on buffers of its own) and through the library's plan (one
//! pattern on a caller's buffers).

use std::process::ExitCode;

use augur_kernels::gemm::{GemmProblem, GemmShape};
use clap::Args;

use super::{shapes_or, GemmDtype, LayerGroup};

#[derive(Args, Debug)]
pub struct OverlapRunArgs {
    /// Shapes M,N,K of the whole layer (default: M 2048 and 16384 on Llama-3-8B's QKV, N 6144,
    /// and gate+up, N 28672, with K 4096).
    #[arg(value_name = "SHAPE")]
    shapes: Vec<String>,
    /// GPUs 0 to N-1 of this machine.
    #[arg(long, default_value_t = 2)]
    gpus: usize,
    /// The operation: all-gather (all-gather + GEMM), reduce-scatter (GEMM + reduce-scatter) or
    /// all-reduce (GEMM + all-reduce).
    #[arg(long, value_enum, default_value = "all-gather")]
    op: super::TpOpArg,
    #[arg(long, value_enum, default_value = "bf16")]
    dtype: GemmDtype,
    /// An overlap model file, or `default-overlap` (the built-in one).
    #[arg(long, default_value = "default-overlap")]
    model: String,
    /// Run this pattern instead of the model's (the only way on one GPU, for which there is no
    /// model's pick).
    #[arg(long)]
    pattern: Option<String>,
    /// Plan with `LayerPlan::measured`: the model's pick (or --pattern) and bulk each timed at
    /// plan time (as the timing options say), the faster kept; its `chosen` column `measured`
    /// (`given+measured` with --pattern), both times in `why`.
    #[arg(long)]
    measure: bool,
    #[command(flatten)]
    timing: TpTiming,
}

/// How `tp` and `run` time a layer, and the inputs' seed.
#[derive(Args, Debug)]
pub struct TpTiming {
    /// Calls per timed sample (back to back, between two events, after a barrier). 1: each
    /// call timed from a barrier, as a layer whose input has just arrived everywhere (the pull
    /// patterns need it on more than 2 GPUs).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    #[arg(long, default_value_t = 15)]
    samples: usize,
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// How a timed sample starts. held: every GPU's stream waits on a host word while the host
    /// enqueues the sample's calls, then all are released at once: the device's time from a
    /// common start, without the host's cost of enqueuing (what a layer costs in a forward
    /// pass that enqueues ahead, or in a CUDA graph). barrier: the host enqueues while the
    /// GPUs wait, after a barrier: the layer's latency, launches included.
    #[arg(long, value_enum, default_value = "held")]
    start: StartArg,
    /// Seed of the inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum StartArg {
    Held,
    Barrier,
}

impl TpTiming {
    fn timing(&self) -> augur_kernels::cuda::gemm::tp::TpTiming {
        use augur_kernels::cuda::gemm::tp::TpStart;
        augur_kernels::cuda::gemm::tp::TpTiming {
            warmup: self.warmup,
            batch: self.batch,
            samples: self.samples,
            start: match self.start {
                StartArg::Held => TpStart::Held,
                StartArg::Barrier => TpStart::Barrier,
            },
        }
    }
}

#[derive(Args, Debug)]
pub struct TpArgs {
    /// Shapes M,N,K of the whole layer (default: Llama-3-8B's QKV (N 6144) and gate+up (N
    /// 28672) with K 4096, and an 8192 x 8192 layer, for M 512 to 16384 tokens).
    #[arg(value_name = "SHAPE")]
    shapes: Vec<String>,
    #[command(flatten)]
    layer: LayerGroup,
    /// Patterns in the order run (the same on every GPU), comma-separated; each operation runs
    /// those that apply to it: bulk, chunked:C (NCCL per piece), pull:C / push:C / pull-bulk
    /// (copy engines), pc-push:C:S / pc-pull:C:S (augur's copy kernel on S SMs beside the
    /// GEMMs), own-bulk (augur's all-gather, then the GEMM), ll-bulk (both operations: bulk
    /// with augur's LL collective, each word sent with its epoch in one store, in place of
    /// NCCL's), fused-push:C:S / fused-pull:C:S
    /// (one launch of augur's TMA GEMM whose first S blocks move the rows), pc-reduce:C:S (the
    /// reduce-scatter's producer/consumer), push-reduce:C (the peers' rows' partials first,
    /// pushed by the copy engines, then this GPU's rows, each GEMM adding the received
    /// partials in its epilogue; on one GPU, on more only with AUGUR_TP_UNVERIFIED=1: it hung
    /// there after other patterns, not yet diagnosed), fused-reduce:S (the TMA GEMM's tiles
    /// stored into their owners' staging, summed there by S blocks; fused-reduce:0: added into
    /// their owners' rows by tensor-memory reductions, no summing blocks, on one, two and four
    /// GPUs run as fused-reduce:0:2 or :0:4 where its units would leave half the SMs idle;
    /// fused-reduce:0:K:
    /// k split in K ranges, the partials added in f32 into the owners' f32 sums, rounded once
    /// after); fused-all (the all-reduce's: fused-reduce:0 with each tile added into every
    /// GPU's whole sum, k split in two at small M where few SMs would read a deep B;
    /// fused-all:K: k split in K ranges, 1: none, each range's partials in f32 into a plane of
    /// every GPU's f32 sum; the all-reduce runs the other reduce-scatter patterns then NCCL's
    /// all-gather, bulk and chunked:C with NCCL's all-reduce);
    /// gemm and comm are the parts alone. The
    /// default: the best of each kind on 2 and 4 H200s (bench/results/tp-grid-h200-2026-11-27/),
    /// the best fused patterns on 2 (bench/results/fused-h200-2026-11-28/), and the shipped
    /// selector's picks on 2 and 4 (bench/results/ll-bulk-h200-2026-11-28/).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "gemm,comm,bulk,ll-bulk,chunked:2,own-bulk,pull:1,push:1,push:2,pc-push:1:8,pc-push:2:8,pc-pull:1:8,fused-push:2:8,pc-reduce:2:16,pc-reduce:2:32,fused-reduce:0,fused-reduce:16"
    )]
    patterns: Vec<String>,
    #[command(flatten)]
    timing: TpTiming,
}

pub(super) fn run_plan(a: OverlapRunArgs) -> anyhow::Result<ExitCode> {
    use augur_kernels::cuda::gemm::tp::plan::{
        check_all_gather_gemm, check_gemm_all_reduce, check_gemm_reduce_scatter,
    };
    use augur_kernels::cuda::gemm::tp::{
        all_gather_gemm, gemm_all_reduce, gemm_reduce_scatter, TpOp, TpPattern,
    };
    use augur_kernels::KernelError;
    let op = match a.op {
        super::TpOpArg::AllGather => TpOp::AllGatherGemm,
        super::TpOpArg::ReduceScatter => TpOp::GemmReduceScatter,
        super::TpOpArg::AllReduce => TpOp::GemmAllReduce,
    };
    let mut default = Vec::new();
    for n in [6144, 28672] {
        for m in [2048, 16384] {
            default.push(GemmShape { m, n, k: 4096 });
        }
    }
    let shapes = shapes_or(&a.shapes, default)?;
    let given = a.pattern.as_deref().map(TpPattern::parse).transpose()?;
    let model = match augur::defaults::load_any(&a.model)? {
        augur_models::AnyModel::Overlap(m) => m,
        _ => anyhow::bail!("{}: not an overlap model", a.model),
    };
    let dtype = a.dtype.dtype();
    // Everything that can be wrong with the arguments is said before looking for GPUs.
    if a.gpus < 1 {
        anyhow::bail!("--gpus: at least 1");
    }
    if let Some(p) = given {
        if matches!(p, TpPattern::GemmAlone | TpPattern::CommAlone) {
            anyhow::bail!(
                "--pattern {}: a part of a layer, not a way to run one",
                p.name()
            );
        }
    }
    for &shape in &shapes {
        augur_kernels::cuda::gemm::tp::check(op, shape, a.gpus, given.as_slice())?;
    }
    let present =
        augur_kernels::cuda::available().map_err(super::super::gpu_only("augur overlap run"))?;
    if a.gpus > present {
        anyhow::bail!("--gpus {}: this machine has {present}", a.gpus);
    }
    let ordinals: Vec<usize> = (0..a.gpus).collect();
    let dev = augur_kernels::cuda::device_info(0)?;
    let ty = a.dtype.name();
    println!(
        "device,gpus,op,dtype,m,n,k,pattern,chosen,passed,max_err_over_bound,plan_us,harness_us,\
         plan_over_harness,start,why"
    );
    let mut failed = 0;
    for shape in shapes {
        let p = GemmProblem::random(shape, dtype, a.timing.seed)?;
        let mut choice = None;
        let timing = a.timing.timing();
        let make = |bufs: &[augur_kernels::cuda::gemm::tp::plan::TpBuffers]| {
            use augur::overlap::LayerPlan;
            // SAFETY: the check's buffers: cuMemAlloc'd on each GPU, of the sizes TpBuffers
            // gives for the operation, live until the plan is dropped (a measured plan's timed
            // calls run on them first; the check writes its inputs and poison after).
            let plan = unsafe { LayerPlan::new(&model, op, &ordinals, shape, dtype, given, bufs) }
                .and_then(|p| if a.measure { p.measured(timing) } else { Ok(p) })
                .map_err(|e| KernelError::Invalid(format!("{e}")))?;
            choice = Some(plan.choice().clone());
            Ok(plan)
        };
        let planned = match op {
            TpOp::AllGatherGemm => check_all_gather_gemm(&ordinals, &p, timing, make)?,
            TpOp::GemmReduceScatter => check_gemm_reduce_scatter(&ordinals, &p, timing, make)?,
            TpOp::GemmAllReduce => check_gemm_all_reduce(&ordinals, &p, timing, make)?,
        };
        let choice = choice.expect("the plan was made");
        // The harness's run of the same pattern, on its own buffers, timed alike.
        let harness = match op {
            TpOp::AllGatherGemm => all_gather_gemm,
            TpOp::GemmReduceScatter => gemm_reduce_scatter,
            TpOp::GemmAllReduce => gemm_all_reduce,
        }(&ordinals, &p, &[planned.pattern], timing)?;
        let h = harness[0].per_call_s;
        let err = planned.max_err.unwrap_or(f64::INFINITY);
        let passed = err <= 1.0 && harness[0].max_err.is_none_or(|e| e <= 1.0);
        failed += usize::from(!passed);
        let mut why = choice.path.join(" > ");
        for n in &choice.notes {
            why += &format!(" ({n})");
        }
        println!(
            "{},{},{},{ty},{},{},{},{},{},{passed},{err:.3},{:.2},{:.2},{:.3},{},\"{}\"",
            dev.name,
            a.gpus,
            op.name(),
            shape.m,
            shape.n,
            shape.k,
            planned.pattern.name(),
            match (given.is_some(), a.measure) {
                (true, true) => "given+measured",
                (true, false) => "given",
                (false, true) => "measured",
                (false, false) => "model",
            },
            planned.per_call_s * 1e6,
            h * 1e6,
            planned.per_call_s / h,
            timing.start.name(),
            why.replace('"', "'"),
        );
    }
    if failed > 0 {
        eprintln!("augur: {failed} check(s) failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn tp(a: TpArgs) -> anyhow::Result<ExitCode> {
    use augur_kernels::cuda::gemm::tp::{
        all_gather_gemm, check, gemm_all_reduce, gemm_reduce_scatter, TpOp, TpPattern,
    };
    let mut default = Vec::new();
    for (n, k) in [(6144, 4096), (28672, 4096), (8192, 8192)] {
        for m in [512, 2048, 8192, 16384] {
            default.push(GemmShape { m, n, k });
        }
    }
    let shapes = shapes_or(&a.shapes, default)?;
    let patterns = a
        .patterns
        .iter()
        .map(|s| TpPattern::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let ops: Vec<TpOp> = a.layer.ops();
    let gpus = a.layer.gpus;
    if gpus < 1 {
        anyhow::bail!("--gpus: at least 1");
    }
    // Everything that can be wrong with the arguments is said before looking for GPUs.
    // Each operation runs the patterns that apply to it (the pulls: the all-gather's).
    let of = |op: TpOp| -> Vec<TpPattern> {
        patterns.iter().copied().filter(|p| p.applies(op)).collect()
    };
    for &op in &ops {
        for &shape in &shapes {
            check(op, shape, gpus, &of(op))?;
        }
    }
    // The pulls hung back to back on 4 H200s (the pushes did not); AUGUR_TP_BACK_TO_BACK=1
    // lifts the refusal, to look into it.
    let lifted = std::env::var_os("AUGUR_TP_BACK_TO_BACK").is_some();
    let pulls = |p: &TpPattern| {
        matches!(
            p,
            TpPattern::Pull(_) | TpPattern::PullBulk | TpPattern::Pc { push: false, .. }
        )
    };
    if gpus > 2 && a.timing.batch > 1 && patterns.iter().any(pulls) && !lifted {
        anyhow::bail!(
            "--batch {} with the pull patterns on {} GPUs: these hung back to back on 4 H200s \
             (calls queued without a barrier between them; the push patterns did not); run them \
             with --batch 1 (each call timed from a barrier)",
            a.timing.batch,
            gpus
        );
    }
    let present =
        augur_kernels::cuda::available().map_err(super::super::gpu_only("augur overlap tp"))?;
    if gpus > present {
        anyhow::bail!("--gpus {}: this machine has {present}", gpus);
    }
    let dtype = a.layer.dtype();
    let dev = augur_kernels::cuda::device_info(0)?;
    let ty = a.layer.dtype.name();
    let ordinals: Vec<usize> = (0..gpus).collect();
    // Each row also carries the layer's overlap features (schema `overlap`; empty on one GPU,
    // which is no overlap), so that runs of this command can train a pattern selector.
    use augur_features::message::LinkProbe;
    use augur_features::overlap::{OverlapFeatures, OverlapShape, OVERLAP_SCHEMA_VERSION};
    let link = augur_kernels::cuda::DriverLinkProbe.group_link(&ordinals)?;
    let schema = OverlapFeatures::schema();
    let names: Vec<String> = schema
        .features
        .iter()
        .map(|f| format!("f_{}", f.name))
        .collect();
    // `start`: how each sample started (held or barrier); `augur overlap train` refuses to
    // mix the two.
    let timing = a.timing.timing();
    println!(
        "device,gpus,op,dtype,m,n,k,pattern,passed,max_err_over_bound,us,start,\
         bulk_over_pattern,share_of_bound,schema_version,{}",
        names.join(",")
    );
    let mut failed = 0;
    for &op in &ops {
        for &shape in &shapes {
            let p = GemmProblem::random(shape, dtype, a.timing.seed)?;
            let res = match op {
                TpOp::AllGatherGemm => all_gather_gemm,
                TpOp::GemmReduceScatter => gemm_reduce_scatter,
                TpOp::GemmAllReduce => gemm_all_reduce,
            }(&ordinals, &p, &of(op), timing)?;
            let time = |q: TpPattern| res.iter().find(|r| r.pattern == q).map(|r| r.per_call_s);
            let bulk = time(TpPattern::Bulk);
            // The perfect overlap: max(GEMM alone, collective alone).
            let bound = match (time(TpPattern::GemmAlone), time(TpPattern::CommAlone)) {
                (Some(g), Some(c)) => Some(g.max(c)),
                _ => None,
            };
            let features = OverlapShape {
                op,
                m: shape.m,
                n: shape.n,
                k: shape.k,
                dtype,
                world_size: gpus,
                link,
                sms: dev.multiprocessors.max(1) as usize,
            }
            .features()
            .map_or(vec![String::new(); names.len()], |f| {
                f.values().iter().map(|v| format!("{v}")).collect()
            });
            for r in &res {
                let passed = r.max_err.is_none_or(|e| e <= 1.0);
                failed += usize::from(!passed);
                let vs = bulk.map_or(String::new(), |b| format!("{:.3}", b / r.per_call_s));
                let share = match (bulk, bound) {
                    (Some(b), Some(o)) if b > o && r.max_err.is_some() => {
                        format!("{:.2}", (b - r.per_call_s) / (b - o))
                    }
                    _ => String::new(),
                };
                println!(
                    "{},{},{},{ty},{},{},{},{},{passed},{},{:.2},{},{vs},{share},\
                     {OVERLAP_SCHEMA_VERSION},{}",
                    dev.name,
                    gpus,
                    op.name(),
                    shape.m,
                    shape.n,
                    shape.k,
                    r.pattern.name(),
                    r.max_err.map_or(String::new(), |e| format!("{e:.3}")),
                    r.per_call_s * 1e6,
                    timing.start.name(),
                    features.join(","),
                );
            }
        }
    }
    if failed > 0 {
        eprintln!("augur: {failed} check(s) failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
