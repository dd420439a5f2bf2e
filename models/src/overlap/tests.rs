use std::path::{Path, PathBuf};

use augur_features::attention::Dtype;
use augur_features::message::LinkType;

use super::*;
use crate::{AnyModel, ExportFormat, ModelFile};

/// A CSV of `augur overlap tp`'s first header: two weights, two M, 2 GPUs; `push:1` wins at
/// the larger M, `bulk` at the smaller.
fn csv(dir: &Path) -> PathBuf {
    grid(dir, "tp.csv", "all-gather+gemm", "push:1")
}

/// [`csv`]'s layers as `op`'s, named `name` in `dir`, with `fast` in `push:1`'s place (and the
/// failed `pull:1` rows of the all-gather).
fn grid(dir: &Path, name: &str, op: &str, fast: &str) -> PathBuf {
    let mut t = String::from(
        "device,gpus,op,dtype,m,n,k,pattern,passed,max_err_over_bound,us,bulk_over_pattern,\
         share_of_bound\n",
    );
    for (n, k) in [(6144, 4096), (8192, 8192), (28672, 4096)] {
        for m in [512, 16384] {
            let big = m > 1000;
            for (p, us) in [
                ("gemm", 50.0),
                ("comm", 60.0),
                ("bulk", if big { 300.0 } else { 100.0 }),
                (fast, if big { 200.0 } else { 150.0 }),
            ] {
                let _ = writeln!(t, "GPU X,2,{op},bf16,{m},{n},{k},{p},true,0.5,{us},,");
            }
            // A failed pattern is left out.
            if op == "all-gather+gemm" {
                let _ = writeln!(t, "GPU X,2,{op},bf16,{m},{n},{k},pull:1,false,9,1,,");
            }
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, t).unwrap();
    path
}

#[test]
fn trains_on_tp_runs_and_picks_by_shape_held_out() {
    let dir = std::env::temp_dir().join(format!("augur-overlap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = csv(&dir);
    assert!(is_overlap_csv(&path));
    let layers = read_layers(&[path], 132).unwrap();
    assert_eq!(layers.len(), 6);
    assert!(layers.iter().all(|l| l.time("pull:1").is_none()));
    assert_eq!(layers[0].bound(), Some(60e-6));
    let params = OverlapTrainParams::default().check().unwrap();
    let model = params.fit(&layers, "test").unwrap();
    let shape = |m| OverlapShape {
        op: OverlapOp::AllGatherGemm,
        m,
        n: 10240,
        k: 8192,
        dtype: Dtype::Bf16,
        world_size: 2,
        link: LinkType::Nvlink,
        sms: 132,
    };
    assert_eq!(model.choose(&shape(16384)), Some("push:1"));
    assert_eq!(model.choose(&shape(256)), Some("bulk"));
    assert!(!model.path(&shape(256)).is_empty());
    assert!(model.export_text().contains("push:1"));
    let json = serde_json::to_string(&model).unwrap();
    let back: OverlapModel = serde_json::from_str(&json).unwrap();
    back.validate().unwrap();
    let file = dir.join("model.json");
    model.write(&file).unwrap();
    assert_eq!(OverlapModel::read(&file).unwrap(), model);
    // Any model file reader takes it; its three exports name the picks.
    let any = AnyModel::read(&file).unwrap();
    assert_eq!(any.domain(), "overlap");
    for f in [ExportFormat::Text, ExportFormat::Dot, ExportFormat::Rust] {
        let e = any.export(f);
        assert!(e.contains("push:1") || e.contains("Push1"), "{f:?}: {e}");
    }
    let rust = any.export(ExportFormat::Rust);
    assert!(
        rust.contains("pub fn select(f: &OverlapFeatures)") && rust.contains("f.all_gather == 1.0")
    );
    assert!(any
        .export(ExportFormat::Dot)
        .starts_with("digraph augur_overlap"));
    // Held out by weight, every layer is picked right: selected / oracle 1.
    let rows = evaluate_held_out(&params, &layers).unwrap();
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r.selected == r.oracle), "{rows:?}");
    let table = summary(&rows);
    assert!(table.contains("1.000"));
    // Each M bucket with layers gets its line (M 512 and 16384 here), the empty one none.
    let bucket = |b: &str| table.lines().find(|l| l.starts_with(&format!("  {b} ")));
    let (mid, big) = (bucket("256 <= M < 2048"), bucket("M >= 2048"));
    assert!(mid.is_some_and(|l| l.contains(" 3 ")), "{table}");
    assert!(big.is_some_and(|l| l.contains(" 3 ")), "{table}");
    assert!(bucket("M < 256").is_none(), "{table}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_trained_model_is_evaluated_on_the_weights_it_did_not_see() {
    let dir = std::env::temp_dir().join(format!("augur-overlap-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let layers = read_layers(&[csv(&dir)], 132).unwrap();
    // Trained without N 28672: its two layers are the unseen ones.
    let train: Vec<Layer> = layers
        .iter()
        .filter(|l| l.shape.n != 28672)
        .cloned()
        .collect();
    let params = OverlapTrainParams::default().check().unwrap();
    let model = params.fit(&train, "test").unwrap();
    assert_eq!(model.training.weight_list, [[6144, 4096], [8192, 8192]]);
    let (rows, seen) = evaluate_model(&model, &layers, true);
    assert_eq!((rows.len(), seen), (2, 4));
    assert!(rows.iter().all(|r| r.shape.n == 28672), "{rows:?}");
    assert!(rows.iter().all(|r| r.selected == r.oracle), "{rows:?}");
    let (all, seen) = evaluate_model(&model, &layers, false);
    assert_eq!((all.len(), seen), (6, 0));
    // One CSV line per layer: the pick, its time, and bulk over it (push:1 at M 16384:
    // 300 / 200 us).
    let text = rows_csv(&all);
    assert_eq!(text.lines().count(), 7);
    assert!(
        text.lines().any(|l| l.starts_with(
            "all-gather+gemm,2,bf16,16384,28672,4096,push:1,200.000,push:1,200.000,300.000,"
        ) && l.ends_with(",1.0000,1.5000")),
        "{text}"
    );
    // A model file from before the weights were listed reads, and counts every layer seen.
    let mut json: serde_json::Value = serde_json::to_value(&model).unwrap();
    json["training"]
        .as_object_mut()
        .unwrap()
        .remove("weight_list");
    // ... and one from before the split criterion was recorded: its trees' were Gini's.
    assert!(model.trees.iter().all(|t| t.criterion == Criterion::Regret));
    assert!(model
        .export_text()
        .contains("and regret splits by cross-validation"));
    for t in json["trees"].as_array_mut().unwrap() {
        t.as_object_mut().unwrap().remove("criterion");
    }
    let old: OverlapModel = serde_json::from_value(json).unwrap();
    assert!(old.training.weight_list.is_empty());
    assert!(old.trees.iter().all(|t| t.criterion == Criterion::Gini));
    assert!(old
        .export_text()
        .contains("and gini splits by cross-validation"));
    assert_eq!(evaluate_model(&old, &layers, true).1, 6);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_bulk_margin_sends_near_ties_to_bulk() {
    // At the small M, push:1 beats bulk by 3% on five weights and loses by 1.5x on the
    // sixth; at the large M it wins by 1.5x on every weight.
    let row = |m: u64, push: f64, g: u64| Row {
        x: vec![m as f64],
        times: vec![Some(100.0), Some(push)],
        group: g,
    };
    let mut rows = Vec::new();
    for g in 0..6u64 {
        rows.push(row(64, if g < 5 { 97.0 } else { 150.0 }, g));
        rows.push(row(16384, 66.0, g));
    }
    let push_labels = |m: f64| {
        labelled(&rows, Some(0), m)
            .iter()
            .filter(|s| s.best == 1)
            .count()
    };
    // No margin: push:1 labels 5 small layers and the 6 large; 5%: the large only.
    assert_eq!((push_labels(0.0), push_labels(0.05)), (11, 6));
    // A fold holding out the sixth weight learns push:1 at the small M without a margin
    // (1.5x slower there); with 5% or more it keeps bulk (3% slower on the five).
    // (Scored on the oracle ratio alone, as both criteria would.)
    for criterion in [Criterion::Gini, Criterion::Regret] {
        let p = OverlapTrainParams {
            criteria: vec![criterion],
            floor_weight: 0.0,
            ..Default::default()
        };
        let c = cv_choose(&rows, Some(0), &p, &p.bulk_margins).unwrap();
        assert!(c.margin >= 0.05, "{criterion:?} {}", c.margin);
        assert!(c.ratio > 0.98, "{criterion:?} {}", c.ratio);
        assert_eq!(c.criterion, criterion);
        let none = cv_choose(&rows, Some(0), &p, &[0.0]).unwrap();
        assert_eq!(none.margin, 0.0);
        assert!(none.ratio < c.ratio - 0.01, "{} {}", none.ratio, c.ratio);
    }
    let e = OverlapTrainParams {
        bulk_margins: vec![0.0, 1.5],
        ..Default::default()
    }
    .check()
    .unwrap_err()
    .to_string();
    assert!(e.contains("bulk margin 1.5 outside [0, 1)"), "{e}");
}

#[test]
fn the_floor_under_bulk_is_scored_beside_the_oracle_ratio() {
    // Pattern 1 beats bulk by 3% on five weights and loses by 8% on the sixth, nothing telling
    // them apart. Without a margin every fold picks it (its training weights' mean log
    // slowdown is the smaller), and the score is the sixth's ln(100/108) / 6 = -0.0128; under a
    // 5% margin every label is bulk, -0.0305 x 5 / 6 = -0.0254. The oracle ratio alone keeps
    // no margin; the sixth falls ln(0.98 x 108 / 100) = 0.0568 below the floor, which at weight
    // 3 costs 0.0284 more: the margin, and bulk, win.
    let rows: Vec<Row> = (0..6u64)
        .map(|g| Row {
            x: vec![64.0],
            times: vec![Some(100.0), Some(if g == 5 { 108.0 } else { 97.0 })],
            group: g,
        })
        .collect();
    let chosen = |floor_weight: f64| {
        let p = OverlapTrainParams {
            bulk_margins: vec![0.0, 0.05],
            floor_weight,
            ..Default::default()
        };
        cv_choose(&rows, Some(0), &p, &p.bulk_margins).unwrap()
    };
    let (c0, c3) = (chosen(0.0), chosen(3.0));
    assert_eq!(c0.margin, 0.0, "{c0:?}");
    assert!(
        (c0.ratio.ln() - (100.0f64 / 108.0).ln() / 6.0).abs() < 1e-9,
        "{c0:?}"
    );
    assert_eq!(c3.margin, 0.05, "{c3:?}");
    assert!(
        (c3.ratio.ln() - 5.0 * 0.97f64.ln() / 6.0).abs() < 1e-9,
        "{c3:?}"
    );
    // At weight 1 the shortfall (0.0095) is not enough: -0.0223 against -0.0254.
    assert_eq!(chosen(1.0).margin, 0.0);
    // Without a bulk pattern there is no floor: the oracle ratio alone.
    let p = OverlapTrainParams {
        floor_weight: 3.0,
        ..Default::default()
    };
    let none = cv_choose(&rows, None, &p, &[0.0]).unwrap();
    assert!((none.ratio.ln() - c0.ratio.ln()).abs() < 1e-9, "{none:?}");
}

#[test]
fn bad_criteria_and_floors_are_refused() {
    let e = |p: OverlapTrainParams| p.check().unwrap_err().to_string();
    let d = OverlapTrainParams::default;
    assert!(e(OverlapTrainParams {
        criteria: vec![],
        ..d()
    })
    .contains("no split criterion"));
    for f in [0.0, 1.5, f64::NAN] {
        let m = e(OverlapTrainParams {
            bulk_floor: f,
            ..d()
        });
        assert!(
            m.contains("bulk floor") && m.contains("outside (0, 1]"),
            "{m}"
        );
    }
    for w in [-1.0, f64::INFINITY, f64::NAN] {
        let m = e(OverlapTrainParams {
            floor_weight: w,
            ..d()
        });
        assert!(m.contains("floor weight"), "{m}");
    }
}

#[test]
fn held_and_barrier_runs_are_not_mixed() {
    let dir = std::env::temp_dir().join(format!("augur-overlap-start-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let old = csv(&dir);
    // The same rows timed from a held start: a `start` column after `us`.
    let held = dir.join("held.csv");
    let text = std::fs::read_to_string(&old).unwrap();
    let mut lines = text.lines();
    let mut t = lines.next().unwrap().replace(",us,", ",us,start,") + "\n";
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        t += &format!("{},held,{}\n", f[..11].join(","), f[11..].join(","));
    }
    std::fs::write(&held, &t).unwrap();
    let layers = read_layers(std::slice::from_ref(&held), 132).unwrap();
    assert_eq!(layers.len(), 6);
    assert!(layers.iter().all(|l| l.start == "held"));
    let model = OverlapTrainParams::default()
        .check()
        .unwrap()
        .fit(&layers, "test")
        .unwrap();
    assert!(model.trees.iter().all(|t| t.start == "held"));
    assert!(model.export_text().contains("timed from a held start"));
    let e = read_layers(&[held.clone(), old.clone()], 132)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("held.csv") && e.contains("tp.csv") && e.contains("launch cost"),
        "{e}"
    );
    // Older files (no column) read as timed from a barrier; a model without the field too.
    assert!(read_layers(std::slice::from_ref(&old), 132)
        .unwrap()
        .iter()
        .all(|l| l.start == "barrier"));
    let json = serde_json::to_string(&model)
        .unwrap()
        .replace(r#","start":"held""#, "");
    let back: OverlapModel = serde_json::from_str(&json).unwrap();
    assert_eq!(back.trees[0].start, "barrier");
    std::fs::write(&held, t.replacen(",held,", ",eager,", 1)).unwrap();
    let e = read_layers(&[held], 132).unwrap_err().to_string();
    assert!(
        e.contains("held.csv:2") && e.contains("start `eager`"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_tree_per_gpu_count_and_the_nearest_for_others() {
    let dir = std::env::temp_dir().join(format!("augur-overlap-worlds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let two = csv(&dir);
    // The same layers on 4 GPUs, where bulk is the fastest everywhere.
    let four = dir.join("four.csv");
    let text = std::fs::read_to_string(&two).unwrap();
    let t: String = text
        .lines()
        .map(|l| {
            let l = l.replacen("GPU X,2,", "GPU X,4,", 1);
            (if l.contains(",bulk,") {
                l.replace(",300,", ",100,")
            } else {
                l
            }) + "\n"
        })
        .collect();
    std::fs::write(&four, t).unwrap();
    let layers = read_layers(&[two, four], 132).unwrap();
    let model = OverlapTrainParams::default()
        .check()
        .unwrap()
        .fit(&layers, "test")
        .unwrap();
    assert_eq!(
        model.trees.iter().map(|t| t.world_size).collect::<Vec<_>>(),
        [Some(2), Some(4)]
    );
    let shape = |world| OverlapShape {
        op: OverlapOp::AllGatherGemm,
        m: 12288,
        n: 12288,
        k: 8192,
        dtype: Dtype::Bf16,
        world_size: world,
        link: LinkType::Nvlink,
        sms: 132,
    };
    assert_eq!(model.choose(&shape(2)), Some("push:1"));
    assert_eq!(model.choose(&shape(4)), Some("bulk"));
    // Halfway goes to the larger; beyond, the nearest.
    assert_eq!(model.choose(&shape(3)), Some("bulk"));
    assert_eq!(model.choose(&shape(8)), Some("bulk"));
    let rust = model.export_rust();
    assert!(
        rust.contains("if f.all_gather == 1.0 && f.all_reduce == 0.0 && f.world_size < 3.0 {"),
        "{rust}"
    );
    assert!(
        rust.contains("if f.all_gather == 1.0 && f.all_reduce == 0.0 && f.world_size >= 3.0 {"),
        "{rust}"
    );
    let text = model.export_text();
    assert!(
        text.contains("all-gather+gemm on 4 GPUs (patterns"),
        "{text}"
    );
    assert!(model
        .export_dot()
        .contains("label=\"all-gather+gemm on 2 GPUs\""));
    // Two trees for one GPU count are refused.
    let mut bad = model.clone();
    bad.trees[1].world_size = Some(2);
    assert!(bad
        .validate()
        .unwrap_err()
        .contains("two trees for one GPU count"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_row_names_its_line() {
    let dir = std::env::temp_dir().join(format!("augur-overlap-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.csv");
    std::fs::write(
        &path,
        "device,gpus,op,dtype,m,n,k,pattern,passed,us\nX,2,all-gather+gemm,bf16,512,6144,4096,bulk,true,fast\n",
    )
    .unwrap();
    let e = read_layers(std::slice::from_ref(&path), 132)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.csv:2") && e.contains("us `fast`"), "{e}");
    std::fs::write(&path, "device,gpus\nX,2\n").unwrap();
    let e = read_layers(&[path], 132).unwrap_err().to_string();
    assert!(e.contains("no column `op`"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_all_reduce_has_its_own_tree_and_flag() {
    let dir = std::env::temp_dir().join(format!("augur-overlap-ar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let two = csv(&dir);
    // The same weights as GEMM + all-reduce layers (K cut), `fused-reduce:0` the fastest at
    // large M, bulk at small.
    let ar = grid(&dir, "ar.csv", "gemm+all-reduce", "fused-reduce:0");
    let layers = read_layers(&[two, ar], 132).unwrap();
    let params = OverlapTrainParams::default().check().unwrap();
    let model = params.fit(&layers, "test").unwrap();
    let ops: Vec<&str> = model.trees.iter().map(|t| t.op.as_str()).collect();
    assert_eq!(ops, ["all-gather+gemm", "gemm+all-reduce"]);
    let shape = |m| OverlapShape {
        op: OverlapOp::GemmAllReduce,
        m,
        n: 8192,
        k: 8192,
        dtype: Dtype::Bf16,
        world_size: 2,
        link: LinkType::Nvlink,
        sms: 132,
    };
    assert_eq!(model.choose(&shape(16384)), Some("fused-reduce:0"));
    assert_eq!(model.choose(&shape(512)), Some("bulk"));
    // No reduce-scatter tree: none is made up from the all-reduce's.
    let rs = OverlapShape {
        op: OverlapOp::GemmReduceScatter,
        ..shape(16384)
    };
    assert_eq!(model.choose(&rs), None);
    let rust = model.export_rust();
    assert!(
        rust.contains("if f.all_gather == 0.0 && f.all_reduce == 1.0 {"),
        "{rust}"
    );
    // Held out: the all-reduce apart; `both` only with the all-gather and the reduce-scatter.
    let rows = super::eval::evaluate_held_out(&params, &layers).unwrap();
    let text = super::eval::summary(&rows);
    assert!(text.contains("gemm+all-reduce"), "{text}");
    assert!(!text.contains("both") && !text.contains("all  "), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}
