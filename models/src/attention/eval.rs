//! Evaluation against the per-shape oracle, FlashAttention-2's split rule, the best single schedule and PyTorch SDPA.

use super::*;

/// One shape evaluated.
#[derive(Debug, Clone, Serialize)]
pub struct AttentionEvalRow {
    pub spec: String,
    pub group: String,
    /// Whether its group was held out of training.
    pub unseen: bool,
    pub selected: String,
    pub oracle: String,
    pub selected_us: f64,
    pub oracle_us: f64,
    /// FlashAttention-2's split rule on augur's split-KV kernel (None: not measured).
    pub fa2_us: Option<f64>,
    pub fa2_splits: usize,
    /// The schedule best over all shapes (geomean), on this shape.
    pub single: String,
    pub single_us: f64,
    /// Outside baselines on this shape by name (`fa2_varlen`, `sdpa`), microseconds, timed in
    /// the same mode as the schedules (those given and run).
    pub baselines_us: BTreeMap<String, f64>,
    /// Live K and V bytes / selected time, GB/s.
    pub selected_gbs: f64,
    pub kv_bytes: f64,
}

/// Evaluate `model` on every shape of `runs` that ran every schedule of the model;
/// `baselines`: seconds by baseline name, then by shape spec ([`read_baselines`]).
pub fn evaluate(
    model: &AttentionModel,
    runs: &AttentionRuns,
    baselines: &Baselines,
) -> Result<Vec<AttentionEvalRow>, ModelError> {
    let cases: Vec<AttentionCase> = runs
        .cases()
        .into_iter()
        .filter(|c| model.schedules.iter().all(|s| c.time(s).is_some()))
        .collect();
    // The best single schedule: highest geomean oracle / its time over the shapes.
    let single = model
        .schedules
        .iter()
        .max_by(|a, b| {
            let score = |s: &str| {
                geomean(
                    cases
                        .iter()
                        .filter_map(|c| Some(c.oracle()?.1 / c.time(s)?)),
                )
            };
            score(a).total_cmp(&score(b))
        })
        .cloned()
        .unwrap_or_default();
    let mut rows = Vec::new();
    for c in &cases {
        let pick = model
            .choose(&c.shape)
            .ok_or_else(|| ModelError::Train(format!("{}: no features", c.spec)))?;
        let (oracle, oracle_t) = c.oracle().expect("every schedule ran");
        let t = c.time(pick).expect("every schedule ran");
        let kv_bytes = c.shape.features().map(|f| f.kv_bytes).unwrap_or(0.0);
        rows.push(AttentionEvalRow {
            spec: c.spec.clone(),
            group: group_of(&c.shape),
            unseen: model.training.held_out_groups.contains(&group_of(&c.shape)),
            selected: pick.to_string(),
            oracle: oracle.to_string(),
            selected_us: t * 1e6,
            oracle_us: oracle_t * 1e6,
            fa2_us: c.time(FA2).map(|t| t * 1e6),
            fa2_splits: c.fa2_splits,
            single: single.clone(),
            single_us: c.time(&single).expect("every schedule ran") * 1e6,
            baselines_us: baselines
                .iter()
                .filter_map(|(b, by)| Some((b.clone(), by.get(&c.spec)? * 1e6)))
                .collect(),
            selected_gbs: kv_bytes / t / 1e9,
            kv_bytes,
        });
    }
    Ok(rows)
}

/// A summary of rows: (label, shapes, selected / oracle geomean, worst, share picking the
/// fastest, x FA2 rule, x best single, x SDPA geomean and least, long-KV GB/s median).
#[derive(Debug, Clone, Serialize)]
pub struct AttentionSummary {
    pub group: String,
    pub shapes: usize,
    pub oracle_ratio: f64,
    pub worst: f64,
    pub picks_fastest: f64,
    pub vs_fa2: f64,
    pub vs_single: f64,
    /// Per outside baseline: its time / selected time, geomean and least, over the shapes it ran.
    pub vs_baselines: BTreeMap<String, BaselineRatio>,
}

/// A baseline's time over augur's selected time on the shapes where it ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BaselineRatio {
    pub shapes: usize,
    pub geomean: f64,
    pub least: f64,
}

