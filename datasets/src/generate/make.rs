//! The generators' matrices, built as CSR directly and in parallel, every random choice drawn
//! from streams seeded per chunk of rows so that no result depends on the thread count.

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};
use rayon::prelude::*;

use super::Generator;
use crate::reorder::reorder;
use crate::{build, mtx, Csr, DatasetError, Scalar, MAX_INDEX};

impl Generator {
    /// Generate the matrix.
    pub fn generate<T: Scalar>(&self) -> Result<Csr<T>, DatasetError> {
        let name = self.to_string();
        if let Some(nnz) = self.nnz_at_least() {
            if nnz > MAX_INDEX as u128 {
                return Err(DatasetError::TooLarge {
                    name,
                    what: "nnz (implied by the parameters)",
                    value: nnz,
                    max: MAX_INDEX,
                });
            }
        }
        match *self {
            Generator::Uniform {
                rows,
                cols,
                row_len,
                seed,
                ..
            } => {
                let p = if cols > 0 { row_len / cols as f64 } else { 0.0 };
                let binom = Binomial::new(cols as u64, p.clamp(0.0, 1.0))
                    .map_err(|e| DatasetError::spec(&name, e.to_string()))?;
                build(
                    &name,
                    rows,
                    cols,
                    seed,
                    |_, rng| binom.sample(rng) as usize,
                    |_, rng, idx, val| {
                        sample_sorted(rng, cols, idx);
                        random_values(rng, val);
                    },
                )
            }
            Generator::Stencil { dims, points } => stencil(&name, dims, points),
            Generator::Banded { n, bw, seed } => contiguous_rows(&name, n, seed, |r| {
                let h = hash3(seed, 7, r as u64);
                let lo = (h % (bw as u64 + 1)) as usize;
                let hi = ((h >> 32) % (bw as u64 + 1)) as usize;
                let start = r.saturating_sub(lo);
                (start, (r + hi).min(n.saturating_sub(1)) + 1 - start)
            }),
            Generator::PowerLaw {
                rows,
                cols,
                alpha,
                min,
                max,
                seed,
            } => build(
                &name,
                rows,
                cols,
                seed,
                |_, rng| {
                    // Inverse-CDF Pareto sample; u in (0, 1].
                    let u = 1.0 - rng.random::<f64>();
                    let len = (min as f64 * u.powf(-1.0 / (alpha - 1.0))).floor();
                    (len.min(max as f64) as usize).max(min)
                },
                |_, rng, idx, val| {
                    sample_sorted(rng, cols, idx);
                    random_values(rng, val);
                },
            ),
            Generator::Rmat { .. } => rmat(self, &name),
            Generator::BlockDiag { n, block, seed } => contiguous_rows(&name, n, seed, |r| {
                let start = r / block * block;
                (start, (start + block).min(n) - start)
            }),
            Generator::Hubs {
                n,
                hubs,
                hub_len,
                short,
                seed,
            } => {
                let mut rng = ChaCha8Rng::seed_from_u64(hash3(seed, 3, 0));
                let mut hub_rows: Vec<usize> =
                    rand::seq::index::sample(&mut rng, n, hubs).into_vec();
                hub_rows.sort_unstable();
                let is_hub = |r: usize| hub_rows.binary_search(&r).is_ok();
                build(
                    &name,
                    n,
                    n,
                    seed,
                    |r, _| if is_hub(r) { hub_len } else { short },
                    |_, rng, idx, val| {
                        sample_sorted(rng, n, idx);
                        random_values(rng, val);
                    },
                )
            }
            Generator::Arrowhead { n, seed } => build(
                &name,
                n,
                n,
                seed,
                |r, _| if r == 0 { n } else { 2 },
                |r, rng, idx, val| {
                    if r == 0 {
                        for (k, c) in idx.iter_mut().enumerate() {
                            *c = k as i32;
                        }
                    } else {
                        idx[0] = 0;
                        idx[1] = r as i32;
                    }
                    random_values(rng, val);
                },
            ),
            Generator::Expand {
                ref file,
                k,
                dense,
                order,
            } => {
                let base: Csr<T> = mtx::read(file)?.matrix;
                let (bp, bi, bv) = (base.indptr(), base.indices(), base.data());
                let bp = bp.raw_storage();
                let row_of = |r: usize| bp[r / k] as usize..bp[r / k + 1] as usize;
                let per = if dense { k } else { 1 };
                let rows = checked_mul(&name, "rows", base.rows(), k)?;
                let cols = checked_mul(&name, "cols", base.cols(), k)?;
                checked_mul(&name, "nnz", checked_mul(&name, "nnz", base.nnz(), k)?, per)?;
                let grown = build(
                    &name,
                    rows,
                    cols,
                    0,
                    |r, _| row_of(r).len() * per,
                    |r, _, idx, val| {
                        let p = r % k;
                        let mut o = 0;
                        for e in row_of(r) {
                            let j = bi[e] as usize * k;
                            if dense {
                                for q in 0..k {
                                    idx[o] = (j + q) as i32;
                                    val[o] = bv[e];
                                    o += 1;
                                }
                            } else {
                                idx[o] = (j + p) as i32;
                                val[o] = bv[e];
                                o += 1;
                            }
                        }
                    },
                )?;
                reorder(&name, grown, order)
            }
        }
    }
}

