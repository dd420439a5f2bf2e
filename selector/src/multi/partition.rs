//! Cutting the rows into shards of (nearly) equal nonzeros, and what each shard would exchange.

use crate::AugurError;
use augur_datasets::Csr;
use augur_kernels::cpu::split_rows_by_nnz;
use augur_kernels::cuda::GpuScalar;
use serde::Serialize;
use std::ops::Range;

/// Row boundaries cutting `a` into `n` shards of nearly equal nonzeros.
pub fn partition_rows<T>(a: &Csr<T>, n: usize) -> Vec<usize> {
    split_rows_by_nnz(a.indptr().raw_storage(), 0..a.rows(), n)
}

/// What one shard of a square matrix needs from the others each product: the distinct x
/// entries its rows read that other shards own (what a halo exchange would move to it), against
/// the rows of the other shards (what the all-gather moves to it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShardTraffic {
    pub rank: usize,
    pub rows: Range<usize>,
    pub nnz: usize,
    pub halo_entries: usize,
    pub allgather_entries: usize,
}

/// The most shards [`shard_traffic`] analyses: far above any GPU count, far below what would
/// make the per-shard column sets a problem.
pub const MAX_SHARDS: usize = 4096;

/// [`ShardTraffic`] of each of `n` equal-nonzero shards of the square matrix `a` (1 <= n <=
/// rows, n <= [`MAX_SHARDS`]).
pub fn shard_traffic<T: Sync>(a: &Csr<T>, n: usize) -> Result<Vec<ShardTraffic>, AugurError> {
    if a.rows() != a.cols() {
        return Err(AugurError::Invalid(format!(
            "shard traffic needs a square matrix (x indexed like y); this one is {} x {}",
            a.rows(),
            a.cols()
        )));
    }
    if n == 0 {
        return Err(AugurError::Invalid("at least one shard".into()));
    }
    if n > MAX_SHARDS || n > a.rows().max(1) {
        return Err(AugurError::Invalid(format!(
            "{n} shards of a matrix of {} rows: at most one shard per row and at most \
             {MAX_SHARDS} (each shard is one GPU)",
            a.rows()
        )));
    }
    Ok(traffic_of(a, &partition_rows(a, n)))
}

/// [`ShardTraffic`] of the shards cut at `bounds` (a square matrix).
pub(super) fn traffic_of<T: Sync>(a: &Csr<T>, bounds: &[usize]) -> Vec<ShardTraffic> {
    use rayon::prelude::*;
    let n = bounds.len() - 1;
    let ptr = a.indptr();
    let ptr = ptr.raw_storage();
    let idx = a.indices();
    (0..n)
        .into_par_iter()
        .map(|s| {
            let own = bounds[s]..bounds[s + 1];
            let (lo, hi) = (ptr[own.start] as usize, ptr[own.end] as usize);
            let mut seen = vec![0u64; a.cols().div_ceil(64)];
            let mut halo = 0;
            for &j in &idx[lo..hi] {
                let j = j as usize;
                if own.contains(&j) {
                    continue;
                }
                let (w, b) = (j / 64, 1u64 << (j % 64));
                if seen[w] & b == 0 {
                    seen[w] |= b;
                    halo += 1;
                }
            }
            ShardTraffic {
                rank: s,
                nnz: hi - lo,
                halo_entries: halo,
                allgather_entries: a.rows() - own.len(),
                rows: own,
            }
        })
        .collect()
}

/// Rows `r` of `a` as a matrix of their own (all columns; its row pointers from 0, where an
/// owned copy of a sprs row slice would keep the slice's offset).
pub fn shard<T: GpuScalar>(a: &Csr<T>, r: Range<usize>) -> Result<Csr<T>, AugurError> {
    let ptr = a.indptr();
    let ptr = ptr.raw_storage();
    let (s, e) = (ptr[r.start] as usize, ptr[r.end] as usize);
    let indptr: Vec<i32> = ptr[r.start..=r.end].iter().map(|&p| p - s as i32).collect();
    Csr::try_new(
        (r.len(), a.cols()),
        indptr,
        a.indices()[s..e].to_vec(),
        a.data()[s..e].to_vec(),
    )
    .map_err(|(_, _, _, e)| AugurError::Invalid(format!("shard rows {r:?}: {e}")))
}
