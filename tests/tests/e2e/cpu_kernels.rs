//! Every CPU kernel against the f64 reference: the same suite, instantiated per kernel by a macro,
//! on every shared matrix, generated matrices and edge cases, in f32 and f64, on several thread
//! counts. The bound is the per-row one of `augur_kernels::check`:
//! `|y_i - ref_i| <= 2 (len_i + 2) eps_T sum_j |a_ij x_j|`.

use augur_datasets::generate::Generator;
use augur_datasets::{mtx, Csr, Scalar};
use augur_kernels::check::{self, poison, test_vector};
use augur_kernels::cpu::CpuKernel;
use augur_kernels::suite::{self, edge_cases, SpmvBackend};
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

/// The backend-level suite (`augur_kernels::suite`), instantiated per backend. The CUDA instance
/// runs where a GPU is present and prints SKIPPED elsewhere; on the GPU machines the same suite
/// runs through `augur check --backend cuda`.
macro_rules! backend_suite {
    ($($module:ident => $make:expr),* $(,)?) => {$(
        mod $module {
            use super::*;

            fn backend() -> Option<impl SpmvBackend> {
                $make
            }

            #[test]
            fn every_kernel_on_the_edge_cases_in_both_precisions() {
                let Some(mut b) = backend() else { return };
                let mut n = 0;
                for (name, a) in edge_cases() {
                    for r in suite::check_both(&mut b, &name, &a) {
                        assert!(r.passed(), "{} on {}: {r:?}", b.name(), name);
                        n += 1;
                    }
                }
                assert_eq!(n, 2 * edge_cases().len() * b.kernel_names().len());
            }

            #[test]
            fn every_kernel_on_the_shared_matrices() {
                let Some(mut b) = backend() else { return };
                let Some(dir) = shared_dir(concat!(stringify!($module), "::shared")) else { return };
                for e in manifest(&dir).into_iter().filter(|e| e.field != "complex") {
                    let a = mtx::read::<f64>(e.path(&dir)).unwrap().matrix;
                    for r in suite::check_both(&mut b, &e.name, &a) {
                        assert!(r.passed(), "{} on {}: {r:?}", b.name(), e.name);
                    }
                }
            }
        }
    )*};
}

backend_suite! {
    backend_cpu => Some(augur_kernels::device::CpuDevice),
    // The same CPU kernels through the run-time device (`Device`, what plans use).
    backend_device_cpu => Some(augur_kernels::device::Device::cpu()),
    backend_cuda => match augur_kernels::cuda::available() {
        Ok(_) => Some(augur_kernels::device::Device::cuda(0).expect("a present GPU opens")),
        Err(e) => {
            augur_tests::skip("backend_cuda", &e.to_string());
            None
        }
    },
}
