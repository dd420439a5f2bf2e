//! One process per GPU with the matrix held by rank 0 only (issue 23): rank 0 loads it, cuts it
//! ([`Cut`]), makes every rank's part and sends each rank its own through the rendezvous
//! ([`launch::scatter`]); the other ranks never hold more than their part.
//!
//! A part travels as a little-endian blob: `augur-part-1`, a JSON header (the cut: sizes, row
//! boundaries, chunk layout, the exchange and why), then the arrays (row pointers and column
//! indices as i32, values as the precision's floats, lists as u64).

use std::ops::Range;

use augur_datasets::{Csr, Scalar};
use augur_kernels::cuda::GpuScalar;
use cudarc::nccl::NcclType;
use serde::{Deserialize, Serialize};

use super::blocks::HostBlocks;
use super::shard::Parts;
use super::{
    check_gpus, launch, process_gather, Cut, GatherChoice, Group, Layout, MultiGpuSpmv,
    MultiOptions, Ranks,
};
use crate::plan::check_size;
use crate::AugurError;

const MAGIC: &[u8; 12] = b"augur-part-1";

/// What this rank holds of a matrix that rank 0 loaded ([`MultiGpuSpmv::distributed_from_root`]).
pub struct RankShare<T> {
    /// The whole matrix's shape and entries.
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    /// This rank's rows.
    pub own: Range<usize>,
    /// This rank's rows with their global columns (when asked for): what its part of a product
    /// is checked against.
    pub own_rows: Option<Csr<T>>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    rank: usize,
    world: usize,
    precision: String,
    rows: usize,
    cols: usize,
    nnz: usize,
    bounds: Vec<usize>,
    pieces: Vec<Vec<(usize, usize)>>,
    maxc: Vec<usize>,
    chunks: usize,
    gather: GatherChoice,
    halo: bool,
}

struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, v: usize) {
        self.0.extend_from_slice(&(v as u64).to_le_bytes());
    }
    fn usizes(&mut self, v: &[usize]) {
        self.u64(v.len());
        for &x in v {
            self.u64(x);
        }
    }
    fn i32s(&mut self, v: &[i32]) {
        self.u64(v.len());
        self.0.reserve(4 * v.len());
        for &x in v {
            self.0.extend_from_slice(&x.to_le_bytes());
        }
    }
    fn vals<T: Scalar>(&mut self, v: &[T]) {
        self.u64(v.len());
        if T::NAME == "f32" {
            self.0.reserve(4 * v.len());
            for &x in v {
                self.0.extend_from_slice(&(x.as_f64() as f32).to_le_bytes());
            }
        } else {
            self.0.reserve(8 * v.len());
            for &x in v {
                self.0.extend_from_slice(&x.as_f64().to_le_bytes());
            }
        }
    }
    fn csr<T: Scalar>(&mut self, a: &Csr<T>) {
        self.u64(a.rows());
        self.u64(a.cols());
        self.i32s(a.indptr().raw_storage());
        self.i32s(a.indices());
        self.vals(a.data());
    }
}

struct Reader<'b> {
    buf: &'b [u8],
    at: usize,
    rank: usize,
}

