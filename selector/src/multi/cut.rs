//! What a [`super::MultiGpuSpmv`] decides from the whole matrix before any GPU is touched: the
//! row cut, the exchange, the chunk layout ([`Cut`]), and each rank's part of the matrix
//! ([`Cut::parts_of`]). In one process it is made and used at once; across processes rank 0
//! makes it and sends each rank its part (`scatter.rs`).

use std::ops::Range;

use augur_datasets::Csr;
use augur_kernels::cpu::split_rows_by_nnz;
use augur_kernels::cuda::GpuScalar;

use super::blocks::HostBlocks;
use super::shard::Parts;
use super::{halo_plan_of, partition_rows, shard, GatherChoice, GatherMode, Layout};
use crate::AugurError;

/// A rank's part of the matrix and the global x index of each of its halo slots (none for
/// chunks).
pub(super) type RankPart<T> = (Parts<T>, Vec<usize>);

/// The cut of a matrix over `n` GPUs.
pub(super) struct Cut {
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) nnz: usize,
    /// Each GPU's rows: `bounds[s]..bounds[s + 1]`.
    pub(super) bounds: Vec<usize>,
    pub(super) gather: GatherChoice,
    pub(super) layout: Layout,
    /// Chunks per shard (1 on one GPU and in the halo mode).
    pub(super) chunks: usize,
}

impl Cut {
    /// Cut `a` over `n` GPUs into shards of nearly equal nonzeros, `chunks` pieces each where the
    /// exchange allows, the exchange chosen by `gather` from the row boundaries.
    pub(super) fn new<T>(
        a: &Csr<T>,
        n: usize,
        chunks: usize,
        gather: impl FnOnce(&[usize]) -> Result<GatherChoice, AugurError>,
    ) -> Result<Cut, AugurError> {
        if n > a.rows().max(1) {
            return Err(AugurError::Invalid(format!(
                "{n} GPUs for a matrix of {} rows: at most one GPU per row",
                a.rows()
            )));
        }
        let bounds = partition_rows(a, n);
        let gather = gather(&bounds)?;
        let mode = gather.mode;
        if mode == GatherMode::Halo && a.rows() != a.cols() {
            return Err(AugurError::Invalid(format!(
                "the halo exchange needs a square matrix (x split like y); this one is {} x {}",
                a.rows(),
                a.cols()
            )));
        }
        if mode == GatherMode::Halo && chunks > 1 && n > 1 {
            return Err(AugurError::Invalid(
                "the halo exchange takes one chunk per shard (it overlaps the local block)".into(),
            ));
        }
        if chunks > 1 && n > 1 && mode.pattern().is_some() {
            return Err(AugurError::Invalid(format!(
                "the {} exchange takes one chunk per shard",
                mode.name()
            )));
        }
        // One GPU has nothing to overlap: one chunk.
        let chunks = if n == 1 || mode == GatherMode::Halo {
            1
        } else {
            chunks
        };
        let ptr = a.indptr();
        let ptr = ptr.raw_storage();
        let cuts: Vec<Vec<usize>> = (0..n)
            .map(|s| split_rows_by_nnz(ptr, bounds[s]..bounds[s + 1], chunks))
            .collect();
        let pieces: Vec<Vec<Range<usize>>> = (0..chunks)
            .map(|c| (0..n).map(|s| cuts[s][c]..cuts[s][c + 1]).collect())
            .collect();
        let maxc = pieces
            .iter()
            .map(|p| p.iter().map(|r| r.len()).max().unwrap_or(0))
            .collect();
        Ok(Cut {
            rows: a.rows(),
            cols: a.cols(),
            nnz: a.nnz(),
            bounds,
            gather,
            layout: Layout { pieces, maxc },
            chunks,
        })
    }

    /// The parts of `a` that ranks `ranks` run, in their order: their halo blocks (with the
    /// global x index of each halo slot) or their chunks (no halo slots).
    pub(super) fn parts_of<T: GpuScalar>(
        &self,
        a: &Csr<T>,
        ranks: &[usize],
    ) -> Result<Vec<RankPart<T>>, AugurError> {
        if self.gather.mode == GatherMode::Halo {
            return Ok(halo_plan_of(a, &self.bounds, ranks)?
                .into_iter()
                .map(|h| {
                    let cols = h.halo_cols.clone();
                    (Parts::Halo(Box::new(HostBlocks::from(h))), cols)
                })
                .collect());
        }
        ranks
            .iter()
            .map(|&r| {
                let chunks = (0..self.chunks)
                    .map(|c| shard(a, self.layout.pieces[c][r].clone()))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((Parts::Chunks(chunks), Vec::new()))
            })
            .collect()
    }
}
