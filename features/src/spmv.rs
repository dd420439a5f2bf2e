//! SpMV matrix features, the gatherer interface and the CPU gatherer.
//!
//! *Known* features come from the shape alone (O(1)). *Sampled* ones are estimated from a fixed
//! number of row blocks spread over the matrix (a bounded cost, whatever its size: see
//! [`sampled`]). *Gathered* ones take one pass over the row pointers and column indices (values
//! are never read). A gatherer reports what gathering cost, so the selector can weigh it against
//! what a better kernel choice saves.

mod sampled;
pub use sampled::{
    extract_sampled, probe_longest_row, sample_into, PROBE_CHUNKS, SAMPLE_BLOCKS,
    SAMPLE_BLOCK_ENTRIES, SAMPLE_BLOCK_ROWS,
};

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::schema::{feature_struct, FeatureError};

/// Version of the SpMV feature schema; bump on any change to the list below or how a feature is
/// computed.
///
/// Version 2 (issue 18) added the sampled tier. Version 3 takes `sampled_max_mean_ratio`'s
/// longest row from the row-pointer probe as well as the sampled blocks.
pub const SPMV_SCHEMA_VERSION: u32 = 3;

/// The gathered features read from the column indices (the others of the gathered tier come from
/// the row pointers alone: rows x 4 bytes instead of (rows + nnz) x 4).
pub const COLUMN_FEATURES: [&str; 3] = ["bandwidth", "mean_col_dist", "x_segments_per_row"];

/// Columns per segment of x in `x_segments_per_row`: 128 bytes of f32.
pub const X_SEGMENT_COLS: usize = 32;

feature_struct! {
    /// The SpMV features of one matrix, in schema order. Gathered features are NaN when only the
    /// known ones were computed.
    SpmvFeatures, "spmv", SPMV_SCHEMA_VERSION, {
        rows: "rows", Known, "Number of rows: the parallelism available to row-per-thread schedules.";
        cols: "columns", Known, "Number of columns: the length of x, whose cache footprint it sets.";
        nnz: "entries", Known, "Stored entries: the bulk of the bytes an SpMV moves.";
        density: "fraction", Known, "nnz / (rows x cols): near-dense matrices favour dense-like schedules.";
        mean_row_len: "entries", Known, "nnz / rows: picks the lanes per row of vector (subwarp) kernels.";
        sampled_row_len_cv: "ratio", Sampled, "std / mean of row lengths over the sampled rows: load imbalance, estimated.";
        sampled_max_mean_ratio: "ratio", Sampled, "Longest row of the sampled blocks and the row-pointer probe (the fullest of 1,024 chunks of rows followed down to a row) / mean row: how far a long row is from typical; exact for a few very long rows, a lower bound otherwise.";
        sampled_seg_per_entry: "ratio", Sampled, "Distinct 128-byte x segments per row / entries per row, sampled: 1 = every entry its own x transaction, 1/32 = contiguous columns.";
        sampled_warp_seg_per_entry: "ratio", Sampled, "Distinct 128-byte x segments touched by 32 consecutive rows / their entries, sampled: x reuse across the rows one warp of a row-per-thread kernel reads (low for meshes grown by A x I_k, about 1 for random columns).";
        sampled_warp_span: "fraction", Sampled, "(largest - smallest column + 1) / columns over 32 consecutive rows, sampled: the footprint of x that one warp touches.";
        sampled_diag_dist: "fraction", Sampled, "Mean |col - row x cols / rows| / columns, sampled: global column locality (about 1/3 for random columns).";
        sampled_near_diag_frac: "fraction", Sampled, "Share of sampled entries within 4096 columns of the scaled diagonal: x accesses that stay in a small window.";
        sampled_col_run_len: "entries", Sampled, "Mean length of runs of consecutive columns in a row, sampled: dense blocks (A x ones(k), several unknowns per node) give runs of k.";
        sampled_same_pattern_frac: "fraction", Sampled, "Share of sampled rows whose columns equal the row before's: block rows (BSR-like) that vector kernels read as one.";
        row_len_min: "entries", Gathered, "Shortest row: lanes idle on short rows under wide schedules.";
        row_len_max: "entries", Gathered, "Longest row: one long row serialises a row-per-thread kernel.";
        row_len_std: "entries", Gathered, "Standard deviation of row lengths: spread that causes load imbalance.";
        row_len_cv: "ratio", Gathered, "std / mean of row lengths: imbalance independent of scale.";
        row_len_skew: "ratio", Gathered, "Skewness of row lengths: a heavy right tail (power-law rows) favours balanced schedules.";
        empty_row_frac: "fraction", Gathered, "Share of empty rows: wasted threads in row-based schedules.";
        max_mean_ratio: "ratio", Gathered, "Longest row / mean row: how far the worst row is from typical.";
        top1pct_nnz_frac: "fraction", Gathered, "Share of nnz in the longest 1% of rows: concentration that row binning or merge-path absorbs.";
        hist_le2: "fraction", Gathered, "Share of rows with <= 2 entries.";
        hist_le8: "fraction", Gathered, "Share of rows with 3..=8 entries.";
        hist_le32: "fraction", Gathered, "Share of rows with 9..=32 entries (a warp's width).";
        hist_le128: "fraction", Gathered, "Share of rows with 33..=128 entries.";
        hist_le1024: "fraction", Gathered, "Share of rows with 129..=1024 entries (a block's width).";
        hist_gt1024: "fraction", Gathered, "Share of rows with > 1024 entries: candidates for block-per-row.";
        bandwidth: "columns", Gathered, "Largest |col - row|: a narrow band keeps x accesses local.";
        mean_col_dist: "columns", Gathered, "Mean |col - row| over entries: locality of x accesses around the diagonal.";
        x_segments_per_row: "segments", Gathered, "Mean distinct 128-byte segments of (f32) x touched per row: memory transactions for x.";
    }
}

