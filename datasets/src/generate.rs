//! Deterministic sparse-matrix generators, named by spec strings.
//!
//! A spec is `kind:key=value,key=value,...`, for example `rmat:scale=20,ef=16,seed=1`. Numbers may
//! be written `1000000`, `1e6`, `1_000_000` or `2^20`. Every generator is deterministic from its
//! parameters (the same spec gives the same matrix on any machine and any thread count) and builds
//! CSR directly, in parallel, without a triplet stage, so 1e8+ nonzeros fit easily in 24 GiB.
//!
//! | kind | parameters (defaults) | structure |
//! |---|---|---|
//! | `uniform` | `rows`, `cols`(=rows), `row_len`(8) or `nnz`, `seed`(1) | Erdős–Rényi: each cell present with p = row_len/cols (binomial row lengths) |
//! | `tall`, `wide` | as `uniform`; `tall` needs rows > cols, `wide` rows < cols | rectangular uniform |
//! | `stencil2d` | `nx`, `ny`(=nx), `points` 5 or 9 (5) | 2D grid Laplacian |
//! | `stencil3d` | `nx`, `ny`(=nx), `nz`(=nx), `points` 7 or 27 (7) | 3D grid Laplacian |
//! | `banded` | `n`, `bw`(16), `seed` | row i spans [i-lo_i, i+hi_i], lo_i, hi_i uniform in 0..=bw |
//! | `powerlaw` | `rows`, `cols`(=rows), `alpha`(2.5), `min`(1), `max`(=cols), `seed` | row lengths Pareto: P(len >= k) ~ k^-(alpha-1); columns uniform |
//! | `rmat` | `scale`, `ef`(16), `a`(0.57) `b`(0.19) `c`(0.19), `sym`(0), `perm`(1), `seed` | R-MAT / Kronecker graph, Graph500 parameters; duplicates merged |
//! | `blockdiag` | `n`, `block`(64), `seed` | dense `block` x `block` blocks on the diagonal |
//! | `hubs` | `n`, `hubs`(4), `hub_len`(=n), `short`(4), `seed` | a few very long rows among short random rows |
//! | `arrowhead` | `n`, `seed` | dense first row and first column plus the diagonal |
//! | `expand` | `file`, `k`(2), `pattern` identity or dense (identity), `order` natural, random or rcm (natural), `seed` | A ⊗ P: a real matrix grown k-fold; identity keeps every row length, dense multiplies it by k; then its rows and columns reordered: a seeded random symmetric permutation (locality destroyed) or reverse Cuthill-McKee (restored; square only) |
//!
//! Values are uniform in [0.1, 1) for random structures and the Laplacian (-1 off the diagonal)
//! for stencils; `expand` keeps the file's values.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};
use rayon::prelude::*;

use crate::reorder::{reorder, Order};
use crate::{build, mtx, Csr, DatasetError, Scalar, MAX_INDEX};

/// A parsed generator spec.
#[derive(Debug, Clone, PartialEq)]
pub enum Generator {
    Uniform {
        /// `uniform`, `tall` or `wide` (the name it was given).
        kind: &'static str,
        rows: usize,
        cols: usize,
        row_len: f64,
        seed: u64,
    },
    Stencil {
        dims: [usize; 3],
        points: usize,
    },
    Banded {
        n: usize,
        bw: usize,
        seed: u64,
    },
    PowerLaw {
        rows: usize,
        cols: usize,
        alpha: f64,
        min: usize,
        max: usize,
        seed: u64,
    },
    Rmat {
        scale: u32,
        ef: usize,
        a: f64,
        b: f64,
        c: f64,
        sym: bool,
        perm: bool,
        seed: u64,
    },
    BlockDiag {
        n: usize,
        block: usize,
        seed: u64,
    },
    Hubs {
        n: usize,
        hubs: usize,
        hub_len: usize,
        short: usize,
        seed: u64,
    },
    Arrowhead {
        n: usize,
        seed: u64,
    },
    Expand {
        file: PathBuf,
        k: usize,
        dense: bool,
        /// Rows and columns of the grown matrix reordered (`order=random|rcm`, `seed=` for random).
        order: Order,
    },
}

