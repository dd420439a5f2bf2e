//! Tests of the library API on the CPU backend (and of its clear errors where no GPU is present).

use augur_datasets::generate::Generator;
use augur_datasets::manifest::{find_shared_matrices, read_manifest};
use augur_datasets::{Csr, MatrixSource};
use augur_features::spmv::{self as fs, CpuGatherer, CsrPattern, SpmvGatherer};
use augur_kernels::check;
use augur_kernels::cpu::CpuKernel;
use augur_kernels::cuda::GpuScalar;
use augur_kernels::suite::edge_cases;
use augur_kernels::KernelError;
use augur_models::model::Tier;
use augur_models::tree::clean;
use augur_models::ModelFile;

use crate::multi::partition_rows;
use crate::{
    AugurError, Backend, Dispatcher, GatherPolicy, MultiGpuSpmv, PlanOptions, Selector, SpmvPlan,
};

fn gen<T: augur_datasets::Scalar>(spec: &str) -> Csr<T> {
    Generator::parse(spec).unwrap().generate::<T>().unwrap()
}

/// Matrices of several shapes: generated, plus a few shared ones when present.
fn matrices() -> Vec<(String, Csr<f64>)> {
    let mut v: Vec<(String, Csr<f64>)> = [
        "stencil2d:nx=40",
        "stencil3d:nx=12,points=27",
        "powerlaw:rows=3000,alpha=1.7",
        "hubs:n=4000",
        "arrowhead:n=3000",
        "tall:rows=5000,cols=300,nnz=20000",
        "wide:rows=300,cols=5000,nnz=20000",
        "rmat:scale=12,ef=8,seed=3",
        "banded:n=2000,bw=3",
    ]
    .iter()
    .map(|s| (s.to_string(), gen::<f64>(s)))
    .collect();
    if let Some(dir) = find_shared_matrices() {
        if let Ok(entries) = read_manifest(dir.join("MANIFEST.tsv")) {
            // Every 10th real matrix: a spread of sizes and kinds (complex ones are skipped).
            for e in entries.iter().step_by(10) {
                let p = dir.join("suitesparse").join(format!("{}.mtx.gz", e.name));
                if let Ok(src) = MatrixSource::parse(p.to_str().unwrap()) {
                    if let Ok((a, _)) = src.load::<f64>() {
                        v.push((e.name.clone(), a));
                    }
                }
            }
        }
    } else {
        augur_tests::skip(
            "the library tests' shared matrices",
            "no shared matrices found: generated matrices only",
        );
    }
    v
}

#[test]
fn decisions_agree_with_the_model_and_their_paths_hold() {
    for backend in ["cpu", "cuda"] {
        let sel = Selector::builtin(backend).unwrap();
        let m = sel.model();
        for (name, a) in matrices() {
            let p = CsrPattern::of(&a);
            let sampled = {
                let mut f = fs::known(p);
                fs::sample_into(p, &mut f);
                f
            };
            for (f, tier) in [
                (fs::known(p), Tier::Known),
                (sampled, Tier::Sampled),
                (CpuGatherer.gather(p).unwrap(), Tier::Gathered),
            ] {
                for k in [1, 10, 100, 1000, 20000] {
                    let d = sel.select(&f, k);
                    // The selector of the highest tier given decides.
                    assert_eq!(d.tier, tier, "{name}");
                    assert_eq!(d.gathered, tier == Tier::Gathered, "{name}");
                    let tree = m.selector(tier);
                    let mut v = [0.0; augur_models::model::MAX_INPUTS];
                    f.write_values(&mut v);
                    let want = &m.kernels[tree.predict(&v, k as f64)];
                    assert_eq!(&d.kernel, want, "{name} k={k} ({backend})");
                    // Every step holds for the input: its value is on the side it went.
                    for s in d.path.iter().chain(&d.policy) {
                        assert_eq!(clean(s.value) < s.threshold, s.below, "{name}: {s}");
                        assert!(!s.input.is_empty());
                    }
                    assert_eq!(d.policy_tier, sel.tier_for(&f, k), "{name}");
                    let text = d.to_string();
                    assert!(text.contains(&d.kernel), "{text}");
                    for s in &d.path {
                        assert!(text.contains(&s.to_string()), "{text}");
                    }
                }
            }
        }
    }
}

