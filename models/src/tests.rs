//! Unit tests of the models stage on synthetic runs whose best kernel is known by construction.

use std::path::PathBuf;

use augur_features::spmv::SpmvFeatures;

use crate::eval::{evaluate, RowSelect};
use crate::model::Model;
use crate::runs::{self, KernelRun, MatrixInfo, MatrixRuns, Runs, Timing};
use crate::train::{GatherCost, TrainParams};
use crate::tree::{Node, Tree};
use crate::ModelError;
use crate::ModelFile;

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("augur-models-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// 40 families of 4 matrices. Kernels: `rows` (cheap when rows are short), `balanced` (cheap
/// when they are long), `prep` (half the per-iteration time of the better one but a setup of 200
/// iterations' worth of it: wins only at k = 1000). The long-row signal is `row_len_max` (gathered)
/// when `hidden`, else `mean_row_len` (known).
fn synthetic(hidden: bool) -> Runs {
    let mut matrices = Vec::new();
    let mut state = 12345u64;
    let mut rnd = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for fam in 0..40 {
        let long = fam % 2 == 0;
        for j in 0..4 {
            let rows = 10f64.powf(3.0 + 3.0 * rnd()).round();
            let mean = if hidden {
                4.0 + 8.0 * rnd()
            } else if long {
                40.0 + 10.0 * rnd()
            } else {
                3.0 + 2.0 * rnd()
            };
            let max = if hidden && long {
                5000.0 + 1000.0 * rnd()
            } else {
                mean * (2.0 + rnd())
            };
            let nnz = (rows * mean).round();
            let mut f = vec![f64::NAN; SpmvFeatures::schema().features.len()];
            let schema = SpmvFeatures::schema();
            for (i, d) in schema.features.iter().enumerate() {
                f[i] = match d.name.as_str() {
                    "rows" | "cols" => rows,
                    "nnz" => nnz,
                    "density" => nnz / (rows * rows),
                    "mean_row_len" => mean,
                    "row_len_max" => max,
                    _ => rnd(),
                };
            }
            let base = nnz * 1e-9;
            let (rows_t, bal_t) = if long {
                (base * 3.0, base)
            } else {
                (base, base * 3.0)
            };
            let best = rows_t.min(bal_t);
            let t = |per: f64, setup: f64| KernelRun {
                kernel: String::new(),
                timing: Some(Timing::wall(setup, per, 5)),
                error: String::new(),
            };
            let mut kernels = vec![t(rows_t, 0.0), t(bal_t, 0.0), t(best * 0.5, best * 200.0)];
            for (k, n) in kernels.iter_mut().zip(["rows", "balanced", "prep"]) {
                k.kernel = n.into();
            }
            matrices.push(MatrixRuns {
                info: MatrixInfo {
                    known_s: 1e-9,
                    gather_s: base * 0.01,
                    sample_s: base * 0.001,
                    ..MatrixInfo::synthetic(
                        format!("m{fam}_{j}"),
                        format!("fam{fam}"),
                        (rows as usize, nnz as usize),
                        "1;1000",
                        f,
                    )
                },
                kernels,
            });
        }
    }
    Runs { matrices }
}

/// Train with default parameters but `folds` folds.
fn fit(runs: &Runs, folds: usize) -> Model {
    TrainParams {
        folds,
        ..TrainParams::default()
    }
    .check()
    .unwrap()
    .fit(runs, "test")
    .unwrap()
}

fn write_runs(r: &Runs, name: &str) -> PathBuf {
    let p = temp(name).join("runs.csv");
    r.write(std::fs::File::create(&p).unwrap()).unwrap();
    p
}

#[test]
fn runs_round_trip_and_later_rows_win() {
    let r = synthetic(false);
    let p = write_runs(&r, "roundtrip");
    let back = Runs::read(std::slice::from_ref(&p)).unwrap();
    assert_eq!(back.matrices.len(), r.matrices.len());
    assert_eq!(back.matrices[3].kernels, r.matrices[3].kernels);
    assert_eq!(back.matrices[3].info.family, r.matrices[3].info.family);
    // Append a re-measurement of one kernel of matrix 0 marked failed: it replaces the first row.
    let mut again = r.matrices[0].kernels[1].clone();
    again.timing = None;
    again.error = "out of memory".into();
    let bytes = runs::matrix_rows_csv(&r.matrices[0].info, &[again]).unwrap();
    let mut text = std::fs::read(&p).unwrap();
    text.extend(bytes);
    std::fs::write(&p, text).unwrap();
    let back = Runs::read(&[p]).unwrap();
    assert_eq!(back.matrices[0].kernels.len(), 3);
    assert_eq!(back.matrices[0].kernels[1].timing, None);
    assert_eq!(back.matrices[0].kernels[1].error, "out of memory");
}

#[test]
fn runs_read_gzipped_as_plain_and_name_a_damaged_file() {
    use std::io::Write;
    let r = synthetic(false);
    let p = write_runs(&r, "gzipped");
    let text = std::fs::read(&p).unwrap();
    let gz = p.with_extension("csv.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&text).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let plain = Runs::read(std::slice::from_ref(&p)).unwrap();
    let back = Runs::read(std::slice::from_ref(&gz)).unwrap();
    assert_eq!(back.matrices.len(), plain.matrices.len());
    for (a, b) in back.matrices.iter().zip(&plain.matrices) {
        assert_eq!(a.info.matrix, b.info.matrix);
        assert_eq!(a.kernels, b.kernels);
    }
    // A bad value inside the gzipped file: its name and line, as for a plain one.
    let mut lines: Vec<String> = String::from_utf8(text)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let mut cells: Vec<String> = lines[2].split(',').map(String::from).collect();
    let n = cells.len();
    cells[n - 5] = "fast".into(); // a timing column
    lines[2] = cells.join(",");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all((lines.join("\n") + "\n").as_bytes()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let e = Runs::read(std::slice::from_ref(&gz))
        .unwrap_err()
        .to_string();
    assert!(e.contains("runs.csv.gz:3") && e.contains("fast"), "{e}");
    // Not gzip at all: an error naming the file, no panic.
    std::fs::write(&gz, b"matrix,family\n").unwrap();
    let e = Runs::read(std::slice::from_ref(&gz))
        .unwrap_err()
        .to_string();
    assert!(e.contains("runs.csv.gz"), "{e}");
}

#[test]
fn runs_carry_the_upload_and_read_runs_from_before_it() {
    let mut r = synthetic(false);
    r.matrices[0].info.upload_s = Some(1e-3);
    r.matrices[0].info.upload_gather_s = Some(1.02e-3);
    r.matrices[1].info.upload_s = Some(1e-3);
    r.matrices[1].info.upload_gather_s = Some(0.9e-3);
    r.matrices[0].info.sample_upload_s = Some(2e-6);
    r.matrices[0].info.gather_upload_s = Some(3e-6);
    let p = write_runs(&r, "upload");
    let back = Runs::read(std::slice::from_ref(&p)).unwrap();
    let (a, b, c) = (
        &back.matrices[0].info,
        &back.matrices[1].info,
        &back.matrices[2].info,
    );
    assert_eq!((a.upload_s, a.upload_gather_s), (Some(1e-3), Some(1.02e-3)));
    // What gathering costs a plan from a host matrix: what it adds to the upload, never < 0;
    // the device pass where the upload was not timed; the device pass on request.
    assert!((GatherCost::Upload.of(a) - 2e-5).abs() < 1e-12);
    assert_eq!(GatherCost::Upload.of(b), 0.0);
    assert_eq!(GatherCost::Upload.of(c), c.gather_s);
    assert_eq!(GatherCost::Device.of(a), a.gather_s);
    assert_eq!(GatherCost::UploadRaw.of(a), GatherCost::Upload.of(a));
    // The sampled tier: beside the upload where timed, the sample alone otherwise or on request.
    assert_eq!(a.sample_upload_s, Some(2e-6));
    assert_eq!((a.gather_upload_s, b.gather_upload_s), (Some(3e-6), None));
    let host = crate::train::GatherCosts::new(GatherCost::Upload, &back, |_| true);
    let device = crate::train::GatherCosts::new(GatherCost::Device, &back, |_| true);
    assert_eq!(host.sample_of(a), 2e-6);
    assert_eq!(host.sample_of(b), b.sample_s);
    assert_eq!(device.sample_of(a), a.sample_s);
    // ...and pooled: the median per decade of nonzeros of what it adds, for every matrix of that
    // decade with a timed upload (one matrix's own difference is mostly jitter).
    let mut pooled = back.clone();
    let diffs = [2e-5, 0.0, 7e-3, 1e-5, 3e-5];
    for (m, d) in pooled.matrices.iter_mut().zip(diffs) {
        m.info.nnz = 5_000_000;
        m.info.upload_s = Some(1e-3);
        m.info.upload_gather_s = Some(1e-3 + d);
    }
    pooled.matrices[4].info.nnz = 50; // alone in its decade
    pooled.matrices[3].info.upload_gather_s = None; // no upload timed: the device pass
    let costs = crate::train::GatherCosts::new(GatherCost::Upload, &pooled, |_| true);
    let info = |i: usize| &pooled.matrices[i].info;
    for i in 0..3 {
        // Decade 6: 2e-5, 0, 7e-3 -> median 2e-5, whatever the matrix's own figure.
        assert!((costs.of(info(i)) - 2e-5).abs() < 1e-12, "{i}");
    }
    assert_eq!(costs.of(info(3)), info(3).gather_s);
    assert!((costs.of(info(4)) - 3e-5).abs() < 1e-12);
    let raw = crate::train::GatherCosts::new(GatherCost::UploadRaw, &pooled, |_| true);
    assert!((raw.of(info(2)) - 7e-3).abs() < 1e-12);
    // The same file without the host gather's column (collected before it was timed), without
    // the sampled tier's too (before it was timed beside the upload), and without the upload's
    // two columns too (before the upload was timed): all still read.
    let text = std::fs::read_to_string(&p).unwrap();
    for (cut, upload, sample) in [
        (19..20, Some(1e-3), Some(2e-6)),
        (18..20, Some(1e-3), None),
        (16..20, None, None),
    ] {
        let old: Vec<String> = text
            .lines()
            .map(|l| {
                let mut c: Vec<&str> = l.split(',').collect();
                c.drain(cut.clone());
                c.join(",")
            })
            .collect();
        std::fs::write(&p, old.join("\n") + "\n").unwrap();
        let back = Runs::read(std::slice::from_ref(&p)).unwrap();
        assert_eq!(back.matrices.len(), r.matrices.len());
        assert_eq!(back.matrices[0].info.upload_s, upload);
        assert_eq!(back.matrices[0].info.sample_upload_s, sample);
        assert_eq!(back.matrices[0].info.gather_upload_s, None);
        assert_eq!(back.matrices[0].info.features, r.matrices[0].info.features);
        assert_eq!(back.matrices[3].kernels, r.matrices[3].kernels);
    }
}

#[test]
fn runs_errors_name_file_line_and_value() {
    let r = synthetic(false);
    let p = write_runs(&r, "errors");
    let text = std::fs::read_to_string(&p).unwrap();
    // The third line with some cells changed (the row ends with setup_s, per_iter_s, timing,
    // latency_s, throughput_s, graph_s, batch, reps): the error of reading it.
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let cells: Vec<String> = lines[2].split(',').map(String::from).collect();
    let n = cells.len();
    let third_with = |changes: &[(usize, &str)]| -> String {
        let mut c = cells.clone();
        for &(i, v) in changes {
            c[i] = v.to_string();
        }
        let mut l = lines.clone();
        l[2] = c.join(",");
        std::fs::write(&p, l.join("\n") + "\n").unwrap();
        Runs::read(std::slice::from_ref(&p))
            .unwrap_err()
            .to_string()
    };
    // A per-iteration time that is not a number.
    let e = third_with(&[(n - 7, "fast")]);
    assert!(
        e.contains("runs.csv:3:") && e.contains("`fast`") && e.contains("per_iter_s"),
        "{e}"
    );
    // An unknown status, a timing mode that is not one, a latency of zero; damage that would
    // poison every cost sum (a time of 1e308, a negative gathering cost, a feature that is not
    // finite). Each is refused at its line, naming the value or column.
    for (col, value, needle) in [
        (n - 10, "maybe", "maybe"),
        (n - 6, "eager", "`eager`"),
        (n - 5, "0", "latency_s"),
        (n - 7, "1e308", "per_iter_s"),
        (14, "-1", "gather_s"),
        (13, "inf", "known_s"),
        (15, "-2e-6", "sample_s"),
        (16, "-1e-3", "upload_s"),
        (17, "soon", "upload_gather_s"),
        (18, "-1", "sample_upload_s"),
        (19, "-1", "gather_upload_s"),
        (20, "NaN", "f_rows"),
        // Features of another schema version under the same column names (v2's sampled
        // longest row did not include the probe's).
        (11, "2", "schema v2, this augur computes v3: re-collect"),
    ] {
        let e = third_with(&[(col, value)]);
        assert!(
            e.contains("runs.csv:3:") && e.contains(needle),
            "{value}: {e}"
        );
    }
    // A runs file of format 1 (per_iter_s then reps) is refused with what to do.
    let old = lines[0].replace(
        "per_iter_s,timing,latency_s,throughput_s,graph_s,batch,reps",
        "per_iter_s,reps",
    );
    std::fs::write(&p, old + "\n").unwrap();
    let e = Runs::read(std::slice::from_ref(&p))
        .unwrap_err()
        .to_string();
    assert!(e.contains("format 1") && e.contains("re-collect"), "{e}");
    // A header of another schema.
    lines[0] = lines[0].replace("f_row_len_max", "f_longest_row");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let e = Runs::read(&[p]).unwrap_err().to_string();
    assert!(
        e.contains(":1:") && e.contains("f_longest_row") && e.contains("schema"),
        "{e}"
    );
}

#[test]
fn tree_simplify_merges_equal_leaves_and_validate_catches_damage() {
    let leaf = |class| Node::Leaf {
        class,
        samples: 2,
        mean_regret: 0.5,
    };
    let mut t = Tree {
        nodes: vec![
            Node::Split {
                feature: 0,
                threshold: 1.0,
                left: 1,
                right: 4,
            },
            Node::Split {
                feature: 1,
                threshold: 2.0,
                left: 2,
                right: 3,
            },
            leaf(0),
            leaf(0),
            leaf(1),
        ],
    };
    assert_eq!(t.predict(&[0.0, 5.0]), 0);
    assert_eq!(t.predict(&[3.0, 0.0]), 1);
    t.simplify();
    assert_eq!(t.nodes.len(), 3);
    assert_eq!(t.depth(), 1);
    assert!(matches!(
        t.nodes[1],
        Node::Leaf {
            class: 0,
            samples: 4,
            ..
        }
    ));
    assert!(t.validate(2, 2).is_ok());
    // A 100000-level chain (a foreign model) is refused before anything walks it recursively.
    let mut chain = Vec::new();
    for i in 0..100_000 {
        chain.push(Node::Split {
            feature: 0,
            threshold: i as f64,
            left: 2 * i + 1,
            right: 2 * i + 2,
        });
        chain.push(Node::Leaf {
            class: 0,
            samples: 1,
            mean_regret: 0.0,
        });
    }
    chain.push(Node::Leaf {
        class: 0,
        samples: 1,
        mean_regret: 0.0,
    });
    let deep = Tree { nodes: chain };
    assert!(
        deep.validate(2, 2).unwrap_err().contains("deeper than 64"),
        "a deep chain"
    );
    assert!(t.validate(2, 1).unwrap_err().contains("class 1"));
    assert!(t.validate(0, 2).unwrap_err().contains("input 0"));
    let mut cyc = t.clone();
    cyc.nodes[0] = Node::Split {
        feature: 0,
        threshold: 1.0,
        left: 0,
        right: 2,
    };
    assert!(cyc.validate(2, 2).unwrap_err().contains("reached twice"));
    // NaN inputs go left of every threshold above -1.
    assert_eq!(t.predict(&[f64::NAN, 0.0]), 0);
}

#[test]
fn learns_a_known_feature_rule_and_the_iteration_count() {
    let runs = synthetic(false);
    let model = fit(&runs, 4);
    assert_eq!(model.iterations, vec![1, 1000]);
    assert_eq!(model.kernels, vec!["rows", "balanced", "prep"]);
    let known = &model.training.chosen[0];
    assert!(known.oracle_ratio > 0.99, "CV {known:?}");
    assert!(
        model.known.trees.iter().all(|t| t.tree.depth() <= 3),
        "a readable tree"
    );
    let r = evaluate(&model, &runs, RowSelect::Unseen, None, None, None).unwrap();
    assert!(
        r.overall.samples >= 8 * 2,
        "{} held-out samples",
        r.overall.samples
    );
    assert!(r.overall.oracle_ratio > 0.98, "{:?}", r.overall);
    assert!(r.overall.vs_single > 1.3, "{:?}", r.overall);
    assert!(r.inference_ns < 1000.0);
    // The iteration count changes the pick: prep only pays at k = 1000.
    let f = runs.matrices[0].features();
    let (c1, c1000) = (model.choose(&f, 1), model.choose(&f, 1000));
    assert_ne!(model.kernel_name(c1), "prep");
    assert_eq!(model.kernel_name(c1000), "prep");
}

#[test]
fn gathers_when_only_a_gathered_feature_tells_and_gathering_is_cheap() {
    let runs = synthetic(true);
    let model = fit(&runs, 4);
    let (k, g) = (&model.training.chosen[0], &model.training.chosen[2]);
    assert!(
        g.oracle_ratio > 0.99 && k.oracle_ratio < 0.9,
        "known {k:?} gathered {g:?}"
    );
    // At k = 1 the known tree can only guess between rows and balanced, so gathering (1% of an
    // SpMV) pays. (At k = 1000 prep wins whatever the rows; gathering then costs 1e-5 of the
    // total, too little weight for the policy to split on, and it may gather anyway.)
    let r = evaluate(&model, &runs, RowSelect::Unseen, None, None, None).unwrap();
    let at = |k: f64| r.samples.iter().filter(move |s| s.iterations == k);
    assert!(
        at(1.0).all(|s| s.tier == crate::model::Tier::Gathered),
        "{:?}",
        r.samples
    );
    assert!(at(1000.0).all(|s| s.selected_kernel == "prep"));
    assert!(r.overall.oracle_ratio > 0.98, "{:?}", r.overall);
    // Each tier alone: the policy's own tier is the pick and cost reported; the known tree
    // alone guesses at k = 1, and the hindsight bound is at least the policy.
    for s in &r.samples {
        let own = &s.per_tier[s.tier.class()];
        assert_eq!(
            (own.0.as_str(), own.1),
            (s.selected_kernel.as_str(), s.selected_s)
        );
    }
    let all = &r.tiers[0];
    assert_eq!(
        (all.bucket.as_str(), all.samples),
        ("all", r.overall.samples)
    );
    assert_eq!(all.policy, r.overall.oracle_ratio);
    assert!(all.alone[0] < 0.95 && all.alone[2] > 0.98, "{all:?}");
    assert!(all.hindsight >= all.policy, "{all:?}");
    // A fixed inference charge replaces the measured one in every pick's time: a second per
    // pick swamps every sample's microseconds; a charge of 0 leaves only the kernels' times.
    let slow = evaluate(&model, &runs, RowSelect::Unseen, None, Some(1e9), None).unwrap();
    assert_eq!(slow.charged_inference_ns, 1e9);
    assert!(slow.overall.oracle_ratio < 0.1, "{:?}", slow.overall);
    let free = evaluate(&model, &runs, RowSelect::Unseen, None, Some(0.0), None).unwrap();
    assert!(free.overall.oracle_ratio >= r.overall.oracle_ratio);
    // Gathering during an upload that hides it: charged nothing by default (a plan from a host
    // matrix), the device pass with `GatherCost::Device`.
    let mut hidden = runs.clone();
    for m in &mut hidden.matrices {
        m.info.upload_s = Some(1e-3);
        m.info.upload_gather_s = Some(1e-3);
    }
    let up = evaluate(&model, &hidden, RowSelect::Unseen, None, None, None).unwrap();
    let dev = evaluate(
        &model,
        &hidden,
        RowSelect::Unseen,
        None,
        None,
        Some(GatherCost::Device),
    )
    .unwrap();
    assert_eq!(
        (up.gather_cost, dev.gather_cost),
        (GatherCost::Upload, GatherCost::Device)
    );
    let gathered_k1 = |r: &crate::eval::EvalReport| -> f64 {
        r.samples
            .iter()
            .filter(|s| s.iterations == 1.0)
            .map(|s| s.features_s)
            .sum()
    };
    assert_eq!(gathered_k1(&up), 0.0);
    assert!(gathered_k1(&dev) > 0.0);
}

#[test]
fn model_files_refuse_damage_and_other_schemas() {
    let runs = synthetic(false);
    let model = TrainParams {
        folds: 3,
        max_depth: 3,
        ..TrainParams::default()
    }
    .check()
    .unwrap()
    .fit(&runs, "test")
    .unwrap();
    let dir = temp("modelfile");
    let p = dir.join("m.json");
    model.write(&p).unwrap();
    assert_eq!(Model::read(&p).unwrap(), model);
    let text = std::fs::read_to_string(&p).unwrap();
    let e = Model::from_json(&text[..text.len() / 2], "half.json")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("half.json") && e.contains("not a valid model file"),
        "{e}"
    );
    // The error a damaged copy of the model gets on loading.
    let refused = |m: &Model, name: &str| {
        Model::from_json(&m.to_json(), name)
            .unwrap_err()
            .to_string()
    };
    let mut other = model.clone();
    other.schema.version += 1;
    let e = refused(&other, "old.json");
    assert!(
        e.contains("schema mismatch") && e.contains("retrain"),
        "{e}"
    );
    let mut broken = model.clone();
    broken.known.trees[0].tree.nodes[0] = Node::Split {
        feature: 0,
        threshold: 1.0,
        left: 99,
        right: 0,
    };
    let e = refused(&broken, "b.json");
    assert!(e.contains("known selector"), "{e}");
    // Each selector reads only what its tier computes: a gathered tree reading a sampled
    // feature (what a format-2 model did) is refused.
    let sampled = augur_features::spmv::SpmvFeatures::schema()
        .features
        .iter()
        .position(|f| f.kind == augur_features::FeatureKind::Sampled)
        .unwrap();
    let mut reads = model.clone();
    reads.gathered.features.push(sampled);
    reads.gathered.inputs.push("x".into());
    let e = refused(&reads, "r.json");
    assert!(
        e.contains("gathered selector reads") && e.contains("does not compute"),
        "{e}"
    );
    // A damaged long-row guard: a floor per kernel, finite figures, fallbacks among the
    // kernels, feature indices inside the schema.
    assert!(model.row_guard.is_some());
    let guard = |f: &dyn Fn(&mut crate::guard::RowGuard)| {
        let mut m = model.clone();
        f(m.row_guard.as_mut().unwrap());
        refused(&m, "g.json")
    };
    for (e, want) in [
        (
            guard(&|g| g.floor_per_longest_entry_s.push(1e-9)),
            "kernel floors for",
        ),
        (
            guard(&|g| g.floor_per_longest_entry_s[0] = -1.0),
            "non-finite or negative",
        ),
        (guard(&|g| g.margin = -1.0), "non-finite or negative"),
        (
            guard(&|g| g.fallbacks[0].kernel = 99),
            "fallback kernel beyond",
        ),
        (guard(&|g| g.inputs.row_len_max = 999), "beyond the schema"),
    ] {
        assert!(
            e.contains("g.json") && e.contains("long-row guard") && e.contains(want),
            "{e}"
        );
    }
    // A model without a guard (trained before it, or with --no-row-guard) loads and chooses.
    let mut bare = model.clone();
    bare.row_guard = None;
    let json = bare.to_json();
    assert!(!json.contains("row_guard"));
    assert_eq!(Model::from_json(&json, "bare.json").unwrap(), bare);
    let mut v2 = model.clone();
    v2.format_version = 2;
    let e = refused(&v2, "v2.json");
    assert!(e.contains("v2.json") && e.contains("retrain"), "{e}");
    let e = TrainParams {
        folds: 1,
        ..TrainParams::default()
    }
    .check()
    .unwrap_err();
    assert!(matches!(e, ModelError::Params(_)));
}

#[test]
fn exports_read_and_the_rust_function_compiles_and_agrees() {
    let runs = synthetic(true);
    let mut model = fit(&runs, 4);
    // No synthetic row reaches the guard's LONG_ROW, so the trained guard has no floor; a guard
    // by hand makes the generated `guard` take part: `rows` has a floor (1.5 us per entry, high
    // enough that even the mean row a known-tier pick reads can trip it), `balanced` is the
    // fallback at every k.
    let kernel = |n: &str| model.kernels.iter().position(|k| k == n).unwrap();
    let (rows_k, bal_k) = (kernel("rows"), kernel("balanced"));
    let mut floors = vec![0.0; model.kernels.len()];
    floors[rows_k] = 1.5e-6;
    let lin = |floor_s, per_entry_s| crate::guard::Linear {
        floor_s,
        per_entry_s,
    };
    model.row_guard = Some(crate::guard::RowGuard {
        floor_per_longest_entry_s: floors,
        fallbacks: [1, 1000]
            .into_iter()
            .map(|iterations| crate::guard::Fallback {
                iterations,
                kernel: bal_k,
                first: lin(5e-6, 2e-12),
                per_iter: lin(4e-6, 1e-12),
            })
            .collect(),
        margin: 2.0,
        inputs: model.row_guard.as_ref().unwrap().inputs,
        long_row_matrices: 0,
    });
    model.validate().unwrap();
    assert!(crate::export::text(&model).contains("rows 1.5 us"));
    let text = crate::export::text(&model);
    assert!(
        text.contains("Which features pay for their cost?")
            && text.contains("samples, mean regret"),
        "{text}"
    );
    let dot = crate::export::dot(&model);
    assert!(dot.starts_with("digraph") && dot.trim_end().ends_with('}'));
    // The generated Rust, compiled in a scratch crate against augur-features, must pick what the
    // model picks on every training row and iteration count.
    let dir = temp("rust-export");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let features = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../features");
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"export-check\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\naugur-features = {{ path = {:?} }}\nserde_json = \"1\"\n\n[workspace]\n",
            features.canonicalize().unwrap()
        ),
    )
    .unwrap();
    std::fs::write(dir.join("src/select.rs"), crate::export::rust(&model)).unwrap();
    let mut cases = Vec::new();
    let schema = SpmvFeatures::schema();
    let max_i = schema.index("row_len_max").unwrap();
    let (mut vetoed, mut kept) = (0, 0);
    for m in &runs.matrices {
        // Each matrix as measured, and with its longest row 10^2 and 10^4 times longer: the
        // guard overrules `rows` there, where the tree would not know better.
        for grow in [1.0, 1e2, 1e4] {
            let mut f = m.info.features.clone();
            f[max_i] *= grow;
            for k in [1u32, 30, 1000] {
                let c = model.choose_values(&f, k as f64);
                if c.vetoed.is_some() {
                    assert_eq!((c.vetoed, c.kernel), (Some(rows_k), bal_k));
                    vetoed += 1;
                } else if model.kernels[c.kernel] == "rows" {
                    kept += 1;
                }
                cases.push(serde_json::json!({"f": f, "k": k, "want": model.kernel_name(c)}));
            }
        }
    }
    assert!(vetoed > 0 && kept > 0, "vetoed {vetoed}, kept {kept}");
    std::fs::write(
        dir.join("cases.json"),
        serde_json::to_string(&cases).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        r#"mod select;
use augur_features::spmv::SpmvFeatures;
fn main() {
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string("cases.json").unwrap()).unwrap();
    let mut n = 0;
    for c in &cases {
        let v: Vec<f64> = c["f"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect();
        let f = SpmvFeatures::from_values(&v).unwrap();
        let got = select::select(&f, c["k"].as_u64().unwrap() as u32).name();
        assert_eq!(got, c["want"].as_str().unwrap(), "case {n}");
        n += 1;
    }
    println!("{n} cases agree");
}
"#,
    )
    .unwrap();
    // The workspace's lock file and dev profile, and its target folder: the dependencies the
    // workspace's own build compiled (augur-features, serde_json, ...) are reused, not rebuilt.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let profile = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let profile = &profile[profile
        .find("[profile.")
        .expect("the workspace sets profiles")..];
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), format!("{manifest}\n{profile}")).unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    // Without the variables the outer `cargo test` set for this test (CARGO_PKG_*, ...): build
    // scripts that watch the environment would see another one and rebuild.
    let mut cmd = std::process::Command::new(env!("CARGO"));
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("CARGO_") && k != "CARGO_HOME" {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .args(["run", "--quiet", "--offline"])
        .env("CARGO_TARGET_DIR", target)
        .current_dir(&dir)
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && so.contains(&format!("{} cases agree", cases.len())),
        "stdout: {so}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn one_loader_tells_domains_apart_by_format_alone() {
    let model = fit(&synthetic(false), 4);
    let text = model.to_json();
    let any = crate::AnyModel::from_json(&text, "mem").unwrap();
    assert_eq!((any.domain(), any.format()), ("spmv", "augur-model"));
    assert_eq!(any.into_spmv("mem").unwrap(), model);
    // The `format` field decides, whatever else the file holds: an SpMV file relabelled as a
    // comm model is parsed (and refused) as one.
    let relabelled = text.replacen("\"augur-model\"", "\"augur-comm-model\"", 1);
    let e = crate::AnyModel::from_json(&relabelled, "x.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("x.json") && e.contains("comm"), "{e}");
    // An unknown format, a format that is not a string, no format at all, not JSON.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let with = |f: serde_json::Value| {
        let mut v = v.clone();
        match f {
            serde_json::Value::Null => {
                v.as_object_mut().unwrap().remove("format");
            }
            f => v["format"] = f,
        }
        crate::AnyModel::from_json(&v.to_string(), "m.json")
            .unwrap_err()
            .to_string()
    };
    let e = with("augur-gemm-model".into());
    assert!(
        e.contains("`augur-gemm-model`") && e.contains("`augur-attention-model`"),
        "{e}"
    );
    let e = with(3.into());
    assert!(e.contains("`format` is 3"), "{e}");
    let e = with(serde_json::Value::Null);
    assert!(e.contains("no `format` field"), "{e}");
    let e = crate::AnyModel::from_json("[1, 2]", "m.json")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("m.json") && e.contains("not a model file"),
        "{e}"
    );
}

