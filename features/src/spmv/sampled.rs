//! The sampled tier: SpMV features estimated from [`SAMPLE_BLOCKS`] blocks of
//! [`SAMPLE_BLOCK_ROWS`] consecutive rows (a warp's worth for a row-per-thread kernel), spread
//! over the matrix at fixed, seeded positions, reading at most [`SAMPLE_BLOCK_ENTRIES`] column
//! indices per block. The cost is bounded by the sample, not the matrix: about 4,000 entries and
//! 1,000 row pointers for any matrix, on the host that holds the CSR before upload.
//!
//! What the known features cannot tell and these can: whether the columns of neighbouring rows
//! fall in the same part of x (a mesh or a graph in a good order) or are scattered (a random
//! order); whether a row's columns come in dense runs (several unknowns per node); whether rows
//! repeat their neighbour's pattern (block rows).
//!
//! The longest row is not left to the blocks: a row long enough to serialise a kernel is one of
//! a few among millions (a hub, an arrowhead's first row, a bordered matrix's last), and blocks
//! at seeded positions rarely land on it. The *probe* ([`probe_longest_row`]) reads the row
//! pointers at [`PROBE_CHUNKS`] evenly spaced rows, so it knows how many entries each chunk of
//! rows holds, follows the fullest chunks down to their rows and reads those rows' lengths: about
//! 1,000 scattered pointers and a few thousand consecutive ones, whatever the matrix.
//!
//! The estimates are deterministic: the positions come from a fixed seed and the row count, so
//! one matrix always gives one set of values, on any machine and with any gatherer.

use std::time::Instant;

use super::{known, CsrPattern, FeatureCost, SpmvFeatureRecord, SpmvFeatures, X_SEGMENT_COLS};

/// Blocks sampled.
pub const SAMPLE_BLOCKS: usize = 32;
/// Consecutive rows per block: one warp of a row-per-thread kernel.
pub const SAMPLE_BLOCK_ROWS: usize = 32;
/// Column indices read per block at most (the rows of a block are read in order until this many
/// entries were read; row lengths are read for every row of the block).
pub const SAMPLE_BLOCK_ENTRIES: usize = 128;
/// A column within this many columns of the (scaled) diagonal counts as near it.
const NEAR_DIAG_COLS: f64 = 4096.0;
/// The seed of the block positions.
const SEED: u64 = 0x005e_eda6_0c18;
/// Chunks of rows the longest-row probe compares first (evenly spaced row pointers).
pub const PROBE_CHUNKS: usize = 1024;
/// The fullest chunks the probe follows down.
const PROBE_FOLLOW: usize = 4;
/// Parts a followed chunk is split into at each level below the first.
const PROBE_SPLIT: usize = 32;
/// A chunk of at most this many rows has every row length read.
const PROBE_SCAN_ROWS: usize = 512;

/// The longest row the probe finds ([module docs](self)): the exact length of a real row, so a
/// lower bound of the longest; it is the longest wherever one row holds more entries than the
/// typical chunk's spread (hubs, arrowheads, borders), and any row's length otherwise.
pub fn probe_longest_row(ptr: &[i32]) -> u64 {
    let rows = ptr.len().saturating_sub(1);
    probe_range(ptr, 0, rows, PROBE_CHUNKS, PROBE_FOLLOW)
}

/// The probe on rows `lo..hi`: split into `parts` chunks (of 16 rows at least: one cache line of
/// row pointers each), follow the `follow` fullest.
fn probe_range(ptr: &[i32], lo: usize, hi: usize, parts: usize, follow: usize) -> u64 {
    let n = hi - lo;
    if n <= PROBE_SCAN_ROWS {
        return (lo..hi)
            .map(|r| (ptr[r + 1] - ptr[r]) as u64)
            .max()
            .unwrap_or(0);
    }
    let parts = parts.min(n / 16).max(2);
    let bound = |i: usize| lo + (n as u128 * i as u128 / parts as u128) as usize;
    // Entries per chunk from the pointers at its bounds; the fullest first (ties: the first).
    let mut chunks: Vec<(i64, usize)> = (0..parts)
        .map(|i| ((ptr[bound(i + 1)] - ptr[bound(i)]) as i64, i))
        .collect();
    chunks.sort_unstable_by_key(|&(entries, i)| (std::cmp::Reverse(entries), i));
    chunks
        .iter()
        .take(follow)
        .map(|&(_, i)| probe_range(ptr, bound(i), bound(i + 1), PROBE_SPLIT, 1))
        .max()
        .unwrap_or(0)
}

