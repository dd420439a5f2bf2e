//! `augur train`, `augur export`, `augur eval`: the models stage.

use super::output::Writes;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use augur_models::eval::{self, RowSelect};
use augur_models::model::{Criterion, IterationMode};
use augur_models::train::GatherCost;
use augur_models::ModelFile;
use augur_models::{attention, comm, overlap};
use augur_models::{AnyModel, ExportFormat, Runs, TrainParams};
use clap::{Args, ValueEnum};

#[derive(Args, Debug)]
pub struct TrainArgs {
    /// Runs CSVs from `augur collect` (one backend and precision; plain or gzipped, `.csv.gz`),
    /// or directories of them.
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    /// Where to write the model (JSON; replaced atomically). Never one of the runs files; an
    /// existing file that is not a model is replaced only with --force.
    #[arg(long)]
    out: PathBuf,
    /// Replace an existing --out that is not a model (e.g. a runs table).
    #[arg(long)]
    force: bool,
    /// Iteration counts to train for (default: those the runs were collected for).
    #[arg(long)]
    iterations: Option<String>,
    /// Deepest tree tried (1..=20); a shallower one is kept when it scores within --slack.
    #[arg(long, default_value_t = 8)]
    max_depth: usize,
    /// Least leaf weights tried, comma-separated (sample weights average 1).
    #[arg(long, default_value = "1,3,10")]
    min_leaf_weight: String,
    /// Cross-validation folds; a family never spans two folds.
    #[arg(long, default_value_t = 5)]
    folds: usize,
    /// Share of families held out of training, for `augur eval`.
    #[arg(long, default_value_t = 0.2)]
    holdout: f64,
    /// How iterations enter the trees (default: chosen by cross-validation).
    #[arg(long, value_enum)]
    mode: Option<Mode>,
    /// Take the shallowest tree whose CV score is within this share of the best.
    #[arg(long, default_value_t = 0.01)]
    slack: f64,
    /// Seed of the family split behind the holdout and the folds.
    #[arg(long, default_value_t = 0)]
    split_seed: u64,
    /// Depth of the policy tree (which feature tier pays for its cost), 1..=6.
    #[arg(long, default_value_t = 3)]
    policy_depth: usize,
    /// The gathering policy: `joint` (one tree over the known features and k) or `per-k` (one
    /// tree per iteration count, joined under splits on k; same model format).
    #[arg(long, value_enum, default_value = "joint")]
    policy: PolicyArg,
    /// Split criteria tried by cross-validation, comma-separated: `gini` (linfa-trees' rule on
    /// the label "fastest kernel") and `regret` (the summed log slowdown of the picks). For comm
    /// and attention runs too: the first given is preferred, a later one must beat it by 0.1%.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "gini,regret")]
    criterion: Vec<CriterionArg>,
    /// What gathering the exact features costs in the policy's training: `device` (the device
    /// pass on a matrix already there, the default), `upload` (what the gather adds to a plan's
    /// upload, as `SpmvPlan::new` makes it from a host matrix: the median per decade of
    /// nonzeros) or `upload-raw` (each matrix's own figure, in which the upload's jitter is).
    #[arg(long, value_enum, default_value = "device")]
    gather_cost: GatherCostArg,
    /// Leave out the long-row guard (a measured floor under the kernels whose time grows with
    /// the longest row, which overrules a pick the features read prove slower than a balanced
    /// fallback): the trees' picks as they are, for comparison.
    #[arg(long)]
    no_row_guard: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum GatherCostArg {
    /// What gathering adds to the upload, the median per decade of nonzeros.
    Upload,
    /// Each matrix's own measured difference of two uploads (noisy).
    UploadRaw,
    /// The device pass over a matrix already on the device.
    Device,
    /// The gathered trees read row-length statistics only, which a plan computes from the row
    /// pointers on the host beside the upload (`gather_upload_s`; the shipped GPU models).
    HostRows,
}

impl GatherCostArg {
    fn cost(self) -> GatherCost {
        match self {
            GatherCostArg::Upload => GatherCost::Upload,
            GatherCostArg::UploadRaw => GatherCost::UploadRaw,
            GatherCostArg::Device => GatherCost::Device,
            GatherCostArg::HostRows => GatherCost::HostRows,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum PolicyArg {
    Joint,
    PerK,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum CriterionArg {
    Gini,
    Regret,
}

impl From<CriterionArg> for Criterion {
    fn from(c: CriterionArg) -> Self {
        match c {
            CriterionArg::Gini => Criterion::Gini,
            CriterionArg::Regret => Criterion::Regret,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    Joint,
    PerK,
}

/// Runs files, with a directory standing for the `*.csv` and `*.csv.gz` files in it (sorted).
fn runs_files(args: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in args {
        if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("read directory {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    let name = f.to_string_lossy();
                    name.ends_with(".csv") || name.ends_with(".csv.gz")
                })
                .collect();
            v.sort();
            if v.is_empty() && p.join("MANIFEST.tsv").is_file() {
                anyhow::bail!(
                    "{} holds matrices, not runs: measure them first with `augur collect {} --out runs.csv`, then train on runs.csv",
                    p.display(),
                    p.display()
                );
            }
            anyhow::ensure!(
                !v.is_empty(),
                "{}: no runs (*.csv) in this directory",
                p.display()
            );
            out.extend(v);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Whether the first runs file is a comm runs table (by its first column).
fn comm_runs(files: &[PathBuf]) -> bool {
    files.first().is_some_and(|f| comm::is_comm_runs_file(f))
}

/// `augur train` on comm runs: one tree per collective, depth by cross-validation over sizes;
/// `--holdout 0` trains on every size, else sizes that are not a power of two are held out.
fn train_comm(a: &TrainArgs, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let runs = comm::CommRuns::read(files)?;
    let params = comm::CommTrainParams {
        max_depth: a.max_depth.min(12),
        folds: a.folds,
        holdout_between: a.holdout > 0.0,
        criteria: a.criterion.iter().map(|&c| c.into()).collect(),
        ..comm::CommTrainParams::default()
    }
    .check()?;
    let model = params.fit(&runs, env!("CARGO_PKG_VERSION"))?;
    model.write(&a.out)?;
    let t = &model.training;
    println!(
        "comm model for {}: trained on {} messages (GPUs {:?}, {}), holdout: {}; {} messages left out as incomplete (a pattern their size peers have is missing)",
        model.device,
        t.messages,
        t.world_sizes,
        t.dtypes.join(", "),
        t.holdout,
        t.incomplete
    );
    for tr in &model.trees {
        println!(
            "  {}: patterns {}; depth {}, {} splits (size-grouped {}-fold CV oracle ratio {:.4}), {} leaves",
            tr.collective,
            tr.patterns.join(", "),
            tr.max_depth,
            tr.criterion.name(),
            t.folds,
            tr.cv_oracle_ratio,
            tr.tree.leaves()
        );
    }
    println!("wrote {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}

/// `augur train` on attention runs: one tree over the attention-shape features, depth by
/// cross-validation over shape groups (head configuration x batch); `--holdout 0` trains on
/// every group, else every 5th group is held out for `augur eval`.
fn train_attention(a: &TrainArgs, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let runs = attention::AttentionRuns::read(files)?;
    let params = attention::AttentionTrainParams {
        max_depth: a.max_depth.min(12),
        folds: a.folds,
        holdout_every: if a.holdout > 0.0 { 5 } else { 0 },
        criteria: a.criterion.iter().map(|&c| c.into()).collect(),
        ..attention::AttentionTrainParams::default()
    }
    .check()?;
    let model = params.fit(&runs, env!("CARGO_PKG_VERSION"))?;
    model.write(&a.out)?;
    println!(
        "attention model for {}: trained on {} shapes ({} groups held out: {}); schedules {}; depth {}, {} splits (group-wise {}-fold CV oracle ratio {:.4}), {} leaves",
        model.device,
        model.training.shapes,
        model.training.held_out_groups.len(),
        model.training.held_out_groups.join(", "),
        model.schedules.join(", "),
        model.max_depth,
        model.criterion.name(),
        model.training.folds,
        model.cv_oracle_ratio,
        model.tree.leaves()
    );
    println!("wrote {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}

pub fn train(a: TrainArgs) -> anyhow::Result<ExitCode> {
    let files = runs_files(&a.runs)?;
    super::output::check(&a.out, "--out", &files, Writes::Model, a.force)?;
    if comm_runs(&files) {
        return train_comm(&a, &files);
    }
    if files
        .first()
        .is_some_and(|f| attention::is_attention_runs_file(f))
    {
        return train_attention(&a, &files);
    }
    let runs = Runs::read(&files)?;
    check_kernels(&runs)?;
    let min_weight_leaf = a
        .min_leaf_weight
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<f32>()
                .with_context(|| format!("--min-leaf-weight: `{s}` is not a number"))
        })
        .collect::<anyhow::Result<Vec<f32>>>()?;
    let iterations = match &a.iterations {
        Some(s) => Some(augur_models::train::parse_iterations(s).with_context(|| {
            format!("--iterations `{s}`: expected counts >= 1 separated by commas")
        })?),
        None => None,
    };
    let params = TrainParams {
        iterations,
        max_depth: a.max_depth,
        min_weight_leaf,
        folds: a.folds,
        holdout: a.holdout,
        mode: a.mode.map(|m| match m {
            Mode::Joint => IterationMode::Joint,
            Mode::PerK => IterationMode::PerK,
        }),
        slack: a.slack,
        split_seed: a.split_seed,
        policy_depth: a.policy_depth,
        policy_per_k: matches!(a.policy, PolicyArg::PerK),
        criteria: a.criterion.iter().map(|&c| c.into()).collect(),
        gather_cost: a.gather_cost.cost(),
        row_guard: !a.no_row_guard,
    }
    .check()?;
    let model = params.fit(&runs, env!("CARGO_PKG_VERSION"))?;
    model.write(&a.out)?;
    let t = &model.training;
    println!(
        "trained on {} matrices in {} families ({} families held out), iterations {:?}, {} kernels",
        t.matrices,
        t.families,
        t.held_out_families.len(),
        model.iterations,
        model.kernels.len()
    );
    println!(
        "\nfamily-grouped {}-fold CV: selected/oracle per tree depth (best over min leaf weights)",
        t.folds
    );
    let mut head = format!("{:<9} {:<6} {:<9}", "features", "mode", "criterion");
    for d in 1..=a.max_depth {
        head += &format!(" {:>5}", format!("d={d}"));
    }
    println!("{head}");
    for set in ["known", "sampled", "gathered"] {
        for mode in [IterationMode::Joint, IterationMode::PerK] {
            for crit in [Criterion::Gini, Criterion::Regret] {
                let mut line = format!(
                    "{:<9} {:<6} {:<9}",
                    set,
                    match mode {
                        IterationMode::Joint => "joint",
                        IterationMode::PerK => "per-k",
                    },
                    crit.name()
                );
                let mut any = false;
                for d in 1..=a.max_depth {
                    let best =
                        t.cv.iter()
                            .filter(|s| {
                                s.features == set
                                    && s.mode == mode
                                    && s.criterion == crit
                                    && s.max_depth == d
                            })
                            .map(|s| s.oracle_ratio)
                            .fold(f64::NAN, f64::max);
                    any |= !best.is_nan();
                    line += &if best.is_nan() {
                        format!(" {:>5}", "-")
                    } else {
                        format!(" {best:>5.3}")
                    };
                }
                if any {
                    println!("{line}");
                }
            }
        }
    }
    for c in &t.chosen {
        println!(
            "chosen for {} features: {:?} mode, {} criterion, max depth {}, min leaf weight {} (CV sel/oracle {:.3}, accuracy {:.0}%)",
            c.features,
            c.mode,
            c.criterion.name(),
            c.max_depth,
            c.min_weight_leaf,
            c.oracle_ratio,
            c.accuracy * 100.0
        );
    }
    println!(
        "out of fold, sampling paid best on {:.0}% of training samples and gathering the exact features on {:.0}%; policy tree depth {}",
        t.sample_paid_share * 100.0,
        t.gather_paid_share * 100.0,
        model.policy.depth()
    );
    println!("wrote {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Dot,
    Rust,
    Json,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A model file, or a built-in one: `default-cpu`, `default-cuda` (the H100's), `default-cuda-h100`, `default-cuda-h200`, `default-comm`, `default-attention`, `default-overlap`.
    model: String,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Write here instead of standard output (replaced atomically; never the model itself; an
    /// existing model or runs table is replaced only with --force).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace an existing --out that is a model or a runs table.
    #[arg(long)]
    force: bool,
}

/// Every kernel of the runs is one of its backend's (a misspelt or foreign kernel would be
/// trained into a model that cannot run it).
fn check_kernels(runs: &Runs) -> anyhow::Result<()> {
    for m in &runs.matrices {
        for r in &m.kernels {
            let known = match m.info.backend.as_str() {
                "cpu" => augur::kernels::cpu::CpuKernel::from_name(&r.kernel).is_ok(),
                "cuda" => augur::kernels::cuda::GpuKernel::from_name(&r.kernel).is_ok(),
                "hip" => augur::kernels::hip::HipKernel::from_name(&r.kernel).is_ok(),
                other => bail!(
                    "runs: matrix `{}` was collected on backend `{other}`, not cpu, cuda or hip",
                    m.info.matrix
                ),
            };
            if !known {
                bail!(
                    "runs: kernel `{}` (matrix `{}`) is not a kernel of the {} backend",
                    r.kernel,
                    m.info.matrix,
                    m.info.backend
                );
            }
        }
    }
    Ok(())
}

/// A model file of any domain, or a built-in one by name ([`augur::defaults::load_any`]).
pub fn load_any(arg: &str) -> anyhow::Result<AnyModel> {
    Ok(augur::defaults::load_any(arg)?)
}

pub fn export(a: ExportArgs) -> anyhow::Result<ExitCode> {
    if let Some(out) = &a.out {
        let input = [PathBuf::from(&a.model)];
        super::output::check(out, "--out", &input, Writes::Report, a.force)?;
    }
    let s = load_any(&a.model)?.export(match a.format {
        Format::Text => ExportFormat::Text,
        Format::Dot => ExportFormat::Dot,
        Format::Rust => ExportFormat::Rust,
        Format::Json => ExportFormat::Json,
    });
    match a.out {
        Some(p) => super::output::write(&p, s)?,
        None => print!("{s}"),
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Rows {
    /// Families the model was not trained on (its held-out families; an overlap model: weights
    /// (N, K) it was not trained on).
    Unseen,
    /// Every row, training rows included (optimistic).
    All,
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// Runs CSVs from `augur collect` (plain or gzipped, `.csv.gz`).
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    /// A model file, or a built-in one: `default-cpu`, `default-cuda` (the H100's), `default-cuda-h100`, `default-cuda-h200`, `default-comm`, `default-attention`, `default-overlap`.
    #[arg(long)]
    model: String,
    #[arg(long, value_enum, default_value = "unseen")]
    rows: Rows,
    /// Iteration counts (default: the model's).
    #[arg(long)]
    iterations: Option<String>,
    /// JSON on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write an SVG plot (SpMV: oracle / selected per sample, sorted, by nnz bucket; comm:
    /// bus bandwidth per pattern against size, f32, and a `-bf16` twin).
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Comm runs: also write every message (bus bandwidth per pattern, pick, oracle, rule) as
    /// CSV here; attention runs: every shape (pick, oracle, FA2 rule, best single, SDPA);
    /// overlap runs: every layer (pick, oracle, bulk, bound).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Attention runs: the outside baselines on the same shapes (FlashAttention-2 varlen,
    /// PyTorch SDPA: `bench/attention_baselines.py`'s CSV), compared in the same timing mode.
    #[arg(long)]
    baselines: Option<PathBuf>,
    /// Attention runs: the timing mode of every figure compared: `throughput` (launches back to
    /// back; the label figure), `graph` (replayed from a CUDA graph) or `latency` (one launch
    /// from an idle stream, launch cost included). Default: throughput.
    #[arg(long)]
    timing: Option<String>,
    /// SpMV runs: charge every pick this many nanoseconds of inference instead of the time
    /// measured on this machine (reproducible figures; the measured time is still printed).
    #[arg(long, value_name = "NS")]
    charge_inference_ns: Option<f64>,
    /// SpMV runs: charge gathering as `upload` (what the gather adds to the upload of a plan
    /// made from a host matrix, as `SpmvPlan::new` does, the median per decade of nonzeros; the
    /// default), `upload-raw` (each matrix's own measured figure, mostly upload jitter above
    /// 1e7 nonzeros) or `device` (a matrix already on the device: the device pass).
    #[arg(long, value_enum)]
    gather_cost: Option<GatherCostArg>,
    /// Replace an existing --svg or --csv that is a model or a runs table (never an input).
    #[arg(long)]
    force: bool,
}

/// `augur eval` of an attention model: every shape that ran every schedule (groups held out of
/// training marked).
fn eval_attention(
    m: &attention::AttentionModel,
    a: &EvalArgs,
    files: &[PathBuf],
) -> anyhow::Result<ExitCode> {
    let timing = a.timing.as_deref().unwrap_or("throughput");
    let runs = attention::AttentionRuns::read(files)?.in_timing(timing)?;
    let baselines = match &a.baselines {
        Some(p) => attention::read_baselines(p, timing)?,
        None => Default::default(),
    };
    let rows = attention::evaluate(m, &runs, &baselines)?;
    if rows.is_empty() {
        anyhow::bail!("no shape in the runs ran every schedule of the model");
    }
    let sums = attention::summarize(&rows);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "summary": sums, "shapes": rows }))?
        );
    } else {
        print!("{}", attention::summary_table(m, &rows, &sums, timing));
    }
    if let Some(p) = &a.csv {
        super::output::write(p, attention::rows_csv(&rows))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuse the options only an attention model's evaluation reads (`--timing`, `--baselines`)
/// for a model of another domain (`what`: "a comm", "an SpMV").
fn attention_only(a: &EvalArgs, what: &str) -> anyhow::Result<()> {
    for (given, flag) in [
        (a.timing.is_some(), "--timing"),
        (a.baselines.is_some(), "--baselines"),
    ] {
        anyhow::ensure!(
            !given,
            "{flag} is for an attention model's evaluation, not {what} model's"
        );
    }
    Ok(())
}

/// `augur eval` of an overlap model on `augur overlap tp` CSVs: its picks against the oracle,
/// bulk and the perfect-overlap bound, per GPU count, operation and M bucket; by default only
/// the layers of weights (N, K) it was not trained on (`--rows all`: every layer).
fn eval_overlap(
    m: &overlap::OverlapModel,
    a: &EvalArgs,
    files: &[PathBuf],
) -> anyhow::Result<ExitCode> {
    for (given, flag) in [
        (a.svg.is_some(), "--svg"),
        (a.iterations.is_some(), "--iterations"),
        (a.baselines.is_some(), "--baselines"),
        (a.charge_inference_ns.is_some(), "--charge-inference-ns"),
        (a.gather_cost.is_some(), "--gather-cost"),
        (a.timing.is_some(), "--timing"),
    ] {
        anyhow::ensure!(!given, "{flag} is not for an overlap model's evaluation");
    }
    // The SMs per GPU `augur overlap train` assumes by default.
    let layers = overlap::read_layers(files, super::overlap::DEFAULT_SMS)?;
    let (rows, seen) = overlap::evaluate_model(m, &layers, a.rows == Rows::Unseen);
    let mut notes = Vec::new();
    if seen > 0 {
        notes.push(if m.training.weight_list.is_empty() {
            format!(
                "{seen} layers left out: the model does not list the weights it was trained on, \
                 so every layer counts as seen (`--rows all` evaluates them, optimistically)"
            )
        } else {
            format!(
                "{seen} layers of weights (N, K) the model was trained on left out (`--rows all` \
                 evaluates them too, optimistically)"
            )
        });
    }
    let mut devices: Vec<&str> = layers.iter().map(|l| l.device.as_str()).collect();
    devices.sort_unstable();
    devices.dedup();
    if devices.iter().any(|d| *d != m.device) {
        notes.push(format!(
            "the model was trained on {}; these runs are from {}",
            m.device,
            devices.join(", ")
        ));
    }
    if rows.is_empty() {
        anyhow::bail!(
            "no layer to evaluate in {} file(s){}",
            files.len(),
            notes.first().map_or(String::new(), |n| format!(": {n}"))
        );
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "model_device": m.device, "left_out_seen": seen, "notes": notes, "layers": rows })
            )?
        );
    } else {
        println!(
            "augur overlap-pattern model for {} on {} layers ({}):",
            m.device,
            rows.len(),
            if a.rows == Rows::Unseen {
                "weights it was not trained on"
            } else {
                "every layer, trained ones included"
            }
        );
        print!("{}", overlap::summary(&rows));
        for n in &notes {
            println!("note: {n}");
        }
    }
    if let Some(p) = &a.csv {
        super::output::write(p, overlap::rows_csv(&rows))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `augur eval` of a comm model: every message (sizes held out of training marked unseen).
fn eval_comm(m: &comm::CommModel, a: &EvalArgs, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let runs = comm::CommRuns::read(files)?;
    let rows = comm::evaluate(m, &runs)?;
    let sums = comm::summarize(&rows);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "summary": sums, "messages": rows })
            )?
        );
    } else {
        print!("{}", comm::summary_table(m, &sums));
    }
    if let Some(p) = &a.csv {
        super::output::write(p, comm::rows_csv(&rows))?;
    }
    if let Some(p) = &a.svg {
        for dtype in ["f32", "bf16"] {
            let path = if dtype == "f32" {
                p.clone()
            } else {
                bf16_twin(p)
            };
            if rows.iter().any(|r| r.dtype == dtype) {
                comm::plot_busbw(
                    &rows,
                    dtype,
                    &format!(
                        "augur collectives on {} ({dtype}); circles: the model's pick",
                        m.device
                    ),
                    &path,
                )?;
                if !a.json {
                    println!("plot: {}", path.display());
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The comm plot's bf16 twin of `--svg p`: `<stem>-bf16.svg` beside it.
fn bf16_twin(p: &std::path::Path) -> PathBuf {
    p.with_file_name(format!(
        "{}-bf16.svg",
        p.file_stem().and_then(|s| s.to_str()).unwrap_or("busbw")
    ))
}

pub fn eval(a: EvalArgs) -> anyhow::Result<ExitCode> {
    let files = runs_files(&a.runs)?;
    let mut inputs = files.clone();
    inputs.push(PathBuf::from(&a.model));
    inputs.extend(a.baselines.iter().cloned());
    for (flag, out) in [("--svg", &a.svg), ("--csv", &a.csv)] {
        if let Some(out) = out {
            super::output::check(out, flag, &inputs, Writes::Report, a.force)?;
            if flag == "--svg" {
                super::output::check(&bf16_twin(out), flag, &inputs, Writes::Report, a.force)?;
            }
        }
    }
    let m = match load_any(&a.model)? {
        AnyModel::Comm(m) => {
            attention_only(&a, "a comm")?;
            return eval_comm(&m, &a, &files);
        }
        AnyModel::Attention(m) => return eval_attention(&m, &a, &files),
        AnyModel::Overlap(m) => return eval_overlap(&m, &a, &files),
        AnyModel::Spmv(m) => {
            attention_only(&a, "an SpMV")?;
            *m
        }
    };
    let runs = Runs::read(&files)?;
    let iterations = match &a.iterations {
        Some(s) => Some(augur_models::train::parse_iterations(s).with_context(|| {
            format!("--iterations `{s}`: expected counts >= 1 separated by commas")
        })?),
        None => None,
    };
    let rows = match a.rows {
        Rows::Unseen => RowSelect::Unseen,
        Rows::All => RowSelect::All,
    };
    if let Some(ns) = a.charge_inference_ns {
        anyhow::ensure!(
            ns >= 0.0 && ns.is_finite(),
            "--charge-inference-ns {ns}: expected a time >= 0"
        );
    }
    let r = eval::evaluate(
        &m,
        &runs,
        rows,
        iterations,
        a.charge_inference_ns,
        a.gather_cost.map(GatherCostArg::cost),
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", eval::table(&r));
    }
    if let Some(p) = &a.svg {
        eval::plot_svg(&r, p)?;
        if !a.json {
            println!("plot: {}", p.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
