//! Command-line parsing and the subcommands.

mod attention;
mod check;
mod collect;
mod comm;
mod datasets;
mod devices;
mod distributed;
mod features;
mod kernels;
mod matrix;
mod model;
mod output;
mod overlap;
mod run;
mod spmv;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "augur",
    version,
    about = "Pick the fastest kernel for an irregular input, and say why",
    long_about = "Pick the fastest kernel for an irregular input, and say why.\n\n\
        A MATRIX argument is a Matrix Market file (.mtx or .mtx.gz) or a generator spec such as\n\
        `rmat:scale=20,ef=16,seed=1`, `stencil3d:nx=100,points=27`, `powerlaw:rows=1e6,alpha=2.2`.\n\
        Generators: uniform tall wide stencil2d stencil3d banded powerlaw rmat blockdiag hubs\n\
        arrowhead expand (see `augur matrix --help`).",
    after_help = "Exit codes: 0 done (inputs augur does not read by design, complex values or the dense \
        `array` format, are reported and skipped); 1 an input failed (a malformed file, a kernel that \
        failed its check; `collect`, a long resumable job, reports and skips every input it cannot \
        load and exits 0); 2 the command could not run (bad arguments, no such backend here)."
)]
pub struct Cli {
    /// Worker threads for CPU kernels and generators (default: all cores).
    #[arg(long, global = true)]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The SuiteSparse Matrix Collection: list its index, fetch matrices into a directory.
    #[command(subcommand)]
    Datasets(datasets::DatasetsCommand),
    /// Inspect, convert and generate matrices.
    #[command(subcommand, after_help = augur_datasets::generate::SPEC_HELP)]
    Matrix(matrix::MatrixCommand),
    /// Check every kernel of a backend against the f64 reference on the edge cases and the shared
    /// matrices, in f32 and f64; exits non-zero on any failure.
    Check(check::CheckArgs),
    /// Benchmarks: `augur bench spmv` times every kernel against the measured copy bandwidth
    /// (and cuSPARSE ALG1 on a GPU), CSV out.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Compile the CUDA kernels ahead of time (or check that they compile).
    #[command(subcommand)]
    Kernels(kernels::KernelsCommand),
    /// The GPUs the CUDA driver sees and the links between them (NVLink/PCIe from the driver's
    /// peer-to-peer attributes).
    Devices(devices::DevicesArgs),
    /// SpMV features of each MATRIX (schema `spmv`, versioned), with what gathering them cost.
    Features(features::FeaturesArgs),
    /// Run every SpMV kernel of a backend on matrices: check each against the f64 reference and
    /// time it (median after warm-up).
    Spmv(spmv::SpmvArgs),
    /// Measure every kernel on every MATRIX (features, gathering cost, setup and per-iteration
    /// medians) into a runs CSV for `augur train`; resumable, shardable (`collect merge`).
    Collect(collect::CollectCmd),
    /// Train a selector (decision trees, linfa-trees) from runs CSVs.
    Train(model::TrainArgs),
    /// Export a model as text rules, Graphviz DOT, a Rust function, or JSON.
    Export(model::ExportArgs),
    /// Evaluate a model on runs it did not train on: vs the oracle, the best single kernel,
    /// cuSPARSE ALG1 and a hand rule, per nnz bucket.
    Eval(model::EvalArgs),
    /// Plan SpMV for a MATRIX through the library API (features, the model's choice, setup),
    /// run it `--iterations` times on the CPU, one GPU or `--gpus N`, and report the decision
    /// (`--explain`: the path through the trees), setup, time per iteration and GB/s.
    Run(run::RunArgs),
    /// Decode attention over ragged KV (issue 8): `check` every schedule on the GPU against the
    /// f64 reference, `bench` them, `plan`: the attention model's pick for a shape, and why.
    #[command(subcommand)]
    Attention(attention::AttentionCommand),
    /// Collectives offline: `augur comm plan MESSAGE...` asks the comm model (built in, or
    /// --model) which pattern it picks for each message, and why.
    #[command(subcommand)]
    Comm(comm::CommCommand),
    /// One process per GPU: `augur distributed check` reads each process's rank as augur does
    /// (torchrun, Open MPI, MPICH, Slurm variables) and has the ranks meet at rank 0
    /// (MASTER_ADDR:MASTER_PORT or AUGUR_RENDEZVOUS), with a deadline; no GPU needed.
    #[command(subcommand)]
    Distributed(distributed::DistributedCommand),
    /// GEMM + collective overlap (issue 24): the GEMMs the patterns build on (`gemm`, `arrive`:
    /// one GPU), a tensor-parallel layer's patterns between GPUs, checked and timed (`tp`), the
    /// pattern selector (`train`; `plan`: the pick for a layer and why, no GPU).
    #[command(subcommand)]
    Overlap(overlap::OverlapCommand),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Every SpMV kernel of a backend on each MATRIX: median time, GB/s, fraction of measured
    /// copy bandwidth, speedup over cuSPARSE ALG1 (GPU); checked first. CSV on stdout.
    Spmv(spmv::SpmvArgs),
    /// Per-call cost of a cached plan (Dispatcher) over the bare kernel call, CSV on stdout.
    Dispatch(run::DispatchArgs),
}

/// Value type of the matrix and vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    F32,
    F64,
}