/// SplitMix64: a deterministic, well-mixed hash of a block index.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x094d_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// First rows of the sampled blocks: block b lies at a seeded position inside the b-th of
/// SAMPLE_BLOCKS equal strata of the rows (every row when there are few).
fn block_starts(rows: usize) -> Vec<usize> {
    let w = SAMPLE_BLOCK_ROWS;
    if rows <= SAMPLE_BLOCKS * w {
        return (0..rows).step_by(w).collect();
    }
    let stride = rows as f64 / SAMPLE_BLOCKS as f64;
    (0..SAMPLE_BLOCKS)
        .map(|b| {
            let u = (splitmix(SEED ^ b as u64) >> 11) as f64 / (1u64 << 53) as f64;
            let start = b as f64 * stride + u * (stride - w as f64).max(0.0);
            (start as usize).min(rows - w)
        })
        .collect()
}

/// A tiny set of segment ids, cleared in O(1) between blocks (generation stamps).
struct SegSet {
    keys: Vec<u64>,
    stamp: Vec<u32>,
    gen: u32,
}

impl SegSet {
    fn new() -> Self {
        // Twice the most entries a block reads, a power of two: load factor <= 1/2.
        let n = (2 * SAMPLE_BLOCK_ENTRIES).next_power_of_two();
        SegSet {
            keys: vec![0; n],
            stamp: vec![0; n],
            gen: 0,
        }
    }
    fn clear(&mut self) {
        self.gen += 1;
    }
    /// Insert; true when new.
    fn insert(&mut self, key: u64) -> bool {
        let mask = self.keys.len() - 1;
        // Fibonacci hashing: one multiply (the set's contents, so the counts, do not depend on
        // the hash).
        let mut i = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize & mask;
        loop {
            if self.stamp[i] != self.gen {
                self.stamp[i] = self.gen;
                self.keys[i] = key;
                return true;
            }
            if self.keys[i] == key {
                return false;
            }
            i = (i + 1) & mask;
        }
    }
}

/// Load every cache line the blocks will read (their row pointers, then up to
/// SAMPLE_BLOCK_ENTRIES column indices each) before reading any block in full: the loads do not
/// depend on each other, so the CPU keeps many misses in flight instead of waiting for one block
/// after another (the data of a large matrix is rarely in cache when it is planned).
fn touch(ptr: &[i32], idx: &[i32], starts: &[usize]) {
    let rows = ptr.len() - 1;
    let mut acc = 0i64;
    for &s in starts {
        acc = acc.wrapping_add(ptr[s] as i64 + ptr[(s + SAMPLE_BLOCK_ROWS).min(rows)] as i64);
    }
    // 16 i32 per 64-byte line.
    for &s in starts {
        let (a, b) = (
            ptr[s] as usize,
            ptr[(s + SAMPLE_BLOCK_ROWS).min(rows)] as usize,
        );
        let b = b.min(a + SAMPLE_BLOCK_ENTRIES);
        for i in (a..b).step_by(16) {
            acc = acc.wrapping_add(idx[i] as i64);
        }
    }
    std::hint::black_box(acc);
}

/// Fill the sampled features of `f` from `m` (known ones are left as they are).
pub fn sample_into(m: CsrPattern<'_>, f: &mut SpmvFeatures) {
    sample_with(m, f, true)
}