impl<'b> Reader<'b> {
    fn bad(&self, what: &str) -> AugurError {
        AugurError::Invalid(format!(
            "rank {}: the part rank 0 sent is malformed ({what} at byte {} of {})",
            self.rank,
            self.at,
            self.buf.len()
        ))
    }
    fn take(&mut self, n: usize) -> Result<&'b [u8], AugurError> {
        if self.buf.len() - self.at < n {
            return Err(self.bad("cut short"));
        }
        let s = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u64(&mut self) -> Result<usize, AugurError> {
        let v = u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"));
        usize::try_from(v).map_err(|_| self.bad("a length past this machine's"))
    }
    /// A length of items of `width` bytes that the rest of the blob can hold.
    fn len(&mut self, width: usize) -> Result<usize, AugurError> {
        let n = self.u64()?;
        if n > (self.buf.len() - self.at) / width {
            return Err(self.bad("a length past the end"));
        }
        Ok(n)
    }
    fn usizes(&mut self) -> Result<Vec<usize>, AugurError> {
        let n = self.len(8)?;
        (0..n).map(|_| self.u64()).collect()
    }
    fn i32s(&mut self) -> Result<Vec<i32>, AugurError> {
        let n = self.len(4)?;
        Ok(self
            .take(4 * n)?
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect())
    }
    fn vals<T: Scalar>(&mut self) -> Result<Vec<T>, AugurError> {
        let w = if T::NAME == "f32" { 4 } else { 8 };
        let n = self.len(w)?;
        let b = self.take(w * n)?;
        Ok(if w == 4 {
            b.chunks_exact(4)
                .map(|c| T::from_f64(f32::from_le_bytes(c.try_into().expect("4")) as f64))
                .collect()
        } else {
            b.chunks_exact(8)
                .map(|c| T::from_f64(f64::from_le_bytes(c.try_into().expect("8"))))
                .collect()
        })
    }
    fn csr<T: Scalar>(&mut self) -> Result<Csr<T>, AugurError> {
        let (rows, cols) = (self.u64()?, self.u64()?);
        let (ptr, idx, val) = (self.i32s()?, self.i32s()?, self.vals()?);
        let rank = self.rank;
        Csr::try_new((rows, cols), ptr, idx, val).map_err(|(_, _, _, e)| {
            AugurError::Invalid(format!(
                "rank {rank}: a matrix in the part rank 0 sent is not a CSR matrix: {e}"
            ))
        })
    }
}

/// Rank `rank`'s part of `cut` as a blob.
fn encode<T: Scalar>(
    cut: &Cut,
    rank: usize,
    world: usize,
    parts: &Parts<T>,
    halo_cols: &[usize],
) -> Vec<u8> {
    let header = Header {
        rank,
        world,
        precision: T::NAME.into(),
        rows: cut.rows,
        cols: cut.cols,
        nnz: cut.nnz,
        bounds: cut.bounds.clone(),
        pieces: cut
            .layout
            .pieces
            .iter()
            .map(|c| c.iter().map(|r| (r.start, r.end)).collect())
            .collect(),
        maxc: cut.layout.maxc.clone(),
        chunks: cut.chunks,
        gather: cut.gather.clone(),
        halo: matches!(parts, Parts::Halo(_)),
    };
    let json = serde_json::to_vec(&header).expect("a header serializes");
    let mut w = Writer(Vec::new());
    w.0.extend_from_slice(MAGIC);
    w.u64(json.len());
    w.0.extend_from_slice(&json);
    match parts {
        Parts::Chunks(c) => {
            w.u64(c.len());
            for a in c {
                w.csr(a);
            }
        }
        Parts::Halo(h) => {
            w.csr(&h.local);
            w.csr(&h.remote);
            w.usizes(&h.remote_rows);
            w.usizes(&h.send_idx);
            w.usizes(&h.send_off);
            let recv: Vec<usize> = h.recv.iter().flat_map(|r| [r.start, r.end]).collect();
            w.usizes(&recv);
            w.usizes(halo_cols);
        }
    }
    w.0
}

