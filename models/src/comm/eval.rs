//! Evaluation against NCCL alone, fixed size cutoffs and the per-size oracle; tables and a plot.

use super::*;

/// One message evaluated.
#[derive(Debug, Clone, Serialize)]
pub struct CommEvalRow {
    pub collective: String,
    pub dtype: String,
    pub world: usize,
    pub bytes: usize,
    /// Whether the size was kept out of training.
    pub unseen: bool,
    pub selected: String,
    pub selected_s: f64,
    pub oracle: String,
    pub oracle_s: f64,
    pub nccl_s: Option<f64>,
    /// The fixed-cutoff rule's pattern and time.
    pub rule: String,
    pub rule_s: Option<f64>,
    /// Bus bandwidth (GB/s, nccl-tests) of every pattern measured, in the runs' order.
    pub busbw: Vec<(String, Option<f64>)>,
}

/// Summary of a group of rows.
#[derive(Debug, Clone, Serialize)]
pub struct CommSummary {
    pub group: String,
    pub messages: usize,
    /// Geomean and least of oracle / selected.
    pub oracle_ratio: f64,
    pub worst: f64,
    /// Share of messages whose pick is the fastest.
    pub accuracy: f64,
    /// Geomean of NCCL / selected and rule / selected (speedups over each).
    pub vs_nccl: Option<f64>,
    pub vs_rule: Option<f64>,
    /// Messages <= 64 KiB: geomean and worst of selected / NCCL latency.
    pub small_latency_vs_nccl: Option<(f64, f64)>,
    /// Messages >= 64 MiB: least selected busbw / NCCL busbw.
    pub large_busbw_vs_nccl: Option<f64>,
}

/// The fixed cutoffs vLLM and TensorRT-LLM use for all-reduce: one-shot up to 256 KiB, two-shot
/// up to 4 MiB, NCCL above. For all-gather (they have none) the same sizes with pull as the
/// one-shot and push as the two-shot analogue.
pub fn cutoff_rule(c: Collective, bytes: usize) -> &'static str {
    match (c, bytes) {
        (Collective::AllReduce, b) if b <= 256 << 10 => "one-shot",
        (Collective::AllReduce, b) if b <= 4 << 20 => "two-shot",
        (Collective::AllGather, b) if b <= 256 << 10 => "pull",
        (Collective::AllGather, b) if b <= 4 << 20 => "push",
        _ => "nccl",
    }
}

/// Evaluate a comm model on runs (every complete message, see [`complete_messages`]; `unseen`
/// marks sizes kept out of training).
pub fn evaluate(model: &CommModel, runs: &CommRuns) -> Result<Vec<CommEvalRow>, ModelError> {
    let holdout = model.training.holdout == "between";
    let mut rows = Vec::new();
    let (msgs, _) = complete_messages(runs.messages());
    for m in msgs {
        let Some((oracle, oracle_s)) = m.oracle() else {
            continue;
        };
        let Some(selected) = model.choose(&m.shape) else {
            continue;
        };
        let worst = m.runs.iter().filter_map(|r| r.1).fold(f64::NAN, f64::max);
        // A pick that failed or was not measured costs twice the slowest, as in training.
        let cost = |p: &str| m.time(p).unwrap_or(2.0 * worst);
        let rule = cutoff_rule(m.shape.collective, m.shape.bytes);
        let bus = |t: f64| {
            m.shape.bytes as f64 / t / 1e9 * m.shape.collective.bus_factor(m.shape.world_size)
        };
        rows.push(CommEvalRow {
            collective: collective_name(m.shape.collective).into(),
            dtype: dtype_name(m.shape.dtype).into(),
            world: m.shape.world_size,
            bytes: m.shape.bytes,
            unseen: held_out(m.shape.bytes, holdout),
            selected: selected.to_string(),
            selected_s: cost(selected),
            oracle: oracle.to_string(),
            oracle_s,
            nccl_s: m.time("nccl"),
            rule: rule.into(),
            rule_s: m.time(rule),
            busbw: m
                .runs
                .iter()
                .map(|(p, t)| (p.clone(), t.map(bus)))
                .collect(),
        });
    }
    if rows.is_empty() {
        return Err(ModelError::Eval(
            "no message of the runs has a tree in the model and a measured pattern".into(),
        ));
    }
    Ok(rows)
}