/// The sparsity pattern a gatherer reads.
#[derive(Debug, Clone, Copy)]
pub struct CsrPattern<'a> {
    pub rows: usize,
    pub cols: usize,
    pub indptr: &'a [i32],
    pub indices: &'a [i32],
}

impl<'a> CsrPattern<'a> {
    /// The pattern of a [`Csr`] or of borrowed CSR arrays ([`augur_datasets::CsrRef`]).
    pub fn of<T: 'a>(a: impl Into<augur_datasets::CsrRef<'a, T>>) -> Self {
        let a = a.into();
        CsrPattern {
            rows: a.rows(),
            cols: a.cols(),
            indptr: a.indptr(),
            indices: a.indices(),
        }
    }

    fn nnz(&self) -> usize {
        self.indptr.last().map_or(0, |&p| p as usize)
    }
}

/// What computing the features cost, recorded next to them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureCost {
    pub gatherer: String,
    pub known_s: f64,
    /// None when only known features were computed.
    pub gathered_s: Option<f64>,
}

/// Features and their cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpmvFeatureRecord {
    pub schema_version: u32,
    pub features: SpmvFeatures,
    pub cost: FeatureCost,
}

/// Something that computes the gathered features of a pattern: the CPU gatherer here, a GPU one
/// with the CUDA backend. All gatherers must give identical values.
pub trait SpmvGatherer {
    fn name(&self) -> &'static str;
    /// All features, known and gathered.
    fn gather(&self, m: CsrPattern<'_>) -> Result<SpmvFeatures, FeatureError>;
}

/// The known features alone (sampled and gathered ones NaN).
pub fn known(m: CsrPattern<'_>) -> SpmvFeatures {
    known_shape(m.rows, m.cols, m.nnz())
}

/// The known features from the shape alone (a matrix whose pattern is not on the host).
pub fn known_shape(rows: usize, cols: usize, nnz: usize) -> SpmvFeatures {
    let (rows, cols, nnz) = (rows as f64, cols as f64, nnz as f64);
    SpmvFeatures {
        rows,
        cols,
        nnz,
        density: if rows * cols > 0.0 {
            nnz / (rows * cols)
        } else {
            0.0
        },
        mean_row_len: if rows > 0.0 { nnz / rows } else { 0.0 },
        ..SpmvFeatures::all_nan()
    }
}

/// Known features, timed.
pub fn extract_known(m: CsrPattern<'_>) -> SpmvFeatureRecord {
    let t = Instant::now();
    let features = known(m);
    SpmvFeatureRecord {
        schema_version: SPMV_SCHEMA_VERSION,
        features,
        cost: FeatureCost {
            gatherer: "known".into(),
            known_s: t.elapsed().as_secs_f64(),
            gathered_s: None,
        },
    }
}

/// All features through `gatherer`, timed.
pub fn extract(
    m: CsrPattern<'_>,
    gatherer: &dyn SpmvGatherer,
) -> Result<SpmvFeatureRecord, FeatureError> {
    let t = Instant::now();
    let _ = known(m);
    let known_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let features = gatherer.gather(m)?;
    Ok(SpmvFeatureRecord {
        schema_version: SPMV_SCHEMA_VERSION,
        features,
        cost: FeatureCost {
            gatherer: gatherer.name().into(),
            known_s,
            gathered_s: Some(t.elapsed().as_secs_f64()),
        },
    })
}

/// Exact integer sums over the rows and entries of a pattern: everything the gathered features
/// are computed from. Integer sums do not depend on the order of summation, so every gatherer
/// (CPU chunks, GPU atomics) that fills this gets the very same features from
/// [`finish_features`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RowSums {
    pub min_len: u64,
    pub max_len: u64,
    /// Σ len^2 (at most nnz · max_len < 2^62).
    pub len2: u64,
    /// Σ len^3, which can pass 2^64.
    pub len3: u128,
    pub empty: u64,
    /// Rows with len <= 2, <= 8, <= 32, <= 128, <= 1024, > 1024.
    pub hist: [u64; 6],
    /// max |col - row|.
    pub bandwidth: u64,
    /// Σ |col - row| (at most nnz · 2^31 < 2^62).
    pub dist: u64,
    /// Σ over rows of the distinct X_SEGMENT_COLS-column segments touched.
    pub segments: u64,
    /// Entries in the ceil(rows / 100) longest rows.
    pub top1pct: u64,
}