/// A blob made by [`encode`] for `rank` of `world`: the cut, the part and its halo slots' x
/// indices.
#[allow(clippy::type_complexity)]
fn decode<T: Scalar>(
    blob: &[u8],
    rank: usize,
    world: usize,
) -> Result<(Cut, Parts<T>, Vec<usize>), AugurError> {
    let mut r = Reader {
        buf: blob,
        at: 0,
        rank,
    };
    if r.take(MAGIC.len()).ok() != Some(&MAGIC[..]) {
        return Err(r.bad("not a part of augur's"));
    }
    let n = r.len(1)?;
    let h: Header = serde_json::from_slice(r.take(n)?)
        .map_err(|e| AugurError::Invalid(format!("rank {rank}: the part's header: {e}")))?;
    if (h.rank, h.world) != (rank, world) || h.precision != T::NAME {
        return Err(AugurError::Invalid(format!(
            "rank {rank} of {world} ({}) got rank {}'s part of {} ({})",
            T::NAME,
            h.rank,
            h.world,
            h.precision
        )));
    }
    let parts = if h.halo {
        let local = r.csr()?;
        let remote = r.csr()?;
        let remote_rows = r.usizes()?;
        let send_idx = r.usizes()?;
        let send_off = r.usizes()?;
        let recv = r.usizes()?;
        if recv.len() % 2 != 0 {
            return Err(r.bad("an odd list of receive ranges"));
        }
        let recv = recv.chunks_exact(2).map(|p| p[0]..p[1]).collect::<Vec<_>>();
        Parts::Halo(Box::new(HostBlocks {
            local,
            remote,
            remote_rows,
            send_idx,
            send_off,
            recv,
        }))
    } else {
        let k = r.len(8)?;
        Parts::Chunks((0..k).map(|_| r.csr()).collect::<Result<_, _>>()?)
    };
    let halo_cols = if h.halo { r.usizes()? } else { Vec::new() };
    if r.at != blob.len() {
        return Err(r.bad("bytes past the end"));
    }
    let bounds_ok = h.bounds.len() == world + 1
        && h.bounds[0] == 0
        && h.bounds[world] == h.rows
        && h.bounds.windows(2).all(|w| w[0] <= w[1]);
    if !bounds_ok || h.pieces.len() != h.chunks || h.pieces.iter().any(|p| p.len() != world) {
        return Err(r.bad("a cut that does not fit the group"));
    }
    if h.maxc.len() != h.chunks {
        return Err(r.bad("a cut that does not fit the group"));
    }
    let cut = Cut {
        rows: h.rows,
        cols: h.cols,
        nnz: h.nnz,
        bounds: h.bounds,
        gather: h.gather,
        layout: Layout {
            pieces: h
                .pieces
                .into_iter()
                .map(|c| c.into_iter().map(|(s, e)| s..e).collect())
                .collect(),
            maxc: h.maxc,
        },
        chunks: h.chunks,
    };
    check_part(&cut, rank, &parts, &halo_cols).map_err(|what| {
        AugurError::Invalid(format!(
            "rank {rank}: the part rank 0 sent does not fit its cut: {what}"
        ))
    })?;
    Ok((cut, parts, halo_cols))
}

/// A decoded part fits its cut (so no worker indexes past an array): its chunks are the rank's
/// rows in order, or its halo blocks, lists and slots lie within its rows and its halo.
fn check_part<T>(
    cut: &Cut,
    rank: usize,
    parts: &Parts<T>,
    halo_cols: &[usize],
) -> Result<(), String> {
    let own = cut.bounds[rank]..cut.bounds[rank + 1];
    let m = own.len();
    let world = cut.bounds.len() - 1;
    match parts {
        Parts::Chunks(c) => {
            if c.len() != cut.chunks {
                return Err(format!("{} chunks, the cut has {}", c.len(), cut.chunks));
            }
            let mut at = own.start;
            for (i, a) in c.iter().enumerate() {
                let piece = &cut.layout.pieces[i][rank];
                if piece.start != at || a.rows() != piece.len() || a.cols() != cut.cols {
                    return Err(format!(
                        "chunk {i} is {} x {} for rows {piece:?} of {} columns",
                        a.rows(),
                        a.cols(),
                        cut.cols
                    ));
                }
                at = piece.end;
            }
            if at != own.end {
                return Err(format!(
                    "the chunks end at row {at}, the rank's rows at {}",
                    own.end
                ));
            }
        }
        Parts::Halo(h) => {
            let fits = cut.rows == cut.cols
                && (h.local.rows(), h.local.cols()) == (m, m)
                && (h.remote.rows(), h.remote.cols()) == (h.remote_rows.len(), halo_cols.len())
                && h.remote_rows.windows(2).all(|w| w[0] < w[1])
                && h.remote_rows.last().is_none_or(|&r| r < m)
                && h.send_off.len() == world + 1
                && h.send_off.first() == Some(&0)
                && h.send_off.windows(2).all(|w| w[0] <= w[1])
                && h.send_off.last() == Some(&h.send_idx.len())
                && h.send_idx.iter().all(|&i| i < m)
                && h.recv.len() == world
                && h.recv
                    .iter()
                    .all(|q| q.start <= q.end && q.end <= halo_cols.len())
                && halo_cols.iter().all(|&j| j < cut.cols);
            if !fits {
                return Err(format!(
                    "halo blocks of {} + {} rows, {} halo slots, {} send offsets and {} receive \
                     ranges for {m} rows of {world} ranks",
                    h.local.rows(),
                    h.remote.rows(),
                    halo_cols.len(),
                    h.send_off.len(),
                    h.recv.len()
                ));
            }
        }
    }
    Ok(())
}