#[test]
fn select_values_refuses_a_wrong_length() {
    let sel = Selector::builtin("cpu").unwrap();
    let e = sel.select_values(&[1.0; 5], 10).unwrap_err();
    assert!(e.to_string().contains("5 feature values given"), "{e}");
    let f = fs::known(CsrPattern::of(&gen::<f64>("stencil2d:nx=10")));
    let d = sel.select_values(&f.values(), 10).unwrap();
    assert_eq!(d, sel.select(&f, 10));
}

#[test]
fn models_for_another_backend_or_device_are_refused() {
    let cuda = Selector::builtin("cuda").unwrap();
    let e = cuda
        .check_for("cpu", "cpu (2 threads)", "f32", true)
        .unwrap_err();
    assert!(matches!(e, AugurError::WrongBackend { .. }), "{e}");
    // The built-in model on another GPU: used, with a note.
    let notes = cuda.check_for("cuda", "NVIDIA H200", "f32", false).unwrap();
    assert!(notes[0].contains("NVIDIA H200"), "{notes:?}");
    // A model file for another GPU or precision: refused unless accepted explicitly.
    let file = Selector::from_model(cuda.model().clone(), "my-model.json");
    let e = file
        .check_for("cuda", "NVIDIA H200", "f32", false)
        .unwrap_err();
    assert!(
        matches!(e, AugurError::WrongDevice { .. }) && e.to_string().contains("--any-device"),
        "{e}"
    );
    assert!(file.check_for("cuda", "NVIDIA H200", "f32", true).is_ok());
    let dev = cuda.model().device.clone();
    assert!(file
        .check_for("cuda", &dev, "f32", false)
        .unwrap()
        .is_empty());
    assert!(file.check_for("cuda", &dev, "f64", false).is_err());
    // Through a plan: a CUDA model on the CPU backend.
    let a = gen::<f32>("stencil2d:nx=10");
    let opts = PlanOptions {
        selector: Some(cuda.clone()),
        ..PlanOptions::default()
    };
    let e = SpmvPlan::new(&a, &Backend::cpu(), opts).err().unwrap();
    assert!(matches!(e, AugurError::WrongBackend { .. }), "{e}");
    // A model for another feature schema (version) is refused, naming the file.
    let mut other = cuda.model().clone();
    other.schema.version += 1;
    let p = augur_tests::write_file("other-schema.json", other.to_json().as_bytes());
    let e = Selector::from_file(&p).unwrap_err().to_string();
    assert!(
        e.contains("other-schema.json") && e.contains("retrain"),
        "{e}"
    );
    // A damaged model file is refused with its path.
    let p = augur_tests::write_file("damaged-model.json", b"{\"format\": \"augur-model\"}");
    let e = Selector::from_file(&p).unwrap_err().to_string();
    assert!(e.contains("damaged-model.json"), "{e}");
}

/// Every CPU kernel (forced) and the model's choice, on edge cases and real matrices, against
/// the f64 reference with the per-row bound of `augur_kernels::check` (|y_i - ref_i| <=
/// 2 (len_i + 2) eps sum_j |a_ij x_j|), outputs poisoned with NaN first.
fn plans_are_correct<T: GpuScalar>() {
    let mut all = edge_cases();
    all.extend(matrices());
    let backend = Backend::cpu();
    for (name, a64) in all {
        let a: Csr<T> = a64.map(|v| T::from_f64(*v));
        let x = check::test_vector::<T>(a.cols(), 7);
        let kernels = std::iter::once(None).chain(CpuKernel::ALL.map(|k| Some(k.name())));
        for k in kernels {
            let opts = PlanOptions {
                kernel: k.map(String::from),
                expected_iterations: 50,
                ..PlanOptions::default()
            };
            let mut plan = SpmvPlan::new(&a, &backend, opts).unwrap();
            if let Some(k) = k {
                assert_eq!(plan.decision().kernel, k);
                assert!(plan.decision().forced);
            }
            let mut y = vec![T::nan(); a.rows()];
            for _ in 0..2 {
                check::poison(&mut y);
                plan.run(&x, &mut y).unwrap();
                let r = check::check(&a, &x, &y);
                assert!(r.passed, "{name} {k:?} {}: {r:?}", T::NAME);
            }
        }
    }
}

