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
//!
//! Here: the specs (parsed, checked, printed back); the matrices are made in `make`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use crate::reorder::Order;
use crate::{DatasetError, MAX_INDEX};

mod make;

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
