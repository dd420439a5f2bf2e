//! The overlap selector held out by weight (N, K), and the reports of its picks.

use std::fmt::Write as _;

use augur_features::overlap::{OverlapOp, OverlapShape};
use serde::Serialize;

use crate::train::geomean;
use crate::ModelError;

use super::*;

/// One held-out layer: what the model trained without its weight picked, against the oracle,
/// bulk (NCCL then cuBLASLt) and the perfect overlap.
#[derive(Debug, Clone, Serialize)]
pub struct OverlapEvalRow {
    pub shape: OverlapShape,
    pub selected: String,
    pub selected_s: f64,
    pub oracle: String,
    pub oracle_s: f64,
    pub bulk_s: Option<f64>,
    pub bound_s: Option<f64>,
}

/// Leave one weight out: for every weight (N, K), a model trained on the layers of the other
/// weights picks for this weight's layers. A pick the layer did not run (or failed) costs
/// twice its slowest pattern.
pub fn evaluate_held_out(
    params: &CheckedOverlapTrainParams,
    layers: &[Layer],
) -> Result<Vec<OverlapEvalRow>, ModelError> {
    let mut weights: Vec<u64> = layers.iter().map(Layer::group).collect();
    weights.sort_unstable();
    weights.dedup();
    if weights.len() < 2 {
        return Err(ModelError::Eval(
            "one weight (N, K) only: nothing to hold out".into(),
        ));
    }
    let mut rows = Vec::new();
    for w in weights {
        let train: Vec<Layer> = layers.iter().filter(|l| l.group() != w).cloned().collect();
        let model = params.fit(&train, "held-out")?;
        rows.extend(
            layers
                .iter()
                .filter(|l| l.group() == w)
                .filter_map(|l| eval_row(&model, l)),
        );
    }
    Ok(rows)
}

/// `model`'s pick for layer `l` against the layer's oracle, bulk and bound (None: no pattern of
/// the layer passed its check). A pick the layer did not run (or whose check failed) costs twice
/// its slowest pattern.
fn eval_row(model: &OverlapModel, l: &Layer) -> Option<OverlapEvalRow> {
    let (oracle, oracle_s) = l.oracle()?;
    let worst = l.times.iter().map(|t| t.1).fold(0.0, f64::max);
    let selected = model.choose(&l.shape).unwrap_or("bulk").to_string();
    Some(OverlapEvalRow {
        shape: l.shape.clone(),
        selected_s: l.time(&selected).unwrap_or(2.0 * worst),
        selected,
        oracle: oracle.into(),
        oracle_s,
        bulk_s: l.time("bulk"),
        bound_s: l.bound(),
    })
}

/// A trained model's picks on measured layers (`augur eval --model <overlap model> RUNS`): every
/// layer (`unseen` false) or only those whose weight (N, K) the model was not trained on (a
/// model that does not list its weights counts every layer as seen). Returns the rows and how
/// many layers were left out as seen. A pick the layer did not run (or whose check failed)
/// costs twice its slowest pattern, as in [`evaluate_held_out`].
pub fn evaluate_model(
    model: &OverlapModel,
    layers: &[Layer],
    unseen: bool,
) -> (Vec<OverlapEvalRow>, usize) {
    let trained = |l: &Layer| {
        model.training.weight_list.is_empty()
            || model
                .training
                .weight_list
                .binary_search(&[l.shape.n, l.shape.k])
                .is_ok()
    };
    let mut rows = Vec::new();
    let mut seen = 0;
    for l in layers {
        if unseen && trained(l) {
            seen += 1;
            continue;
        }
        rows.extend(eval_row(model, l));
    }
    (rows, seen)
}

/// Every evaluated layer as CSV: its shape, the pick, the oracle, bulk and the bound in
/// microseconds, selected / oracle and bulk / selected.
pub fn rows_csv(rows: &[OverlapEvalRow]) -> String {
    let mut out = String::from(
        "op,gpus,dtype,m,n,k,selected,selected_us,oracle,oracle_us,bulk_us,bound_us,\
         selected_over_oracle,bulk_over_selected\n",
    );
    let us = |t: Option<f64>| t.map_or(String::new(), |t| format!("{:.3}", t * 1e6));
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{:.4},{}",
            r.shape.op.name(),
            r.shape.world_size,
            crate::comm::dtype_name(r.shape.dtype),
            r.shape.m,
            r.shape.n,
            r.shape.k,
            r.selected,
            us(Some(r.selected_s)),
            r.oracle,
            us(Some(r.oracle_s)),
            us(r.bulk_s),
            us(r.bound_s),
            r.oracle_s / r.selected_s,
            r.bulk_s
                .map_or(String::new(), |b| format!("{:.4}", b / r.selected_s)),
        );
    }
    out
}