/// The bucket of the row-length histogram a row of `len` entries falls in.
pub fn hist_bucket(len: u64) -> usize {
    [2u64, 8, 32, 128, 1024]
        .iter()
        .position(|&edge| len <= edge)
        .unwrap_or(5)
}

/// All features from the known ones, the sampled ones (computed here, on the host) and the exact
/// sums. Shared by every gatherer.
pub fn finish_features(m: CsrPattern<'_>, sums: &RowSums) -> SpmvFeatures {
    let mut f = exact_features(m, sums);
    sample_into(m, &mut f);
    f
}

/// The known and the exact (gathered) features from the exact sums, the sampled ones left NaN:
/// what the gathered tier reads (a plan that gathers on the GPU does not also sample on the host).
pub fn exact_features(m: CsrPattern<'_>, sums: &RowSums) -> SpmvFeatures {
    exact_features_shape((m.rows, m.cols, m.nnz()), sums)
}

/// [`exact_features`] from the shape `(rows, cols, nnz)` and the exact sums (a matrix whose
/// pattern is on the device only, gathered there).
pub fn exact_features_shape(
    (rows, cols, nnz): (usize, usize, usize),
    sums: &RowSums,
) -> SpmvFeatures {
    let mut f = known_shape(rows, cols, nnz);
    let n = rows as f64;
    let nnz = nnz as f64;
    if rows == 0 {
        for v in [
            &mut f.row_len_min,
            &mut f.row_len_max,
            &mut f.row_len_std,
            &mut f.row_len_cv,
            &mut f.row_len_skew,
            &mut f.empty_row_frac,
            &mut f.max_mean_ratio,
            &mut f.top1pct_nnz_frac,
            &mut f.hist_le2,
            &mut f.hist_le8,
            &mut f.hist_le32,
            &mut f.hist_le128,
            &mut f.hist_le1024,
            &mut f.hist_gt1024,
            &mut f.bandwidth,
            &mut f.mean_col_dist,
            &mut f.x_segments_per_row,
        ] {
            *v = 0.0;
        }
        return f;
    }
    let mean = nnz / n;
    let ex2 = sums.len2 as f64 / n;
    let ex3 = sums.len3 as f64 / n;
    let var = (ex2 - mean * mean).max(0.0);
    let std = var.sqrt();
    f.row_len_min = sums.min_len as f64;
    f.row_len_max = sums.max_len as f64;
    f.row_len_std = std;
    f.row_len_cv = if mean > 0.0 { std / mean } else { 0.0 };
    // Third central moment from raw moments: E[x^3] - 3 mean E[x^2] + 2 mean^3.
    let m3 = ex3 - 3.0 * mean * ex2 + 2.0 * mean * mean * mean;
    f.row_len_skew = if std > 0.0 {
        m3 / (std * std * std)
    } else {
        0.0
    };
    f.empty_row_frac = sums.empty as f64 / n;
    f.max_mean_ratio = if mean > 0.0 {
        sums.max_len as f64 / mean
    } else {
        0.0
    };
    f.top1pct_nnz_frac = if nnz > 0.0 {
        sums.top1pct as f64 / nnz
    } else {
        0.0
    };
    let h = |k: usize| sums.hist[k] as f64 / n;
    (
        f.hist_le2,
        f.hist_le8,
        f.hist_le32,
        f.hist_le128,
        f.hist_le1024,
        f.hist_gt1024,
    ) = (h(0), h(1), h(2), h(3), h(4), h(5));
    f.bandwidth = sums.bandwidth as f64;
    f.mean_col_dist = if nnz > 0.0 {
        sums.dist as f64 / nnz
    } else {
        0.0
    };
    f.x_segments_per_row = sums.segments as f64 / n;
    f
}

