//! The SuiteSparse Matrix Collection's index (`ssstats.csv`): typed records, queries, and where
//! each matrix is downloaded from.
//!
//! Format: line 1 the number of matrices, line 2 the revision date, then one line per matrix (its
//! collection id is its position, from 1):
//! `Group,Name,nrows,ncols,nnz,isReal,isBinary,isND,posdef,pattern_symmetry,numerical_symmetry,kind,pattern_entries`.
//! `nnz` counts numerical nonzeros with both triangles of a symmetric matrix (no explicit zeros).

use std::path::Path;

use serde::Serialize;

use crate::DatasetError;

/// One matrix of the collection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogEntry {
    /// Collection id (1-based position in the index).
    pub id: u32,
    pub group: String,
    pub name: String,
    pub rows: u64,
    pub cols: u64,
    /// Numerical nonzeros, both triangles.
    pub nnz: u64,
    /// Real (or integer or pattern) values; false for complex.
    pub real: bool,
    /// Every value 1 (or a pattern matrix).
    pub binary: bool,
    /// From a 2D/3D discretisation.
    pub nd: bool,
    pub posdef: bool,
    pub pattern_symmetry: f64,
    pub numerical_symmetry: f64,
    pub kind: String,
    /// Entries of the pattern, explicit zeros included.
    pub pattern_entries: u64,
}

impl CatalogEntry {
    /// `Group/Name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.group, self.name)
    }

    /// Symmetric values (a symmetric file stores one triangle).
    pub fn symmetric(&self) -> bool {
        self.numerical_symmetry >= 1.0 && self.rows == self.cols
    }

    /// Family key for grouped cross-validation: group plus the name stem, as in the shared
    /// manifest ([`name_stem`]).
    pub fn family(&self) -> String {
        format!("{}/{}", self.group, name_stem(&self.name))
    }

    /// A rough size of the `.tar.gz` download: about 10 bytes per stored entry of a real matrix,
    /// 4 of a pattern one (gzip-compressed Matrix Market text); stored entries are about half the
    /// pattern of a symmetric matrix.
    pub fn estimated_download_bytes(&self) -> u64 {
        let stored = if self.pattern_symmetry >= 1.0 && self.rows == self.cols {
            (self.pattern_entries + self.rows) / 2
        } else {
            self.pattern_entries
        };
        stored * if self.binary { 4 } else { 10 } + 1024
    }

    /// Where its Matrix Market archive is under a collection base URL.
    pub fn archive_url(&self, base: &str) -> String {
        format!(
            "{}/MM/{}/{}.tar.gz",
            base.trim_end_matches('/'),
            self.group,
            self.name
        )
    }
}

/// A matrix name without its trailing number: digits and separators, and a single letter right
/// after a digit (`bcsstk16` -> `bcsstk`, `dwg961a` -> `dwg`, `lp_share1b` -> `lp_share`, but
/// `GD01_b` and `1138_bus` stay whole).
pub fn name_stem(name: &str) -> &str {
    let b = name.as_bytes();
    let mut end = b.len();
    if end >= 2 && b[end - 1].is_ascii_lowercase() && b[end - 2].is_ascii_digit() {
        end -= 1;
    }
    let stem = name[..end].trim_end_matches(|c: char| c.is_ascii_digit() || c == '_' || c == '-');
    if stem.is_empty() {
        name
    } else {
        stem
    }
}

/// The default collection base URL; `--base-url` changes it.
pub const DEFAULT_BASE_URL: &str = "https://sparse.tamu.edu";

/// The index's URL under a base URL.
pub fn index_url(base: &str) -> String {
    format!("{}/files/ssstats.csv", base.trim_end_matches('/'))
}

/// The parsed index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Catalog {
    /// The revision date line.
    pub revision: String,
    pub entries: Vec<CatalogEntry>,
}

/// What to select from the catalog; empty fields select everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Exact group names (case-insensitive).
    pub groups: Vec<String>,
    /// `Name` or `Group/Name` (case-insensitive).
    pub names: Vec<String>,
    /// Substring of the kind (case-insensitive), e.g. `circuit simulation`.
    pub kind: Option<String>,
    pub min_rows: Option<u64>,
    pub max_rows: Option<u64>,
    pub min_cols: Option<u64>,
    pub max_cols: Option<u64>,
    pub min_nnz: Option<u64>,
    pub max_nnz: Option<u64>,
    /// Real (true) or complex (false) values.
    pub real: Option<bool>,
    pub binary: Option<bool>,
    /// Numerically symmetric (true) or not (false).
    pub symmetric: Option<bool>,
    /// At most this many, smallest nnz first.
    pub limit: Option<usize>,
}

fn within(v: u64, lo: Option<u64>, hi: Option<u64>) -> bool {
    lo.is_none_or(|l| v >= l) && hi.is_none_or(|h| v <= h)
}