/// The most worker threads `--threads` may ask for (each is an OS thread with its own stack).
const MAX_THREADS: usize = 1024;

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(n) = cli.threads {
        if !(1..=MAX_THREADS).contains(&n) {
            anyhow::bail!(
                "--threads {n}: expected 1 to {MAX_THREADS} (this machine has {} cores)",
                std::thread::available_parallelism().map_or(1, |c| c.get())
            );
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| anyhow::anyhow!("--threads {n}: {e}"))?;
    }
    match cli.command {
        Command::Matrix(m) => matrix::run(m),
        Command::Spmv(a) => spmv::run(a).map_err(cpu_hint),
        Command::Features(a) => features::run(a),
        Command::Devices(a) => {
            devices::run(a).map_err(|e| next_step(e, ": there are no GPUs to list"))
        }
        Command::Kernels(k) => kernels::run(k).map_err(|e| {
            next_step(
                e,
                ": `augur kernels check --arch 9.0` needs only NVRTC, no GPU (`pip install \
                 nvidia-cuda-nvrtc`, then LD_LIBRARY_PATH=<its nvidia/cu13/lib>); `kernels \
                 build` needs a GPU",
            )
        }),
        Command::Check(a) => check::run(a).map_err(cpu_hint),
        Command::Bench(BenchCommand::Spmv(a)) => spmv::run_bench(a).map_err(cpu_hint),
        Command::Collect(c) => collect::run(c).map_err(cpu_hint),
        Command::Datasets(c) => datasets::run(c),
        Command::Train(a) => model::train(a),
        Command::Export(a) => model::export(a),
        Command::Eval(a) => model::eval(a),
        Command::Run(a) => run::run(a).map_err(cpu_hint),
        Command::Attention(c) => attention::run(c),
        Command::Overlap(c) => overlap::run(c),
        Command::Comm(comm::CommCommand::Plan(a)) => comm::plan(a),
        Command::Bench(BenchCommand::Dispatch(a)) => run::dispatch(a),
        Command::Distributed(c) => distributed::run(c),
    }
}

/// Whether an error comes from a backend that cannot run here (no GPU, no driver, no NVRTC).
fn not_available(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<augur_kernels::KernelError>(),
            Some(augur_kernels::KernelError::NotAvailable { .. })
        ) || matches!(
            c.downcast_ref::<augur::AugurError>(),
            Some(augur::AugurError::Kernel(
                augur_kernels::KernelError::NotAvailable { .. }
            ))
        )
    })
}

/// A backend that cannot run here gets the command's next step after the library's message
/// (which names what is missing, not a flag of this tool); other errors pass as they are.
fn next_step(e: anyhow::Error, step: &str) -> anyhow::Error {
    if not_available(&e) {
        anyhow::anyhow!("{}{step}", super::chain(&e))
    } else {
        e
    }
}

/// For commands with a `--backend` flag: the hint to use the CPU one.
fn cpu_hint(e: anyhow::Error) -> anyhow::Error {
    next_step(e, "; use --backend cpu")
}

/// Whether an error is an input augur does not read by design (complex values, the dense `array`
/// format): such an input is reported and skipped, not a failure, and the exit code stays 0
/// (`collect`, `spmv` and `features` agree).
pub(crate) fn skipped_by_design(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<augur_datasets::DatasetError>(),
            Some(augur_datasets::DatasetError::Unsupported { .. })
        )
    })
}

/// Parse every MATRIX argument up front, so a typo fails before any work is done.
fn parse_sources(args: &[String]) -> anyhow::Result<Vec<augur_datasets::MatrixSource>> {
    args.iter()
        .map(|a| augur_datasets::MatrixSource::parse(a).map_err(anyhow::Error::from))
        .collect()
}

/// The error of a command that only runs on CUDA GPUs (attention, collectives): the kernels
/// crate's "use --backend cpu" hint is for SpMV and does not apply; say so instead.
pub(crate) fn gpu_only(what: &'static str) -> impl Fn(augur_kernels::KernelError) -> anyhow::Error {
    move |e| match e {
        augur_kernels::KernelError::NotAvailable { backend, why } => {
            // Where the machine has AMD GPUs instead, say why they cannot run it.
            let amd = match augur_kernels::hip::available() {
                Ok(n) => format!(
                    "; this machine's {n} AMD GPU(s) cannot run it yet: {}",
                    amd_gap(what)
                ),
                Err(_) => String::new(),
            };
            anyhow::anyhow!(
                "backend `{backend}` is not available: {why} ({what} runs on CUDA GPUs only{amd})"
            )
        }
        e => e.into(),
    }
}

/// How sure a cost-labelled model's pick is, as the `plan` commands print it: the training
/// inputs (`noun`, plural) that reach its leaf and the pick's mean regret there.
pub(crate) fn leaf_line((inputs, regret): (usize, f64), noun: &str, pick: &str) -> String {
    format!(
        "leaf: {}, {pick} {:.2}% slower than {} fastest on average",
        augur_models::export::counted(inputs, &format!("training {noun}")),
        regret * 100.0,
        if inputs == 1 { "its" } else { "their" }
    )
}

/// Why a CUDA-only command has no HIP version yet.
fn amd_gap(what: &str) -> &'static str {
    if what.contains("attention") || what.contains("GEMM") {
        "its tensor-core kernel needs a separate matrix-core (MFMA) version, not written until it \
         can be run"
    } else {
        "the collectives on AMD need RCCL groups and fine-grained memory for their flags (comm.cu \
         compiles for AMD; RCCL's table loads), not ported until they can be run"
    }
}
