//! `augur features ...`: the SpMV features of many matrices, in parallel.

use std::process::ExitCode;
use std::sync::Mutex;

use augur_datasets::{Csr, MatrixSource};
use augur_features::spmv::{self, CpuGatherer, CsrPattern, SpmvFeatureRecord, SpmvFeatures};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use super::parse_sources;

#[derive(Args, Debug)]
pub struct FeaturesArgs {
    /// Matrix Market files or generator specs.
    #[arg(required = true, value_name = "MATRIX")]
    matrices: Vec<String>,
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
            r.map_err(|e| errors.lock().unwrap().push(format!("{e:#}")))
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