/// Summaries: per (collective, world), and over everything, for all / unseen sizes.
pub fn summarize(rows: &[CommEvalRow]) -> Vec<CommSummary> {
    let mut groups: Vec<(String, Vec<&CommEvalRow>)> = Vec::new();
    let mut keys: Vec<(String, usize)> = rows
        .iter()
        .map(|r| (r.collective.clone(), r.world))
        .collect();
    keys.sort();
    keys.dedup();
    for (c, w) in &keys {
        groups.push((
            format!("{c}, {w} GPUs"),
            rows.iter()
                .filter(|r| &r.collective == c && r.world == *w)
                .collect(),
        ));
    }
    groups.push(("all".into(), rows.iter().collect()));
    groups.push((
        "all, unseen sizes".into(),
        rows.iter().filter(|r| r.unseen).collect(),
    ));
    groups
        .into_iter()
        .filter(|(_, g)| !g.is_empty())
        .map(|(group, g)| {
            let gm = |v: Vec<f64>| (!v.is_empty()).then(|| crate::train::geomean(v.into_iter()));
            let small: Vec<f64> = g
                .iter()
                .filter(|r| r.bytes <= 64 << 10)
                .filter_map(|r| r.nccl_s.map(|n| r.selected_s / n))
                .collect();
            let large: Vec<f64> = g
                .iter()
                .filter(|r| r.bytes >= 64 << 20)
                .filter_map(|r| r.nccl_s.map(|n| n / r.selected_s))
                .collect();
            CommSummary {
                messages: g.len(),
                oracle_ratio: crate::train::geomean(g.iter().map(|r| r.oracle_s / r.selected_s)),
                worst: g
                    .iter()
                    .map(|r| r.oracle_s / r.selected_s)
                    .fold(f64::INFINITY, f64::min),
                accuracy: g.iter().filter(|r| r.selected_s <= r.oracle_s).count() as f64
                    / g.len() as f64,
                vs_nccl: gm(g
                    .iter()
                    .filter_map(|r| r.nccl_s.map(|n| n / r.selected_s))
                    .collect()),
                vs_rule: gm(g
                    .iter()
                    .filter_map(|r| r.rule_s.map(|n| n / r.selected_s))
                    .collect()),
                small_latency_vs_nccl: gm(small.clone())
                    .map(|m| (m, small.iter().copied().fold(f64::NEG_INFINITY, f64::max))),
                large_busbw_vs_nccl: (!large.is_empty())
                    .then(|| large.iter().copied().fold(f64::INFINITY, f64::min)),
                group,
            }
        })
        .collect()
}

/// The summary table as text.
pub fn summary_table(model: &CommModel, s: &[CommSummary]) -> String {
    let mut out = format!(
        "comm model for {}: selected vs per-size oracle, NCCL alone, fixed cutoffs (one-shot <= 256 KiB, two-shot <= 4 MiB, else NCCL)\n",
        model.device
    );
    let _ = writeln!(
        out,
        "{:<26} {:>5} {:>8} {:>7} {:>6} {:>9} {:>9} {:>16} {:>13}",
        "group",
        "msgs",
        "oracle",
        "worst",
        "acc",
        "x NCCL",
        "x rule",
        "<=64K lat/NCCL",
        ">=64M bus/NCCL"
    );
    let o = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    for g in s {
        let _ = writeln!(
            out,
            "{:<26} {:>5} {:>8.4} {:>7.3} {:>5.0}% {:>9} {:>9} {:>16} {:>13}",
            g.group,
            g.messages,
            g.oracle_ratio,
            g.worst,
            g.accuracy * 100.0,
            o(g.vs_nccl),
            o(g.vs_rule),
            g.small_latency_vs_nccl
                .map_or("-".into(), |(m, w)| format!("{m:.2} (max {w:.2})")),
            o(g.large_busbw_vs_nccl)
        );
    }
    out
}

/// Every evaluated message as CSV: bus bandwidth per pattern, the pick, the oracle, the rule.
pub fn rows_csv(rows: &[CommEvalRow]) -> String {
    let mut patterns: Vec<String> = Vec::new();
    for r in rows {
        for (p, _) in &r.busbw {
            if !patterns.contains(p) {
                patterns.push(p.clone());
            }
        }
    }
    let mut out = String::from("collective,dtype,world,bytes,unseen,selected,oracle,rule,selected_us,oracle_us,nccl_us,rule_us");
    for p in &patterns {
        let _ = write!(out, ",busbw_{p}");
    }
    out.push('\n');
    let us = |v: Option<f64>| v.map_or(String::new(), |v| format!("{:.3}", v * 1e6));
    for r in rows {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            r.collective,
            r.dtype,
            r.world,
            r.bytes,
            r.unseen,
            r.selected,
            r.oracle,
            r.rule,
            us(Some(r.selected_s)),
            us(Some(r.oracle_s)),
            us(r.nccl_s),
            us(r.rule_s)
        );
        for p in &patterns {
            let v = r.busbw.iter().find(|(q, _)| q == p).and_then(|(_, b)| *b);
            let _ = write!(out, ",{}", v.map_or(String::new(), |v| format!("{v:.2}")));
        }
        out.push('\n');
    }
    out
}