/// This rank's rows with their global columns, from its part: the chunks one after the other,
/// or the local block (columns shifted to the rank's first row) merged row by row with the
/// remote one (halo slots mapped to their x index; both sorted, so the rows stay sorted).
fn own_rows<T: GpuScalar>(
    parts: &Parts<T>,
    own: Range<usize>,
    cols: usize,
    halo_cols: &[usize],
) -> Result<Csr<T>, AugurError> {
    let (mut ptr, mut idx, mut val) = (vec![0i32], Vec::new(), Vec::new());
    match parts {
        Parts::Chunks(c) => {
            for a in c {
                let p = a.indptr();
                let base = *ptr.last().expect("one");
                ptr.extend(p.raw_storage()[1..].iter().map(|&q| base + q));
                idx.extend_from_slice(a.indices());
                val.extend_from_slice(a.data());
            }
        }
        Parts::Halo(h) => {
            let (lp, li, lv) = (h.local.indptr(), h.local.indices(), h.local.data());
            let lp = lp.raw_storage();
            let (rp, ri, rv) = (h.remote.indptr(), h.remote.indices(), h.remote.data());
            let rp = rp.raw_storage();
            let mut k = 0;
            for i in 0..own.len() {
                let mut a = (lp[i] as usize..lp[i + 1] as usize)
                    .map(|e| (own.start + li[e] as usize, lv[e]))
                    .peekable();
                let mut b: Vec<(usize, T)> = Vec::new();
                if h.remote_rows.get(k) == Some(&i) {
                    b = (rp[k] as usize..rp[k + 1] as usize)
                        .map(|e| (halo_cols[ri[e] as usize], rv[e]))
                        .collect();
                    k += 1;
                }
                let mut b = b.into_iter().peekable();
                loop {
                    let next = match (a.peek(), b.peek()) {
                        (Some(x), Some(y)) if x.0 <= y.0 => a.next(),
                        (Some(_), Some(_)) => b.next(),
                        (Some(_), None) => a.next(),
                        (None, Some(_)) => b.next(),
                        (None, None) => break,
                    };
                    let (c, v) = next.expect("peeked");
                    idx.push(c as i32);
                    val.push(v);
                }
                ptr.push(idx.len() as i32);
            }
        }
    }
    Csr::try_new((own.len(), cols), ptr, idx, val).map_err(|(_, _, _, e)| {
        AugurError::Invalid(format!("this rank's rows {own:?} from its part: {e}"))
    })
}