/// One pass over row pointers and column indices on the rayon pool (plus an O(rows) selection
/// for the top-1% share).
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuGatherer;

impl RowSums {
    /// The sums of a matrix with no rows (what every gatherer reports for one).
    pub const NO_ROWS: RowSums = RowSums {
        min_len: 0,
        max_len: 0,
        len2: 0,
        len3: 0,
        empty: 0,
        hist: [0; 6],
        bandwidth: 0,
        dist: 0,
        segments: 0,
        top1pct: 0,
    };

    /// The identity of `merge` (min_len at its maximum).
    const EMPTY: RowSums = RowSums {
        min_len: u64::MAX,
        ..RowSums::NO_ROWS
    };

    fn merge(mut self, o: RowSums) -> RowSums {
        self.min_len = self.min_len.min(o.min_len);
        self.max_len = self.max_len.max(o.max_len);
        self.len2 += o.len2;
        self.len3 += o.len3;
        self.empty += o.empty;
        for (a, b) in self.hist.iter_mut().zip(o.hist) {
            *a += b;
        }
        self.bandwidth = self.bandwidth.max(o.bandwidth);
        self.dist += o.dist;
        self.segments += o.segments;
        self
    }
}

impl CpuGatherer {
    /// The known and exact features (the gathered tier), without the sampled ones: what a CPU
    /// plan that gathers computes.
    pub fn exact(&self, m: CsrPattern<'_>) -> SpmvFeatures {
        exact_features(m, &cpu_sums(m))
    }
}

