//! CPU SpMV kernels on rayon.
//!
//! Each kernel has a setup step ([`CpuKernel::prepare`]: its partition of the work, computed once
//! per matrix) and a per-call product ([`PreparedSpmv::run`]). The number of parts is the size of
//! the rayon pool at setup time.
//!
//! | kernel | work unit | good for |
//! |---|---|---|
//! | `sequential` | all rows on one thread | tiny matrices, a baseline |
//! | `row-split` | equal row counts per thread (static chunks) | even row lengths |
//! | `nnz-balanced` | rows cut where the nonzeros divide evenly | skewed row lengths |
//! | `merge-path` | equal share of rows + nonzeros; long rows split across threads | a few huge rows |

mod merge_path;

use std::ops::Range;

use augur_datasets::{CsrRef, Scalar};
use rayon::prelude::*;

use crate::error::{check_dims, KernelError};

/// The CPU kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuKernel {
    Sequential,
    RowSplit,
    NnzBalanced,
    MergePath,
}

impl CpuKernel {
    pub const ALL: [CpuKernel; 4] = [
        CpuKernel::Sequential,
        CpuKernel::RowSplit,
        CpuKernel::NnzBalanced,
        CpuKernel::MergePath,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CpuKernel::Sequential => "sequential",
            CpuKernel::RowSplit => "row-split",
            CpuKernel::NnzBalanced => "nnz-balanced",
            CpuKernel::MergePath => "merge-path",
        }
    }

    pub fn from_name(name: &str) -> Result<CpuKernel, KernelError> {
        CpuKernel::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| KernelError::UnknownKernel {
                name: name.to_string(),
                known: CpuKernel::ALL.map(|k| k.name()).join(", "),
            })
    }

    /// Setup: compute this kernel's partition of `a` for the current rayon pool.
    pub fn prepare<'a, T: Scalar>(self, a: impl Into<CsrRef<'a, T>>) -> PreparedSpmv<'a, T> {
        let a = a.into();
        PreparedSpmv {
            a,
            part: self.partition(a),
        }
    }

    /// This kernel's partition of `a` for the current rayon pool, apart from the matrix (what
    /// [`crate::device::CpuDevice`] keeps as its prepared kernel).
    pub fn partition<'a, T: 'a>(self, a: impl Into<CsrRef<'a, T>>) -> CpuPartition {
        let a = a.into();
        let parts = rayon::current_num_threads().max(1);
        let ptr = a.indptr();
        let rows = a.rows();
        let plan = match self {
            CpuKernel::Sequential => Plan::Rows(vec![0, rows]),
            CpuKernel::RowSplit => Plan::Rows((0..=parts).map(|p| p * rows / parts).collect()),
            CpuKernel::NnzBalanced => Plan::Rows(split_rows_by_nnz(ptr, 0..rows, parts)),
            CpuKernel::MergePath => Plan::Merge(merge_path::partition(ptr, parts)),
        };
        CpuPartition { kernel: self, plan }
    }
}

/// Boundaries `b[0] = rows.start <= b[1] <= ... <= b[parts] = rows.end` cutting `rows` of a
/// CSR matrix with row pointers `ptr` into `parts` pieces of nearly equal nonzeros: piece p
/// starts at the first row whose entries begin at or after p/parts of the way through.
pub fn split_rows_by_nnz(ptr: &[i32], rows: Range<usize>, parts: usize) -> Vec<usize> {
    let (lo, hi) = (ptr[rows.start] as usize, ptr[rows.end] as usize);
    let mut b: Vec<usize> = (0..=parts)
        .map(|p| {
            let target = lo + p * (hi - lo) / parts;
            (rows.start + ptr[rows.start..rows.end].partition_point(|&v| (v as usize) < target))
                .min(rows.end)
        })
        .collect();
    b[parts] = rows.end;
    b
}

#[derive(Debug, Clone)]
enum Plan {
    /// Row boundaries: part p computes rows `b[p]..b[p+1]`.
    Rows(Vec<usize>),
    /// Merge-path coordinates (row, nonzero) where each part starts; the last is the end.
    Merge(Vec<(usize, usize)>),
}

/// A kernel set up for one matrix: run it as often as needed.
pub struct PreparedSpmv<'a, T> {
    a: CsrRef<'a, T>,
    part: CpuPartition,
}

impl<T: Scalar> PreparedSpmv<'_, T> {
    pub fn kernel(&self) -> CpuKernel {
        self.part.kernel
    }

    /// `y = A x`.
    pub fn run(&self, x: &[T], y: &mut [T]) -> Result<(), KernelError> {
        self.part.run(self.a, x, y)
    }
}

/// A kernel's partition of one matrix's work, made by [`CpuKernel::partition`]; run it with the
/// matrix it was made for (its row count is checked, its row pointers are trusted).
#[derive(Debug, Clone)]
pub struct CpuPartition {
    kernel: CpuKernel,
    plan: Plan,
}

impl CpuPartition {
    pub fn kernel(&self) -> CpuKernel {
        self.kernel
    }

    /// `y = A x` for the matrix this partition was made for.
    pub fn run<'a, T: Scalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
        x: &[T],
        y: &mut [T],
    ) -> Result<(), KernelError> {
        let a = a.into();
        let rows_ok = match &self.plan {
            Plan::Rows(b) => b.last() == Some(&a.rows()),
            Plan::Merge(c) => c.last().copied() == Some((a.rows(), a.nnz())),
        };
        if !rows_ok {
            return Err(KernelError::Invalid(format!(
                "a {} partition made for another matrix than this {} x {} one with {} entries",
                self.kernel.name(),
                a.rows(),
                a.cols(),
                a.nnz()
            )));
        }
        check_dims(a.rows(), a.cols(), x.len(), y.len())?;
        match &self.plan {
            Plan::Rows(b) if b.len() == 2 => rows_range(a, x, y, 0),
            Plan::Rows(b) => {
                let mut pieces = Vec::with_capacity(b.len() - 1);
                let mut rest = &mut y[..];
                for w in b.windows(2) {
                    let (piece, r) = rest.split_at_mut(w[1] - w[0]);
                    pieces.push((w[0], piece));
                    rest = r;
                }
                pieces
                    .into_par_iter()
                    .for_each(|(first, piece)| rows_range(a, x, piece, first));
            }
            Plan::Merge(coords) => merge_path::run(a, x, y, coords),
        }
        Ok(())
    }
}

/// Rows `first..first + y.len()` of `A x` into `y`.
#[inline]
fn rows_range<T: Scalar>(a: CsrRef<'_, T>, x: &[T], y: &mut [T], first: usize) {
    let ptr = a.indptr();
    let (idx, val) = (a.indices(), a.data());
    for (k, yi) in y.iter_mut().enumerate() {
        let (s, e) = (ptr[first + k] as usize, ptr[first + k + 1] as usize);
        *yi = dot(&idx[s..e], &val[s..e], x);
    }
}

#[inline]
pub(super) fn dot<T: Scalar>(idx: &[i32], val: &[T], x: &[T]) -> T {
    let mut sum = T::zero();
    for (&j, &v) in idx.iter().zip(val) {
        sum += v * x[j as usize];
    }
    sum
}
