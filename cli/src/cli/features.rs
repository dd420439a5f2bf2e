//! `augur features ...`: features of many matrices (in parallel), attention shapes or messages.

use std::process::ExitCode;
use std::sync::Mutex;

use augur_datasets::{Csr, MatrixSource};
use augur_features::attention::{AttentionFeatures, AttentionShape};
use augur_features::message::{LinkProbe, MessageFeatures, MessageShape};
use augur_features::overlap::{OverlapFeatures, OverlapShape};
use augur_features::spmv::{self, CpuGatherer, CsrPattern, SpmvFeatureRecord, SpmvFeatures};
use augur_features::FeatureSchema;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use super::parse_sources;

/// What the inputs are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Sparse matrices (files or generator specs): schema `spmv`.
    Spmv,
    /// Decode-attention shapes `attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=4096*2;16*30[,page=16]`: schema `attention`.
    Attention,
    /// Collective messages `message:collective=all-reduce,bytes=64KiB,world=4[,dtype=bf16,link=nvlink|pcie|auto,gemm=MxNxK]`: schema `message` (defaults: dtype f32; link nvlink for world > 1, same-device for world 1; `link=auto` asks the CUDA driver).
    Message,
    /// Tensor-parallel layers `overlap:op=all-gather|reduce-scatter,m=8192,n=6144,k=4096,world=4[,dtype=bf16,link=nvlink|pcie,sms=132]` (the whole layer's M, N, K): schema `overlap`.
    Overlap,
}

#[derive(Args, Debug)]
pub struct FeaturesArgs {
    /// Matrix Market files or generator specs (or shape specs, with --kind).
    #[arg(required_unless_present = "schema", value_name = "INPUT")]
    matrices: Vec<String>,
    /// What the inputs are.
    #[arg(long, value_enum, default_value = "spmv")]
    kind: Kind,
    /// Print the schema (names, units, kinds, one line of documentation each) as JSON and exit.
    #[arg(long)]
    schema: bool,
    /// Compute the known (free) features only.
    #[arg(long)]
    known_only: bool,
    /// One JSON array on stdout instead of CSV.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// CSV on stdout (the default).
    #[arg(long)]
    csv: bool,
}

#[derive(serde::Serialize)]
struct Entry {
    name: String,
    source: String,
    load_s: f64,
    #[serde(flatten)]
    record: SpmvFeatureRecord,
}

pub fn run(a: FeaturesArgs) -> anyhow::Result<ExitCode> {
    if a.schema {
        let schema = match a.kind {
            Kind::Spmv => SpmvFeatures::schema(),
            Kind::Attention => AttentionFeatures::schema(),
            Kind::Message => MessageFeatures::schema(),
            Kind::Overlap => OverlapFeatures::schema(),
        };
        println!("{}", schema.to_json());
        return Ok(ExitCode::SUCCESS);
    }
    match a.kind {
        Kind::Spmv => matrices(a),
        Kind::Attention => shapes(&a, AttentionFeatures::schema(), |s| {
            let shape = AttentionShape::parse(s)?;
            let f = shape.features()?;
            Ok((
                f.values(),
                serde_json::json!({ "shape": shape, "features": f }),
            ))
        }),
        Kind::Message => shapes(&a, MessageFeatures::schema(), |s| {
            let shape = message_shape(s)?;
            let f = shape.features()?;
            Ok((
                f.values(),
                serde_json::json!({ "shape": shape, "features": f }),
            ))
        }),
        Kind::Overlap => shapes(&a, OverlapFeatures::schema(), |s| {
            let shape = OverlapShape::parse(s)?;
            let f = shape.features()?;
            Ok((
                f.values(),
                serde_json::json!({ "shape": shape, "features": f }),
            ))
        }),
    }
}

/// A message spec; `link=auto` asks the CUDA driver for the slowest link among GPUs 0..world.
fn message_shape(spec: &str) -> anyhow::Result<MessageShape> {
    let parts: Vec<&str> = spec.split(',').collect();
    let auto = parts.iter().any(|p| p.trim() == "link=auto");
    if !auto {
        return Ok(MessageShape::parse(spec)?);
    }
    let rest: Vec<&str> = parts
        .into_iter()
        .filter(|p| p.trim() != "link=auto")
        .collect();
    let mut shape = MessageShape::parse(&rest.join(","))?;
    let devices: Vec<usize> = (0..shape.world_size).collect();
    shape.link = augur_kernels::cuda::DriverLinkProbe.group_link(&devices)?;
    shape.validate()?;
    Ok(shape)
}