impl SpmvGatherer for CpuGatherer {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn gather(&self, m: CsrPattern<'_>) -> Result<SpmvFeatures, FeatureError> {
        Ok(finish_features(m, &cpu_sums(m)))
    }
}

impl RowSums {
    /// One row of `len` entries into the row-length sums.
    fn add_row(&mut self, len: u64) {
        self.add_rows(len, 1);
    }

    /// `n` >= 1 rows of `len` entries each into the row-length sums.
    fn add_rows(&mut self, len: u64, n: u64) {
        self.min_len = self.min_len.min(len);
        self.max_len = self.max_len.max(len);
        self.len2 += n * len * len;
        self.len3 += (n as u128) * (len as u128) * (len as u128) * (len as u128);
        self.empty += n * (len == 0) as u64;
        self.hist[hist_bucket(len)] += n;
    }
}

/// The exact sums of a pattern, on the CPU.
pub fn cpu_sums(m: CsrPattern<'_>) -> RowSums {
    row_pass(m, true)
}

/// [`cpu_sums`] from the row pointers alone: every row-length sum, the column sums
/// ([`COLUMN_FEATURES`]) left 0. Reads rows x 4 bytes instead of (rows + nnz) x 4.
pub fn cpu_row_sums(m: CsrPattern<'_>) -> RowSums {
    row_pass(m, false)
}

/// The sums of [`cpu_sums`] in one pass over the rows on the rayon pool (a pass costs its
/// workers' wake-ups, tens of microseconds on a plan), the column statistics too where
/// `columns`: the row-length sums, the length counts of the top-1% sum, and per row's column
/// indices the distance to the diagonal and the x segments touched.
fn row_pass(m: CsrPattern<'_>, columns: bool) -> RowSums {
    row_pass_on(m, columns, PassOn::Pool)
}

/// Where a row pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassOn {
    /// In chunks on the rayon pool (one chunk, and so no pool, for a small matrix).
    Pool,
    /// On the calling thread alone: no hand-off, no other thread woken.
    Caller,
}

/// [`row_features`] on the pool or on the calling thread alone ([`PassOn`]): the same values.
pub fn row_features_on(m: CsrPattern<'_>, on: PassOn) -> SpmvFeatures {
    let mut f = exact_features(m, &row_pass_on(m, false, on));
    f.bandwidth = f64::NAN;
    f.mean_col_dist = f64::NAN;
    f.x_segments_per_row = f64::NAN;
    f
}

fn row_pass_on(m: CsrPattern<'_>, columns: bool, on: PassOn) -> RowSums {
    let ptr = m.indptr;
    let (mut sums, lens) = if columns {
        column_pass(m, on)
    } else {
        length_pass(m, on)
    };
    if m.rows == 0 {
        sums.min_len = 0;
    }
    sums.top1pct = lens.top(ptr, m.rows.div_ceil(100), on == PassOn::Pool);
    sums
}

/// The row-length sums and counts of [`row_pass_on`] from the row pointers alone, in chunks of
/// 2^16 rows on the pool (or all on this thread).
fn length_pass(m: CsrPattern<'_>, on: PassOn) -> (RowSums, LenCounts) {
    let (ptr, n) = (m.indptr, m.rows);
    let empty = || (RowSums::EMPTY, LenCounts::new(m.nnz()));
    if n == 0 {
        return empty();
    }
    // The exact counts are u32 per chunk.
    let chunk = match on {
        PassOn::Caller => n.min(1 << 30),
        PassOn::Pool => 1 << 16,
    };
    let n_exact = EXACT_LENS.min(m.nnz() + 1);
    let one = |c: usize| lengths_of(&ptr[c * chunk..=((c + 1) * chunk).min(n)], n_exact);
    let merge =
        |(a, la): (RowSums, LenCounts), (b, lb): (RowSums, LenCounts)| (a.merge(b), la.merge(lb));
    let chunks = n.div_ceil(chunk);
    match on {
        _ if chunks == 1 => one(0),
        PassOn::Caller => (0..chunks).map(one).fold(empty(), merge),
        PassOn::Pool => (0..chunks).into_par_iter().map(one).reduce(empty, merge),
    }
}

