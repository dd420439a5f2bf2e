//! SpMV features: exact values on hand-built and closed-form matrices, a naive two-pass
//! recomputation on skewed generated ones, and the schema's JSON round trip and mismatch error.

use augur_datasets::generate::Generator;
use augur_datasets::Csr;
use augur_features::spmv::{self, CpuGatherer, CsrPattern, SpmvFeatures, SpmvGatherer};
use augur_features::{FeatureError, FeatureSchema};

fn feats(a: &Csr<f64>) -> SpmvFeatures {
    CpuGatherer.gather(CsrPattern::of(a)).unwrap()
}

fn gen(spec: &str) -> Csr<f64> {
    Generator::parse(spec).unwrap().generate().unwrap()
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-12 * b.abs().max(1.0),
        "{what}: {a} vs {b}"
    );
}

#[test]
fn diagonal() {
    let f = feats(&Csr::eye(100));
    assert_eq!(
        (f.rows, f.cols, f.nnz, f.density, f.mean_row_len),
        (100.0, 100.0, 100.0, 0.01, 1.0)
    );
    assert_eq!(
        (
            f.row_len_min,
            f.row_len_max,
            f.row_len_std,
            f.row_len_cv,
            f.row_len_skew
        ),
        (1.0, 1.0, 0.0, 0.0, 0.0)
    );
    assert_eq!(
        (f.empty_row_frac, f.max_mean_ratio, f.top1pct_nnz_frac),
        (0.0, 1.0, 0.01)
    );
    assert_eq!((f.hist_le2, f.hist_gt1024), (1.0, 0.0));
    assert_eq!(
        (f.bandwidth, f.mean_col_dist, f.x_segments_per_row),
        (0.0, 0.0, 1.0)
    );
}

#[test]
fn arrowhead() {
    let f = feats(&gen("arrowhead:n=1000"));
    assert_eq!(f.nnz, 2998.0);
    assert_eq!((f.row_len_min, f.row_len_max), (2.0, 1000.0));
    close(f.max_mean_ratio, 1000.0 / 2.998, "max/mean");
    close(f.top1pct_nnz_frac, 1018.0 / 2998.0, "top 1%");
    close(f.hist_le2, 0.999, "hist <= 2");
    close(f.hist_le1024, 0.001, "hist <= 1024");
    assert_eq!(f.bandwidth, 999.0);
    close(f.mean_col_dist, 999000.0 / 2998.0, "mean |col - row|");
    // Row 0 touches 32 segments; rows 1..31 one (columns 0 and i share it); rows 32.. two.
    close(
        f.x_segments_per_row,
        (32.0 + 31.0 + 2.0 * 968.0) / 1000.0,
        "x segments",
    );
}

#[test]
fn empty_rows_and_empty_matrices() {
    let a = Csr::new(
        (6, 4),
        vec![0, 0, 2, 2, 2, 3, 3],
        vec![0, 3, 1],
        vec![1.5, -0.5, 2.0],
    );
    let f = feats(&a);
    close(f.empty_row_frac, 4.0 / 6.0, "empty rows");
    assert_eq!(
        (f.row_len_min, f.row_len_max, f.top1pct_nnz_frac),
        (0.0, 2.0, 2.0 / 3.0)
    );
    assert_eq!(f.bandwidth, 3.0);
    close(f.mean_col_dist, (1.0 + 2.0 + 3.0) / 3.0, "mean |col - row|");
    for z in [Csr::<f64>::zero((0, 0)), Csr::zero((5, 3))] {
        let f = feats(&z);
        assert!(f.values().iter().all(|v| v.is_finite()), "{f:?}");
    }
}

#[test]
fn stencil2d_closed_form() {
    let n = 50.0;
    let f = feats(&gen("stencil2d:nx=50"));
    assert_eq!(f.nnz, 5.0 * n * n - 4.0 * n);
    assert_eq!((f.row_len_min, f.row_len_max, f.bandwidth), (3.0, 5.0, n));
    let (interior, edge, corner) = ((n - 2.0) * (n - 2.0), 4.0 * (n - 2.0), 4.0);
    let mean = (5.0 * interior + 4.0 * edge + 3.0 * corner) / (n * n);
    close(f.mean_row_len, mean, "mean");
    let var = (interior * 25.0 + edge * 16.0 + corner * 9.0) / (n * n) - mean * mean;
    close(f.row_len_std, var.sqrt(), "std");
    close(f.hist_le8, 1.0, "all rows have 3..=8 entries");
    // x-neighbours are 1 column away, y-neighbours n: 2n(n-1) of each.
    close(
        f.mean_col_dist,
        2.0 * n * (n - 1.0) * (1.0 + n) / f.nnz,
        "mean |col - row|",
    );
}

