//! Generators: closed-form structure, determinism (seed, thread count), spec errors.

use augur_datasets::generate::Generator;
use augur_datasets::{mtx, Csr, DatasetError, MatrixSource};
use augur_kernels::reference;

use augur_tests::{row_lengths, temp_dir, triplets, with_threads};

fn gen(spec: &str) -> Csr<f64> {
    Generator::parse(spec)
        .unwrap_or_else(|e| panic!("{e}"))
        .generate::<f64>()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn spec_error(spec: &str, needle: &str) {
    match MatrixSource::parse(spec).and_then(|s| s.load::<f64>()) {
        Err(e @ DatasetError::Spec { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(needle), "`{msg}` should mention `{needle}`");
            assert!(msg.contains(spec), "`{msg}` should quote the spec");
        }
        other => panic!("{spec}: expected a spec error, got {other:?}"),
    }
}

#[test]
fn stencils_match_closed_forms() {
    let (nx, ny, nz) = (13usize, 7usize, 5usize);
    let a = gen(&format!("stencil2d:nx={nx},ny={ny}"));
    assert_eq!(a.rows(), nx * ny);
    assert_eq!(a.nnz(), 5 * nx * ny - 2 * nx - 2 * ny);
    let a9 = gen(&format!("stencil2d:nx={nx},ny={ny},points=9"));
    assert_eq!(a9.nnz(), (3 * nx - 2) * (3 * ny - 2));
    let a7 = gen(&format!("stencil3d:nx={nx},ny={ny},nz={nz}"));
    assert_eq!(
        a7.nnz(),
        7 * nx * ny * nz - 2 * (nx * ny + ny * nz + nx * nz)
    );
    let a27 = gen(&format!("stencil3d:nx={nx},ny={ny},nz={nz},points=27"));
    assert_eq!(a27.nnz(), (3 * nx - 2) * (3 * ny - 2) * (3 * nz - 2));
    // Laplacian: A * ones is 0 on interior rows and the count of missing neighbours elsewhere.
    for (m, full) in [(&a, 4.0), (&a7, 6.0), (&a27, 26.0), (&a9, 8.0)] {
        let mut y = vec![f64::NAN; m.rows()];
        reference::spmv(m, &vec![1.0; m.cols()], &mut y).unwrap();
        for (i, (yi, len)) in y.iter().zip(row_lengths(m)).enumerate() {
            assert_eq!(*yi, full - (len as f64 - 1.0), "row {i}");
        }
    }
}

#[test]
fn banded_blockdiag_arrowhead_hubs_structure() {
    let bw = 5usize;
    let a = gen(&format!("banded:n=300,bw={bw},seed=4"));
    for (i, j, v) in triplets(&a) {
        assert!(i.abs_diff(j) <= bw && (0.1..1.0).contains(&v));
    }
    for (i, r) in a.outer_iterator().enumerate() {
        let idx = r.indices();
        assert!(idx.contains(&(i as i32)), "diagonal of row {i}");
        assert_eq!(
            idx.len(),
            (idx[idx.len() - 1] - idx[0] + 1) as usize,
            "contiguous row {i}"
        );
    }
    let lens = row_lengths(&a);
    assert!(lens.iter().any(|&l| l == 2 * bw + 1) && lens.iter().any(|&l| l <= 3));

    let b = gen("blockdiag:n=100,block=16");
    assert_eq!(b.nnz(), 6 * 16 * 16 + 4 * 4);
    assert!(triplets(&b).iter().all(|&(i, j, _)| i / 16 == j / 16));

    let c = gen("arrowhead:n=1000");
    assert_eq!(c.nnz(), 3 * 1000 - 2);
    assert_eq!(row_lengths(&c)[0], 1000);

    let h = gen("hubs:n=5000,hubs=3,hub_len=4000,short=6,seed=9");
    let lens = row_lengths(&h);
    assert_eq!(lens.iter().filter(|&&l| l == 4000).count(), 3);
    assert_eq!(lens.iter().filter(|&&l| l == 6).count(), 4997);
}

#[test]
fn uniform_powerlaw_rectangular_statistics() {
    let u = gen("uniform:rows=20000,cols=5000,row_len=12,seed=5");
    let mean = u.nnz() as f64 / u.rows() as f64;
    // Binomial row lengths: the mean of 20000 rows is within 5 standard errors of 12.
    assert!(
        (mean - 12.0).abs() < 5.0 * (12.0f64 / 20000.0).sqrt(),
        "{mean}"
    );
    let n = gen("uniform:rows=1000,nnz=5000");
    assert!((n.nnz() as f64 - 5000.0).abs() < 5.0 * 5000f64.sqrt());

    let p = gen("powerlaw:rows=50000,cols=20000,alpha=2.5,min=2,max=5000,seed=1");
    let lens = row_lengths(&p);
    assert!(lens.iter().all(|&l| (2..=5000).contains(&l)));
    // P(len >= 20) = (20/2)^-(alpha-1) = 10^-1.5 ~= 0.0316.
    let tail = lens.iter().filter(|&&l| l >= 20).count() as f64 / lens.len() as f64;
    assert!((tail - 0.0316).abs() < 0.004, "tail {tail}");

    let t = gen("tall:rows=3000,cols=40,row_len=5");
    assert_eq!((t.rows(), t.cols()), (3000, 40));
    let w = gen("wide:rows=30,cols=4000,row_len=700");
    assert_eq!((w.rows(), w.cols()), (30, 4000));
    assert!(row_lengths(&w).iter().all(|&l| l > 500));
}

#[test]
fn rmat_is_deduplicated_permuted_and_optionally_symmetric() {
    let a = gen("rmat:scale=12,ef=8,seed=7");
    assert_eq!(a.rows(), 4096);
    assert!(a.nnz() <= 8 * 4096 && a.nnz() > 4 * 4096, "{}", a.nnz());
    // Relabelling vertices keeps the multiset of edges, so the same nonzero count and row lengths.
    let b = gen("rmat:scale=12,ef=8,seed=7,perm=0");
    assert_eq!(a.nnz(), b.nnz());
    let (mut la, mut lb) = (row_lengths(&a), row_lengths(&b));
    assert_ne!(la, lb, "perm=1 must move the heavy rows");
    la.sort_unstable();
    lb.sort_unstable();
    assert_eq!(la, lb);
    // Without permutation, R-MAT's heavy corner is row 0.
    assert_eq!(row_lengths(&b)[0], *lb.last().unwrap());
    let s = gen("rmat:scale=10,ef=4,sym=1,seed=2");
    let pattern: std::collections::HashSet<(usize, usize)> =
        triplets(&s).iter().map(|&(i, j, _)| (i, j)).collect();
    assert!(pattern.iter().all(|&(i, j)| pattern.contains(&(j, i))));
    // Power-law-ish: the longest row is far above the mean.
    assert!(*la.last().unwrap() as f64 > 10.0 * a.nnz() as f64 / 4096.0);
}

#[test]
fn expand_keeps_or_scales_row_lengths() {
    let base = gen("powerlaw:rows=200,cols=150,alpha=2,seed=3");
    let p = temp_dir("expand").join("base.mtx.gz");
    mtx::write(&p, &base).unwrap();
    let k = 3;
    let id = gen(&format!("expand:k={k},file={}", p.display()));
    let de = gen(&format!("expand:k={k},pattern=dense,file={}", p.display()));
    assert_eq!((id.rows(), id.cols()), (600, 450));
    let (lb, li, ld) = (row_lengths(&base), row_lengths(&id), row_lengths(&de));
    for r in 0..600 {
        assert_eq!(li[r], lb[r / k]);
        assert_eq!(ld[r], k * lb[r / k]);
    }
    // Entry (i*k+p, j*k+p) of A ⊗ I is a_ij.
    let bd = augur_tests::dense(&base);
    for (r, c, v) in triplets(&id) {
        assert_eq!(r % k, c % k);
        assert_eq!(v, bd[r / k][c / k]);
    }
    assert_eq!(de.nnz(), k * k * base.nnz());
}

#[test]
fn expand_reorders_a_real_matrix_without_losing_an_entry() {
    let sym = gen("banded:n=300,bw=2,seed=5");
    let p = temp_dir("expand-order").join("band.mtx.gz");
    mtx::write(&p, &sym).unwrap();
    let band = |a: &Csr<f64>| {
        triplets(a)
            .into_iter()
            .map(|(r, c, _)| r.abs_diff(c))
            .max()
            .unwrap()
    };
    let grown = gen(&format!("expand:k=4,file={}", p.display()));
    let random = gen(&format!(
        "expand:k=4,order=random,seed=9,file={}",
        p.display()
    ));
    let rcm = gen(&format!("expand:k=4,order=rcm,file={}", p.display()));
    // A symmetric permutation keeps every value, once.
    let values = |a: &Csr<f64>| {
        let mut v: Vec<u64> = a.data().iter().map(|x| x.to_bits()).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(values(&random), values(&grown));
    assert_eq!(values(&rcm), values(&grown));
    // Locality: A (x) I_4 of a band 2 has bandwidth 8 + 3; a random order scatters it; RCM packs
    // the four independent copies of the band back into narrow bands.
    assert!(band(&random) > 200, "random bandwidth {}", band(&random));
    assert!(
        band(&rcm) <= band(&grown),
        "rcm {} vs {}",
        band(&rcm),
        band(&grown)
    );
    // The seed picks the permutation; the spec names it.
    let other = gen(&format!(
        "expand:k=4,order=random,seed=10,file={}",
        p.display()
    ));
    assert_ne!(other, random);
    spec_error(
        &format!("expand:k=2,order=sideways,file={}", p.display()),
        "sideways",
    );
    let tall = gen("tall:rows=40,cols=7,row_len=3");
    let q = temp_dir("expand-order").join("tall.mtx.gz");
    mtx::write(&q, &tall).unwrap();
    spec_error(
        &format!("expand:k=2,pattern=identity,order=rcm,file={}", q.display()),
        "square",
    );
}

#[test]
fn deterministic_across_runs_and_thread_counts_and_seed_sensitive() {
    for spec in [
        "uniform:rows=20000,row_len=7,seed=3",
        "powerlaw:rows=20000,alpha=2.2,seed=3",
        "rmat:scale=13,ef=4,seed=3",
        "banded:n=20000,bw=9,seed=3",
        "hubs:n=20000,hubs=5,seed=3",
    ] {
        let one = with_threads(1, || gen(spec));
        let three = with_threads(3, || gen(spec));
        assert_eq!(one, three, "{spec}: same matrix on 1 and 3 threads");
        assert_eq!(one, gen(spec), "{spec}: same matrix twice");
        let other = gen(&spec.replace("seed=3", "seed=4"));
        assert_ne!(one, other, "{spec}: another seed gives another matrix");
    }
}

#[test]
fn canonical_spec_round_trips() {
    for spec in [
        "rmat:scale=5",
        "uniform:rows=10,cols=20,nnz=30",
        "stencil2d:nx=4,points=9",
        "stencil3d:nx=3,ny=4",
        "powerlaw:rows=2^10,alpha=3",
        "tall:rows=100,cols=10",
        "expand:file=/x/y.mtx",
    ] {
        let g = Generator::parse(spec).unwrap();
        let canonical = g.to_string();
        assert_eq!(
            Generator::parse(&canonical).unwrap(),
            g,
            "{spec} -> {canonical}"
        );
    }
}

#[test]
fn spec_errors_are_clear() {
    spec_error(
        "rmat:scale=20,edgefactor=4",
        "unknown parameter `edgefactor`",
    );
    spec_error("rmat:ef=4", "needs `scale=`");
    spec_error("rmat:scale=40", "scale must be in 1..=30");
    spec_error("rmat:scale=4,a=0.9,b=0.2", "a + b + c <= 1");
    spec_error("uniform:rows=1.5", "not a whole number");
    spec_error(
        "uniform:rows=10,row_len=20",
        "row_len 20 must lie in 0..=cols",
    );
    spec_error("stencil2d:nx=4,points=7", "points=5 or 9");
    spec_error("stencil3d:nx=3,nx=4", "given twice");
    spec_error("tall:rows=10,cols=20", "needs rows > cols");
    spec_error("powerlaw:rows=10,alpha=1", "alpha must be > 1");
    spec_error("banded:n", "not `key=value`");
    spec_error("zipf:n=3", "unknown generator `zipf`");
    spec_error("expand:k=0,file=x.mtx", "k must be >= 1");
    // Beyond i32 nonzeros or rows: refused before the big allocations.
    match Generator::parse("uniform:rows=1e6,row_len=3000")
        .unwrap()
        .generate::<f32>()
    {
        Err(e @ DatasetError::TooLarge { .. }) => assert!(e.to_string().contains("nnz")),
        other => panic!("expected TooLarge, got {:?}", other.map(|m| m.nnz())),
    }
    match Generator::parse("stencil3d:nx=2000")
        .unwrap()
        .generate::<f32>()
    {
        Err(e @ DatasetError::TooLarge { .. }) => assert!(e.to_string().contains("i32")),
        other => panic!("expected TooLarge, got {:?}", other.map(|m| m.nnz())),
    }
    // A missing file in `expand` names the file.
    match MatrixSource::parse("expand:file=/nonexistent/a.mtx")
        .unwrap()
        .load::<f64>()
    {
        Err(e @ DatasetError::Open { .. }) => assert!(e.to_string().contains("/nonexistent/a.mtx")),
        other => panic!("expected Open, got {:?}", other.map(|m| m.0.nnz())),
    }
    // Neither a file nor a spec.
    match MatrixSource::parse("no-such-file.mtx") {
        Err(e @ DatasetError::Open { .. }) => {
            assert!(e.to_string().contains("not a generator spec"))
        }
        other => panic!("expected Open, got {other:?}"),
    }
}

/// Specs whose parameters already imply more nonzeros than augur's i32 indices hold are refused
/// at once, before any per-row array is allocated (these took seconds and gigabytes before).
#[test]
fn specs_beyond_the_limit_are_refused_before_allocating() {
    let bcsstk16 = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/matrices/suitesparse/bcsstk16.mtx.gz"
    );
    let mut specs = vec![
        "uniform:rows=1e9,row_len=8".to_string(),
        "stencil3d:nx=1000".to_string(),
        "banded:n=1e9,bw=1e9".to_string(),
        "powerlaw:rows=1e9,min=4".to_string(),
        "rmat:scale=30,ef=16".to_string(),
        "blockdiag:n=1e8,block=64".to_string(),
        "hubs:n=1e9,hubs=4,short=4".to_string(),
        "arrowhead:n=1e9".to_string(),
    ];
    if std::path::Path::new(bcsstk16).is_file() {
        specs.push(format!("expand:k=1e9,file={bcsstk16}"));
        specs.push(format!("expand:k=100000,file={bcsstk16}"));
    }
    for spec in specs {
        let t = std::time::Instant::now();
        match MatrixSource::parse(&spec).and_then(|s| s.load::<f32>()) {
            Err(e @ DatasetError::TooLarge { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("i32 limit"), "{spec}: {msg}");
            }
            other => panic!(
                "{spec}: expected TooLarge, got {:?}",
                other.map(|m| m.0.nnz())
            ),
        }
        assert!(
            t.elapsed().as_secs_f64() < 2.0,
            "{spec}: refused only after {:?}",
            t.elapsed()
        );
    }
}

/// The up-front estimate never exceeds what the structured generators build (it only refuses
/// specs that are surely too large).
#[test]
fn the_nnz_estimate_is_a_lower_bound() {
    for spec in [
        "stencil2d:nx=50",
        "stencil2d:nx=37,ny=5,points=9",
        "stencil3d:nx=12,points=27",
        "stencil3d:nx=3,points=7",
        "banded:n=1000,bw=16",
        "banded:n=100,bw=1000",
        "banded:n=5,bw=0",
        "powerlaw:rows=2000,alpha=2.1,min=3",
        "blockdiag:n=1000,block=48",
        "hubs:n=3000,hubs=4,short=6",
        "arrowhead:n=500",
        "uniform:rows=100000,row_len=16",
    ] {
        let g = Generator::parse(spec).unwrap();
        let bound = g.nnz_at_least().unwrap();
        let nnz = g.generate::<f32>().unwrap().nnz() as u128;
        assert!(bound <= nnz, "{spec}: estimate {bound} > {nnz} built");
    }
}