fn summary_of(label: &str, rows: &[&AttentionEvalRow]) -> AttentionSummary {
    let mut ratios: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in rows {
        for (b, t) in &r.baselines_us {
            ratios.entry(b.clone()).or_default().push(t / r.selected_us);
        }
    }
    AttentionSummary {
        group: label.to_string(),
        shapes: rows.len(),
        oracle_ratio: geomean(rows.iter().map(|r| r.oracle_us / r.selected_us)),
        worst: rows
            .iter()
            .map(|r| r.oracle_us / r.selected_us)
            .fold(f64::INFINITY, f64::min),
        picks_fastest: rows.iter().filter(|r| r.selected == r.oracle).count() as f64
            / rows.len().max(1) as f64,
        vs_fa2: geomean(rows.iter().filter_map(|r| Some(r.fa2_us? / r.selected_us))),
        vs_single: geomean(rows.iter().map(|r| r.single_us / r.selected_us)),
        vs_baselines: ratios
            .into_iter()
            .map(|(b, v)| {
                let r = BaselineRatio {
                    shapes: v.len(),
                    geomean: geomean(v.iter().copied()),
                    least: v.iter().copied().fold(f64::INFINITY, f64::min),
                };
                (b, r)
            })
            .collect(),
    }
}

/// Summaries: all shapes, the held-out groups, and per head configuration.
pub fn summarize(rows: &[AttentionEvalRow]) -> Vec<AttentionSummary> {
    let all: Vec<&AttentionEvalRow> = rows.iter().collect();
    let mut out = vec![summary_of("all", &all)];
    let unseen: Vec<&AttentionEvalRow> = rows.iter().filter(|r| r.unseen).collect();
    if !unseen.is_empty() {
        out.push(summary_of("held-out groups", &unseen));
    }
    let mut configs: Vec<String> = rows
        .iter()
        .map(|r| {
            r.group
                .rsplit_once(" x")
                .map_or(r.group.clone(), |(c, _)| c.to_string())
        })
        .collect();
    configs.sort();
    configs.dedup();
    for cfg in configs {
        let mine: Vec<&AttentionEvalRow> = rows
            .iter()
            .filter(|r| r.group.starts_with(&format!("{cfg} x")))
            .collect();
        out.push(summary_of(&cfg, &mine));
    }
    out
}

/// The summary as a text table; `timing` names the mode of every figure in it.
pub fn summary_table(
    model: &AttentionModel,
    rows: &[AttentionEvalRow],
    s: &[AttentionSummary],
    timing: &str,
) -> String {
    let single = rows.first().map_or("-", |r| r.single.as_str());
    let names = baseline_names(rows);
    let mut out = format!(
        "attention model for {}, {timing} timing (every figure, augur's and the baselines'): selected vs per-shape oracle, FlashAttention-2's split rule (on augur's split-KV kernel), the best single schedule ({single}){}\n",
        model.device,
        if names.is_empty() {
            String::new()
        } else {
            format!(" and the outside baselines ({}: their time / selected time, geomean and least)", names.join(", "))
        }
    );
    let _ = write!(
        out,
        "{:<22} {:>6} {:>7} {:>6} {:>5} {:>7} {:>8}",
        "group", "shapes", "oracle", "worst", "acc", "x fa2", "x single"
    );
    for b in &names {
        let _ = write!(out, " {:>13} {:>7}", format!("x {b}"), "least");
    }
    out.push('\n');
    for r in s {
        let _ = write!(
            out,
            "{:<22} {:>6} {:>7.4} {:>6.3} {:>4.0}% {:>7.3} {:>8.3}",
            r.group,
            r.shapes,
            r.oracle_ratio,
            r.worst,
            r.picks_fastest * 100.0,
            r.vs_fa2,
            r.vs_single,
        );
        for b in &names {
            match r.vs_baselines.get(b) {
                Some(v) => {
                    let _ = write!(out, " {:>13.3} {:>7.3}", v.geomean, v.least);
                }
                None => {
                    let _ = write!(out, " {:>13} {:>7}", "-", "-");
                }
            }
        }
        out.push('\n');
    }
    out
}

/// The baselines named in any row, sorted.
fn baseline_names(rows: &[AttentionEvalRow]) -> Vec<String> {
    let mut n: Vec<String> = rows
        .iter()
        .flat_map(|r| r.baselines_us.keys().cloned())
        .collect();
    n.sort();
    n.dedup();
    n
}