/// Recompute every row-length statistic the slow, obvious way and compare.
#[test]
fn matches_a_naive_two_pass_computation() {
    for spec in [
        "powerlaw:rows=30000,alpha=1.9,seed=5",
        "rmat:scale=14,ef=8",
        "hubs:n=9000,hubs=3",
    ] {
        let a = gen(spec);
        let f = feats(&a);
        let lens: Vec<f64> = a.outer_iterator().map(|r| r.nnz() as f64).collect();
        let n = lens.len() as f64;
        let mean = lens.iter().sum::<f64>() / n;
        let std = (lens.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / n).sqrt();
        let skew = lens.iter().map(|l| ((l - mean) / std).powi(3)).sum::<f64>() / n;
        close(f.row_len_std, std, &format!("{spec} std"));
        close(f.row_len_cv, std / mean, &format!("{spec} cv"));
        assert!(
            (f.row_len_skew - skew).abs() <= 1e-6 * skew.abs().max(1.0),
            "{spec} skew {} vs {skew}",
            f.row_len_skew
        );
        let mut sorted = lens.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let k = lens.len().div_ceil(100);
        close(
            f.top1pct_nnz_frac,
            sorted[..k].iter().sum::<f64>() / f.nnz,
            &format!("{spec} top 1%"),
        );
        let hist_sum =
            f.hist_le2 + f.hist_le8 + f.hist_le32 + f.hist_le128 + f.hist_le1024 + f.hist_gt1024;
        close(hist_sum, 1.0, &format!("{spec} histogram sums to 1"));
        let segs: f64 = a
            .outer_iterator()
            .map(|r| {
                let mut s: Vec<usize> = r.indices().iter().map(|&c| c as usize / 32).collect();
                s.dedup();
                s.len() as f64
            })
            .sum();
        close(
            f.x_segments_per_row,
            segs / n,
            &format!("{spec} x segments"),
        );
    }
}

#[test]
fn known_only_leaves_gathered_nan_and_costs_are_recorded() {
    let a = gen("banded:n=5000,bw=4");
    let k = spmv::extract_known(CsrPattern::of(&a));
    assert_eq!(k.features.nnz, a.nnz() as f64);
    assert!(k.features.row_len_max.is_nan());
    assert!(k.cost.gathered_s.is_none());
    let g = spmv::extract(CsrPattern::of(&a), &CpuGatherer).unwrap();
    assert!(g.cost.gathered_s.unwrap() > 0.0);
    assert_eq!(g.cost.gatherer, "cpu");
    assert_eq!(g.schema_version, spmv::SPMV_SCHEMA_VERSION);
}

#[test]
fn schema_round_trips_and_refuses_a_mismatch() {
    let s = SpmvFeatures::schema();
    assert_eq!(s.features.len(), feats(&Csr::eye(3)).values().len());
    let back = FeatureSchema::from_json(&s.to_json()).unwrap();
    assert_eq!(back, s);
    s.check_same(&back).unwrap();
    let mut newer = s.clone();
    newer.version += 1;
    let e = s.check_same(&newer).unwrap_err();
    assert!(
        e.to_string().contains(&format!(
            "expected `spmv` v{}, got `spmv` v{}",
            s.version,
            s.version + 1
        )),
        "{e}"
    );
    let mut reordered = s.clone();
    reordered.features.swap(3, 4);
    let e = s.check_same(&reordered).unwrap_err();
    assert!(e.to_string().contains("differ from position 3"), "{e}");
    assert!(matches!(
        FeatureSchema::from_json("{"),
        Err(FeatureError::Json(_))
    ));
    // Every feature is documented with a unit.
    assert!(s
        .features
        .iter()
        .all(|f| !f.doc.is_empty() && !f.unit.is_empty()));
}

/// The gatherer sums in integers, so its features do not depend on how rows are split among
/// threads: the same bits on 1 and 3 threads (what lets GPU and CPU gatherers agree exactly).
#[test]
fn cpu_gatherer_is_bit_identical_across_thread_counts() {
    for spec in [
        "powerlaw:rows=50000,alpha=1.9,seed=5",
        "rmat:scale=15,ef=8",
        "stencil3d:nx=20,points=27",
    ] {
        let a = gen(spec);
        let one = augur_tests::with_threads(1, || feats(&a).values());
        let three = augur_tests::with_threads(3, || feats(&a).values());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&one), bits(&three), "{spec}");
    }
}