/// The generators and their parameters, for `augur matrix --help` (the table of this module's
/// documentation, as plain text).
pub const SPEC_HELP: &str = "\
Generator specs (a MATRIX argument may be one): kind:key=value,... e.g. rmat:scale=20,ef=16,seed=1.
Numbers may be written 1000000, 1e6, 1_000_000 or 2^20; the same spec gives the same matrix anywhere.
  uniform    rows, cols(=rows), row_len(8) or nnz, seed(1)   Erdos-Renyi, binomial row lengths
  tall, wide as uniform; tall needs rows > cols, wide rows < cols   rectangular uniform
  stencil2d  nx, ny(=nx), points 5 or 9 (5)                  2D grid Laplacian
  stencil3d  nx, ny(=nx), nz(=nx), points 7 or 27 (7)        3D grid Laplacian
  banded     n, bw(16), seed                                 row i spans [i-lo, i+hi], lo, hi in 0..=bw
  powerlaw   rows, cols(=rows), alpha(2.5), min(1), max(=cols), seed   Pareto row lengths
  rmat       scale, ef(16), a(0.57) b(0.19) c(0.19), sym(0), perm(1), seed   R-MAT / Kronecker graph
  blockdiag  n, block(64), seed                              dense blocks on the diagonal
  hubs       n, hubs(4), hub_len(=n), short(4), seed         a few very long rows among short ones
  arrowhead  n, seed                                         dense first row and column, diagonal
  expand     file, k(2), pattern identity|dense, order natural|random|rcm, seed
             a real matrix grown k-fold (A x I_k or A x ones(k)), then reordered";

/// The generator kinds, as written before the `:` of a spec.
pub const KINDS: &[&str] = &[
    "uniform",
    "tall",
    "wide",
    "stencil2d",
    "stencil3d",
    "banded",
    "powerlaw",
    "rmat",
    "blockdiag",
    "hubs",
    "arrowhead",
    "expand",
];