#[test]
fn cpu_plans_match_the_reference_f32() {
    plans_are_correct::<f32>();
}

#[test]
fn cpu_plans_match_the_reference_f64() {
    plans_are_correct::<f64>();
}

#[test]
fn wrong_vector_lengths_are_errors() {
    let a = gen::<f32>("tall:rows=50,cols=20,nnz=200");
    let mut plan = SpmvPlan::new(&a, &Backend::cpu(), PlanOptions::default()).unwrap();
    let e = plan.run(&[1.0; 50], &mut [0.0; 50]).unwrap_err();
    assert!(
        matches!(
            e,
            AugurError::Kernel(KernelError::Dimension {
                what: "x",
                expected: 20,
                got: 50,
                ..
            })
        ),
        "{e}"
    );
    let e = plan.run(&[1.0; 20], &mut [0.0; 20]).unwrap_err();
    assert!(e.to_string().contains("y has length 20"), "{e}");
    assert!(plan.run(&[1.0; 20], &mut [0.0; 50]).is_ok());
    // The device-vector API works on the CPU too (host vectors, computed at once).
    let x: Vec<f32> = (0..20).map(|i| i as f32 - 7.5).collect();
    plan.write_x(&x).unwrap();
    plan.launch().unwrap();
    let mut y = vec![f32::NAN; 50];
    plan.read_y(&mut y).unwrap();
    let mut want = vec![0.0f32; 50];
    plan.run(&x, &mut want).unwrap();
    assert_eq!(y, want);
    assert!(plan.write_x(&[1.0; 19]).is_err());
    assert!(plan.read_y(&mut [0.0; 51]).is_err());
    // y becomes the next x only where the lengths agree.
    let e = plan.swap_xy().unwrap_err();
    assert!(
        e.to_string().contains("length 20") && e.to_string().contains("length 50"),
        "{e}"
    );
}

#[test]
fn row_slices_with_their_offset_are_refused() {
    // sprs keeps a row slice's offset in an owned copy: a plan must refuse it, not misread it.
    let a = gen::<f64>("stencil2d:nx=20");
    let offset = a.slice_outer(100..200).to_owned();
    assert!(!offset.indptr().is_proper());
    let e = SpmvPlan::new(&offset, &Backend::cpu(), PlanOptions::default())
        .err()
        .expect("refused");
    assert!(e.to_string().contains("start at 470, not 0"), "{e}");
    let e = MultiGpuSpmv::on_devices(&offset, &[0], Default::default())
        .err()
        .expect("refused");
    assert!(e.to_string().contains("not 0"), "{e}");
    let v = a.slice_outer(100..200);
    let rebased = Csr::new(
        v.shape(),
        v.indptr().to_proper().into_owned(),
        v.indices().to_vec(),
        v.data().to_vec(),
    );
    let mut plan = SpmvPlan::new(&rebased, &Backend::cpu(), PlanOptions::default()).unwrap();
    let x = vec![1.0; 400];
    let mut y = vec![f64::NAN; 100];
    plan.run(&x, &mut y).unwrap();
    let mut want = vec![0.0; 100];
    augur_kernels::reference::spmv(&rebased, &x, &mut want).unwrap();
    assert_eq!(y, want);
}

#[test]
fn matrices_beyond_i32_are_refused() {
    // sprs will not build such a Csr (and the reader refuses such files: see the CLI test), so
    // the guard is tested on shapes.
    let big = i32::MAX as usize + 1;
    for (shape, what) in [
        ((big, 10, 10), "rows"),
        ((10, big, 10), "columns"),
        ((10, 10, big), "entries"),
    ] {
        let e = crate::plan::check_shape(shape.0, shape.1, shape.2).unwrap_err();
        assert!(
            matches!(e, AugurError::TooLarge { what: w, .. } if w == what)
                && e.to_string().contains("32-bit"),
            "{e}"
        );
    }
    assert!(crate::plan::check_shape(i32::MAX as usize, 1, 0).is_ok());
}