/// [`sample_into`], with or without the loads issued ahead ([`touch`]): the same values.
fn sample_with(m: CsrPattern<'_>, f: &mut SpmvFeatures, ahead: bool) {
    let (rows, cols) = (m.rows, m.cols);
    let (ptr, idx) = (m.indptr, m.indices);
    let nnz = m.nnz();
    if rows == 0 || nnz == 0 || cols == 0 {
        f.sampled_row_len_cv = 0.0;
        f.sampled_max_mean_ratio = 0.0;
        f.sampled_seg_per_entry = 0.0;
        f.sampled_warp_seg_per_entry = 0.0;
        f.sampled_warp_span = 0.0;
        f.sampled_diag_dist = 0.0;
        f.sampled_near_diag_frac = 0.0;
        f.sampled_col_run_len = 0.0;
        f.sampled_same_pattern_frac = 0.0;
        return;
    }
    let mean = nnz as f64 / rows as f64;
    let scale = cols as f64 / rows as f64;
    let seg = X_SEGMENT_COLS as u64;
    let mut set = SegSet::new();
    // Row lengths.
    let (mut n_rows, mut sum_len, mut sum_len2, mut max_len) = (0u64, 0f64, 0f64, 0u64);
    // Entries read and what they show.
    let (mut read, mut row_segs, mut runs, mut dist, mut near) = (0u64, 0u64, 0u64, 0f64, 0u64);
    // Blocks.
    let (mut warp_segs, mut warp_read, mut span_sum, mut blocks) = (0u64, 0u64, 0f64, 0u64);
    // Rows compared with the row before (both read whole) and how many matched.
    let (mut compared, mut same) = (0u64, 0u64);
    let starts = block_starts(rows);
    if ahead {
        touch(ptr, idx, &starts);
    }
    for start in starts {
        let end = (start + SAMPLE_BLOCK_ROWS).min(rows);
        set.clear();
        let mut budget = SAMPLE_BLOCK_ENTRIES;
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        let (mut b_read, mut b_segs) = (0u64, 0u64);
        let mut prev: Option<&[i32]> = None;
        for r in start..end {
            let (s, e) = (ptr[r] as usize, ptr[r + 1] as usize);
            let len = (e - s) as u64;
            n_rows += 1;
            sum_len += len as f64;
            sum_len2 += (len * len) as f64;
            max_len = max_len.max(len);
            if budget == 0 {
                continue;
            }
            let take = (e - s).min(budget);
            budget -= take;
            let cols_r = &idx[s..s + take];
            if take == e - s {
                if let Some(p) = prev {
                    compared += 1;
                    same += u64::from(p == cols_r);
                }
                prev = Some(cols_r);
            } else {
                prev = None;
            }
            let diag = r as f64 * scale;
            let (mut last_seg, mut last_col) = (u64::MAX, u64::MAX - 1);
            for &c in cols_r {
                let c = c as u64;
                let sg = c / seg;
                row_segs += u64::from(sg != last_seg);
                runs += u64::from(c != last_col.wrapping_add(1));
                b_segs += u64::from(set.insert(sg));
                last_seg = sg;
                last_col = c;
                let d = (c as f64 - diag).abs();
                dist += d;
                near += u64::from(d <= NEAR_DIAG_COLS);
                lo = lo.min(c);
                hi = hi.max(c);
            }
            read += take as u64;
            b_read += take as u64;
        }
        if b_read > 0 {
            warp_segs += b_segs;
            warp_read += b_read;
            span_sum += (hi - lo + 1) as f64 / cols as f64;
            blocks += 1;
        }
    }
    // The longest row: the blocks' or the probe's (where the blocks read every row's length,
    // theirs is already the longest).
    let max_len = if rows > SAMPLE_BLOCKS * SAMPLE_BLOCK_ROWS {
        max_len.max(probe_longest_row(ptr))
    } else {
        max_len
    };
    let n = n_rows.max(1) as f64;
    let s_mean = sum_len / n;
    let s_std = (sum_len2 / n - s_mean * s_mean).max(0.0).sqrt();
    let ratio = |a: f64, b: u64| if b > 0 { a / b as f64 } else { 0.0 };
    f.sampled_row_len_cv = if s_mean > 0.0 { s_std / s_mean } else { 0.0 };
    f.sampled_max_mean_ratio = max_len as f64 / mean;
    f.sampled_seg_per_entry = ratio(row_segs as f64, read);
    f.sampled_warp_seg_per_entry = ratio(warp_segs as f64, warp_read);
    f.sampled_warp_span = ratio(span_sum, blocks);
    f.sampled_diag_dist = ratio(dist, read) / cols as f64;
    f.sampled_near_diag_frac = ratio(near as f64, read);
    f.sampled_col_run_len = ratio(read as f64, runs);
    f.sampled_same_pattern_frac = ratio(same as f64, compared);
}

