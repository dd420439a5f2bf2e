//! What a file means: symmetry expansion, fields, duplicates, zeros, layout details, round trips.

use augur_datasets::generate::Generator;
use augur_datasets::mtx::{self, Field, Symmetry};

use augur_tests::{dense, temp_dir, write_file};

fn read_dense(name: &str, text: &str) -> Vec<Vec<f64>> {
    dense(
        &mtx::read::<f64>(write_file(name, text.as_bytes()))
            .unwrap()
            .matrix,
    )
}

#[test]
fn symmetric_expands_without_doubling_the_diagonal() {
    let d = read_dense(
        "s.mtx",
        "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 2.0\n2 1 -1.5\n3 2 4\n3 3 5\n",
    );
    assert_eq!(
        d,
        vec![
            vec![2.0, -1.5, 0.0],
            vec![-1.5, 0.0, 4.0],
            vec![0.0, 4.0, 5.0]
        ]
    );
}

#[test]
fn skew_symmetric_negates_the_mirror() {
    let d = read_dense(
        "k.mtx",
        "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 3.0\n3 1 -2\n",
    );
    assert_eq!(
        d,
        vec![
            vec![0.0, -3.0, 2.0],
            vec![3.0, 0.0, 0.0],
            vec![-2.0, 0.0, 0.0]
        ]
    );
}

#[test]
fn real_hermitian_is_symmetric() {
    let d = read_dense(
        "h.mtx",
        "%%MatrixMarket matrix coordinate real hermitian\n2 2 2\n1 1 1\n2 1 7\n",
    );
    assert_eq!(d, vec![vec![1.0, 7.0], vec![7.0, 0.0]]);
}

#[test]
fn pattern_values_are_one_and_integer_values_exact() {
    let m = mtx::read::<f64>(write_file(
        "p.mtx",
        b"%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n",
    ))
    .unwrap();
    assert_eq!(m.header.field, Field::Pattern);
    assert_eq!(m.header.symmetry, Symmetry::Symmetric);
    assert_eq!(m.matrix.data(), &[1.0, 1.0, 1.0]);
    let d = read_dense(
        "i.mtx",
        "%%MatrixMarket matrix coordinate integer general\n1 2 2\n1 1 -7\n1 2 123456789\n",
    );
    assert_eq!(d, vec![vec![-7.0, 123456789.0]]);
}

#[test]
fn duplicates_summed_zeros_kept_columns_sorted() {
    let m = mtx::read::<f64>(write_file(
        "d.mtx",
        b"%%MatrixMarket matrix coordinate real general\n2 4 5\n1 4 1\n1 2 0\n1 4 2.5\n2 3 1e-3\n1 1 -1\n",
    ))
    .unwrap()
    .matrix;
    assert_eq!(m.indptr().raw_storage(), &[0, 3, 4]);
    assert_eq!(m.indices(), &[0, 1, 3, 2]);
    assert_eq!(m.data(), &[-1.0, 0.0, 3.5, 1e-3]);
}

#[test]
fn layout_tolerance_crlf_case_comments_tabs_fortran_exponents() {
    let d = read_dense(
        "w.mtx",
        "%%matrixmarket MATRIX Coordinate REAL General\r\n%comment\r\n\r\n  2\t2   2 \r\n1 1 1.5D+01\r\n% between\r\n2\t2\t-2.5e-1\r\n\r\n",
    );
    assert_eq!(d, vec![vec![15.0, 0.0], vec![0.0, -0.25]]);
}

#[test]
fn empty_and_tiny_matrices() {
    let m = mtx::read::<f64>(write_file(
        "e.mtx",
        b"%%MatrixMarket matrix coordinate real general\n5 3 0\n",
    ))
    .unwrap()
    .matrix;
    assert_eq!((m.rows(), m.cols(), m.nnz()), (5, 3, 0));
    assert_eq!(m.indptr().raw_storage(), &[0; 6]);
    let m = mtx::read::<f32>(write_file(
        "z.mtx",
        b"%%MatrixMarket matrix coordinate real general\n0 0 0\n",
    ))
    .unwrap()
    .matrix;
    assert_eq!((m.rows(), m.cols(), m.nnz()), (0, 0, 0));
    assert_eq!(
        read_dense(
            "one.mtx",
            "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 3\n"
        ),
        vec![vec![3.0]]
    );
}

#[test]
fn plain_and_gzip_files_read_the_same() {
    let text = b"%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 3 2\n3 2 3\n";
    let a = mtx::read::<f64>(write_file("a.mtx", text)).unwrap();
    // Compression is detected from the bytes, not the name.
    let b = mtx::read::<f64>(write_file("b.mtx.gz", text)).unwrap();
    let c = mtx::read::<f64>(write_file("c.gz", text)).unwrap();
    assert_eq!(a.matrix, b.matrix);
    assert_eq!(a.matrix, c.matrix);
    assert_eq!(a.text_bytes, text.len() as u64);
    assert_eq!(b.text_bytes, text.len() as u64);
}

#[test]
fn generated_matrices_round_trip_through_files() {
    let dir = temp_dir("roundtrip");
    for spec in [
        "rmat:scale=9,ef=8,seed=3",
        "powerlaw:rows=700,cols=300,alpha=1.8,seed=2",
        "stencil3d:nx=6,points=27",
        "arrowhead:n=50",
    ] {
        let a = Generator::parse(spec).unwrap().generate::<f64>().unwrap();
        for name in ["m.mtx", "m.mtx.gz"] {
            let p = dir.join(name);
            mtx::write(&p, &a).unwrap();
            let b = mtx::read::<f64>(&p).unwrap().matrix;
            assert_eq!(a, b, "{spec} via {name}");
        }
    }
    // Nothing half-written is left beside the outputs.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.contains("partial")), "{names:?}");
}

#[test]
fn a_failed_write_leaves_nothing_and_keeps_the_old_file() {
    let dir = temp_dir("failwrite");
    let a = Generator::parse("banded:n=20,bw=2")
        .unwrap()
        .generate::<f64>()
        .unwrap();
    // Writing into a folder that does not exist fails cleanly.
    let p = dir.join("missing").join("x.mtx");
    assert!(matches!(
        mtx::write(&p, &a),
        Err(augur_datasets::DatasetError::Write { .. })
    ));
    // An existing file is replaced only by a complete one.
    let p = dir.join("keep.mtx");
    mtx::write(&p, &a).unwrap();
    let before = std::fs::read(&p).unwrap();
    let b = Generator::parse("banded:n=20,bw=3")
        .unwrap()
        .generate::<f64>()
        .unwrap();
    mtx::write(&p, &b).unwrap();
    assert_ne!(before, std::fs::read(&p).unwrap());
    assert_eq!(mtx::read::<f64>(&p).unwrap().matrix, b);
}