/// Rows per independently seeded random stream: results do not depend on the thread count.
const CHUNK_ROWS: usize = 1 << 12;

/// A random stream for (seed, purpose, chunk).
fn chunk_rng(seed: u64, stream: u64, chunk: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(hash3(seed, stream, chunk))
}

/// SplitMix64 over three words: a cheap, well-mixed per-row hash.
fn hash3(a: u64, b: u64, c: u64) -> u64 {
    let mut z = a
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(b.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(c.wrapping_mul(0x94D0_49BB_1331_11EB))
        .wrapping_add(0x2545_F491_4F6C_DD1D);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn checked_mul(name: &str, what: &'static str, a: usize, b: usize) -> Result<usize, DatasetError> {
    let v = a as u128 * b as u128;
    if v > MAX_INDEX as u128 {
        return Err(DatasetError::TooLarge {
            name: name.to_string(),
            what,
            value: v,
            max: MAX_INDEX,
        });
    }
    Ok(v as usize)
}

/// Build a CSR matrix row by row, in parallel: `len(row, rng)` gives each row's length (its rng is
/// one stream per chunk of rows), then `fill(row, rng, cols, vals)` writes the row's sorted,
/// distinct column indices and values into slices of exactly that length.
fn build<T, L, F>(
    name: &str,
    rows: usize,
    cols: usize,
    seed: u64,
    len: L,
    fill: F,
) -> Result<Csr<T>, DatasetError>
where
    T: Scalar,
    L: Fn(usize, &mut ChaCha8Rng) -> usize + Sync,
    F: Fn(usize, &mut ChaCha8Rng, &mut [i32], &mut [T]) + Sync,
{
    checked_mul(name, "rows", rows, 1)?;
    checked_mul(name, "cols", cols, 1)?;
    let mut lens = vec![0usize; rows];
    lens.par_chunks_mut(CHUNK_ROWS)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng = chunk_rng(seed, 0, c as u64);
            let first = c * CHUNK_ROWS;
            for (k, l) in chunk.iter_mut().enumerate() {
                *l = len(first + k, &mut rng);
            }
        });
    let mut indptr = Vec::with_capacity(rows + 1);
    let mut total: usize = 0;
    indptr.push(0i32);
    for l in &lens {
        total += l;
        if total > MAX_INDEX {
            return Err(DatasetError::TooLarge {
                name: name.to_string(),
                what: "nnz",
                value: lens.iter().map(|&l| l as u128).sum(),
                max: MAX_INDEX,
            });
        }
        indptr.push(total as i32);
    }
    drop(lens);
    let mut indices = vec![0i32; total];
    let mut data = vec![T::zero(); total];
    let mut pieces = Vec::with_capacity(rows.div_ceil(CHUNK_ROWS));
    let (mut irest, mut vrest) = (&mut indices[..], &mut data[..]);
    for c in 0..rows.div_ceil(CHUNK_ROWS) {
        let (r0, r1) = (c * CHUNK_ROWS, ((c + 1) * CHUNK_ROWS).min(rows));
        let n = (indptr[r1] - indptr[r0]) as usize;
        let (i, ir) = irest.split_at_mut(n);
        let (v, vr) = vrest.split_at_mut(n);
        (irest, vrest) = (ir, vr);
        pieces.push((c, i, v));
    }
    pieces.into_par_iter().for_each(|(c, idx, val)| {
        let mut rng = chunk_rng(seed, 1, c as u64);
        let (r0, r1) = (c * CHUNK_ROWS, ((c + 1) * CHUNK_ROWS).min(rows));
        let base = indptr[r0] as usize;
        for r in r0..r1 {
            let (s, e) = (indptr[r] as usize - base, indptr[r + 1] as usize - base);
            fill(r, &mut rng, &mut idx[s..e], &mut val[s..e]);
        }
    });
    build::finish(name, (rows, cols), indptr, indices, data)
}

