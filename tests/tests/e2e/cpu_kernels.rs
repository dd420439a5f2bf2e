//! Every CPU kernel against the f64 reference: the same suite, instantiated per kernel by a macro,
//! on every shared matrix, generated matrices and edge cases, in f32 and f64, on several thread
//! counts. The bound is the per-row one of `augur_kernels::check`:
//! `|y_i - ref_i| <= 2 (len_i + 2) eps_T sum_j |a_ij x_j|`.

use augur_datasets::generate::Generator;
use augur_datasets::{mtx, Csr, Scalar};
use augur_kernels::check::{self, poison, test_vector};
use augur_kernels::cpu::CpuKernel;
use augur_kernels::KernelError;

use augur_tests::{manifest, shared_dir, with_threads};

/// Run `kernel` on `a` with a poisoned output; panic with the report when the check fails.
fn run_checked<T: Scalar>(kernel: CpuKernel, a: &Csr<T>, what: &str) {
    let x = test_vector::<T>(a.cols(), a.nnz() as u64);
    let mut y = vec![T::zero(); a.rows()];
    poison(&mut y);
    let prepared = kernel.prepare(a);
    prepared.run(&x, &mut y).unwrap();
    let r = check::check(a, &x, &y);
    assert!(r.passed, "{} on {what} ({}): {r:?}", kernel.name(), T::NAME);
    // A second run on the same prepared kernel (outputs poisoned again) gives the same answer.
    let mut y2 = vec![T::nan(); a.rows()];
    prepared.run(&x, &mut y2).unwrap();
    assert!(
        y.iter()
            .zip(&y2)
            .all(|(a, b)| a.as_f64().to_bits() == b.as_f64().to_bits()),
        "{} on {what}: second run differs",
        kernel.name()
    );
}

fn both_precisions(kernel: CpuKernel, a: &Csr<f64>, what: &str) {
    run_checked(kernel, a, what);
    let a32: Csr<f32> = a.map(|&v| v as f32);
    run_checked(kernel, &a32, what);
}

/// The edge cases: 0 nnz, 0x0, 1x1, empty rows, one dense row of 1e6 entries, rectangular, a
/// single huge row among empty ones, more threads than rows.
fn edge_cases() -> Vec<(String, Csr<f64>)> {
    let mut v = vec![
        ("0 nnz 5x3".to_string(), Csr::zero((5, 3))),
        ("0x0".to_string(), Csr::zero((0, 0))),
        ("0 rows x 4".to_string(), Csr::zero((0, 4))),
        ("4 rows x 0 cols".to_string(), Csr::zero((4, 0))),
        (
            "1x1".to_string(),
            Csr::new((1, 1), vec![0, 1], vec![0], vec![-2.5]),
        ),
        (
            "empty rows".to_string(),
            Csr::new(
                (6, 4),
                vec![0, 0, 2, 2, 2, 3, 3],
                vec![0, 3, 1],
                vec![1.5, -0.5, 2.0],
            ),
        ),
    ];
    let n = 1_000_000;
    v.push((
        "one dense row of 1e6 among empty rows".into(),
        Csr::new(
            (3, n),
            vec![0, 0, n as i32, n as i32],
            (0..n as i32).collect(),
            test_vector(n, 9),
        ),
    ));
    for spec in [
        "arrowhead:n=3000",
        "hubs:n=20000,hubs=2,short=1,seed=4",
        "tall:rows=5000,cols=7,row_len=3",
        "wide:rows=3,cols=50000,row_len=20000",
        "rmat:scale=12,ef=8,seed=1",
        "stencil3d:nx=12,points=27",
        "powerlaw:rows=3000,alpha=1.7,seed=2",
        "blockdiag:n=999,block=100",
    ] {
        v.push((
            spec.to_string(),
            Generator::parse(spec).unwrap().generate().unwrap(),
        ));
    }
    v
}