/// Attention or message specs: each gives feature values (CSV) and a JSON object.
fn shapes(
    a: &FeaturesArgs,
    schema: FeatureSchema,
    one: impl Fn(&str) -> anyhow::Result<(Vec<f64>, serde_json::Value)>,
) -> anyhow::Result<ExitCode> {
    let mut rows = Vec::new();
    let mut failed = 0;
    for spec in &a.matrices {
        match one(spec) {
            Ok(r) => rows.push((spec.as_str(), r)),
            Err(e) => {
                failed += 1;
                eprintln!("augur: error: {e:#}");
            }
        }
    }
    if a.json {
        let all: Vec<serde_json::Value> = rows
            .into_iter()
            .map(|(spec, (_, mut v))| {
                v["name"] = spec.into();
                v["schema_version"] = schema.version.into();
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        let mut w = csv::Writer::from_writer(std::io::stdout());
        let mut header = vec!["name"];
        header.extend(schema.names());
        w.write_record(&header)?;
        for (spec, (values, _)) in rows {
            let mut row = vec![spec.to_string()];
            row.extend(values.iter().map(f64::to_string));
            w.write_record(&row)?;
        }
        w.flush()?;
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn matrices(a: FeaturesArgs) -> anyhow::Result<ExitCode> {
    let sources = parse_sources(&a.matrices)?;
    let bar = ProgressBar::new(sources.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} matrices, {elapsed} elapsed, ETA {eta}")
            .expect("valid template"),
    );
    if sources.len() < 8 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let errors = Mutex::new(Vec::new());
    let results: Vec<Option<Entry>> = a
        .matrices
        .par_iter()
        .zip(&sources)
        .map(|(arg, src)| {
            let r = one(arg, src, a.known_only);
            bar.inc(1);
            r.map_err(|e| {
                if super::skipped_by_design(&e) {
                    eprintln!("augur: skipping {arg}: {e:#}");
                } else {
                    errors.lock().unwrap().push(format!("{e:#}"));
                }
            })
            .ok()
        })
        .collect();
    bar.finish_and_clear();
    let entries: Vec<Entry> = results.into_iter().flatten().collect();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
    } else {
        let mut w = csv::Writer::from_writer(std::io::stdout());
        let mut header = vec!["name".to_string()];
        header.extend(SpmvFeatures::schema().names().map(str::to_string));
        header.extend(["gatherer", "known_s", "gathered_s", "load_s"].map(String::from));
        w.write_record(&header)?;
        for e in &entries {
            let mut row = vec![e.name.clone()];
            row.extend(e.record.features.values().iter().map(|v| v.to_string()));
            row.push(e.record.cost.gatherer.clone());
            row.push(e.record.cost.known_s.to_string());
            row.push(
                e.record
                    .cost
                    .gathered_s
                    .map_or(String::new(), |s| s.to_string()),
            );
            row.push(e.load_s.to_string());
            w.write_record(&row)?;
        }
        w.flush()?;
    }
    let errors = errors.into_inner().unwrap();
    for e in &errors {
        eprintln!("augur: error: {e}");
    }
    Ok(if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn one(arg: &str, src: &MatrixSource, known_only: bool) -> anyhow::Result<Entry> {
    // Features read the pattern only; f32 values halve the memory of large generated inputs.
    let (m, load): (Csr<f32>, _) = match src.load() {
        Ok(ok) => ok,
        // A file whose values overflow f32 still has a pattern: read it in f64.
        Err(augur_datasets::DatasetError::Parse { .. }) if matches!(src, MatrixSource::File(_)) => {
            let (m64, load) = src.load::<f64>()?;
            (m64.map(|&v| v as f32), load)
        }
        Err(e) => return Err(e.into()),
    };
    let p = CsrPattern::of(&m);
    let record = if known_only {
        spmv::extract_known(p)
    } else {
        spmv::extract(p, &CpuGatherer)?
    };
    Ok(Entry {
        name: src.name(),
        source: arg.to_string(),
        load_s: load.seconds,
        record,
    })
}