impl Query {
    pub fn matches(&self, e: &CatalogEntry) -> bool {
        let lc = |s: &str| s.to_ascii_lowercase();
        (self.groups.is_empty() || self.groups.iter().any(|g| lc(g) == lc(&e.group)))
            && (self.names.is_empty()
                || self.names.iter().any(|n| {
                    let n = lc(n);
                    n == lc(&e.name) || n == lc(&e.full_name())
                }))
            && self
                .kind
                .as_ref()
                .is_none_or(|k| lc(&e.kind).contains(&lc(k)))
            && within(e.rows, self.min_rows, self.max_rows)
            && within(e.cols, self.min_cols, self.max_cols)
            && within(e.nnz, self.min_nnz, self.max_nnz)
            && self.real.is_none_or(|r| r == e.real)
            && self.binary.is_none_or(|b| b == e.binary)
            && self.symmetric.is_none_or(|s| s == e.symmetric())
    }
}

impl Catalog {
    /// Parse index text; `origin` (a path or URL) names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Catalog, DatasetError> {
        let bad = |line: usize, msg: String| DatasetError::Catalog {
            origin: origin.to_string(),
            line: line as u64,
            msg,
        };
        let mut lines = text.lines();
        let count_line = lines.next().ok_or_else(|| bad(1, "empty index".into()))?;
        let count: usize = count_line.trim().parse().map_err(|_| {
            bad(
                1,
                format!(
                    "`{count_line}`: expected the number of matrices (is this an ssstats.csv?)"
                ),
            )
        })?;
        let revision = lines
            .next()
            .ok_or_else(|| bad(2, "missing revision line".into()))?
            .trim()
            .to_string();
        // The count is checked against the entries at the end; it never sizes an allocation
        // (an index claiming 10^12 matrices must be an error, not an abort). Each entry takes a
        // line of at least 24 bytes.
        let mut entries = Vec::with_capacity(count.min(text.len() / 24 + 1));
        for (i, line) in lines.enumerate() {
            let lineno = i + 3;
            if line.trim().is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split(',').collect();
            // The kind may itself hold commas: the fixed fields are the first 11 and the last.
            if f.len() < 13 {
                return Err(bad(
                    lineno,
                    format!(
                        "{} fields, expected 13 (Group,Name,nrows,...,kind,pattern_entries)",
                        f.len()
                    ),
                ));
            }
            let num = |j: usize, what: &str| -> Result<u64, DatasetError> {
                f[j].trim()
                    .parse::<u64>()
                    .map_err(|_| bad(lineno, format!("{what} `{}` is not a whole number", f[j])))
            };
            let flag = |j: usize, what: &str| -> Result<bool, DatasetError> {
                match f[j].trim() {
                    "0" => Ok(false),
                    "1" => Ok(true),
                    v => Err(bad(lineno, format!("{what} `{v}` is not 0 or 1"))),
                }
            };
            let real_num = |j: usize, what: &str| -> Result<f64, DatasetError> {
                f[j].trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| bad(lineno, format!("{what} `{}` is not a number", f[j])))
            };
            let last = f.len() - 1;
            let e = CatalogEntry {
                id: (entries.len() + 1) as u32,
                group: f[0].trim().to_string(),
                name: f[1].trim().to_string(),
                rows: num(2, "nrows")?,
                cols: num(3, "ncols")?,
                nnz: num(4, "nnz")?,
                real: flag(5, "isReal")?,
                binary: flag(6, "isBinary")?,
                nd: flag(7, "isND")?,
                posdef: flag(8, "posdef")?,
                pattern_symmetry: real_num(9, "pattern_symmetry")?,
                numerical_symmetry: real_num(10, "numerical_symmetry")?,
                kind: f[11..last].join(",").trim().to_string(),
                pattern_entries: num(last, "pattern_entries")?,
            };
            if e.group.is_empty() || e.name.is_empty() {
                return Err(bad(lineno, "empty group or name".into()));
            }
            if e.name.contains(['/', '\\'])
                || e.group.contains(['/', '\\'])
                || e.name.starts_with('.')
            {
                return Err(bad(lineno, format!("unsafe name `{}/{}`", e.group, e.name)));
            }
            entries.push(e);
        }
        if entries.len() != count {
            return Err(bad(
                1,
                format!(
                    "the index says {count} matrices but lists {}",
                    entries.len()
                ),
            ));
        }
        Ok(Catalog { revision, entries })
    }

    /// Read an index file.
    pub fn read(path: impl AsRef<Path>) -> Result<Catalog, DatasetError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| DatasetError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Catalog::parse(&text, &path.display().to_string())
    }

    /// The entries a query selects, smallest nnz first (then by id), at most `limit`.
    pub fn select(&self, q: &Query) -> Vec<&CatalogEntry> {
        let mut v: Vec<&CatalogEntry> = self.entries.iter().filter(|e| q.matches(e)).collect();
        v.sort_by_key(|e| (e.nnz, e.id));
        if let Some(n) = q.limit {
            v.truncate(n);
        }
        v
    }

    /// Look up `Name` or `Group/Name`.
    pub fn find(&self, name: &str) -> Option<&CatalogEntry> {
        let n = name.to_ascii_lowercase();
        self.entries
            .iter()
            .find(|e| e.name.to_ascii_lowercase() == n || e.full_name().to_ascii_lowercase() == n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_counts_are_errors_not_allocations() {
        for count in ["1000000000000", "18446744073709551615"] {
            let text = format!(
                "{count}\nrev\nHB,1138_bus,1138,1138,4054,1,0,0,1,1,1,power network problem,4054\n"
            );
            let e = Catalog::parse(&text, "idx").unwrap_err().to_string();
            assert!(
                e.contains(&format!("says {count} matrices but lists 1")),
                "{e}"
            );
        }
        let e = Catalog::parse("18446744073709551616\nrev\n", "idx")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("idx:1") && e.contains("number of matrices"),
            "{e}"
        );
    }

    const INDEX: &str = "3\n08-Oct-2020 17:09:58\n\
        HB,1138_bus,1138,1138,4054,1,0,0,1,1,1,power network problem,4054\n\
        Bai,qc324,324,324,26730,0,0,0,0,1,0,electromagnetics problem,26730\n\
        Sandia,ASIC_100k,99340,99340,940621,1,0,0,0,0.98,0.5,circuit simulation problem, with, commas,954163\n";

    #[test]
    fn parses_and_queries() {
        let c = Catalog::parse(INDEX, "ssstats.csv").unwrap();
        assert_eq!(c.entries.len(), 3);
        assert_eq!(c.revision, "08-Oct-2020 17:09:58");
        let a = &c.entries[2];
        assert_eq!(
            (a.id, a.kind.as_str()),
            (3, "circuit simulation problem, with, commas")
        );
        assert_eq!(a.pattern_entries, 954163);
        assert_eq!(c.entries[0].family(), "HB/1138_bus");
        assert_eq!(name_stem("dwg961a"), "dwg");
        assert_eq!(name_stem("GD01_b"), "GD01_b");
        assert!(c.entries[0].symmetric() && !a.symmetric());
        let q = Query {
            min_nnz: Some(10_000),
            real: Some(true),
            ..Query::default()
        };
        let s = c.select(&q);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].name, "ASIC_100k");
        let q = Query {
            kind: Some("CIRCUIT".into()),
            ..Query::default()
        };
        assert_eq!(c.select(&q).len(), 1);
        assert_eq!(c.find("bai/QC324").unwrap().id, 2);
        assert_eq!(
            c.entries[1].archive_url("http://x/"),
            "http://x/MM/Bai/qc324.tar.gz"
        );
    }

    #[test]
    fn errors_name_origin_and_line() {
        let e = Catalog::parse(
            "3\nrev\nHB,a,1,1,1,1,0,0,1,1,1,k,1\nHB,b,x,1,1,1,0,0,1,1,1,k,1\n",
            "idx",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("idx:4:") && e.contains("nrows `x`"), "{e}");
        let e = Catalog::parse("2\nrev\nHB,a,1,1,1,1,0,0,1,1,1,k,1\n", "idx")
            .unwrap_err()
            .to_string();
        assert!(e.contains("says 2 matrices but lists 1"), "{e}");
        let e = Catalog::parse("<html>", "idx").unwrap_err().to_string();
        assert!(e.contains("idx:1:") && e.contains("ssstats"), "{e}");
        let e = Catalog::parse("1\nrev\nHB,../evil,1,1,1,1,0,0,1,1,1,k,1\n", "idx")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unsafe name"), "{e}");
    }

    #[test]
    fn reads_the_shared_index() {
        let Some(dir) = crate::manifest::find_shared_matrices() else {
            eprintln!("note: no shared matrices; skipped");
            return;
        };
        let c = Catalog::read(dir.join("ssstats.csv")).unwrap();
        assert_eq!(c.entries.len(), 2893);
        let e = c.find("HB/bcsstk16").unwrap();
        assert_eq!(e.family(), "HB/bcsstk");
        // The shared manifest's nnz_nonzero is the collection's nnz, and its family key is ours.
        let m = crate::manifest::read_manifest(dir.join("MANIFEST.tsv")).unwrap();
        for x in &m {
            let e = c.entries.iter().find(|e| e.id == x.ss_id).unwrap();
            assert_eq!(
                (e.name.as_str(), e.nnz as usize),
                (x.name.as_str(), x.nnz_nonzero)
            );
            assert_eq!(e.family(), x.family, "{}", x.name);
        }
    }
}