/// Known and sampled features (gathered ones NaN), timed.
pub fn extract_sampled(m: CsrPattern<'_>) -> SpmvFeatureRecord {
    let t = Instant::now();
    let mut features = known(m);
    let known_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    sample_into(m, &mut features);
    SpmvFeatureRecord {
        schema_version: super::SPMV_SCHEMA_VERSION,
        features,
        cost: FeatureCost {
            gatherer: "sampled".into(),
            known_s,
            gathered_s: Some(t.elapsed().as_secs_f64()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern<'a>(rows: usize, cols: usize, ptr: &'a [i32], idx: &'a [i32]) -> CsrPattern<'a> {
        CsrPattern {
            rows,
            cols,
            indptr: ptr,
            indices: idx,
        }
    }

    /// Build a CSR pattern from a row -> columns function.
    fn build(rows: usize, row: impl Fn(usize) -> Vec<i32>) -> (Vec<i32>, Vec<i32>) {
        let (mut ptr, mut idx) = (vec![0i32], Vec::new());
        for r in 0..rows {
            idx.extend(row(r));
            ptr.push(idx.len() as i32);
        }
        (ptr, idx)
    }

    /// `per_row` columns per row scattered by a hash of (row x `stride` + j), sorted, repeats
    /// dropped: the columns of a randomly ordered matrix.
    fn random_rows(n: usize, per_row: u64, stride: u64) -> (Vec<i32>, Vec<i32>) {
        build(n, |r| {
            let mut v: Vec<i32> = (0..per_row)
                .map(|j| (splitmix(r as u64 * stride + j) % n as u64) as i32)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
    }

    fn sampled(rows: usize, cols: usize, ptr: &[i32], idx: &[i32]) -> SpmvFeatures {
        let m = pattern(rows, cols, ptr, idx);
        let mut f = known(m);
        sample_into(m, &mut f);
        f
    }

    #[test]
    fn blocks_are_spread_fixed_and_in_range() {
        for rows in [1, 31, 32, 1023, 1024, 1025, 5000, 1 << 20, 123_456_789] {
            let b = block_starts(rows);
            assert_eq!(b, block_starts(rows), "deterministic");
            assert!(b.iter().all(|&s| s < rows), "{rows}");
            assert!(b.windows(2).all(|w| w[0] < w[1]), "{rows}: increasing");
            if rows > SAMPLE_BLOCKS * SAMPLE_BLOCK_ROWS {
                assert_eq!(b.len(), SAMPLE_BLOCKS);
                // The last block lies in the last stratum: the whole matrix is covered.
                assert!(*b.last().unwrap() as f64 >= rows as f64 * 0.9, "{rows}");
            }
        }
    }

    #[test]
    fn local_and_random_columns_differ() {
        // A 5-point stencil's rows (columns r-100, r-1, r, r+1, r+100): neighbours share x.
        let n = 100_000;
        let (p, i) = build(n, |r| {
            let r = r as i64;
            [r - 100, r - 1, r, r + 1, r + 100]
                .into_iter()
                .filter(|&c| (0..n as i64).contains(&c))
                .map(|c| c as i32)
                .collect()
        });
        let local = sampled(n, n, &p, &i);
        // The same row lengths, columns scattered by a multiplicative hash.
        let (p2, i2) = random_rows(n, 5, 7);
        let random = sampled(n, n, &p2, &i2);
        assert!(local.sampled_warp_seg_per_entry < 0.3, "{local:?}");
        assert!(random.sampled_warp_seg_per_entry > 0.9, "{random:?}");
        assert!(local.sampled_near_diag_frac > 0.99);
        assert!(random.sampled_near_diag_frac < 0.2);
        assert!(local.sampled_diag_dist < 0.01 && random.sampled_diag_dist > 0.2);
        assert!(local.sampled_warp_span < 0.01 && random.sampled_warp_span > 0.8);
    }

    #[test]
    fn dense_runs_and_repeated_rows_are_seen() {
        // A (x) ones(4): each row is runs of 4 consecutive columns; 4 rows in a row share them.
        let n = 40_000;
        let (p, i) = build(n, |r| {
            let b = (r / 4) as i32;
            [b - 7, b, b + 3]
                .into_iter()
                .filter(|&c| c >= 0 && (c as usize) < n / 4)
                .flat_map(|c| (0..4).map(move |q| 4 * c + q))
                .collect()
        });
        let f = sampled(n, n, &p, &i);
        assert!((f.sampled_col_run_len - 4.0).abs() < 0.01, "{f:?}");
        // 3 of every 4 rows repeat the row before (the block's first does not).
        assert!((f.sampled_same_pattern_frac - 0.75).abs() < 0.05, "{f:?}");
        // At most one segment per run of 4 (runs 28 columns apart often share one).
        assert!((0.15..=0.25).contains(&f.sampled_seg_per_entry), "{f:?}");
    }

    #[test]
    fn row_lengths_estimate_the_spread() {
        // Lengths 1 and 9 alternating: mean 5, std 4.
        let n = 200_000;
        let (p, i) = build(n, |r| {
            let len = if r % 2 == 0 { 1 } else { 9 };
            (0..len).map(|j| ((r + j) % n) as i32).collect()
        });
        let f = sampled(n, n, &p, &i);
        assert!((f.sampled_row_len_cv - 0.8).abs() < 0.02, "{f:?}");
        assert!((f.sampled_max_mean_ratio - 1.8).abs() < 1e-9, "{f:?}");
    }

    /// Row pointers from row lengths.
    fn pointers(lens: impl IntoIterator<Item = usize>) -> Vec<i32> {
        let mut p = vec![0i32];
        for l in lens {
            p.push(p.last().unwrap() + l as i32);
        }
        p
    }

    #[test]
    fn the_probe_finds_a_few_long_rows_anywhere() {
        // Short rows of 2-4 entries; one long row of 5,000 at the first row (an arrowhead), the
        // last row (a border) or a row in the middle of a chunk (a hub); 3 million rows, so the
        // seeded blocks miss it.
        let n = 3_000_000;
        for at in [0, n - 1, 1_234_567, 2_999_000] {
            let p = pointers((0..n).map(|r| if r == at { 5_000 } else { 2 + r % 3 }));
            assert_eq!(probe_longest_row(&p), 5_000, "long row at {at}");
        }
        // Four hubs of different lengths: the longest is found.
        let hubs = [
            (17usize, 3_000usize),
            (900_001, 9_000),
            (1_500_000, 4_000),
            (2_222_222, 7_000),
        ];
        let p = pointers((0..n).map(|r| hubs.iter().find(|h| h.0 == r).map_or(3, |h| h.1)));
        assert_eq!(probe_longest_row(&p), 9_000);
    }

    #[test]
    fn the_probe_is_a_real_rows_length() {
        // Lengths with no long row (a hash of the row, 0-40): the probe returns one row's length,
        // at most the longest; on small matrices it reads every row.
        for n in [0usize, 1, 7, 512, 513, 4_096, 100_000, 1_000_003] {
            let lens: Vec<usize> = (0..n).map(|r| (splitmix(r as u64) % 41) as usize).collect();
            let p = pointers(lens.iter().copied());
            let got = probe_longest_row(&p) as usize;
            let max = lens.iter().copied().max().unwrap_or(0);
            assert!(got <= max, "{n}: {got} > {max}");
            assert!(
                n == 0 || lens.contains(&got),
                "{n}: {got} is no row's length"
            );
            if n <= PROBE_SCAN_ROWS {
                assert_eq!(got, max, "{n}");
            }
        }
    }

    #[test]
    fn a_border_row_reaches_the_sampled_longest_row() {
        // A bordered pattern: 1 million rows of 3 entries, the last row dense over 100,000
        // columns. The sampled blocks miss it; the tier does not.
        let n = 1_000_000;
        let (p, i) = build(n, |r| {
            if r == n - 1 {
                (0..100_000).collect()
            } else {
                vec![r.saturating_sub(1) as i32, r as i32, ((r + 1) % n) as i32]
            }
        });
        let f = sampled(n, n, &p, &i);
        let mean = i.len() as f64 / n as f64;
        assert!(
            (f.sampled_max_mean_ratio * mean - 100_000.0).abs() < 1e-6,
            "{f:?}"
        );
    }

    #[test]
    fn empty_and_tiny_patterns_give_finite_values() {
        for (rows, cols, p, i) in [
            (0usize, 0usize, vec![0i32], vec![]),
            (3, 3, vec![0, 0, 0, 0], vec![]),
            (1, 1, vec![0, 1], vec![0]),
            (2, 5, vec![0, 0, 2], vec![1, 4]),
        ] {
            let f = sampled(rows, cols, &p, &i);
            for v in [
                f.sampled_row_len_cv,
                f.sampled_max_mean_ratio,
                f.sampled_seg_per_entry,
                f.sampled_warp_seg_per_entry,
                f.sampled_warp_span,
                f.sampled_diag_dist,
                f.sampled_near_diag_frac,
                f.sampled_col_run_len,
                f.sampled_same_pattern_frac,
            ] {
                assert!(v.is_finite() && v >= 0.0, "{rows}x{cols}: {f:?}");
            }
        }
    }

    /// Not a test: the cost of the tier on a large pattern out of cache, with and without the
    /// loads issued ahead (`cargo test -p augur-features --release -- --ignored --nocapture
    /// sample_cost`).
    #[test]
    #[ignore]
    fn sample_cost() {
        let n = 3_000_000;
        let (p, i) = random_rows(n, 5, 5);
        let m = pattern(n, n, &p, &i);
        let big = vec![1u8; 512 << 20];
        for ahead in [false, true, false, true] {
            let mut t = Vec::new();
            for _ in 0..7 {
                if std::env::var_os("WARM").is_none() {
                    std::hint::black_box(big.iter().step_by(64).map(|&b| b as u64).sum::<u64>());
                }
                let mut f = known(m);
                let s = Instant::now();
                sample_with(m, &mut f, ahead);
                t.push(s.elapsed().as_secs_f64() * 1e6);
                std::hint::black_box(f);
            }
            t.sort_by(f64::total_cmp);
            eprintln!("loads ahead {ahead}: median {:.1} us", t[3]);
        }
        let mut t = Vec::new();
        for _ in 0..7 {
            if std::env::var_os("WARM").is_none() {
                std::hint::black_box(big.iter().step_by(64).map(|&b| b as u64).sum::<u64>());
            }
            let s = Instant::now();
            std::hint::black_box(probe_longest_row(&p));
            t.push(s.elapsed().as_secs_f64() * 1e6);
        }
        t.sort_by(f64::total_cmp);
        eprintln!("the longest-row probe alone: median {:.1} us", t[3]);
    }

    #[test]
    fn loads_ahead_do_not_change_a_value() {
        let n = 50_000;
        let (p, i) = random_rows(n, 7, 7);
        let m = pattern(n, n, &p, &i);
        let (mut a, mut b) = (known(m), known(m));
        sample_with(m, &mut a, true);
        sample_with(m, &mut b, false);
        let bits = |f: &SpmvFeatures| f.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b), "{a:?}");
    }

    #[test]
    fn the_read_is_bounded_whatever_the_size() {
        // One block's budget caps the entries read: a matrix of 64-entry rows reads 2 rows per
        // block, so the estimate of runs sees rows 0..2 of each block only.
        let n = 1 << 16;
        let (p, i) = build(n, |r| (0..64).map(|j| ((r * 64 + j) % n) as i32).collect());
        let f = sampled(n, n, &p, &i);
        assert!((f.sampled_col_run_len - 64.0).abs() < 1.0, "{f:?}");
        const { assert!(SAMPLE_BLOCKS * SAMPLE_BLOCK_ENTRIES <= 4096) };
    }
}
