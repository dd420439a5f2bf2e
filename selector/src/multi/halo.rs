//! Halo plans (issue 23): each shard of a square matrix splits its rows into a **local** block
//! (the columns it owns, renumbered from 0) and a **remote** block (the columns other shards own,
//! renumbered into a compact halo buffer; only the rows that have such entries, listed in
//! `remote_rows`), with the lists of what to receive from and send to every other shard. A
//! product is then `y_s = local · x_s`, then `y_s[remote_rows] += remote · halo_s`, where `halo_s`
//! holds the x entries the shard reads from others, and only those cross the links (PETSc's
//! VecScatter, Ginkgo's distributed matrix). Column ownership follows the row cut (x is indexed
//! like y). [`super::MultiGpuSpmv`]'s halo mode runs it.

use std::ops::Range;

use augur_datasets::Csr;
use augur_kernels::cuda::GpuScalar;
use serde::Serialize;

use crate::AugurError;

/// One shard's blocks and exchange lists.
#[derive(Debug, Clone)]
pub struct HaloShard<T> {
    pub rank: usize,
    /// Its rows, and the x entries it owns (the same range).
    pub rows: Range<usize>,
    /// Entries of columns this shard owns; column `j` is `rows.start + j` of x.
    pub local: Csr<T>,
    /// Entries of other shards' columns, one row per entry of `remote_rows`; column `h` is halo
    /// slot `h` ([`HaloShard::halo_cols`]).
    pub remote: Csr<T>,
    /// The shard's rows (offsets from `rows.start`) that have remote entries, ascending.
    pub remote_rows: Vec<usize>,
    /// The global x index of each halo slot: grouped by owner in rank order, ascending within.
    pub halo_cols: Vec<usize>,
    /// `recv[q]`: the halo slots filled from rank q (empty for itself and for ranks it does not
    /// read).
    pub recv: Vec<Range<usize>>,
    /// `send[q]`: the offsets into this shard's own x that rank q reads, in the order of q's
    /// halo slots for this rank.
    pub send: Vec<Vec<usize>>,
}

/// What a halo plan moves, per shard (for the explanation and the all-gather/halo choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HaloTraffic {
    pub rank: usize,
    /// x entries received per product (the halo) and sent.
    pub recv_entries: usize,
    pub send_entries: usize,
    /// Nonzeros in the local and the remote block.
    pub local_nnz: usize,
    pub remote_nnz: usize,
}

impl<T> HaloShard<T> {
    pub fn traffic(&self) -> HaloTraffic {
        HaloTraffic {
            rank: self.rank,
            recv_entries: self.halo_cols.len(),
            send_entries: self.send.iter().map(Vec::len).sum(),
            local_nnz: self.local.nnz(),
            remote_nnz: self.remote.nnz(),
        }
    }
}

/// The halo plan of the square matrix `a` cut at row boundaries `bounds` (`bounds[0] = 0 <=
/// ... <= bounds[n] = rows`, e.g. from [`super::partition_rows`]).
pub fn halo_plan<T: GpuScalar>(
    a: &Csr<T>,
    bounds: &[usize],
) -> Result<Vec<HaloShard<T>>, AugurError> {
    let all: Vec<usize> = (0..bounds.len().saturating_sub(1)).collect();
    halo_plan_of(a, bounds, &all)
}

