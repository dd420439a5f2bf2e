use super::*;
use crate::ModelFile;

fn run(spec: &str, schedule: &str, t: Option<f64>) -> AttentionRun {
    AttentionRun {
        spec: spec.into(),
        device: "GPU".into(),
        driver: "13.0".into(),
        augur_version: "0".into(),
        schedule: schedule.into(),
        median_s: t,
        latency_s: t.map(|t| t * 1.5),
        graph_s: t.map(|t| t * 0.9),
        batch: 8,
        error: if t.is_none() {
            "boom\nline".into()
        } else {
            String::new()
        },
        kv_bytes: 0.0,
        reps: 10,
        check_max_error: t.map(|_| 1e-7),
        fa2_splits: 3,
    }
}

/// Runs where `gqa` wins below 2048 tokens per sequence and `split-8` above, over 3 head
/// configurations x 4 batch sizes (12 groups) x 6 lengths; `fa2` in between.
fn synthetic() -> AttentionRuns {
    let mut runs = Vec::new();
    for (hq, hk) in [(32, 8), (16, 16), (64, 8)] {
        for batch in [1, 4, 16, 64] {
            for len in [128, 512, 1024, 4096, 16384, 65536] {
                let spec = format!(
                    "attention:q_heads={hq},kv_heads={hk},head_dim=128,dtype=bf16,lens={len}*{batch}"
                );
                let base = (len * batch) as f64 * 1e-9;
                let (g, s8) = if len < 2048 {
                    (base, 2.0 * base)
                } else {
                    (3.0 * base, base)
                };
                runs.push(run(&spec, "gqa", Some(g)));
                runs.push(run(&spec, "split-8", Some(s8)));
                runs.push(run(&spec, "head", Some(4.0 * base)));
                runs.push(run(&spec, FA2, Some(1.5 * base)));
            }
        }
    }
    AttentionRuns { runs }
}