/// The row-length sums and counts of the rows whose pointers are `p` (rows + 1 of them): a row
/// shorter than `n_exact` only counts its length in the exact array, and the sums follow from
/// those counts at the end (one increment per row instead of a dozen updates).
fn lengths_of(p: &[i32], n_exact: usize) -> (RowSums, LenCounts) {
    let mut l = LenCounts {
        count: [0; 65],
        sum: [0; 65],
        exact: vec![0; n_exact],
    };
    let mut s = RowSums::EMPTY;
    // The longest row counted exactly: the counts above it are 0.
    let mut top = 0;
    for w in p.windows(2) {
        let len = (w[1] as i64 - w[0] as i64) as u64;
        match l.exact.get_mut(len as usize) {
            Some(c) => {
                *c += 1;
                top = top.max(len as usize);
            }
            None => {
                s.add_rows(len, 1);
                l.add_bucket(len, 1);
            }
        }
    }
    for len in 0..(top + 1).min(n_exact) {
        let c = l.exact[len] as u64;
        if c > 0 {
            s.add_rows(len as u64, c);
            l.add_bucket(len as u64, c);
        }
    }
    (s, l)
}

/// The sums and counts of [`row_pass_on`] with the column statistics, row by row.
fn column_pass(m: CsrPattern<'_>, on: PassOn) -> (RowSums, LenCounts) {
    let (ptr, idx) = (m.indptr, m.indices);
    // Rows with their columns read are heavier: smaller chunks keep the pool busy.
    let chunk = match on {
        PassOn::Caller => m.rows.max(1),
        PassOn::Pool => 4096,
    };
    by_chunks(
        m.rows,
        chunk,
        (RowSums::EMPTY, LenCounts::new(m.nnz())),
        |(a, la), (b, lb)| (a.merge(b), la.merge(lb)),
        |(a, l), r| {
            let (s, e) = (ptr[r] as usize, ptr[r + 1] as usize);
            let len = (e - s) as u64;
            a.add_row(len);
            l.add(len);
            let mut last_seg = usize::MAX;
            for &c in &idx[s..e] {
                let c = c as usize;
                let d = c.abs_diff(r) as u64;
                a.bandwidth = a.bandwidth.max(d);
                a.dist += d;
                let seg = c / X_SEGMENT_COLS;
                a.segments += (seg != last_seg) as u64;
                last_seg = seg;
            }
        },
    )
}

/// The known features and the gathered tier's row-length statistics, exactly, from the row
/// pointers alone ([`cpu_row_sums`]); the column statistics ([`COLUMN_FEATURES`]) NaN. What a
/// plan computes for a selector whose gathered trees read no column statistics.
pub fn row_features(m: CsrPattern<'_>) -> SpmvFeatures {
    row_features_on(m, PassOn::Pool)
}

/// `step(acc, r)` over rows `0..n` in chunks of `chunk` on the rayon pool, each chunk's
/// accumulator (a clone of `empty`) updated in place and the chunks' merged: a `fold` that
/// returns its accumulator per row moved it (about 1 KB for the length buckets) once per row.
fn by_chunks<A: Clone + Send + Sync>(
    n: usize,
    chunk: usize,
    empty: A,
    merge: impl Fn(A, A) -> A + Sync + Send,
    step: impl Fn(&mut A, usize) + Sync + Send,
) -> A {
    let chunk = chunk.max(1);
    if n <= chunk {
        // One chunk: on this thread without touching the pool (not even to read its size),
        // as `PassOn::Caller` promises.
        let mut a = empty.clone();
        for r in 0..n {
            step(&mut a, r);
        }
        return a;
    }
    (0..n.div_ceil(chunk))
        .into_par_iter()
        .map(|c| {
            let mut a = empty.clone();
            for r in c * chunk..((c + 1) * chunk).min(n) {
                step(&mut a, r);
            }
            a
        })
        .reduce(|| empty.clone(), merge)
}