#[test]
fn forced_kernels_are_checked_and_gathering_follows_the_policy() {
    let a = gen::<f32>("powerlaw:rows=2000,alpha=1.8");
    let b = Backend::cpu();
    let opts = |kernel: Option<&str>, gather| PlanOptions {
        kernel: kernel.map(String::from),
        gather,
        ..PlanOptions::default()
    };
    let e = SpmvPlan::new(&a, &b, opts(Some("vector32"), GatherPolicy::Auto))
        .err()
        .unwrap();
    assert!(e.to_string().contains("unknown kernel `vector32`"), "{e}");
    let p = SpmvPlan::new(&a, &b, opts(None, GatherPolicy::Always)).unwrap();
    assert!(p.decision().gathered && !p.features().row_len_max.is_nan());
    let p = SpmvPlan::new(&a, &b, opts(None, GatherPolicy::Sample)).unwrap();
    assert_eq!(p.decision().tier, Tier::Sampled);
    assert!(!p.features().sampled_warp_span.is_nan() && p.features().row_len_max.is_nan());
    let p = SpmvPlan::new(&a, &b, opts(None, GatherPolicy::Never)).unwrap();
    assert!(!p.decision().gathered && p.features().row_len_max.is_nan());
    assert!(p.features().sampled_warp_span.is_nan());
    assert_eq!(p.features().nnz, a.nnz() as f64);
}

#[test]
fn plans_from_unchecked_arrays_check_them_while_they_upload() {
    // Small (checked before the upload) and large (checked, and sampled, on another core while
    // it uploads): the same features and products as a plan from the checked matrix. A CPU
    // plan does its host work on this thread (its upload hides nothing); the second round takes
    // the path of a GPU plan, beside the upload.
    for beside in [false, true] {
        crate::plan::CPU_HIDES.with(|c| c.set(beside));
        from_unchecked_arrays();
    }
    crate::plan::CPU_HIDES.with(|c| c.set(false));
}

fn from_unchecked_arrays() {
    let b = Backend::cpu();
    for spec in [
        "stencil2d:nx=30",
        "stencil2d:nx=400",
        "powerlaw:rows=60000,alpha=1.8",
    ] {
        let a = gen::<f64>(spec);
        assert_eq!(
            a.nnz() >= crate::plan::OVERLAP_MIN_NNZ,
            spec != "stencil2d:nx=30",
            "{spec}: the sizes this test means"
        );
        let (p, i, v) = (a.indptr().into_raw_storage(), a.indices(), a.data());
        let x = check::test_vector::<f64>(a.cols(), 3);
        for gather in [
            GatherPolicy::Never,
            GatherPolicy::Sample,
            GatherPolicy::Always,
        ] {
            let opts = PlanOptions::default()
                .gather(gather)
                .expected_iterations(10);
            let mut want = SpmvPlan::new(&a, &b, opts.clone()).unwrap();
            let mut got = SpmvPlan::from_arrays(a.shape(), p, i, v, &b, opts).unwrap();
            assert_eq!(got.decision().kernel, want.decision().kernel, "{spec}");
            let (f, g) = (want.features().values(), got.features().values());
            assert!(
                f.iter()
                    .zip(&g)
                    .all(|(x, y)| x == y || (x.is_nan() && y.is_nan())),
                "{spec} {gather:?}"
            );
            let (mut y1, mut y2) = (vec![f64::NAN; a.rows()], vec![f64::NAN; a.rows()]);
            want.run(&x, &mut y1).unwrap();
            got.run(&x, &mut y2).unwrap();
            assert_eq!(y1, y2, "{spec} {gather:?}");
        }
        // Broken arrays: a column out of range, a repeated column, a decreasing row pointer,
        // each deep inside the matrix; every policy refuses them before any kernel runs.
        let mid = a.nnz() / 2;
        let row = p.partition_point(|&q| (q as usize) <= mid) - 1;
        let mut out_of_range = i.to_vec();
        out_of_range[mid] = a.cols() as i32;
        let mut repeated = i.to_vec();
        let s = p[row] as usize;
        if p[row + 1] as usize - s >= 2 {
            repeated[s + 1] = repeated[s];
        }
        let mut decreasing = p.to_vec();
        decreasing[row + 1] = decreasing[row - 1];
        for gather in [
            GatherPolicy::Never,
            GatherPolicy::Sample,
            GatherPolicy::Always,
        ] {
            let opts = PlanOptions::default().gather(gather);
            for (what, pp, ii) in [
                ("out of range", p, &out_of_range[..]),
                ("repeated", p, &repeated[..]),
                ("decreasing", &decreasing[..], i),
            ] {
                let e = SpmvPlan::from_arrays(a.shape(), pp, ii, v, &b, opts.clone())
                    .err()
                    .unwrap_or_else(|| panic!("{spec} {what} {gather:?}: accepted"));
                assert!(
                    matches!(e, AugurError::NotCanonical { .. })
                        && e.to_string().contains("csr_from_arrays"),
                    "{spec} {what}: {e}"
                );
            }
        }
    }
}

