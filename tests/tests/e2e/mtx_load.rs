//! Every shared SuiteSparse matrix loads, with the manifest's sizes; complex ones are refused.

use std::io::BufReader;

use augur_datasets::{mtx, Csr, DatasetError};

use augur_tests::{manifest, shared_dir};

#[test]
fn all_shared_matrices_load_with_manifest_sizes() {
    let Some(dir) = shared_dir("all_shared_matrices_load_with_manifest_sizes") else {
        return;
    };
    let entries = manifest(&dir);
    let mut loaded = 0;
    let mut refused = 0;
    for e in &entries {
        let path = e.path(&dir);
        let r = mtx::read::<f64>(&path);
        if e.field == "complex" {
            match r {
                Err(DatasetError::Unsupported { what, .. }) => {
                    assert!(what.contains("complex"), "{}: {what}", e.name);
                    refused += 1;
                }
                other => panic!("{}: complex file must be refused, got {other:?}", e.name),
            }
            continue;
        }
        let m = r.unwrap_or_else(|err| panic!("{}: {err}", e.name)).matrix;
        assert_eq!(
            (m.rows(), m.cols(), m.nnz()),
            (e.rows, e.cols, e.nnz_full),
            "{}: rows, cols, nnz_full",
            e.name
        );
        let fits_f32 = m.data().iter().all(|v| v.abs() <= f32::MAX as f64);
        match mtx::read::<f32>(&path) {
            Ok(f) => {
                assert!(fits_f32, "{}: values beyond f32 must be refused", e.name);
                assert_eq!(f.matrix.indptr(), m.indptr(), "{}: f32 structure", e.name);
                assert_eq!(f.matrix.indices(), m.indices(), "{}: f32 structure", e.name);
            }
            Err(err) => {
                assert!(
                    !fits_f32 && err.to_string().contains("overflows f32"),
                    "{}: {err}",
                    e.name
                )
            }
        }
        loaded += 1;
    }
    eprintln!("loaded {loaded} shared matrices, refused {refused} complex ones");
    assert_eq!(loaded + refused, 139);
    assert!(loaded > 100);
}

/// Cross-check against an independent reader: sprs's own Matrix Market reader (which has no line
/// numbers in its errors, and no gzip), for every real and integer file. Both must give the same
/// CSR, bit for bit.
#[test]
fn shared_matrices_agree_with_the_sprs_reader() {
    let Some(dir) = shared_dir("shared_matrices_agree_with_the_sprs_reader") else {
        return;
    };
    let mut compared = 0;
    for e in manifest(&dir) {
        if e.field != "real" && e.field != "integer" {
            continue;
        }
        let ours = mtx::read::<f64>(e.path(&dir)).unwrap().matrix;
        let f = std::fs::File::open(e.path(&dir)).unwrap();
        let mut r = BufReader::new(flate2::read::MultiGzDecoder::new(f));
        let theirs: Csr<f64> = if e.field == "real" {
            sprs::io::read_matrix_market_from_bufread::<f64, i32, _>(&mut r)
                .unwrap_or_else(|err| panic!("{}: sprs: {err}", e.name))
                .to_csr()
        } else {
            sprs::io::read_matrix_market_from_bufread::<i64, i32, _>(&mut r)
                .unwrap_or_else(|err| panic!("{}: sprs: {err}", e.name))
                .to_csr::<i32>()
                .map(|&v| v as f64)
        };
        assert_eq!(ours.indptr(), theirs.indptr(), "{}", e.name);
        assert_eq!(ours.indices(), theirs.indices(), "{}", e.name);
        // Duplicates may be summed in another order: allow rounding, nothing more.
        for (k, (a, b)) in ours.data().iter().zip(theirs.data()).enumerate() {
            assert!(
                (a - b).abs() <= 1e-15 * a.abs().max(b.abs()),
                "{}: value {k}: {a} vs {b}",
                e.name
            );
        }
        compared += 1;
    }
    eprintln!("compared {compared} matrices with sprs's reader");
    assert!(compared > 50);
}