/// [`halo_plan`] of the shards `ranks` only (a process of a distributed group builds its own):
/// every shard's halo columns are found (one pass over the entries, for the send lists), the
/// blocks only for `ranks`, in their order.
pub fn halo_plan_of<T: GpuScalar>(
    a: &Csr<T>,
    bounds: &[usize],
    ranks: &[usize],
) -> Result<Vec<HaloShard<T>>, AugurError> {
    use rayon::prelude::*;
    let n = bounds.len().saturating_sub(1);
    if a.rows() != a.cols() {
        return Err(AugurError::Invalid(format!(
            "a halo plan needs a square matrix (x indexed like y); this one is {} x {}",
            a.rows(),
            a.cols()
        )));
    }
    if n == 0 || bounds[0] != 0 || bounds[n] != a.rows() || bounds.windows(2).any(|w| w[0] > w[1]) {
        return Err(AugurError::Invalid(format!(
            "row boundaries must rise from 0 to {} (got {} of them: {:?}...)",
            a.rows(),
            bounds.len(),
            &bounds[..bounds.len().min(6)]
        )));
    }
    if let Some(&r) = ranks.iter().find(|&&r| r >= n) {
        return Err(AugurError::Invalid(format!("shard {r} of {n}")));
    }
    let owner = |j: usize| bounds.partition_point(|&b| b <= j) - 1;
    let ptr = a.indptr();
    let ptr = ptr.raw_storage();
    let (idx, val) = (a.indices(), a.data());
    // Every shard's halo: distinct remote columns, ordered by owner then column (= by column,
    // since owners are contiguous ranges in rank order), and which slots each owner fills.
    let halos: Vec<(Vec<usize>, Vec<Range<usize>>)> = (0..n)
        .into_par_iter()
        .map(|s| {
            let own = bounds[s]..bounds[s + 1];
            let (lo, hi) = (ptr[own.start] as usize, ptr[own.end] as usize);
            let mut halo_cols: Vec<usize> = idx[lo..hi]
                .iter()
                .map(|&j| j as usize)
                .filter(|j| !own.contains(j))
                .collect();
            halo_cols.sort_unstable();
            halo_cols.dedup();
            let mut recv = vec![0..0; n];
            let mut at = 0;
            while at < halo_cols.len() {
                let q = owner(halo_cols[at]);
                let end = at + halo_cols[at..].partition_point(|&j| j < bounds[q + 1]);
                recv[q] = at..end;
                at = end;
            }
            (halo_cols, recv)
        })
        .collect();
    ranks
        .iter()
        .map(|&s| {
            let own = bounds[s]..bounds[s + 1];
            let (halo_cols, recv) = &halos[s];
            let (mut lp, mut li, mut lv) = (vec![0i32], Vec::new(), Vec::new());
            let (mut rp, mut ri, mut rv) = (vec![0i32], Vec::new(), Vec::new());
            let mut remote_rows = Vec::new();
            for r in own.clone() {
                for k in ptr[r] as usize..ptr[r + 1] as usize {
                    let j = idx[k] as usize;
                    if own.contains(&j) {
                        li.push((j - own.start) as i32);
                        lv.push(val[k]);
                    } else {
                        let h = halo_cols.binary_search(&j).expect("every remote column");
                        ri.push(h as i32);
                        rv.push(val[k]);
                    }
                }
                lp.push(li.len() as i32);
                if ri.len() as i32 > *rp.last().expect("starts with 0") {
                    rp.push(ri.len() as i32);
                    remote_rows.push(r - own.start);
                }
            }
            let block = |rows, cols, p, i, v, what| {
                Csr::try_new((rows, cols), p, i, v).map_err(|(_, _, _, e)| {
                    AugurError::Invalid(format!("shard {s} {what} block: {e}"))
                })
            };
            // Sends are the transpose of receives: what q receives from s, s sends to q.
            let send = (0..n)
                .map(|q| {
                    let (cols, slots) = (&halos[q].0, halos[q].1[s].clone());
                    cols[slots].iter().map(|&j| j - own.start).collect()
                })
                .collect();
            Ok(HaloShard {
                rank: s,
                local: block(own.len(), own.len(), lp, li, lv, "local")?,
                remote: block(remote_rows.len(), halo_cols.len(), rp, ri, rv, "remote")?,
                remote_rows,
                rows: own,
                halo_cols: halo_cols.clone(),
                recv: recv.clone(),
                send,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use augur_datasets::generate::Generator;
    use augur_kernels::check;

    fn product(a: &Csr<f64>, x: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; a.rows()];
        augur_kernels::cpu::CpuKernel::Sequential
            .prepare(a)
            .run(x, &mut y)
            .unwrap();
        y
    }

    /// local · x_own + remote · halo is the shard's rows of A x, the halo is exactly what the
    /// owners send, and its size is what shard_traffic counts.
    #[test]
    fn local_plus_remote_is_the_product_and_sends_match_receives() {
        for spec in [
            "stencil2d:nx=40",
            "rmat:scale=11,ef=8,seed=3",
            "banded:n=3000,bw=7",
        ] {
            let a: Csr<f64> = Generator::parse(spec).unwrap().generate().unwrap();
            let x = check::test_vector::<f64>(a.cols(), 5);
            let want = product(&a, &x);
            for n in [1, 2, 3, 7] {
                let bounds = super::super::partition_rows(&a, n);
                let plan = halo_plan(&a, &bounds).unwrap();
                let traffic = super::super::shard_traffic(&a, n).unwrap();
                for s in &plan {
                    let own = &x[s.rows.clone()];
                    let halo: Vec<f64> = s.halo_cols.iter().map(|&j| x[j]).collect();
                    let (mut y, yr) = (product(&s.local, own), product(&s.remote, &halo));
                    assert_eq!(yr.len(), s.remote_rows.len());
                    assert!(s.remote_rows.windows(2).all(|w| w[0] < w[1]));
                    let rp = s.remote.indptr().raw_storage().to_vec();
                    assert!(rp.windows(2).all(|w| w[0] < w[1]), "a remote row is empty");
                    for (&r, v) in s.remote_rows.iter().zip(&yr) {
                        y[r] += v;
                    }
                    for (i, r) in s.rows.clone().enumerate() {
                        let got = y[i];
                        assert!(
                            (got - want[r]).abs() <= 1e-12 * (1.0 + want[r].abs()),
                            "{spec} n={n} shard {} row {r}: {got} vs {}",
                            s.rank,
                            want[r]
                        );
                    }
                    assert_eq!(s.halo_cols.len(), traffic[s.rank].halo_entries, "{spec}");
                    assert_eq!(s.local.nnz() + s.remote.nnz(), traffic[s.rank].nnz);
                    assert!(s.recv[s.rank].is_empty() && s.send[s.rank].is_empty());
                    for (q, slots) in s.recv.iter().enumerate() {
                        // What q sends to s, read from q's own x, fills s's slots from q.
                        let sent: Vec<f64> = plan[q].send[s.rank]
                            .iter()
                            .map(|&o| x[plan[q].rows.start + o])
                            .collect();
                        assert_eq!(sent, halo[slots.clone()], "{spec} {q} -> {}", s.rank);
                    }
                }
            }
        }
    }

    /// A process's own shards are what the whole plan holds for them.
    #[test]
    fn the_plan_of_some_shards_is_theirs_of_the_whole_plan() {
        let a: Csr<f64> = Generator::parse("rmat:scale=10,ef=8,seed=9")
            .unwrap()
            .generate()
            .unwrap();
        let bounds = super::super::partition_rows(&a, 5);
        let all = halo_plan(&a, &bounds).unwrap();
        let some = halo_plan_of(&a, &bounds, &[3, 1]).unwrap();
        for (got, want) in some.iter().zip([&all[3], &all[1]]) {
            assert_eq!(got.rank, want.rank);
            assert_eq!(got.send, want.send);
            assert_eq!(got.recv, want.recv);
            assert_eq!(got.halo_cols, want.halo_cols);
            assert_eq!(got.remote_rows, want.remote_rows);
            assert_eq!(got.local, want.local);
            assert_eq!(got.remote, want.remote);
        }
        assert!(halo_plan_of(&a, &bounds, &[5]).is_err());
    }

    #[test]
    fn bad_cuts_and_rectangles_are_errors() {
        let a: Csr<f64> = Generator::parse("stencil2d:nx=10")
            .unwrap()
            .generate()
            .unwrap();
        for b in [
            vec![],
            vec![0],
            vec![1, 100],
            vec![0, 60, 40, 100],
            vec![0, 99],
        ] {
            let e = halo_plan(&a, &b).unwrap_err();
            assert!(e.to_string().contains("row boundaries"), "{b:?}: {e}");
        }
        let t: Csr<f64> = Generator::parse("tall:rows=50,cols=7,row_len=3")
            .unwrap()
            .generate()
            .unwrap();
        assert!(halo_plan(&t, &[0, 50])
            .unwrap_err()
            .to_string()
            .contains("square"));
    }
}