/// The summary of held-out rows per GPU count, each operation apart (and by M bucket), `both`
/// (the all-gather and the reduce-scatter together: the two operations, whose targets
/// it tracks) and, with the all-reduce too, `all`:
/// layers, selected / oracle (geomean, worst), bulk / selected (geomean, least), the bound's
/// gain over bulk (geomean), and the share of that gain the picks took where it is >= 1.2x
/// (mean; layers counted).
pub fn summary(rows: &[OverlapEvalRow]) -> String {
    let mut worlds: Vec<usize> = rows.iter().map(|r| r.shape.world_size).collect();
    worlds.sort_unstable();
    worlds.dedup();
    let mut out = String::from(
        "operation             GPUs  layers  sel/oracle  worst  vs bulk  least  bound gain  share (bound >= 1.2x)\n",
    );
    for w in worlds {
        let mut ops: Vec<OverlapOp> = rows
            .iter()
            .filter(|r| r.shape.world_size == w)
            .map(|r| r.shape.op)
            .collect();
        ops.sort_by_key(|o| o.name());
        ops.dedup();
        // (name, the operations it covers, whether it is one operation's: then by M bucket too).
        let mut groups: Vec<(String, Vec<OverlapOp>, bool)> = ops
            .iter()
            .map(|o| (o.name().to_string(), vec![*o], true))
            .collect();
        let pair = [OverlapOp::AllGatherGemm, OverlapOp::GemmReduceScatter];
        if pair.iter().all(|o| ops.contains(o)) {
            groups.push(("both".into(), pair.to_vec(), false));
        }
        if ops.len() > 2 {
            groups.push(("all".into(), ops.clone(), false));
        }
        for (name, covered, one) in groups {
            let mine: Vec<&OverlapEvalRow> = rows
                .iter()
                .filter(|r| r.shape.world_size == w && covered.contains(&r.shape.op))
                .collect();
            summary_line(&mut out, &name, w, &mine);
            if !one {
                continue;
            }
            // Every M bucket of the operation as well: where overlap cannot pay (small M) and
            // where it does.
            for (bucket, lo, hi) in M_BUCKETS {
                let some: Vec<&OverlapEvalRow> = mine
                    .iter()
                    .copied()
                    .filter(|r| (lo..hi).contains(&r.shape.m))
                    .collect();
                if !some.is_empty() {
                    summary_line(&mut out, &format!("  {bucket}"), w, &some);
                }
            }
        }
    }
    out
}

/// The M buckets of the held-out summary: below 256 rows, 256 to 2047, 2048 and more.
const M_BUCKETS: [(&str, usize, usize); 3] = [
    ("M < 256", 0, 256),
    ("256 <= M < 2048", 256, 2048),
    ("M >= 2048", 2048, usize::MAX),
];

fn summary_line(out: &mut String, name: &str, w: usize, mine: &[&OverlapEvalRow]) {
    let ratio = |r: &&OverlapEvalRow| r.oracle_s / r.selected_s;
    let vs = |r: &&OverlapEvalRow| r.bulk_s.map(|b| b / r.selected_s);
    let gains: Vec<f64> = mine.iter().filter_map(vs).collect();
    let bounds: Vec<f64> = mine
        .iter()
        .filter_map(|r| Some(r.bulk_s? / r.bound_s?))
        .collect();
    let shares: Vec<f64> = mine
        .iter()
        .filter_map(|r| {
            let (b, o) = (r.bulk_s?, r.bound_s?);
            (b / o >= 1.2).then(|| (b - r.selected_s) / (b - o))
        })
        .collect();
    let _ = writeln!(
        out,
        "{name:<20}  {w:>4}  {:>6}  {:>10.3}  {:>5.3}  {:>7.3}  {:>5.3}  {:>10.3}  {:.2} ({} layers)",
        mine.len(),
        geomean(mine.iter().map(ratio)),
        mine.iter().map(ratio).fold(f64::INFINITY, f64::min),
        geomean(gains.iter().copied()),
        gains.iter().copied().fold(f64::INFINITY, f64::min),
        geomean(bounds.iter().copied()),
        if shares.is_empty() {
            f64::NAN
        } else {
            shares.iter().sum::<f64>() / shares.len() as f64
        },
        shares.len()
    );
}