impl Generator {
    /// Parse a spec string such as `stencil3d:nx=100,points=27`.
    pub fn parse(spec: &str) -> Result<Generator, DatasetError> {
        let (kind, rest) = spec
            .split_once(':')
            .ok_or_else(|| DatasetError::spec(spec, "expected `kind:key=value,...`"))?;
        let kind = kind.trim();
        let mut p = Params::parse(spec, kind, rest)?;
        let g = match kind {
            "uniform" | "tall" | "wide" => {
                let (dr, dc, dl) = match kind {
                    "tall" => (Some(1 << 20), Some(256), 8.0),
                    "wide" => (Some(256), Some(1 << 20), 1024.0),
                    _ => (None, None, 8.0),
                };
                let rows = p.count("rows", dr)?;
                let cols = p.count("cols", dc.or(Some(rows)))?;
                let dl = f64::min(dl, cols as f64);
                let row_len = match (p.has("row_len"), p.has("nnz")) {
                    (true, true) => return Err(p.err("give `row_len` or `nnz`, not both")),
                    (_, true) => p.count("nnz", None)? as f64 / rows.max(1) as f64,
                    _ => p.real("row_len", Some(dl))?,
                };
                if kind == "tall" && rows <= cols {
                    return Err(p.err(format!("`tall` needs rows > cols, got {rows} x {cols}")));
                }
                if kind == "wide" && rows >= cols {
                    return Err(p.err(format!("`wide` needs rows < cols, got {rows} x {cols}")));
                }
                if !(0.0..=cols as f64).contains(&row_len) {
                    return Err(p.err(format!("row_len {row_len} must lie in 0..=cols ({cols})")));
                }
                let kind = KINDS
                    .iter()
                    .find(|k| **k == kind)
                    .copied()
                    .unwrap_or("uniform");
                Generator::Uniform {
                    kind,
                    rows,
                    cols,
                    row_len,
                    seed: p.seed()?,
                }
            }
            "stencil2d" => {
                let nx = p.count("nx", None)?;
                let ny = p.count("ny", Some(nx))?;
                let points = p.count("points", Some(5))?;
                if points != 5 && points != 9 {
                    return Err(p.err(format!("stencil2d takes points=5 or 9, not {points}")));
                }
                Generator::Stencil {
                    dims: [nx, ny, 1],
                    points,
                }
            }
            "stencil3d" => {
                let nx = p.count("nx", None)?;
                let ny = p.count("ny", Some(nx))?;
                let nz = p.count("nz", Some(nx))?;
                let points = p.count("points", Some(7))?;
                if points != 7 && points != 27 {
                    return Err(p.err(format!("stencil3d takes points=7 or 27, not {points}")));
                }
                Generator::Stencil {
                    dims: [nx, ny, nz],
                    points,
                }
            }
            "banded" => Generator::Banded {
                n: p.count("n", None)?,
                bw: p.count("bw", Some(16))?,
                seed: p.seed()?,
            },
            "powerlaw" => {
                let rows = p.count("rows", None)?;
                let cols = p.count("cols", Some(rows))?;
                let alpha = p.real("alpha", Some(2.5))?;
                let min = p.count("min", Some(1))?;
                let max = p.count("max", Some(cols))?;
                if alpha <= 1.0 {
                    return Err(p.err(format!("alpha must be > 1, got {alpha}")));
                }
                if min > max || max > cols {
                    return Err(p.err(format!(
                        "need min <= max <= cols, got min={min} max={max} cols={cols}"
                    )));
                }
                Generator::PowerLaw {
                    rows,
                    cols,
                    alpha,
                    min,
                    max,
                    seed: p.seed()?,
                }
            }
            "rmat" => {
                let scale = p.count("scale", None)?;
                if !(1..=30).contains(&scale) {
                    return Err(p.err(format!("scale must be in 1..=30, got {scale}")));
                }
                let (a, b, c) = (
                    p.real("a", Some(0.57))?,
                    p.real("b", Some(0.19))?,
                    p.real("c", Some(0.19))?,
                );
                if a < 0.0 || b < 0.0 || c < 0.0 || a + b + c > 1.0 {
                    return Err(p.err(format!(
                        "need a, b, c >= 0 and a + b + c <= 1, got {a}, {b}, {c}"
                    )));
                }
                Generator::Rmat {
                    scale: scale as u32,
                    ef: p.count("ef", Some(16))?,
                    a,
                    b,
                    c,
                    sym: p.flag("sym", false)?,
                    perm: p.flag("perm", true)?,
                    seed: p.seed()?,
                }
            }
            "blockdiag" => {
                let n = p.count("n", None)?;
                let block = p.count("block", Some(64))?;
                if block == 0 {
                    return Err(p.err("block must be >= 1"));
                }
                Generator::BlockDiag {
                    n,
                    block,
                    seed: p.seed()?,
                }
            }
            "hubs" => {
                let n = p.count("n", None)?;
                let hubs = p.count("hubs", Some(4))?;
                let hub_len = p.count("hub_len", Some(n))?;
                let short = p.count("short", Some(4))?;
                if hubs > n || hub_len > n || short > n {
                    return Err(p.err(format!(
                        "hubs ({hubs}), hub_len ({hub_len}) and short ({short}) must be <= n ({n})"
                    )));
                }
                Generator::Hubs {
                    n,
                    hubs,
                    hub_len,
                    short,
                    seed: p.seed()?,
                }
            }
            "arrowhead" => Generator::Arrowhead {
                n: p.count("n", None)?,
                seed: p.seed()?,
            },
            "expand" => {
                let file = PathBuf::from(p.text("file")?);
                let k = p.count("k", Some(2))?;
                if k == 0 {
                    return Err(p.err("k must be >= 1"));
                }
                let dense = match p.text_or("pattern", "identity").as_str() {
                    "identity" => false,
                    "dense" => true,
                    other => {
                        return Err(p.err(format!(
                            "pattern must be `identity` or `dense`, not `{other}`"
                        )))
                    }
                };
                let seed = p.seed()?;
                let order_s = p.text_or("order", "natural");
                let order = Order::parse(&order_s, seed).ok_or_else(|| {
                    p.err(format!(
                        "order must be `natural`, `random` or `rcm`, not `{order_s}`"
                    ))
                })?;
                Generator::Expand {
                    file,
                    k,
                    dense,
                    order,
                }
            }
            other => {
                return Err(DatasetError::spec(
                    spec,
                    format!("unknown generator `{other}`; known: {}", KINDS.join(", ")),
                ))
            }
        };
        p.finish()?;
        Ok(g)
    }

