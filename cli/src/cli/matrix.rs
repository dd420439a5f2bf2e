//! `augur matrix ...`

use std::path::PathBuf;
use std::process::ExitCode;

use augur_datasets::stats::RowStats;
use augur_datasets::{mtx, Csr, LoadInfo, MatrixSource, Scalar};
use clap::{Args, Subcommand};

use super::{parse_sources, Precision};

#[derive(Subcommand, Debug)]
pub enum MatrixCommand {
    /// Rows, columns, nonzeros, row-length statistics and load time of each MATRIX.
    Info(InfoArgs),
    /// Write a MATRIX (typically a generated one) as a Matrix Market file (`.gz`: compressed).
    Write(WriteArgs),
    /// How MultiGpuSpmv would cut a square MATRIX into N equal-nonzero shards, and what each
    /// needs from the others per product: the x entries it reads from other shards (a halo
    /// exchange) against the rows the all-gather brings it.
    Shards(ShardsArgs),
}

#[derive(Args, Debug)]
pub struct ShardsArgs {
    #[arg(required = true, value_name = "MATRIX")]
    matrices: Vec<String>,
    /// Shard counts (repeatable).
    #[arg(long = "parts", default_values_t = [2usize, 4])]
    parts: Vec<usize>,
    /// CSV on stdout (one row per matrix, shard count and shard).
    #[arg(long)]
    csv: bool,
    /// Also time, on this CUDA GPU, what each shard computes in the halo mode (its local and
    /// remote blocks, each planned apart, the scatter-add and the pack) against the same rows
    /// as one plan (the all-gather modes), every shard on the one GPU (f32, back-to-back
    /// launches, medians).
    #[arg(long, value_name = "GPU", conflicts_with = "csv")]
    time_on: Option<usize>,
}

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Matrix Market files or generator specs.
    #[arg(required = true, value_name = "MATRIX")]
    matrices: Vec<String>,
    /// Value type to load as.
    #[arg(long, value_enum, default_value = "f64")]
    precision: Precision,
    /// One JSON array on stdout instead of text.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// CSV on stdout (one row per matrix) instead of text.
    #[arg(long)]
    csv: bool,
    /// Load each matrix this many times and report the median load time.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
}

#[derive(Args, Debug)]
pub struct WriteArgs {
    #[arg(value_name = "MATRIX")]
    matrix: String,
    /// Output path: `.mtx`, or `.mtx.gz` for gzip.
    #[arg(value_name = "OUT")]
    out: PathBuf,
}

#[derive(serde::Serialize)]
struct Info {
    name: String,
    source: String,
    #[serde(flatten)]
    stats: RowStats,
    load: LoadInfo,
    /// Matrix Market text parsed per second (files only), MB/s.
    text_mb_per_s: Option<f64>,
}