/// Row lengths below this are counted one by one for the top-1% sum.
const EXACT_LENS: usize = 4096;

/// Row-length counts from which the entries in the `k` longest rows follow exactly: rows and
/// entries per power-of-two length bucket, and rows per exact length below [`EXACT_LENS`].
#[derive(Clone)]
struct LenCounts {
    /// Bucket 0: length 0; bucket b >= 1: lengths in [2^(b-1), 2^b).
    count: [u64; 65],
    sum: [u64; 65],
    exact: Vec<u32>,
}

impl LenCounts {
    /// Counts for a matrix of `nnz` entries (no row is longer: a small one counts every length
    /// exactly in a short array).
    fn new(nnz: usize) -> LenCounts {
        LenCounts {
            count: [0; 65],
            sum: [0; 65],
            exact: vec![0; EXACT_LENS.min(nnz + 1)],
        }
    }

    #[inline]
    fn add(&mut self, len: u64) {
        self.add_bucket(len, 1);
        if let Some(c) = self.exact.get_mut(len as usize) {
            *c += 1;
        }
    }

    /// `n` rows of `len` entries into the power-of-two buckets (not the exact counts).
    #[inline]
    fn add_bucket(&mut self, len: u64, n: u64) {
        let b = 64 - len.leading_zeros() as usize;
        self.count[b] += n;
        self.sum[b] += n * len;
    }

    fn merge(mut self, o: LenCounts) -> LenCounts {
        for b in 0..65 {
            self.count[b] += o.count[b];
            self.sum[b] += o.sum[b];
        }
        self.exact
            .iter_mut()
            .zip(o.exact)
            .for_each(|(a, b)| *a += b);
        self
    }

    /// Entries in the `k` longest rows of `ptr`, exactly: every bucket above the one where the
    /// k-th longest row falls is taken whole; in that bucket, the rows are taken per exact length
    /// or, for rows of at least [`EXACT_LENS`] entries (at most nnz / 4096 of them), listed in one
    /// more pass and sorted. (A sort of every length cost a plan milliseconds on 1e6 rows.)
    fn top(&self, ptr: &[i32], k: usize, pool: bool) -> u64 {
        let n = ptr.len().saturating_sub(1);
        let mut need = k.min(n) as u64;
        let mut total = 0;
        if need == 0 {
            return 0;
        }
        for b in (1..65).rev() {
            if self.count[b] <= need {
                total += self.sum[b];
                need -= self.count[b];
                if need == 0 {
                    return total;
                }
                continue;
            }
            let (lo, hi) = (1u64 << (b - 1), (1u64 << b) - 1);
            // Every length up to nnz is counted exactly when the array reaches nnz.
            let n_exact = self.exact.len() as u64;
            if hi < n_exact || n_exact < EXACT_LENS as u64 {
                for l in (lo..=hi.min(n_exact - 1)).rev() {
                    let take = (self.exact[l as usize] as u64).min(need);
                    total += take * l;
                    need -= take;
                    if need == 0 {
                        break;
                    }
                }
            } else {
                let len = |r: usize| (ptr[r + 1] - ptr[r]) as u64;
                let long_len = |l: &u64| (lo..=hi).contains(l);
                let mut long: Vec<u64> = if pool && n > 16384 {
                    (0..n).into_par_iter().map(len).filter(long_len).collect()
                } else {
                    (0..n).map(len).filter(long_len).collect()
                };
                long.sort_unstable_by(|a, b| b.cmp(a));
                total += long.iter().take(need as usize).sum::<u64>();
            }
            return total;
        }
        // The rest are empty rows: they add nothing.
        total
    }
}