macro_rules! kernel_suite {
    ($($module:ident => $kernel:expr),* $(,)?) => {$(
        mod $module {
            use super::*;

            #[test]
            fn all_shared_matrices() {
                let Some(dir) = shared_dir(concat!(stringify!($module), "::all_shared_matrices")) else {
                    return;
                };
                let mut n = 0;
                for e in manifest(&dir).into_iter().filter(|e| e.field != "complex") {
                    let a = mtx::read::<f64>(e.path(&dir)).unwrap().matrix;
                    both_precisions($kernel, &a, &e.name);
                    n += 1;
                }
                assert!(n > 100, "checked {n} shared matrices");
            }

            #[test]
            fn edge_cases_and_generated() {
                for (what, a) in edge_cases() {
                    both_precisions($kernel, &a, &what);
                }
            }

            #[test]
            fn thread_counts() {
                // Partitions with more parts than rows, uneven splits and a single part.
                let cases = edge_cases();
                for threads in [1, 3, 8] {
                    with_threads(threads, || {
                        for (what, a) in &cases {
                            run_checked($kernel, a, &format!("{what} on {threads} threads"));
                        }
                    });
                }
            }

            #[test]
            fn wrong_vector_lengths_are_errors() {
                let a = Generator::parse("uniform:rows=10,cols=7").unwrap().generate::<f64>().unwrap();
                let p = $kernel.prepare(&a);
                let mut y = vec![0.0; 10];
                match p.run(&[1.0; 6], &mut y) {
                    Err(e @ KernelError::Dimension { .. }) => {
                        assert!(e.to_string().contains("x has length 6"), "{e}")
                    }
                    other => panic!("expected a dimension error, got {other:?}"),
                }
                let mut y = vec![0.0; 11];
                assert!(matches!(p.run(&[1.0; 7], &mut y), Err(KernelError::Dimension { what: "y", .. })));
            }
        }
    )*};
}

kernel_suite! {
    sequential => CpuKernel::Sequential,
    row_split => CpuKernel::RowSplit,
    nnz_balanced => CpuKernel::NnzBalanced,
    merge_path => CpuKernel::MergePath,
}

#[test]
fn every_kernel_is_in_the_suite() {
    // The macro above must list every kernel; a new one added to ALL fails here until it is.
    let listed = ["sequential", "row-split", "nnz-balanced", "merge-path"];
    assert_eq!(CpuKernel::ALL.map(|k| k.name()), listed);
}

/// The check itself must fail on wrong answers: poison left in place, a perturbed row, a wrong
/// value in an empty row.
#[test]
fn the_check_catches_wrong_outputs() {
    let a = Generator::parse("powerlaw:rows=500,alpha=2,seed=1")
        .unwrap()
        .generate::<f64>()
        .unwrap();
    let x = test_vector::<f64>(a.cols(), 1);
    let mut y = vec![0.0; a.rows()];
    CpuKernel::Sequential.prepare(&a).run(&x, &mut y).unwrap();
    assert!(check::check(&a, &x, &y).passed);

    let mut skipped = y.clone();
    skipped[123] = f64::NAN;
    let r = check::check(&a, &x, &skipped);
    assert!(
        !r.passed && r.bad_rows == 1 && r.worst_row == Some(123),
        "{r:?}"
    );

    let mut off = y.clone();
    off[77] += 1e-9 * off[77].abs().max(1.0);
    let r = check::check(&a, &x, &off);
    assert!(!r.passed && r.worst_row == Some(77), "{r:?}");

    // In f32 the same relative slip of 1e-9 is far inside the bound; of 1e-4 it is not.
    let a32: Csr<f32> = a.map(|&v| v as f32);
    let x32 = test_vector::<f32>(a.cols(), 1);
    let mut y32 = vec![0.0f32; a.rows()];
    CpuKernel::MergePath
        .prepare(&a32)
        .run(&x32, &mut y32)
        .unwrap();
    assert!(check::check(&a32, &x32, &y32).passed);
    y32[5] *= 1.0 + 1e-4;
    assert!(!check::check(&a32, &x32, &y32).passed);

    let e = Csr::new((2, 2), vec![0, 0, 1], vec![1], vec![3.0]);
    let r = check::check(&e, &[1.0, 2.0], &[1e-300, 6.0]);
    assert!(
        !r.passed && r.worst_row == Some(0),
        "an empty row must be exactly 0: {r:?}"
    );
}