/// An n x n matrix whose row r holds the columns `start..start + len` for `(start, len) =
/// extent(r)`, with random values.
fn contiguous_rows<T: Scalar>(
    name: &str,
    n: usize,
    seed: u64,
    extent: impl Fn(usize) -> (usize, usize) + Sync,
) -> Result<Csr<T>, DatasetError> {
    build(
        name,
        n,
        n,
        seed,
        |r, _| extent(r).1,
        |r, rng, idx, val| {
            let start = extent(r).0;
            for (k, c) in idx.iter_mut().enumerate() {
                *c = (start + k) as i32;
            }
            random_values(rng, val);
        },
    )
}

/// Fill `out` with distinct column indices in 0..cols, sorted.
fn sample_sorted(rng: &mut ChaCha8Rng, cols: usize, out: &mut [i32]) {
    let k = out.len();
    if k == cols {
        for (j, c) in out.iter_mut().enumerate() {
            *c = j as i32;
        }
        return;
    }
    for (c, j) in out.iter_mut().zip(rand::seq::index::sample(rng, cols, k)) {
        *c = j as i32;
    }
    out.sort_unstable();
}

fn random_values<T: Scalar>(rng: &mut ChaCha8Rng, val: &mut [T]) {
    for v in val {
        *v = T::from_f64(rng.random_range(0.1..1.0));
    }
}

fn stencil<T: Scalar>(name: &str, dims: [usize; 3], points: usize) -> Result<Csr<T>, DatasetError> {
    let [nx, ny, nz] = dims;
    let rows = checked_mul(name, "rows", checked_mul(name, "rows", nx, ny)?, nz)?;
    // 5 and 9 points are 2D (dz = 0); 7 and 27 are 3D. 5 and 7 keep the axis neighbours only.
    let mut offsets: Vec<[isize; 3]> = Vec::new();
    let dzs = if points == 7 || points == 27 {
        -1isize..=1
    } else {
        0..=0
    };
    for dz in dzs {
        for dy in -1isize..=1 {
            for dx in -1isize..=1 {
                let axis = (dx != 0) as usize + (dy != 0) as usize + (dz != 0) as usize <= 1;
                if axis || points == 9 || points == 27 {
                    offsets.push([dx, dy, dz]);
                }
            }
        }
    }
    let diag = (offsets.len() - 1) as f64;
    let neighbours = |r: usize| {
        let (x, y, z) = (r % nx, (r / nx) % ny, r / (nx * ny));
        offsets.iter().filter_map(move |&[dx, dy, dz]| {
            let (x2, y2, z2) = (x as isize + dx, y as isize + dy, z as isize + dz);
            let inside = (0..nx as isize).contains(&x2)
                && (0..ny as isize).contains(&y2)
                && (0..nz as isize).contains(&z2);
            inside.then(|| {
                (
                    x2 as usize + nx * (y2 as usize + ny * z2 as usize),
                    dx | dy | dz == 0,
                )
            })
        })
    };
    build(
        name,
        rows,
        rows,
        0,
        |r, _| neighbours(r).count(),
        |r, _, idx, val| {
            // Row-major order of the neighbour coordinates is their (dz, dy, dx) order: sorted.
            for ((c, v), (j, centre)) in idx.iter_mut().zip(val.iter_mut()).zip(neighbours(r)) {
                *c = j as i32;
                *v = T::from_f64(if centre { diag } else { -1.0 });
            }
        },
    )
}

