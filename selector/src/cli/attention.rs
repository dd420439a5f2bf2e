//! `augur attention check`: every decode-attention schedule on the GPU against the f64
//! reference (issue 8, first version).

use std::process::ExitCode;

use augur_features::attention::AttentionShape;
use augur_kernels::attention::{max_error, reference, DecodeBatch};
use augur_kernels::cuda::attention::{CudaAttention, Schedule};
use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum AttentionCommand {
    /// Run every schedule on attention shapes and compare o with the f64 reference
    /// (|error| <= 4e-3: inputs are exact multiples of 1/256 in [-1, 1), o is an average of V
    /// rows in [-1, 1), accumulated in f32 with fast exponentials). Exits non-zero on a failure.
    Check(CheckArgs),
    /// Time every schedule on each shape (events, median after warm-up): CSV on stdout with
    /// microseconds, live-KV GB/s and its fraction of the measured copy bandwidth, and the
    /// FlashAttention-2 rule's split count (first version: not yet run on a GPU).
    Bench(BenchArgs),
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Shapes, as for `check`.
    #[arg(value_name = "SHAPE", required = true)]
    shapes: Vec<String>,
    /// Schedules (default: head, gqa, split-2..32, balanced; also balanced-N: chunks of N tokens).
    #[arg(long, value_delimiter = ',')]
    schedules: Vec<String>,
    #[arg(long, default_value_t = 0)]
    device: usize,
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    #[arg(long, default_value_t = 20)]
    reps: usize,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Shapes (`attention:q_heads=..,kv_heads=..,head_dim=..,dtype=..,lens=..[,page=..]`);
    /// default: a built-in set with empty and one-token sequences, lengths off the tile,
    /// skewed batches, GQA 1/4/8, head_dim 64/128/256, f16 and bf16, contiguous and paged.
    #[arg(value_name = "SHAPE")]
    shapes: Vec<String>,
    /// Schedules (default: head, gqa, split-2..32, balanced; also balanced-N: chunks of N tokens).
    #[arg(long, value_delimiter = ',')]
    schedules: Vec<String>,
    #[arg(long, default_value_t = 0)]
    device: usize,
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
                anyhow::anyhow!("--schedules: `{s}` is not head, gqa, split-N, balanced or balanced-N")
            })
        })
        .collect()
}

pub fn run(c: AttentionCommand) -> anyhow::Result<ExitCode> {
    let a = match c {
        AttentionCommand::Check(a) => a,
        AttentionCommand::Bench(b) => return bench(b),
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
    let schedules = parse_schedules(&a.schedules)?;
    let gpu = CudaAttention::new(a.device)?;
    const BOUND: f64 = 4e-3;
    let (mut passed, mut failed) = (0usize, 0usize);
    for (i, shape) in shapes.iter().enumerate() {
        let b = DecodeBatch::random(shape, i as u64 + 1)?;
        let want = reference(&b);
        for &s in &schedules {
            let verdict = (|| -> anyhow::Result<(f64, usize)> {
                let mut d = gpu.upload(&b)?;
                gpu.run(&mut d, s)?;
                Ok(max_error(&want, &gpu.output(&d)?))
            })();
            match verdict {
                Ok((e, _)) if e <= BOUND => {
                    passed += 1;
                    println!(
                        "passed  {:<12} max |error| {e:.2e}  {}",
                        s.name(),
                        spec_of(shape)
                    );
                }
                Ok((e, at)) => {
                    failed += 1;
                    println!(
                        "FAILED  {:<12} max |error| {e:.2e} at output {at} (bound {BOUND:e})  {}",
                        s.name(),
                        spec_of(shape)
                    );
                }
                Err(e) => {
                    failed += 1;
                    println!("FAILED  {:<12} {e}  {}", s.name(), spec_of(shape));
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
    let gpu = CudaAttention::new(a.device)?;
    let spmv = augur_kernels::cuda::CudaSpmv::new(a.device)?;
    // GB/s, read + written.
    let copy = spmv.copy_bandwidth()?;
    let sms = spmv.device.multiprocessors as usize;
    println!("shape,schedule,median_us,live_kv_gb_per_s,fraction_of_copy,fa2_splits,copy_gb_per_s");
    for (i, (spec, shape)) in shapes.iter().enumerate() {
        let b = DecodeBatch::random(shape, i as u64 + 1)?;
        let mut d = gpu.upload(&b)?;
        let fa2 = augur_kernels::attention::fa2_splits_for(shape, sms);
        for &s in &schedules {
            let mut p = gpu.prepare(&d, s)?;
            let t = gpu.time(&mut d, &mut p, a.warmup, a.reps)?;
            let gbs = b.kv_bytes() as f64 / t / 1e9;
            println!(
                "\"{spec}\",{},{:.3},{gbs:.1},{:.3},{fa2},{:.1}",
                s.name(),
                t * 1e6,
                gbs / copy,
                copy
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn spec_of(s: &AttentionShape) -> String {
    format!(
        "q_heads={} kv_heads={} head_dim={} {:?} {} sequences {:?}",
        s.q_heads,
        s.kv_heads,
        s.head_dim,
        s.dtype,
        s.kv_lens.len(),
        s.layout
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_shapes_parse() {
        for s in super::default_shapes() {
            augur_features::attention::AttentionShape::parse(&s).unwrap();
        }
    }
}