pub fn run(cmd: MatrixCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        MatrixCommand::Info(a) => info(a),
        MatrixCommand::Shards(a) => shards(a),
        MatrixCommand::Write(a) => {
            let src = MatrixSource::parse(&a.matrix)?;
            let (m, _) = src.load::<f64>()?;
            mtx::write(&a.out, &m)?;
            eprintln!(
                "wrote {} ({} x {}, nnz {})",
                a.out.display(),
                m.rows(),
                m.cols(),
                m.nnz()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn info(a: InfoArgs) -> anyhow::Result<ExitCode> {
    let sources = parse_sources(&a.matrices)?;
    let mut all = Vec::new();
    let mut failed = 0;
    let mut csv = a.csv.then(|| csv::Writer::from_writer(std::io::stdout()));
    for (arg, src) in a.matrices.iter().zip(&sources) {
        let r = match a.precision {
            Precision::F32 => load_info::<f32>(arg, src, a.repeat),
            Precision::F64 => load_info::<f64>(arg, src, a.repeat),
        };
        match r {
            Ok(i) => {
                if let Some(w) = csv.as_mut() {
                    w.serialize(CsvRow::new(&i, a.precision, a.repeat))?;
                    w.flush()?;
                } else if !a.json {
                    print_info(&i);
                }
                all.push(i);
            }
            Err(e) => {
                failed += 1;
                eprintln!("augur: error: {e}");
            }
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&all)?);
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Flat record of `matrix info --csv`.
#[derive(serde::Serialize)]
struct CsvRow<'a> {
    name: &'a str,
    rows: usize,
    cols: usize,
    nnz: usize,
    row_len_max: usize,
    row_len_mean: f64,
    empty_rows: usize,
    precision: Precision,
    threads: usize,
    repeat: u32,
    load_s_median: f64,
    file_bytes: Option<u64>,
    text_bytes: Option<u64>,
    text_mb_per_s: Option<f64>,
}

impl<'a> CsvRow<'a> {
    fn new(i: &'a Info, precision: Precision, repeat: u32) -> Self {
        CsvRow {
            name: &i.name,
            rows: i.stats.rows,
            cols: i.stats.cols,
            nnz: i.stats.nnz,
            row_len_max: i.stats.row_len_max,
            row_len_mean: i.stats.row_len_mean,
            empty_rows: i.stats.empty_rows,
            precision,
            threads: rayon::current_num_threads(),
            repeat,
            load_s_median: i.load.seconds,
            file_bytes: i.load.file_bytes,
            text_bytes: i.load.text_bytes,
            text_mb_per_s: i.text_mb_per_s,
        }
    }
}

fn load_info<T: Scalar>(arg: &str, src: &MatrixSource, repeat: u32) -> anyhow::Result<Info> {
    let (m, mut load): (Csr<T>, LoadInfo) = src.load()?;
    if repeat > 1 {
        let mut times = vec![load.seconds];
        for _ in 1..repeat {
            times.push(src.load::<T>()?.1.seconds);
        }
        load.seconds = augur_kernels::median(times);
    }
    let text_mb_per_s = load
        .text_bytes
        .map(|b| b as f64 / 1e6 / load.seconds.max(1e-9));
    Ok(Info {
        name: src.name(),
        source: arg.to_string(),
        stats: RowStats::of(&m),
        load,
        text_mb_per_s,
    })
}

fn print_info(i: &Info) {
    let s = &i.stats;
    println!("{}: {} x {}, nnz {}", i.name, s.rows, s.cols, s.nnz);
    println!(
        "  row length: min {}, mean {:.2}, max {}, std {:.2}; empty rows {}",
        s.row_len_min, s.row_len_mean, s.row_len_max, s.row_len_std, s.empty_rows
    );
    match (&i.load.header, i.load.text_bytes, i.text_mb_per_s) {
        (Some(h), Some(tb), Some(rate)) => println!(
            "  file: {:?} {:?}, {} entries stored; read {:.1} MB of text in {:.3} s ({:.0} MB/s)",
            h.field,
            h.symmetry,
            h.entries,
            tb as f64 / 1e6,
            i.load.seconds,
            rate
        ),
        _ => println!("  generated in {:.3} s", i.load.seconds),
    }
}

#[derive(serde::Serialize)]
struct ShardRow<'a> {
    matrix: &'a str,
    parts: usize,
    rank: usize,
    first_row: usize,
    rows: usize,
    nnz: usize,
    halo_entries: usize,
    allgather_entries: usize,
}

fn shards(a: ShardsArgs) -> anyhow::Result<ExitCode> {
    let srcs = super::parse_sources(&a.matrices)?;
    let mut w = a.csv.then(|| csv::Writer::from_writer(std::io::stdout()));
    for src in &srcs {
        let (m, _) = src.load::<f32>()?;
        let name = src.name();
        for &n in &a.parts {
            let t = augur::multi::shard_traffic(&m, n)?;
            if let Some(w) = w.as_mut() {
                for s in &t {
                    w.serialize(ShardRow {
                        matrix: &name,
                        parts: n,
                        rank: s.rank,
                        first_row: s.rows.start,
                        rows: s.rows.len(),
                        nnz: s.nnz,
                        halo_entries: s.halo_entries,
                        allgather_entries: s.allgather_entries,
                    })?;
                }
                continue;
            }
            let halo = t.iter().map(|s| s.halo_entries).max().unwrap_or(0);
            let all = t.iter().map(|s| s.allgather_entries).max().unwrap_or(0);
            let nnz: Vec<usize> = t.iter().map(|s| s.nnz).collect();
            println!(
                "{name}: {n} shards, nnz {:?}; per product the busiest shard receives {halo} x \
                 entries with a halo exchange, {all} with the all-gather ({:.2}%)",
                nnz,
                100.0 * halo as f64 / all.max(1) as f64
            );
            if let Some(gpu) = a.time_on {
                let backend = augur::Backend::cuda(gpu)?;
                let times = augur::multi::halo_timing(
                    &m,
                    n,
                    &backend,
                    augur::PlanOptions::default().expected_iterations(300),
                    20,
                )?;
                let us = |s: f64| s * 1e6;
                for h in &times {
                    println!(
                        "  shard {}: {} rows; one plan {} {:.1} us | halo: local {} nnz {} \
                         {:.1} us + remote {} nnz in {} rows {} {:.1} us + pack {} {:.1} us \
                         = {:.2}x",
                        h.rank,
                        h.rows,
                        h.whole_kernel,
                        us(h.whole_s),
                        h.local_nnz,
                        h.local_kernel,
                        us(h.local_s),
                        h.remote_nnz,
                        h.remote_rows,
                        h.remote_kernel.as_deref().unwrap_or("-"),
                        us(h.remote_s),
                        h.sent,
                        us(h.pack_s),
                        (h.local_s + h.remote_s + h.pack_s) / h.whole_s
                    );
                }
                let slowest = |f: &dyn Fn(&augur::multi::HaloTiming) -> f64| {
                    times.iter().map(f).fold(0.0, f64::max)
                };
                let whole = slowest(&|h| h.whole_s);
                let split = slowest(&|h| h.local_s + h.remote_s + h.pack_s);
                println!(
                    "  slowest shard: one plan {:.1} us, halo split {:.1} us ({:.2}x; the \
                     exchange not included)",
                    us(whole),
                    us(split),
                    split / whole
                );
            }
        }
    }
    if let Some(mut w) = w {
        w.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}