/// R-MAT edges, Graph500 style: each edge descends `scale` levels choosing a quadrant with
/// probabilities a, b, c, d = 1-a-b-c; vertex labels are then permuted (`perm`), the edge list is
/// optionally symmetrised (`sym`), bucketed by row and deduplicated. (Graph500's per-level noise on
/// a..d is not applied.)
fn rmat<T: Scalar>(g: &Generator, name: &str) -> Result<Csr<T>, DatasetError> {
    let Generator::Rmat {
        scale,
        ef,
        a,
        b,
        c,
        sym,
        perm,
        seed,
    } = *g
    else {
        unreachable!("rmat() takes an Rmat generator")
    };
    let n = 1usize << scale;
    let edges = checked_mul(name, "edges", n, ef)?;
    checked_mul(name, "nnz", edges, if sym { 2 } else { 1 })?;
    let to_u32 = |p: f64| (p * 4294967296.0).min(4294967295.0) as u32;
    let (ta, tab, tabc) = (to_u32(a), to_u32(a + b), to_u32(a + b + c));
    const CHUNK_EDGES: usize = 1 << 16;

    let labels: Option<Vec<u32>> = perm.then(|| {
        let mut rng = chunk_rng(seed, 11, 0);
        let mut p: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            let j = rng.random_range(0..=i);
            p.swap(i, j);
        }
        p
    });
    let label = |v: u32| labels.as_ref().map_or(v, |p| p[v as usize]);

    let (rows_of, cols_of): (Vec<i32>, Vec<i32>) = (0..edges.div_ceil(CHUNK_EDGES))
        .into_par_iter()
        .flat_map_iter(|ch| {
            let mut rng = chunk_rng(seed, 10, ch as u64);
            let count = CHUNK_EDGES.min(edges - ch * CHUNK_EDGES);
            let mut out = Vec::with_capacity(count * (1 + sym as usize));
            for _ in 0..count {
                let (mut u, mut v) = (0u32, 0u32);
                for _ in 0..scale {
                    let r = rng.next_u32();
                    let (bu, bv) = if r < ta {
                        (0, 0)
                    } else if r < tab {
                        (0, 1)
                    } else if r < tabc {
                        (1, 0)
                    } else {
                        (1, 1)
                    };
                    u = (u << 1) | bu;
                    v = (v << 1) | bv;
                }
                let (u, v) = (label(u) as i32, label(v) as i32);
                out.push((u, v));
                if sym && u != v {
                    out.push((v, u));
                }
            }
            out
        })
        .unzip();
    drop(labels);
    let zeros = vec![T::zero(); rows_of.len()];
    let mut a = build::csr_from_triplets(name, (n, n), &rows_of, &cols_of, &zeros)?;
    drop((rows_of, cols_of, zeros));
    a.data_mut()
        .par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(ch, vals)| random_values(&mut chunk_rng(seed, 12, ch as u64), vals));
    Ok(a)
}