/// Every shape as CSV (one `<baseline>_us` column per baseline given).
pub fn rows_csv(rows: &[AttentionEvalRow]) -> String {
    let names = baseline_names(rows);
    let mut out = String::from(
        "shape,group,unseen,selected,oracle,selected_us,oracle_us,fa2_us,fa2_splits,single,single_us",
    );
    for b in &names {
        let _ = write!(out, ",{b}_us");
    }
    out.push_str(",selected_gbs\n");
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    for r in rows {
        let _ = write!(
            out,
            "\"{}\",{},{},{},{},{:.3},{:.3},{},{},{},{:.3}",
            r.spec,
            r.group,
            r.unseen,
            r.selected,
            r.oracle,
            r.selected_us,
            r.oracle_us,
            opt(r.fa2_us),
            r.fa2_splits,
            r.single,
            r.single_us,
        );
        for b in &names {
            let _ = write!(out, ",{}", opt(r.baselines_us.get(b).copied()));
        }
        let _ = writeln!(out, ",{:.1}", r.selected_gbs);
    }
    out
}

/// Outside baselines' seconds per call: by baseline name, then by shape spec.
pub type Baselines = BTreeMap<String, BTreeMap<String, f64>>;

/// The columns of `bench/attention_baselines.py`'s CSV.
pub const BASELINE_COLUMNS: [&str; 9] = [
    "shape",
    "baseline",
    "median_s",
    "latency_s",
    "graph_s",
    "batch",
    "live_kv_bytes",
    "status",
    "check_max_error",
];

/// The timing modes an attention evaluation can use: `throughput` (the runs' `median_s`, the
/// label figure), `graph` and `latency`.
pub const TIMINGS: [&str; 3] = ["throughput", "graph", "latency"];

fn check_timing(timing: &str) -> Result<(), ModelError> {
    if TIMINGS.contains(&timing) {
        Ok(())
    } else {
        Err(ModelError::Train(format!(
            "timing `{timing}`: expected one of {}",
            TIMINGS.join(", ")
        )))
    }
}

/// Baseline times from `bench/attention_baselines.py`'s CSV in one timing mode (`throughput`:
/// `median_s`; `graph`; `latency`); rows not `ok`, or without that mode's figure, left out.
/// Errors name the file and line.
pub fn read_baselines(path: &Path, timing: &str) -> Result<Baselines, ModelError> {
    check_timing(timing)?;
    let expected: Vec<String> = BASELINE_COLUMNS.iter().map(|s| s.to_string()).collect();
    let mut rdr = open_csv(path, &expected, |col, found, want| {
        format!(
            "not a baselines CSV of bench/attention_baselines.py at column {col}: found \
             `{found}`, expected `{want}` (SDPA-only files of the former \
             bench/attention_sdpa.py timed one eager call each: re-run the baselines script)"
        )
    })?;
    let col = match timing {
        "throughput" => 2,
        "latency" => 3,
        _ => 4,
    };
    let mut out = Baselines::new();
    for rec in crate::runs::records(path, &mut rdr) {
        let (rec, line) = rec?;
        let get = |i: usize| rec.get(i).unwrap_or("");
        if get(7) != "ok" || get(col).is_empty() {
            continue;
        }
        let t: f64 = get(col).parse().map_err(|_| {
            bad(
                path,
                line,
                format!("column `{}`: `{}` is not a number", expected[col], get(col)),
            )
        })?;
        if !(t > 0.0 && t.is_finite()) {
            return Err(bad(
                path,
                line,
                format!("{} {t} must be finite and > 0", expected[col]),
            ));
        }
        out.entry(get(1).to_string())
            .or_default()
            .insert(get(0).to_string(), t);
    }
    Ok(out)
}

impl AttentionRuns {
    /// The runs with `median_s` taken from another timing mode (`graph`: the graph replay,
    /// None where not captured; `latency`: one launch from an idle stream; `throughput`: as
    /// they are), so that evaluation compares every side in one mode.
    pub fn in_timing(&self, timing: &str) -> Result<AttentionRuns, ModelError> {
        check_timing(timing)?;
        let mut out = self.clone();
        for r in &mut out.runs {
            r.median_s = match timing {
                "graph" => r.median_s.and(r.graph_s),
                "latency" => r.median_s.and(r.latency_s),
                _ => r.median_s,
            };
        }
        Ok(out)
    }
}