#[test]
fn the_dispatcher_reuses_plans_by_matrix_identity() {
    let a = gen::<f32>("stencil2d:nx=30");
    let b = gen::<f32>("stencil2d:nx=30");
    // Same shape and pattern, other values: another matrix.
    let c: Csr<f32> = a.map(|v| v * 2.0);
    let mut d = Dispatcher::new(Backend::cpu(), PlanOptions::default());
    let x = check::test_vector::<f32>(a.cols(), 1);
    let mut y = vec![0.0f32; a.rows()];
    for _ in 0..3 {
        d.spmv(&a, &x, &mut y).unwrap();
    }
    assert_eq!((d.misses, d.hits, d.len()), (1, 2, 1));
    d.spmv(&b, &x, &mut y).unwrap();
    d.spmv(&c, &x, &mut y).unwrap();
    assert_eq!((d.misses, d.len()), (3, 3));
    let r = check::check(&c, &x, &y);
    assert!(r.passed, "{r:?}");
    assert!(d.forget(&a));
    assert!(!d.forget(&a));
    assert_eq!(d.len(), 2);
}

#[test]
fn no_gpu_is_a_clear_error_not_a_panic() {
    if augur_kernels::cuda::available().is_ok() {
        // Past libtest's capture (see augur_tests::skip): shown in the normal output.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED no_gpu_is_a_clear_error_not_a_panic: a GPU is present"
        );
        return;
    }
    let a = gen::<f32>("stencil2d:nx=10");
    let e = Backend::cuda(0).err().unwrap().to_string();
    assert!(e.contains("not available"), "{e}");
    let e = MultiGpuSpmv::new(&a, 2, PlanOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not available"), "{e}");
    assert_eq!(Backend::auto().kind(), "cpu");
}

#[test]
fn shards_split_rows_by_equal_nonzeros() {
    for spec in [
        "hubs:n=5000",
        "stencil2d:nx=50",
        "arrowhead:n=100",
        "uniform:rows=3,cols=3,nnz=0",
    ] {
        let a = gen::<f32>(spec);
        for n in [1, 2, 3, 4, 8] {
            let b = partition_rows(&a, n);
            assert_eq!(b.len(), n + 1);
            assert_eq!((b[0], b[n]), (0, a.rows()), "{spec}");
            assert!(b.windows(2).all(|w| w[0] <= w[1]), "{spec} {b:?}");
            let ptr = a.indptr();
            let ptr = ptr.raw_storage();
            // No shard holds more than its share plus one row.
            let max_row = (0..a.rows())
                .map(|r| (ptr[r + 1] - ptr[r]) as usize)
                .max()
                .unwrap_or(0);
            for w in b.windows(2) {
                let nnz = (ptr[w[1]] - ptr[w[0]]) as usize;
                assert!(nnz <= a.nnz().div_ceil(n) + max_row, "{spec} n={n} {b:?}");
            }
        }
    }
}

#[test]
fn shard_traffic_counts_the_halo_against_the_all_gather() {
    use crate::multi::shard_traffic;
    // A 10 x 10 grid cut in two halves: each half reads one grid row (10 entries) of the other.
    let a = gen::<f32>("stencil2d:nx=10");
    let t = shard_traffic(&a, 2).unwrap();
    assert_eq!(
        t.iter()
            .map(|s| (s.rows.clone(), s.nnz, s.halo_entries, s.allgather_entries))
            .collect::<Vec<_>>(),
        vec![(0..50, 230, 10, 50), (50..100, 230, 10, 50)]
    );
    // Block diagonal: no shard reads another's entries when the cut falls between blocks.
    let b = gen::<f32>("blockdiag:n=256,block=64");
    assert!(shard_traffic(&b, 4)
        .unwrap()
        .iter()
        .all(|s| s.halo_entries == 0));
    // One shard needs nothing from others.
    assert_eq!(shard_traffic(&a, 1).unwrap()[0].halo_entries, 0);
    let e = shard_traffic(&gen::<f32>("tall:rows=50,cols=20,nnz=100"), 2).unwrap_err();
    assert!(e.to_string().contains("square"), "{e}");
}

