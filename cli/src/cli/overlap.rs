//! `augur overlap` (issue 24): GEMM + collective overlap in tensor-parallel layers. Built so far:
//! the GEMMs the patterns build on, on one GPU (`augur overlap gemm`); the patterns themselves
//! need two or more GPUs and are not written yet.

use std::process::ExitCode;

use augur_features::attention::Dtype;
use augur_kernels::cuda::gemm::{tma_choice, CudaGemm, GemmKernel};
use augur_kernels::cuda::TimingMode;
use augur_kernels::gemm::{check_rows, reference_rows, GemmProblem, GemmShape};
use clap::{Args, Subcommand, ValueEnum};

#[derive(Subcommand, Debug)]
pub enum OverlapCommand {
    /// Check augur's tensor-core GEMMs (mma.sync with block tiles 128 x 128 and 64 x 128; on
    /// Hopper wgmma, 128 x 128 and 128 x 256, and the persistent TMA kernel, 128 x 256 or 128 x
    /// 128 tiles with k split in up to 16 ranges, as chosen for the shape or as named) and
    /// cuBLASLt against the exact product C = A Bᵀ on each shape (B a
    /// linear layer's [N][K] weight) (inputs exact multiples of 1/8, so the only error allowed
    /// is the final rounding to the 16-bit type; rows sampled on large shapes), then time each
    /// (latency, throughput and graph; medians after warm-up). CSV on stdout: microseconds,
    /// TFLOP/s and cuBLASLt's time over each kernel's (throughput and graph). Exits non-zero on a failed
    /// check.
    Gemm(GemmArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GemmDtype {
    Bf16,
    F16,
}

#[derive(Args, Debug)]
pub struct GemmArgs {
    /// Shapes M,N,K (C = A Bᵀ, A M x K, B N x K; N and K multiples of 8). Default: the tensor-parallel
    /// layer grid (M 16 to 16384 tokens; the per-GPU N and K of Llama-3-8B's QKV, o_proj,
    /// gate+up and down projections at TP 4, and an 8192 x 8192 one).
    #[arg(value_name = "SHAPE")]
    shapes: Vec<String>,
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
    /// Kernels to compare, comma-separated (default: augur_128x128, augur_64x128,
    /// augur_wgmma_128x128, augur_wgmma_128x256, augur_tma_128x256, augur_tma_auto, cublaslt).
    /// The TMA kernel also as augur_tma_128x128 and with a split k: augur_tma_128x256_k4.
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
}

pub fn run(c: OverlapCommand) -> anyhow::Result<ExitCode> {
    match c {
        OverlapCommand::Gemm(a) => gemm(a),
    }
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
    let shapes = if a.shapes.is_empty() {
        default_grid()
    } else {
        a.shapes
            .iter()
            .map(|s| GemmShape::parse(s))
            .collect::<Result<Vec<_>, _>>()?
    };
    let dtype = match a.dtype {
        GemmDtype::Bf16 => Dtype::Bf16,
        GemmDtype::F16 => Dtype::F16,
    };
    let kernels: Vec<GemmKernel> = if a.kernels.is_empty() {
        GemmKernel::all().to_vec()
    } else {
        a.kernels
            .iter()
            .map(|k| GemmKernel::parse(k))
            .collect::<Result<_, _>>()?
    };
    let g = CudaGemm::new(a.device).map_err(super::gpu_only("the tensor-core GEMM"))?;
    let dev = augur_kernels::cuda::device_info(a.device)?;
    // A, B and C of every shape must fit on the GPU (the host holds A and B twice as long as
    // that): said before any output.
    for shape in &shapes {
        if shape.device_bytes() > dev.memory_bytes as u128 {
            anyhow::bail!(
                "GEMM {shape}: A, B and C take {:.1} GiB, more than GPU {}'s {:.1} GiB",
                shape.device_bytes() as f64 / (1u64 << 30) as f64,
                a.device,
                dev.memory_bytes as f64 / (1u64 << 30) as f64
            );
        }
    }
    println!(
        "device,dtype,m,n,k,kernel,tma_choice,passed,max_err_over_bound,latency_us,throughput_us,graph_us,\
         tflops,cublaslt_over_kernel,cublaslt_over_kernel_graph"
    );
    let mut failed = 0;
    // augur's best over cuBLASLt per shape: throughput, graph.
    let mut ratios: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for shape in shapes {
        let p = GemmProblem::random(shape, dtype, a.seed)?;
        let rows = p.check_rows(256, 24);
        let want = reference_rows(&p, &rows);
        let mut d = g.upload(&p)?;
        let mut results = Vec::new();
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
            g.poison(&mut d)?;
            g.launch(&mut d, &prep)?;
            let got = g.rows(&d, &rows)?;
            let (err, r, c) = check_rows(&p, &rows, &want, &got);
            let passed = err <= 1.0;
            if !passed {
                failed += 1;
                eprintln!(
                    "augur: {} {shape} {dtype:?}: C[{r}][{c}] off by {err:.2} of the rounding \
                     bound",
                    kernel.name()
                );
            }
            let t = g.time_modes(&mut d, &prep, a.warmup, a.reps)?;
            results.push((kernel, passed, err, t));
        }
        let lt = results.iter().find(|r| r.0 == GemmKernel::CublasLt);
        let lt_thr = lt.map(|r| r.3.throughput_s);
        let lt_graph = lt.and_then(|r| r.3.get(TimingMode::Graph));
        for (kernel, passed, err, t) in &results {
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
                GemmKernel::TmaAuto => {
                    let (bn, s) = tma_choice(shape, dev.multiprocessors.max(1) as usize);
                    format!("128x{bn}_k{s}")
                }
                _ => String::new(),
            };
            println!(
                "{},{},{},{},{},{},{choice},{passed},{err:.3},{:.2},{:.2},{graph},{:.1},{vs},{vs_graph}",
                dev.name,
                a.dtype
                    .to_possible_value()
                    .map_or("?".into(), |v| v.get_name().to_string()),
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