impl<T: GpuScalar + NcclType> MultiGpuSpmv<T> {
    /// [`MultiGpuSpmv::distributed`] with the matrix held by rank 0 only: rank 0 calls `load`,
    /// cuts the matrix, makes every rank's part (its halo blocks or its row chunks) and sends
    /// each rank its own over the group's meeting place (`launch::scatter`); the other ranks
    /// never call `load` and hold only their part. Returns what this rank holds, with its rows
    /// in global columns when `with_rows` (to check its part of a product against). Every rank
    /// waits at most `group.timeout` for rank 0 (which may spend that long loading).
    pub fn distributed_from_root(
        load: impl FnOnce() -> Result<Csr<T>, AugurError>,
        group: &Group,
        opts: MultiOptions,
        with_rows: bool,
    ) -> Result<(Self, RankShare<T>), AugurError> {
        let ranks_at = Ranks::Process(group);
        let (ordinals, n) = ranks_at.gpus();
        check_gpus(&ordinals, n, &opts)?;
        let env = &group.env;
        let nonce: Vec<u8> = group.id.internal.iter().map(|&c| c as u8).collect();
        let blob = launch::scatter(
            env,
            &group.meeting,
            &nonce,
            || {
                let a = load()?;
                check_size(&a)?;
                let cut = Cut::new(&a, n, opts.chunks, |b| process_gather(&a, n, &opts, b))?;
                let all: Vec<usize> = (0..n).collect();
                let parts = cut.parts_of(&a, &all)?;
                drop(a);
                Ok(parts
                    .into_iter()
                    .enumerate()
                    .map(|(r, (p, cols))| encode(&cut, r, n, &p, &cols))
                    .collect())
            },
            group.timeout,
        )?;
        let (cut, parts, halo_cols) = decode::<T>(&blob, env.rank, n)?;
        drop(blob);
        let own = cut.bounds[env.rank]..cut.bounds[env.rank + 1];
        let own_rows = if with_rows {
            Some(own_rows(&parts, own.clone(), cut.cols, &halo_cols)?)
        } else {
            None
        };
        let share = RankShare {
            rows: cut.rows,
            cols: cut.cols,
            nnz: cut.nnz,
            own,
            own_rows,
        };
        let me = Self::spawn(cut, vec![parts], ranks_at, opts)?;
        Ok((me, share))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multi::GatherMode;
    use augur_datasets::source::MatrixSource;

    fn gen(spec: &str) -> Csr<f32> {
        MatrixSource::parse(spec).unwrap().load::<f32>().unwrap().0
    }

    fn choice(mode: GatherMode, n: usize) -> GatherChoice {
        GatherChoice {
            mode,
            bytes: 0,
            gpus: n,
            path: Vec::new(),
            notes: vec!["a test".into()],
        }
    }

    /// Every rank's part survives the trip, and its rows in global columns are the matrix's.
    #[test]
    fn parts_travel_whole_and_give_back_each_ranks_rows() {
        for (spec, mode, chunks) in [
            ("stencil2d:nx=60", GatherMode::Halo, 1),
            ("rmat:scale=10,ef=6", GatherMode::Halo, 1),
            ("rmat:scale=10,ef=6", GatherMode::AllGather, 3),
            ("banded:n=3000,bw=4", GatherMode::AllGather, 1),
        ] {
            let a = gen(spec);
            let n = 3;
            let cut = Cut::new(&a, n, chunks, |_| Ok(choice(mode, n))).unwrap();
            let all: Vec<usize> = (0..n).collect();
            for (r, (p, cols)) in cut.parts_of(&a, &all).unwrap().into_iter().enumerate() {
                let blob = encode(&cut, r, n, &p, &cols);
                let (c2, p2, cols2) = decode::<f32>(&blob, r, n).unwrap();
                assert_eq!((c2.rows, c2.cols, c2.nnz), (a.rows(), a.cols(), a.nnz()));
                assert_eq!(c2.bounds, cut.bounds, "{spec}");
                assert_eq!(c2.layout.pieces, cut.layout.pieces, "{spec}");
                assert_eq!(c2.gather.mode, mode);
                assert_eq!(cols2, cols);
                // The same blob again: nothing lost on the way.
                assert_eq!(encode(&c2, r, n, &p2, &cols2), blob, "{spec} rank {r}");
                let own = cut.bounds[r]..cut.bounds[r + 1];
                let got = own_rows(&p2, own.clone(), a.cols(), &cols2).unwrap();
                let want = crate::multi::shard(&a, own).unwrap();
                assert_eq!(got, want, "{spec} rank {r}: its rows");
            }
        }
    }

    /// Rank 0 cuts and sends over TCP; every rank (threads here) decodes its own part, whose
    /// rows are the matrix's (the path of `distributed_from_root` up to the GPUs).
    #[test]
    fn every_rank_receives_its_own_part_from_rank_0() {
        use std::time::Duration;
        let a = gen("rmat:scale=11,ef=6");
        let world = 3;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let m = launch::Meeting::Tcp(listener.local_addr().unwrap().to_string());
        drop(listener);
        let t = Duration::from_secs(30);
        let env = |rank| launch::RankEnv {
            rank,
            world,
            local_rank: rank,
            launcher: "test",
        };
        let receive = |rank: usize| {
            let a = &a;
            // The first round on the same address (NCCL's id in a run), then this one.
            let nonce = launch::share(&env(rank), &m, || Ok(b"the run's id".to_vec()), t).unwrap();
            let blob = launch::scatter(
                &env(rank),
                &m,
                &nonce,
                || {
                    let cut = Cut::new(a, world, 1, |_| Ok(choice(GatherMode::Halo, world)))?;
                    let all: Vec<usize> = (0..world).collect();
                    Ok(cut
                        .parts_of(a, &all)?
                        .into_iter()
                        .enumerate()
                        .map(|(r, (p, cols))| encode(&cut, r, world, &p, &cols))
                        .collect())
                },
                t,
            )
            .unwrap();
            let (cut, parts, cols) = decode::<f32>(&blob, rank, world).unwrap();
            let own = cut.bounds[rank]..cut.bounds[rank + 1];
            (own.clone(), own_rows(&parts, own, cut.cols, &cols).unwrap())
        };
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..world).map(|r| s.spawn(move || receive(r))).collect();
            let mut covered = 0;
            for h in handles {
                let (own, rows) = h.join().unwrap();
                assert_eq!(rows, crate::multi::shard(&a, own.clone()).unwrap());
                covered += own.len();
            }
            assert_eq!(covered, a.rows());
        });
    }

    #[test]
    fn a_wrong_or_damaged_part_is_refused() {
        let a = gen("stencil2d:nx=30");
        let cut = Cut::new(&a, 2, 1, |_| Ok(choice(GatherMode::Halo, 2))).unwrap();
        let (p, cols) = cut.parts_of(&a, &[1]).unwrap().pop().unwrap();
        let blob = encode(&cut, 1, 2, &p, &cols);
        let e = |r: Result<(Cut, Parts<f32>, Vec<usize>), AugurError>| match r {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted"),
        };
        assert!(e(decode::<f32>(&blob, 0, 2)).contains("got rank 1's part"));
        let wrong = decode::<f64>(&blob, 1, 2)
            .err()
            .expect("accepted")
            .to_string();
        assert!(wrong.contains("(f32)"), "{wrong}");
        for cut_at in [5, 40, blob.len() / 2, blob.len() - 1] {
            let m = e(decode::<f32>(&blob[..cut_at], 1, 2));
            assert!(
                m.contains("malformed") || m.contains("header"),
                "{cut_at}: {m}"
            );
        }
        let mut long = blob.clone();
        long.push(0);
        assert!(e(decode::<f32>(&long, 1, 2)).contains("bytes past the end"));
        // Blocks and lists that do not fit the rank's rows: refused before any worker.
        let spoil = |f: &dyn Fn(&mut HostBlocks<f32>)| {
            let (mut p, cols) = cut.parts_of(&a, &[1]).unwrap().pop().unwrap();
            let Parts::Halo(h) = &mut p else {
                panic!("a halo part")
            };
            f(h);
            e(decode::<f32>(&encode(&cut, 1, 2, &p, &cols), 1, 2))
        };
        let rows = cut.bounds[2] - cut.bounds[1];
        let m = spoil(&|h| {
            h.send_idx.push(rows);
            *h.send_off.last_mut().unwrap() += 1;
        });
        assert!(m.contains("does not fit its cut"), "{m}");
        let m = spoil(&|h| h.recv[0] = 0..usize::MAX);
        assert!(m.contains("does not fit its cut"), "{m}");
        let m = spoil(&|h| h.remote_rows.reverse());
        assert!(m.contains("does not fit its cut"), "{m}");
        // A column index out of range in the local block: refused as a matrix, not used.
        let json = u64::from_le_bytes(blob[12..20].try_into().unwrap()) as usize;
        let rows = cut.bounds[2] - cut.bounds[1];
        let first_index = 20 + json + 16 + 8 + 4 * (rows + 1) + 8;
        let mut bad = blob.clone();
        bad[first_index..first_index + 4].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(e(decode::<f32>(&bad, 1, 2)).contains("not a CSR matrix"));
    }
}