#[test]
fn gather_choice_follows_the_comm_model_with_its_exceptions() {
    use crate::multi::{gather_choice, GatherMode};
    use augur_features::message::LinkType;
    let m = crate::defaults::comm_model().unwrap();
    let dev = m.device.clone();
    let pick = |bytes: usize, n: usize, chunks: usize| {
        gather_choice(
            Some(&m),
            GatherMode::Auto,
            bytes,
            n,
            chunks,
            LinkType::Nvlink,
            &dev,
        )
    };
    // A forced mode is kept; one GPU and chunks > 1 take NCCL's padded all-gather.
    let c = gather_choice(
        Some(&m),
        GatherMode::Pull,
        1 << 20,
        2,
        1,
        LinkType::Nvlink,
        &dev,
    );
    assert_eq!(c.mode, GatherMode::Pull);
    assert_eq!(pick(1 << 20, 1, 1).mode, GatherMode::AllGather);
    let c = pick(1 << 20, 2, 3);
    assert_eq!(c.mode, GatherMode::AllGather);
    assert!(c.notes[0].contains("chunks"));
    // Otherwise the model's pick, with its path.
    let mut modes = std::collections::BTreeSet::new();
    for bytes in [4 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30] {
        for n in [2, 4] {
            let c = pick(bytes, n, 1);
            assert!(!c.path.is_empty());
            assert!(c.notes.is_empty(), "{:?}", c.notes);
            let shape = augur_features::message::MessageShape::parse(&format!(
                "message:collective=all-gather,bytes={bytes},world={n}"
            ))
            .unwrap();
            let p = m.choose(&shape).unwrap();
            assert_eq!(
                Some(c.mode),
                GatherMode::from_pattern(p),
                "{bytes} B on {n}"
            );
            modes.insert(c.mode.name());
        }
    }
    // The built-in H200 model: LL for small messages on 2 GPUs, copy engines for 1 GiB.
    assert!(
        modes.contains("ll") && modes.contains("copy-engine"),
        "{modes:?}"
    );
    // Another device is noted; no model means NCCL.
    let c = gather_choice(
        Some(&m),
        GatherMode::Auto,
        1 << 20,
        2,
        1,
        LinkType::Nvlink,
        "Other GPU",
    );
    assert!(c.notes.iter().any(|n| n.contains("Other GPU")));
    let c = gather_choice(None, GatherMode::Auto, 1 << 20, 2, 1, LinkType::Nvlink, "");
    assert_eq!(c.mode, GatherMode::AllGather);
}

