use super::*;
use crate::ModelFile;

/// Synthetic runs: pattern `fast-small` wins below 64 KiB, `fast-large` above, `nccl` never
/// (by 20%), on 2 and 4 GPUs, f32 and bf16; `drop` leaves one pattern out of one message.
fn synthetic(drop: Option<(usize, &str)>) -> CommRuns {
    let mut runs = Vec::new();
    for world in [2usize, 4] {
        for dtype in ["f32", "bf16"] {
            let mut b = 1024usize;
            while b <= 64 << 20 {
                for (bytes, between) in [(b, false), (b + b / 2, true)] {
                    let _ = between;
                    let shape = MessageShape::parse(&format!(
                        "message:collective=all-reduce,dtype={dtype},bytes={bytes},world={world}"
                    ))
                    .unwrap();
                    let base = 5e-6 + bytes as f64 / 100e9;
                    let small = if bytes < 64 << 10 { base } else { base * 1.5 };
                    let large = if bytes < 64 << 10 { base * 1.5 } else { base };
                    for (p, t) in [
                        ("nccl", base * 1.8),
                        ("fast-small", small),
                        ("fast-large", large),
                    ] {
                        if drop == Some((bytes, p)) && world == 2 && dtype == "f32" {
                            continue;
                        }
                        runs.push(CommRun {
                            shape: shape.clone(),
                            gpus: "0;1".into(),
                            device: "Test GPU".into(),
                            driver: "13.0".into(),
                            augur_version: "test".into(),
                            pattern: p.into(),
                            median_s: Some(t),
                            error: String::new(),
                            reps: 9,
                            batch: 10,
                            check: "exact".into(),
                        });
                    }
                }
                b *= 2;
            }
        }
    }
    CommRuns { runs }
}