/// Bus bandwidth against message size, one panel per (collective, GPUs) for `dtype`, a line per
/// pattern, the selected pattern's points ringed.
pub fn plot_busbw(
    rows: &[CommEvalRow],
    dtype: &str,
    title: &str,
    path: &Path,
) -> Result<(), ModelError> {
    use plotters::prelude::*;
    let err = |e: String| ModelError::Io {
        path: path.to_path_buf(),
        msg: e,
    };
    let rows: Vec<&CommEvalRow> = rows.iter().filter(|r| r.dtype == dtype).collect();
    let mut panels: Vec<(String, usize)> = rows
        .iter()
        .map(|r| (r.collective.clone(), r.world))
        .collect();
    panels.sort();
    panels.dedup();
    if panels.is_empty() {
        return Err(ModelError::Eval(format!("no {dtype} messages to plot")));
    }
    let tmp = path.with_extension("svg.tmp");
    {
        let cols = 2usize;
        let nrows = panels.len().div_ceil(cols);
        let root = SVGBackend::new(&tmp, (1100, 420 * nrows as u32 + 40)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let root = root
            .titled(title, ("sans-serif", 20))
            .map_err(|e| err(e.to_string()))?;
        let areas = root.split_evenly((nrows, cols));
        let colours = [
            BLACK,
            RED,
            BLUE,
            GREEN,
            MAGENTA,
            CYAN,
            RGBColor(255, 140, 0),
        ];
        for ((c, w), area) in panels.iter().zip(areas) {
            let mine: Vec<&&CommEvalRow> = rows
                .iter()
                .filter(|r| &r.collective == c && r.world == *w)
                .collect();
            let mut patterns: Vec<String> = Vec::new();
            for r in &mine {
                for (p, _) in &r.busbw {
                    if !patterns.contains(p) {
                        patterns.push(p.clone());
                    }
                }
            }
            let xmin = mine.iter().map(|r| r.bytes).min().unwrap_or(1).max(1) as f64;
            let xmax = mine.iter().map(|r| r.bytes).max().unwrap_or(2) as f64;
            let ymax = mine
                .iter()
                .flat_map(|r| r.busbw.iter().filter_map(|b| b.1))
                .fold(1.0f64, f64::max)
                * 1.1;
            let mut chart = ChartBuilder::on(&area)
                .caption(
                    format!("{c}, {w} GPUs, {dtype}: bus bandwidth"),
                    ("sans-serif", 16),
                )
                .margin(10)
                .x_label_area_size(35)
                .y_label_area_size(50)
                .build_cartesian_2d((xmin..xmax * 1.2).log_scale(), 0f64..ymax)
                .map_err(|e| err(e.to_string()))?;
            chart
                .configure_mesh()
                .x_desc("bytes")
                .y_desc("busbw GB/s")
                .x_label_formatter(&|v| crate::export::readable(*v, "bytes"))
                .draw()
                .map_err(|e| err(e.to_string()))?;
            for (i, p) in patterns.iter().enumerate() {
                let col = colours[i % colours.len()];
                let pts: Vec<(f64, f64)> = mine
                    .iter()
                    .filter_map(|r| {
                        r.busbw
                            .iter()
                            .find(|(q, _)| q == p)
                            .and_then(|(_, b)| *b)
                            .map(|b| (r.bytes as f64, b))
                    })
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts, col.stroke_width(2)))
                    .map_err(|e| err(e.to_string()))?
                    .label(p.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 15, y)], col.stroke_width(2))
                    });
            }
            let sel: Vec<(f64, f64)> = mine
                .iter()
                .filter_map(|r| {
                    r.busbw
                        .iter()
                        .find(|(q, _)| *q == r.selected)
                        .and_then(|(_, b)| *b)
                        .map(|b| (r.bytes as f64, b))
                })
                .collect();
            chart
                .draw_series(
                    sel.into_iter()
                        .map(|(x, y)| Circle::new((x, y), 5, BLACK.stroke_width(1))),
                )
                .map_err(|e| err(e.to_string()))?
                .label("selected")
                .legend(|(x, y)| Circle::new((x + 7, y), 5, BLACK.stroke_width(1)));
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.8))
                .draw()
                .map_err(|e| err(e.to_string()))?;
        }
        root.present().map_err(|e| err(e.to_string()))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))
}