#[cfg(test)]
mod row_tests {
    use super::*;

    /// Entries in the `k` longest rows, exactly ([`LenCounts::top`] after one pass).
    fn top_sum(ptr: &[i32], k: usize) -> u64 {
        let n = ptr.len().saturating_sub(1);
        let nnz = ptr.get(n).map_or(0, |&p| p.max(0) as usize);
        let counts = by_chunks(n, 16384, LenCounts::new(nnz), LenCounts::merge, |c, r| {
            c.add((ptr[r + 1] - ptr[r]) as u64)
        });
        counts.top(ptr, k, true)
    }

    /// A seeded linear congruential generator: enough randomness for test patterns.
    fn lcg(mut state: u64) -> impl FnMut() -> usize {
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize
        }
    }

    /// The bucketed top-k sum is the sort's, on short, mixed and very long rows and every k.
    #[test]
    fn top_sum_is_exact() {
        let mut next = lcg(99);
        for (n, spread) in [
            (1, 3),
            (7, 1),
            (1000, 5),
            (40000, 30),
            (3000, 20000),
            (50, 3_000_000),
        ] {
            let lens: Vec<usize> = (0..n)
                .map(|i| match i % 5 {
                    0 => 0,
                    1 => next() % spread,
                    _ => next() % 9,
                })
                .collect();
            let mut ptr = vec![0i32];
            for l in &lens {
                ptr.push(ptr.last().unwrap() + *l as i32);
            }
            let mut sorted: Vec<u64> = lens.iter().map(|&l| l as u64).collect();
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            for k in [0, 1, 2, n / 100 + 1, n / 3, n, n + 5] {
                let want: u64 = sorted.iter().take(k).sum();
                assert_eq!(top_sum(&ptr, k), want, "n {n} spread {spread} k {k}");
            }
        }
    }

    /// The row pass gives the exact gatherer's values for every feature but the column ones,
    /// which it leaves NaN; on random, skewed and empty-row patterns, and on no rows at all.
    #[test]
    fn row_features_are_the_exact_ones_without_the_columns() {
        let mut next = lcg(12345);
        let schema = SpmvFeatures::schema();
        let cases = [
            (0, 5, 1),
            (1, 1, 1),
            (300, 200, 1),
            (5000, 5000, 50),
            (40_000, 40_000, 3),
            // Rows of 4,096 entries and more: past the exact counts.
            (6_000, 9_000, 140),
        ];
        for (rows, cols, skew) in cases {
            let mut ptr = vec![0i32];
            let mut idx = Vec::new();
            for r in 0..rows {
                let len = if r % 7 == 3 {
                    0
                } else if next() % 100 < 2 {
                    next() % (cols.min(64 * skew)) + 1
                } else {
                    next() % 6
                };
                let mut c: Vec<i32> = (0..len).map(|_| (next() % cols) as i32).collect();
                c.sort_unstable();
                c.dedup();
                idx.extend(c);
                ptr.push(idx.len() as i32);
            }
            let m = CsrPattern {
                rows,
                cols,
                indptr: &ptr,
                indices: &idx,
            };
            let (got, want) = (row_features(m).values(), CpuGatherer.exact(m).values());
            for (i, f) in schema.features.iter().enumerate() {
                if COLUMN_FEATURES.contains(&f.name.as_str()) || want[i].is_nan() {
                    assert!(got[i].is_nan(), "{} on {rows} rows", f.name);
                } else {
                    assert_eq!(got[i], want[i], "{} on {rows} rows", f.name);
                }
            }
            // On the calling thread alone: the same values, to the bit (NaN where NaN).
            let alone = row_features_on(m, PassOn::Caller).values();
            for (i, f) in schema.features.iter().enumerate() {
                assert_eq!(
                    alone[i].to_bits(),
                    got[i].to_bits(),
                    "{} on {rows} rows",
                    f.name
                );
            }
        }
    }
}