#[test]
fn attention_schedule_follows_the_built_in_model_and_explains_it() {
    use crate::attention::choose_schedule;
    use augur_features::attention::AttentionShape;
    use augur_kernels::cuda::attention::Schedule;
    let m = crate::defaults::attention_model().unwrap();
    let shape = |s: &str| AttentionShape::parse(s).unwrap();
    // One long sequence with few KV heads needs splits; a big batch of short ones does not.
    let long = shape("attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=131072");
    let c = choose_schedule(&m, &long, None, &m.device).unwrap();
    assert!(matches!(c.schedule, Schedule::Split(s) if s >= 16), "{c:?}");
    assert!(
        c.path.iter().any(|p| p.starts_with("kv_len_max = 131072")),
        "{c:?}"
    );
    assert!(c.notes.is_empty());
    let many = shape("attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=256*256");
    let c = choose_schedule(&m, &many, None, &m.device).unwrap();
    assert!(
        !matches!(c.schedule, Schedule::Split(s) if s >= 16),
        "{c:?}"
    );
    // Every pick is a schedule this build has, and matches the model.
    for s in [
        "attention:q_heads=8,kv_heads=1,head_dim=256,dtype=bf16,lens=16384*4",
        "attention:q_heads=16,kv_heads=16,head_dim=64,dtype=f16,lens=16*256",
        "attention:q_heads=64,kv_heads=8,head_dim=128,dtype=bf16,lens=2048*32,page=16",
        "attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=32000;64*63",
    ] {
        let sh = shape(s);
        let c = choose_schedule(&m, &sh, None, &m.device).unwrap();
        assert_eq!(c.schedule.name(), m.choose(&sh).unwrap());
        // How sure: the training shapes at the pick's leaf (the shipped model records them).
        let (shapes, regret) = c
            .evidence
            .expect("the shipped model's leaves are annotated");
        assert!(shapes >= 1 && (0.0..0.5).contains(&regret), "{c:?}");
        assert_eq!(c.evidence, m.leaf_evidence(&sh));
    }
    // Forced, another device, an invalid shape.
    let c = choose_schedule(&m, &long, Some(Schedule::Head), "").unwrap();
    assert_eq!(c.schedule, Schedule::Head);
    assert!(c.path.is_empty() && c.notes[0].contains("forced"));
    assert_eq!(c.evidence, None);
    let c = choose_schedule(&m, &long, None, "Other GPU").unwrap();
    assert!(c.notes.iter().any(|n| n.contains("Other GPU")));
    let mut bad = long.clone();
    bad.kv_heads = 3;
    assert!(choose_schedule(&m, &bad, None, "").is_err());
}

#[test]
fn option_builders_set_what_they_name_and_keep_the_rest() {
    let o = PlanOptions::default()
        .expected_iterations(7)
        .kernel("scalar")
        .gather(crate::GatherPolicy::Never)
        .allow_other_device(true);
    let d = PlanOptions::default();
    assert_eq!(o.expected_iterations, 7);
    assert_eq!(o.kernel.as_deref(), Some("scalar"));
    assert_eq!(o.gather, crate::GatherPolicy::Never);
    assert!(o.allow_other_device && o.selector.is_none() && !d.allow_other_device);
    let m = crate::MultiOptions::default().chunks(3).plan(o);
    assert_eq!((m.chunks, m.plan.expected_iterations), (3, 7));
    assert_eq!(m.gather, crate::GatherMode::Auto);
}

/// A model whose gathered trees read no column statistics (trained with `--gather-cost
/// host-rows`, here on the committed CPU runs) makes a plan that gathers compute the row-length
/// statistics alone (exactly, from the row pointers; the column statistics NaN) and decide on
/// the gathered tree; its product is right; a model that reads them still gets them all.
#[test]
fn a_rows_only_model_gathers_the_row_pointers_only() {
    use augur_models::train::{GatherCost, TrainParams};
    use std::sync::Arc;
    let runs_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../datasets/runs/spmv-cpu-f32-vm.csv");
    let runs = augur_models::runs::Runs::read(&[runs_path]).unwrap();
    let params = TrainParams {
        gather_cost: GatherCost::HostRows,
        max_depth: 4,
        min_weight_leaf: vec![3.0],
        ..TrainParams::default()
    };
    let model = params.check().unwrap().fit(&runs, "test").unwrap();
    assert!(!model.gathered_reads_columns());
    let rows_only = Arc::new(Selector::from_model(model, "rows-only.json"));
    let full = Arc::new(Selector::load("default-cpu").unwrap());
    assert!(full.model().gathered_reads_columns());
    let b = Backend::cpu();
    for spec in ["powerlaw:rows=3000,alpha=1.8", "stencil2d:nx=500"] {
        let a = gen::<f32>(spec);
        let exact = CpuGatherer.exact(CsrPattern::of(&a));
        let opts = |s: &Arc<Selector>| {
            PlanOptions::default()
                .gather(GatherPolicy::Always)
                .selector(s.clone())
        };
        let mut p = SpmvPlan::new(&a, &b, opts(&rows_only)).unwrap();
        assert_eq!(p.decision().tier, Tier::Gathered, "{spec}");
        let f = p.features().clone();
        assert!(f.bandwidth.is_nan() && f.mean_col_dist.is_nan() && f.x_segments_per_row.is_nan());
        assert_eq!(f.row_len_max, exact.row_len_max, "{spec}");
        assert_eq!(f.top1pct_nnz_frac, exact.top1pct_nnz_frac, "{spec}");
        let x = check::test_vector::<f32>(a.cols(), 3);
        let mut y = vec![f32::NAN; a.rows()];
        p.run(&x, &mut y).unwrap();
        assert!(check::check(&a, &x, &y).passed, "{spec}");
        let p = SpmvPlan::new(&a, &b, opts(&full)).unwrap();
        assert_eq!(p.features().bandwidth, exact.bandwidth, "{spec}");
    }
}