    /// A count of nonzeros the parameters imply at the least (a lower estimate for the random
    /// generators): checked before anything is allocated, so that a spec far beyond augur's i32
    /// limit is refused at once instead of after gigabytes of per-row arrays. None for `expand`,
    /// whose size depends on its file (checked once the file is read).
    pub fn nnz_at_least(&self) -> Option<u128> {
        let u = |x: usize| x as u128;
        Some(match *self {
            // A binomial row length: its mean, less a margin of 1% for the spread.
            Generator::Uniform {
                rows,
                cols,
                row_len,
                ..
            } => (rows as f64 * row_len.min(cols as f64) * 0.99) as u128,
            // Every interior point has all its neighbours.
            Generator::Stencil { dims, points } => {
                let inner = |d: usize| u(d.saturating_sub(2));
                let nz = if points == 7 || points == 27 {
                    inner(dims[2])
                } else {
                    u(dims[2])
                };
                inner(dims[0]) * inner(dims[1]) * nz * u(points)
            }
            // Half-widths uniform in 0..=bw: a row spans about bw + 1 entries, less where it is
            // cut at the edges (at most half of it).
            Generator::Banded { n, bw, .. } => u(n) * (u(bw.min(n)) / 2 + 1),
            Generator::PowerLaw { rows, min, .. } => u(rows) * u(min),
            // Edges before duplicates merge (at most about half of them on R-MAT graphs).
            Generator::Rmat { scale, ef, sym, .. } => {
                (1u128 << scale.min(64)) * u(ef) / 2 * if sym { 2 } else { 1 }
            }
            Generator::BlockDiag { n, block, .. } => u(n / block.max(1) * block.max(1)) * u(block),
            Generator::Hubs {
                n,
                hubs,
                hub_len,
                short,
                ..
            } => u(hubs) * u(hub_len) + u(n.saturating_sub(hubs)) * u(short),
            Generator::Arrowhead { n, .. } => 3 * u(n.saturating_sub(1)),
            Generator::Expand { .. } => return None,
        })
    }

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

impl fmt::Display for Generator {
    /// The canonical spec: every parameter, defaults included, in a fixed order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Generator::Uniform {
                kind,
                rows,
                cols,
                row_len,
                seed,
            } => write!(
                f,
                "{kind}:rows={rows},cols={cols},row_len={row_len},seed={seed}"
            ),
            Generator::Stencil { dims, points } if *points == 5 || *points == 9 => {
                write!(f, "stencil2d:nx={},ny={},points={points}", dims[0], dims[1])
            }
            Generator::Stencil { dims, points } => write!(
                f,
                "stencil3d:nx={},ny={},nz={},points={points}",
                dims[0], dims[1], dims[2]
            ),
            Generator::Banded { n, bw, seed } => write!(f, "banded:n={n},bw={bw},seed={seed}"),
            Generator::PowerLaw {
                rows,
                cols,
                alpha,
                min,
                max,
                seed,
            } => write!(
                f,
                "powerlaw:rows={rows},cols={cols},alpha={alpha},min={min},max={max},seed={seed}"
            ),
            Generator::Rmat {
                scale,
                ef,
                a,
                b,
                c,
                sym,
                perm,
                seed,
            } => write!(
                f,
                "rmat:scale={scale},ef={ef},a={a},b={b},c={c},sym={},perm={},seed={seed}",
                *sym as u8, *perm as u8
            ),
            Generator::BlockDiag { n, block, seed } => {
                write!(f, "blockdiag:n={n},block={block},seed={seed}")
            }
            Generator::Hubs {
                n,
                hubs,
                hub_len,
                short,
                seed,
            } => write!(
                f,
                "hubs:n={n},hubs={hubs},hub_len={hub_len},short={short},seed={seed}"
            ),
            Generator::Arrowhead { n, seed } => write!(f, "arrowhead:n={n},seed={seed}"),
            Generator::Expand {
                file,
                k,
                dense,
                order,
            } => {
                write!(
                    f,
                    "expand:k={k},pattern={}",
                    if *dense { "dense" } else { "identity" }
                )?;
                match order {
                    Order::Natural => {}
                    Order::Random { seed } => write!(f, ",order=random,seed={seed}")?,
                    Order::Rcm => write!(f, ",order=rcm")?,
                }
                write!(f, ",file={}", file.display())
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

/// `key=value` parameters of a spec, tracking which were used so unknown keys are reported.
struct Params<'a> {
    spec: &'a str,
    kind: &'a str,
    map: BTreeMap<&'a str, &'a str>,
    asked: Vec<&'static str>,
}

impl<'a> Params<'a> {
    fn parse(spec: &'a str, kind: &'a str, rest: &'a str) -> Result<Self, DatasetError> {
        let mut map = BTreeMap::new();
        // `file=` takes the rest of the spec, so that paths may contain commas.
        let (head, file) = match rest.find("file=") {
            Some(i) if i == 0 || rest.as_bytes()[i - 1] == b',' => {
                (rest[..i].trim_end_matches(','), Some(&rest[i + 5..]))
            }
            _ => (rest, None),
        };
        for kv in head.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| DatasetError::spec(spec, format!("`{kv}` is not `key=value`")))?;
            if map.insert(k.trim(), v.trim()).is_some() {
                return Err(DatasetError::spec(spec, format!("`{k}` given twice")));
            }
        }
        if let Some(f) = file {
            map.insert("file", f);
        }
        Ok(Params {
            spec,
            kind,
            map,
            asked: Vec::new(),
        })
    }

    fn err(&self, msg: impl Into<String>) -> DatasetError {
        DatasetError::spec(self.spec, msg)
    }

    fn has(&mut self, key: &'static str) -> bool {
        self.asked.push(key);
        self.map.contains_key(key)
    }

    fn raw(&mut self, key: &'static str) -> Option<&'a str> {
        self.asked.push(key);
        self.map.get(key).copied()
    }

    fn real(&mut self, key: &'static str, default: Option<f64>) -> Result<f64, DatasetError> {
        match (self.raw(key), default) {
            (Some(v), _) => parse_number(v)
                .filter(|x| x.is_finite())
                .ok_or_else(|| self.err(format!("{key}=`{v}` is not a number"))),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(self.err(format!("`{}` needs `{key}=`", self.kind))),
        }
    }

    fn count(&mut self, key: &'static str, default: Option<usize>) -> Result<usize, DatasetError> {
        match (self.raw(key), default) {
            (Some(v), _) => parse_number(v)
                .filter(|x| *x >= 0.0 && x.fract() == 0.0 && *x <= MAX_INDEX as f64)
                .map(|x| x as usize)
                .ok_or_else(|| {
                    self.err(format!(
                        "{key}=`{v}` is not a whole number in 0..={MAX_INDEX}"
                    ))
                }),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(self.err(format!("`{}` needs `{key}=`", self.kind))),
        }
    }

    fn seed(&mut self) -> Result<u64, DatasetError> {
        match self.raw("seed") {
            None => Ok(1),
            // Digits first (every u64), else the number forms the counts take (`1e3`, `2^20`)
            // where they are whole and exact in a double.
            Some(v) => v
                .replace('_', "")
                .parse::<u64>()
                .ok()
                .or_else(|| {
                    parse_number(v)
                        .filter(|x| *x >= 0.0 && x.fract() == 0.0 && *x <= (1u64 << 53) as f64)
                        .map(|x| x as u64)
                })
                .ok_or_else(|| self.err(format!("seed=`{v}` is not an unsigned integer"))),
        }
    }

    fn flag(&mut self, key: &'static str, default: bool) -> Result<bool, DatasetError> {
        match self.raw(key) {
            None => Ok(default),
            Some("1" | "true" | "yes") => Ok(true),
            Some("0" | "false" | "no") => Ok(false),
            Some(v) => Err(self.err(format!("{key}=`{v}` is not 0/1"))),
        }
    }

    fn text(&mut self, key: &'static str) -> Result<String, DatasetError> {
        self.raw(key)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| self.err(format!("`{}` needs `{key}=`", self.kind)))
    }

    fn text_or(&mut self, key: &'static str, default: &str) -> String {
        self.raw(key).unwrap_or(default).to_string()
    }

    fn finish(self) -> Result<(), DatasetError> {
        if let Some(k) = self.map.keys().find(|k| !self.asked.contains(k)) {
            let mut known = self.asked.clone();
            known.dedup();
            return Err(self.err(format!(
                "unknown parameter `{k}`; `{}` takes: {}",
                self.kind,
                known.join(", ")
            )));
        }
        Ok(())
    }
}

/// `1000`, `1e6`, `1_000_000`, `2^20`.
pub fn parse_number(s: &str) -> Option<f64> {
    let s = s.replace('_', "");
    if let Some((b, e)) = s.split_once('^') {
        return Some(b.parse::<f64>().ok()?.powf(e.parse::<f64>().ok()?));
    }
    s.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_number("2^20"), Some(1048576.0));
        assert_eq!(parse_number("1e6"), Some(1e6));
        assert_eq!(parse_number("1_000"), Some(1000.0));
        assert_eq!(parse_number("x"), None);
    }

    #[test]
    fn file_takes_the_rest() {
        let g = Generator::parse("expand:k=3,file=/a,b/c.mtx").unwrap();
        assert_eq!(
            g,
            Generator::Expand {
                file: PathBuf::from("/a,b/c.mtx"),
                k: 3,
                dense: false,
                order: Order::Natural,
            }
        );
    }
}