#[test]
fn damaged_trees_of_the_shipped_models_are_named_by_their_files_label() {
    use crate::attention::AttentionModel;
    use crate::comm::CommModel;
    use crate::overlap::OverlapModel;
    let comm: CommModel = serde_json::from_str(include_str!("../trained/comm-h200.json")).unwrap();
    let attention: AttentionModel =
        serde_json::from_str(include_str!("../trained/attention-h200.json")).unwrap();
    let overlap: OverlapModel =
        serde_json::from_str(include_str!("../trained/overlap-h200.json")).unwrap();
    assert_eq!(comm.validate(), Ok(()));
    assert_eq!(attention.validate(), Ok(()));
    assert_eq!(overlap.validate(), Ok(()));

    let mut c = comm.clone();
    c.trees[0].features[0] = 999;
    let e = c.validate().unwrap_err();
    assert!(
        e.starts_with(&format!("{}: ", c.trees[0].collective))
            && e.contains("feature index 999 beyond the schema"),
        "{e}"
    );
    let mut c = comm;
    c.trees[0].patterns.clear();
    let e = c.validate().unwrap_err();
    assert!(e.contains("no patterns, or inputs unlike features"), "{e}");

    let mut a = attention;
    a.inputs.pop();
    let e = a.validate().unwrap_err();
    assert_eq!(e, "no schedules, or inputs unlike features");

    let mut o = overlap.clone();
    o.trees[0].features[0] = 999;
    let e = o.validate().unwrap_err();
    assert!(
        e.starts_with(&format!("{}: ", o.trees[0].op))
            && e.contains("feature index 999 beyond the schema"),
        "{e}"
    );
    // A tree whose leaf picks a pattern past the file's list.
    let mut o = overlap;
    let past = o.trees[0].patterns.len();
    o.trees[0].tree = Tree {
        nodes: vec![Node::Leaf {
            class: past,
            samples: 1,
            mean_regret: 0.0,
        }],
    };
    let e = o.validate().unwrap_err();
    assert!(e.starts_with(&format!("{}: ", o.trees[0].op)), "{e}");
}

#[test]
fn a_leaf_of_one_training_input_is_counted_in_the_singular() {
    assert_eq!(crate::export::counted(1, "samples"), "1 sample");
    assert_eq!(crate::export::counted(0, "layers"), "0 layers");
    assert_eq!(
        crate::export::counted(7, "training shapes"),
        "7 training shapes"
    );
    // The shipped H100 SpMV model has leaves of one training matrix: its text and DOT say so.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("trained/spmv-cuda-f32-h100.json");
    let model = crate::AnyModel::read(&path)
        .unwrap()
        .into_spmv("h100")
        .unwrap();
    for out in [crate::export::text(&model), crate::export::dot(&model)] {
        assert!(out.contains("1 sample,"), "{out}");
        assert!(!out.contains(" 1 samples"), "{out}");
    }
}