/// The long-row guard overrules a gathered pick that the longest row proves slow: the
/// Decision (the selector's own walk through the trees) and `Model::choose` (the exported
/// function's twin) agree on the fallback, and the explanation says what was overruled and why.
#[test]
fn the_long_row_guard_overrules_a_pick_and_explains_it() {
    let shipped = Selector::load("default-cuda-h200").unwrap();
    let model = shipped.model().clone();
    let g = model
        .row_guard
        .as_ref()
        .expect("the shipped GPU models have a guard");
    assert!(g.long_row_matrices > 0 && g.floor_per_longest_entry_s.iter().any(|&f| f > 0.0));
    let mut bare = model.clone();
    bare.row_guard = None;
    let mut overruled = 0;
    for (spec, k) in [
        "hubs:n=20000,hubs=4,hub_len=20000,short=6,seed=1",
        "stencil2d:nx=300",
    ]
    .into_iter()
    .flat_map(|s| [1u32, 10, 100].map(|k| (s, k)))
    {
        let a = gen::<f32>(spec);
        let f = CpuGatherer.exact(CsrPattern::of(&a));
        let mut v = [0.0; augur_models::model::MAX_INPUTS];
        f.write_values(&mut v);
        let v = &v[..model.schema.features.len()];
        // The two paths agree with the shipped guard as it is (the Decision reads the tier
        // whose features are given, here the gathered one; `choose` the policy's).
        let guarded = |m: &augur_models::Model| {
            let pick = m.gathered.predict(v, k as f64);
            m.guard(v, Tier::Gathered, k as f64, pick)
                .map_or(pick, |g| g.0)
        };
        let d = Selector::from_model(model.clone(), "h200.json").select(&f, k);
        assert_eq!(d.kernel, model.kernels[guarded(&model)], "{spec} k = {k}");
        // A floor on every kernel but the fallback: whatever the gathered tree picks, unless
        // it is the fallback, is overruled.
        let mut strict = model.clone();
        let g = strict.row_guard.as_mut().unwrap();
        let fb = g.fallback_for(k as f64).unwrap().kernel;
        for (i, fl) in g.floor_per_longest_entry_s.iter_mut().enumerate() {
            *fl = if i == fb { 0.0 } else { 1e-3 };
        }
        let tree = Selector::from_model(bare.clone(), "bare.json").select(&f, k);
        let d = Selector::from_model(strict.clone(), "strict.json").select(&f, k);
        assert_eq!(d.tier, Tier::Gathered, "{spec} k = {k}");
        assert_eq!(d.kernel, strict.kernels[fb], "{spec} k = {k}");
        assert_eq!(guarded(&strict), fb, "{spec} k = {k}");
        if tree.kernel == strict.kernels[fb] {
            assert!(d.guard.is_none(), "{spec} k = {k}");
            continue;
        }
        overruled += 1;
        let gv = d.guard.as_ref().expect("overruled");
        assert_eq!(gv.vetoed, tree.kernel);
        assert!(gv.exact && gv.longest_row == f.row_len_max);
        assert!(gv.floor_s > gv.margin * gv.fallback_s);
        let text = d.to_string();
        assert!(
            text.contains(&format!(
                "long-row guard: {} overruled: the longest row",
                gv.vetoed
            )) && text.contains(" entries) alone needs at least ")
                && text.contains(&format!("({} entries)", f.row_len_max))
                && text.contains(&format!("-> {}: ", tree.kernel))
                && text.ends_with(&format!("-> {}\n", d.kernel)),
            "{text}"
        );
    }
    assert!(
        overruled > 0,
        "the gathered tree picked the fallback everywhere"
    );
}