#[test]
fn training_finds_the_length_cutoff_and_exports_and_evaluates() {
    let runs = synthetic();
    let m = AttentionTrainParams::default()
        .check()
        .unwrap()
        .fit(&runs, "test")
        .unwrap();
    assert_eq!(m.schedules, ["gqa", "split-8", "head"]);
    assert!(!m.schedules.contains(&FA2.to_string()));
    // 12 groups, every 5th held out.
    assert_eq!(m.training.held_out_groups.len(), 2);
    assert_eq!(m.training.shapes, 10 * 6);
    let shape = |len: usize| {
        AttentionShape::parse(&format!(
            "attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens={len}*8"
        ))
        .unwrap()
    };
    assert_eq!(m.choose(&shape(300)), Some("gqa"));
    assert_eq!(m.choose(&shape(30000)), Some("split-8"));
    assert!(!m.path(&shape(300)).is_empty());
    // Round trip and the exports.
    let back = AttentionModel::from_json(&m.to_json(), "mem").unwrap();
    assert_eq!(back, m);
    assert!(matches!(
        crate::AnyModel::from_json(&m.to_json(), "mem").unwrap(),
        crate::AnyModel::Attention(_)
    ));
    let text = export_text(&m);
    assert!(
        text.contains("-> gqa") && text.contains("-> split-8") && text.contains("if "),
        "{text}"
    );
    assert!(export_dot(&m).starts_with("digraph augur_attention"));
    let rust = export_rust(&m);
    assert!(
        rust.contains("pub enum AttentionSchedule") && rust.contains("AttentionSchedule::Split8"),
        "{rust}"
    );
    // Evaluation: the synthetic oracle is learnable, so the pick is the oracle; FA2 costs
    // 1.5x the oracle below the cutoff... and the best single schedule is split-8 or gqa.
    let mut sdpa = BTreeMap::new();
    sdpa.insert(
        runs.runs[0].spec.clone(),
        2.0 * runs.runs[0].median_s.unwrap(),
    );
    let baselines: Baselines = [("sdpa".to_string(), sdpa)].into_iter().collect();
    let rows = evaluate(&m, &runs, &baselines).unwrap();
    assert_eq!(rows.len(), 72);
    assert!(rows.iter().all(|r| r.selected == r.oracle));
    assert_eq!(rows.iter().filter(|r| r.unseen).count(), 12);
    let sums = summarize(&rows);
    assert_eq!(sums[0].group, "all");
    assert!((sums[0].oracle_ratio - 1.0).abs() < 1e-9);
    assert!((sums[0].vs_fa2 - 1.5).abs() < 1e-9, "{}", sums[0].vs_fa2);
    assert!(sums[0].vs_single > 1.0);
    let sd = sums[0].vs_baselines["sdpa"];
    assert_eq!((sd.shapes, sd.geomean, sd.least), (1, 2.0, 2.0));
    assert_eq!(sums[1].group, "held-out groups");
    let table = summary_table(&m, &rows, &sums, "throughput");
    assert!(
        table.contains("held-out groups") && table.contains("x sdpa"),
        "{table}"
    );
    let csv = rows_csv(&rows);
    assert_eq!(csv.lines().count(), 73);
    assert!(csv.lines().next().unwrap().contains(",sdpa_us,"), "{csv}");
    // The graph mode replaces every time by its graph figure (0.9x in `run`): the ratios
    // stay, the oracle times move.
    let g = evaluate(&m, &runs.in_timing("graph").unwrap(), &Baselines::new()).unwrap();
    assert!((g[0].oracle_us - 0.9 * rows[0].oracle_us).abs() < 1e-9 * rows[0].oracle_us);
    assert!(runs.in_timing("wall").is_err());
    // A model of another format is refused with its origin named.
    let wrong = m.to_json().replace(ATTENTION_FORMAT, "augur-comm-model");
    let e = AttentionModel::from_json(&wrong, "x.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("x.json"), "{e}");
    // Bad parameters are refused.
    assert!(AttentionTrainParams {
        folds: 1,
        ..Default::default()
    }
    .check()
    .is_err());
    assert!(AttentionTrainParams {
        holdout_every: 1,
        ..Default::default()
    }
    .check()
    .is_err());
    let e = AttentionTrainParams {
        criteria: vec![],
        ..Default::default()
    }
    .check()
    .unwrap_err()
    .to_string();
    assert!(e.contains("no split criterion"), "{e}");
}

#[test]
fn the_split_criterion_is_chosen_recorded_and_defaults_to_gini_in_older_files() {
    use crate::model::Criterion;
    let runs = synthetic();
    for c in [Criterion::Gini, Criterion::Regret] {
        let m = AttentionTrainParams {
            criteria: vec![c],
            ..Default::default()
        }
        .check()
        .unwrap()
        .fit(&runs, "test")
        .unwrap();
        assert_eq!(m.criterion, c);
        let back = AttentionModel::from_json(&m.to_json(), "x.json").unwrap();
        assert_eq!(back.criterion, c);
    }
    // Both offered (the default): CV's choice is one of them, and a file before the field
    // reads as Gini (what trained it).
    let m = AttentionTrainParams::default()
        .check()
        .unwrap()
        .fit(&runs, "test")
        .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
    v.as_object_mut().unwrap().remove("criterion").unwrap();
    let old = AttentionModel::from_json(&v.to_string(), "old.json").unwrap();
    assert_eq!(old.criterion, Criterion::Gini);
}

#[test]
fn runs_round_trip_and_group_into_cases() {
    let a = "attention:q_heads=8,kv_heads=2,head_dim=64,dtype=bf16,lens=100;7";
    let b = "attention:q_heads=4,head_dim=128,dtype=f16,lens=3*5,page=16";
    let runs = AttentionRuns {
        runs: vec![
            run(a, "gqa", Some(2e-5)),
            run(a, "split-2", Some(1e-5)),
            run(a, FA2, Some(5e-6)),
            run(b, "gqa", None),
            run(b, "head", Some(3e-6)),
        ],
    };
    let dir = std::env::temp_dir().join(format!("augur-att-runs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("runs.csv");
    let mut buf = Vec::new();
    runs.write(&mut buf).unwrap();
    std::fs::write(&p, &buf).unwrap();
    assert!(is_attention_runs_file(&p));
    let back = AttentionRuns::read(std::slice::from_ref(&p)).unwrap();
    assert_eq!(back.runs.len(), 5);
    assert_eq!(back.runs[3].median_s, None);
    assert_eq!(back.runs[3].error, "boom line");
    assert!(back.runs[0].kv_bytes > 0.0);
    let cases = back.cases();
    assert_eq!(cases.len(), 2);
    // The fa2 row is faster but is a rule, not a schedule.
    assert_eq!(cases[0].oracle(), Some(("split-2", 1e-5)));
    assert_eq!(cases[0].time(FA2), Some(5e-6));
    assert_eq!(cases[1].oracle(), Some(("head", 3e-6)));
    // A bad row names its file and line.
    let text = String::from_utf8(buf).unwrap();
    let broken = text.replacen(",ok,", ",maybe,", 1);
    std::fs::write(&p, broken).unwrap();
    let e = AttentionRuns::read(std::slice::from_ref(&p))
        .unwrap_err()
        .to_string();
    assert!(e.contains("runs.csv:2:") && e.contains("maybe"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