#[test]
fn runs_round_trip_through_csv() {
    let runs = synthetic(None);
    let dir = std::env::temp_dir().join(format!("augur-comm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("runs.csv");
    runs.write(std::fs::File::create(&p).unwrap()).unwrap();
    let back = CommRuns::read(std::slice::from_ref(&p)).unwrap();
    assert_eq!(back.runs.len(), runs.runs.len());
    assert_eq!(back.runs[5].shape, runs.runs[5].shape);
    assert!((back.runs[5].median_s.unwrap() / runs.runs[5].median_s.unwrap() - 1.0).abs() < 1e-9);
    // A damaged value names the file and line.
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[3] = lines[3].replacen(",ok,,", ",ok,,not-a-number", 1);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let e = CommRuns::read(std::slice::from_ref(&p))
        .unwrap_err()
        .to_string();
    assert!(e.contains("runs.csv:4") && e.contains("median_s"), "{e}");
    // An SpMV runs header is refused with the column.
    std::fs::write(&p, "matrix,family\nx,y\n").unwrap();
    let e = CommRuns::read(std::slice::from_ref(&p))
        .unwrap_err()
        .to_string();
    assert!(e.contains(":1:") && e.contains("collective"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn training_finds_the_size_cutoff_and_eval_scores_it() {
    let runs = synthetic(None);
    let m = CommTrainParams::default()
        .check()
        .unwrap()
        .fit(&runs, "test")
        .unwrap();
    assert_eq!(m.training.holdout, "between");
    let pick = |bytes: &str, world: usize| {
        let s = MessageShape::parse(&format!(
            "message:collective=all-reduce,bytes={bytes},world={world}"
        ))
        .unwrap();
        m.choose(&s).unwrap().to_string()
    };
    assert_eq!(pick("4KiB", 2), "fast-small");
    assert_eq!(pick("40KiB", 4), "fast-small");
    assert_eq!(pick("1MiB", 2), "fast-large");
    assert_eq!(pick("32MiB", 4), "fast-large");
    // No all-gather tree: no choice.
    let ag = MessageShape::parse("message:collective=all-gather,bytes=4KiB,world=2").unwrap();
    assert!(m.choose(&ag).is_none());
    // The path's steps hold for the input.
    let s = MessageShape::parse("message:collective=all-reduce,bytes=4KiB,world=2").unwrap();
    for (_, v, t, left) in m.path(&s) {
        assert_eq!(v < t, left);
    }
    // How sure: the training messages at the pick's leaf, every one picked right there (the
    // synthetic winner is clear), and none for a collective without a tree.
    let (msgs, regret) = m.leaf_evidence(&s).unwrap();
    assert!(msgs >= 1 && regret == 0.0, "{msgs} {regret}");
    assert!(m.leaf_evidence(&ag).is_none());
    let rows = evaluate(&m, &runs).unwrap();
    let sums = summarize(&rows);
    let all = sums.iter().find(|g| g.group == "all").unwrap();
    // Training sizes are powers of two: every one is picked right; an unseen size between
    // 32 and 64 KiB can fall on either side of the learnt cutoff (48 KiB).
    let trained: Vec<&CommEvalRow> = rows.iter().filter(|r| !r.unseen).collect();
    assert!(trained.iter().all(|r| r.selected == r.oracle));
    assert!(all.oracle_ratio > 0.98, "{all:?}");
    let unseen = sums
        .iter()
        .find(|g| g.group == "all, unseen sizes")
        .unwrap();
    assert!(
        unseen.messages > 0 && unseen.oracle_ratio > 0.97,
        "{unseen:?}"
    );
    assert!(all.vs_nccl.unwrap() > 1.5);
    // The model file round-trips and is refused when damaged.
    let back = CommModel::from_json(&m.to_json(), "test").unwrap();
    assert_eq!(back, m);
    assert!(matches!(
        crate::AnyModel::from_json(&m.to_json(), "test").unwrap(),
        crate::AnyModel::Comm(_)
    ));
    let bad = m
        .to_json()
        .replace("\"augur-comm-model\"", "\"augur-model\"");
    assert!(CommModel::from_json(&bad, "x").is_err());
    // Exports read like rules, a graph and code.
    let t = export_text(&m);
    assert!(
        t.contains("if bytes < ") && t.contains("KiB") && t.contains("fast-small"),
        "{t}"
    );
    assert!(export_dot(&m).starts_with("digraph"));
    let r = export_rust(&m);
    assert!(r.contains("pub fn select(f: &MessageFeatures) -> Option<CommPattern>"));
    assert!(r.contains("CommPattern::FastSmall"));
    assert!(rows_csv(&rows)
        .lines()
        .next()
        .unwrap()
        .contains("busbw_fast-small"));
}

#[test]
fn incomplete_messages_are_left_out() {
    let runs = synthetic(Some((4096, "fast-small")));
    let (kept, dropped) = complete_messages(runs.messages());
    assert_eq!(dropped, 1);
    assert!(kept.iter().all(|m| m.runs.len() == 3));
    let m = CommTrainParams::default()
        .check()
        .unwrap()
        .fit(&runs, "test")
        .unwrap();
    assert_eq!(m.training.incomplete, 1);
}

#[test]
fn cutoffs_and_params() {
    assert_eq!(cutoff_rule(Collective::AllReduce, 256 << 10), "one-shot");
    assert_eq!(
        cutoff_rule(Collective::AllReduce, (256 << 10) + 4),
        "two-shot"
    );
    assert_eq!(cutoff_rule(Collective::AllReduce, 4 << 20), "two-shot");
    assert_eq!(cutoff_rule(Collective::AllReduce, 8 << 20), "nccl");
    assert_eq!(cutoff_rule(Collective::AllGather, 1024), "pull");
    assert!(CommTrainParams {
        folds: 1,
        ..Default::default()
    }
    .check()
    .is_err());
    assert!(CommTrainParams {
        max_depth: 0,
        ..Default::default()
    }
    .check()
    .is_err());
    assert!(held_out(3 << 10, true) && !held_out(4 << 10, true) && !held_out(3 << 10, false));
    let e = CommTrainParams {
        criteria: vec![],
        ..Default::default()
    }
    .check()
    .unwrap_err()
    .to_string();
    assert!(e.contains("no split criterion"), "{e}");
}

#[test]
fn each_tree_records_its_split_criterion_and_older_files_read_as_gini() {
    use crate::model::Criterion;
    let runs = synthetic(None);
    for c in [Criterion::Gini, Criterion::Regret] {
        let m = CommTrainParams {
            criteria: vec![c],
            ..Default::default()
        }
        .check()
        .unwrap()
        .fit(&runs, "test")
        .unwrap();
        assert!(m.trees.iter().all(|t| t.criterion == c));
        let back = CommModel::from_json(&m.to_json(), "x.json").unwrap();
        assert!(back.trees.iter().all(|t| t.criterion == c));
    }
    let m = CommTrainParams::default()
        .check()
        .unwrap()
        .fit(&runs, "test")
        .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
    for t in v["trees"].as_array_mut().unwrap() {
        t.as_object_mut().unwrap().remove("criterion").unwrap();
    }
    let old = CommModel::from_json(&v.to_string(), "old.json").unwrap();
    assert!(old.trees.iter().all(|t| t.criterion == Criterion::Gini));
}
