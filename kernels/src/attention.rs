//! Decode attention (one query token per sequence) over a ragged KV cache: the host batch (KV
//! contiguous per sequence, or paged through a block table) and the f64 reference every GPU
//! schedule is checked against: `o = softmax(q k^T / sqrt(d)) v` per (sequence, query head), the
//! query head h reading KV head h / (q_heads / kv_heads) (grouped-query attention).
//!
//! Inputs are multiples of 1/256 in [-1, 1): exact in f16, bf16 and f32, so the GPU reads the
//! very values the reference does and only its arithmetic differs.

use augur_features::attention::{AttentionShape, Dtype, KvLayout};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::KernelError;

/// Where each sequence's tokens live in the K and V arrays (`[slot][kv_head][head_dim]`).
#[derive(Debug, Clone, PartialEq)]
pub enum KvStore {
    /// Sequence s holds slots `offsets[s] .. offsets[s + 1]`.
    Contiguous { offsets: Vec<usize> },
    /// Token t of sequence s is slot `table[s][t / page_size] * page_size + t % page_size`;
    /// pages are handed out in a shuffled order, as an allocator would after some churn.
    Paged {
        page_size: usize,
        table: Vec<Vec<u32>>,
        pages: usize,
    },
}

/// A decode-attention batch on the host.
#[derive(Debug, Clone)]
pub struct DecodeBatch {
    pub shape: AttentionShape,
    /// `[batch][q_heads][head_dim]`.
    pub q: Vec<f32>,
    /// `[slots][kv_heads][head_dim]`.
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub store: KvStore,
}

/// The reference result.
#[derive(Debug, Clone)]
pub struct DecodeOutput {
    /// `[batch][q_heads][head_dim]`; zeros for a sequence with no KV.
    pub o: Vec<f64>,
    /// Natural-log sum of exp of the scaled scores per `[batch][q_heads]` (what split-KV partials
    /// are merged by); minus infinity for a sequence with no KV.
    pub lse: Vec<f64>,
}

fn random_value(rng: &mut ChaCha8Rng) -> f32 {
    rng.random_range(-256i32..256) as f32 / 256.0
}

impl DecodeBatch {
    /// Random q, K and V for `shape` (one query token per sequence).
    pub fn random(shape: &AttentionShape, seed: u64) -> Result<DecodeBatch, KernelError> {
        shape
            .validate()
            .map_err(|e| KernelError::Invalid(format!("attention shape: {e}")))?;
        if shape.query_len != 1 {
            return Err(KernelError::Invalid(format!(
                "decode attention takes one query token per sequence, not {}",
                shape.query_len
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (b, hq, hk, d) = (
            shape.kv_lens.len(),
            shape.q_heads,
            shape.kv_heads,
            shape.head_dim,
        );
        let store = match shape.layout {
            KvLayout::Contiguous => {
                let mut offsets = vec![0usize];
                for &l in &shape.kv_lens {
                    offsets.push(offsets.last().expect("one") + l);
                }
                KvStore::Contiguous { offsets }
            }
            KvLayout::Paged { page_size } => {
                let per: Vec<usize> = shape
                    .kv_lens
                    .iter()
                    .map(|l| l.div_ceil(page_size))
                    .collect();
                let pages: usize = per.iter().sum();
                let mut ids: Vec<u32> = (0..pages as u32).collect();
                for i in (1..ids.len()).rev() {
                    let j = rng.random_range(0..=i);
                    ids.swap(i, j);
                }
                let mut next = ids.into_iter();
                let table = per
                    .iter()
                    .map(|&n| next.by_ref().take(n).collect())
                    .collect();
                KvStore::Paged {
                    page_size,
                    table,
                    pages,
                }
            }
        };
        let slots = match &store {
            KvStore::Contiguous { offsets } => *offsets.last().expect("one"),
            KvStore::Paged {
                page_size, pages, ..
            } => page_size * pages,
        };
        // Each array in chunks of 64 Ki values, each chunk from its own stream seeded by the
        // batch's generator (in parallel: long-KV batches hold billions of values).
        let mut gen = |n: usize| -> Vec<f32> {
            use rayon::prelude::*;
            const CHUNK: usize = 1 << 16;
            let seeds: Vec<u64> = (0..n.div_ceil(CHUNK)).map(|_| rng.random()).collect();
            let mut out = vec![0.0f32; n];
            out.par_chunks_mut(CHUNK).zip(seeds).for_each(|(c, sd)| {
                let mut r = ChaCha8Rng::seed_from_u64(sd);
                for x in c {
                    *x = random_value(&mut r);
                }
            });
            out
        };
        let q = gen(b * hq * d);
        let k = gen(slots * hk * d);
        let v = gen(slots * hk * d);
        Ok(DecodeBatch {
            shape: shape.clone(),
            q,
            k,
            v,
            store,
        })
    }

    /// The slot of token `t` of sequence `s`.
    pub fn slot(&self, s: usize, t: usize) -> usize {
        match &self.store {
            KvStore::Contiguous { offsets } => offsets[s] + t,
            KvStore::Paged {
                page_size, table, ..
            } => table[s][t / page_size] as usize * page_size + t % page_size,
        }
    }

    /// Bytes of K and V the batch's live tokens occupy (what a decode must read at least).
    pub fn kv_bytes(&self) -> usize {
        let live: usize = self.shape.kv_lens.iter().sum();
        2 * live * self.shape.kv_heads * self.shape.head_dim * self.shape.dtype.bytes()
    }
}

/// The f64 reference of sequence `s`: o `[q_heads][head_dim]` (zeros for an empty sequence)
/// and lse `[q_heads]` (-inf for an empty sequence).
pub fn reference_seq(b: &DecodeBatch, s: usize) -> (Vec<f64>, Vec<f64>) {
    let sh = &b.shape;
    let (hq, hk, d) = (sh.q_heads, sh.kv_heads, sh.head_dim);
    let group = hq / hk;
    let scale = 1.0 / (d as f64).sqrt();
    let len = sh.kv_lens[s];
    let mut o = vec![0.0f64; hq * d];
    let mut lse = vec![f64::NEG_INFINITY; hq];
    if len == 0 {
        return (o, lse);
    }
    for h in 0..hq {
        let kv = h / group;
        let q = &b.q[(s * hq + h) * d..][..d];
        let scores: Vec<f64> = (0..len)
            .map(|t| {
                let k = &b.k[(b.slot(s, t) * hk + kv) * d..][..d];
                q.iter()
                    .zip(k)
                    .map(|(&a, &c)| a as f64 * c as f64)
                    .sum::<f64>()
                    * scale
            })
            .collect();
        let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = scores.iter().map(|x| (x - m).exp()).collect();
        let l: f64 = w.iter().sum();
        let out = &mut o[h * d..][..d];
        for (t, wt) in w.iter().enumerate() {
            let v = &b.v[(b.slot(s, t) * hk + kv) * d..][..d];
            for (x, &y) in out.iter_mut().zip(v) {
                *x += wt * y as f64;
            }
        }
        for x in out.iter_mut() {
            *x /= l;
        }
        lse[h] = m + l.ln();
    }
    (o, lse)
}

/// The f64 reference of the whole batch (sequences in parallel).
pub fn reference(b: &DecodeBatch) -> DecodeOutput {
    use rayon::prelude::*;
    let per: Vec<(Vec<f64>, Vec<f64>)> = (0..b.shape.kv_lens.len())
        .into_par_iter()
        .map(|s| reference_seq(b, s))
        .collect();
    let mut out = DecodeOutput {
        o: Vec::new(),
        lse: Vec::new(),
    };
    for (o, lse) in per {
        out.o.extend(o);
        out.lse.extend(lse);
    }
    out
}

/// The reference o rows of sequences `seqs` (in parallel): (sequence, o `[q_heads][head_dim]`).
pub fn reference_rows(b: &DecodeBatch, seqs: &[usize]) -> Vec<(usize, Vec<f64>)> {
    use rayon::prelude::*;
    seqs.par_iter()
        .map(|&s| (s, reference_seq(b, s).0))
        .collect()
}

/// Largest |o - reference| of `got` (`[batch][q_heads][head_dim]`) over the sequences of
/// `rows` ([`reference_rows`]), and the output index where it is (NaN wins).
pub fn max_error_rows(rows: &[(usize, Vec<f64>)], got: &[f32]) -> (f64, usize) {
    largest_error(rows.iter().flat_map(|(s, o)| {
        let n = o.len();
        o.iter()
            .zip(&got[s * n..][..n])
            .enumerate()
            .map(move |(i, (&w, &g))| (w, g, s * n + i))
    }))
}

/// The largest |want - got| over (want, got, output index) triples and its index (NaN wins).
fn largest_error(pairs: impl Iterator<Item = (f64, f32, usize)>) -> (f64, usize) {
    pairs
        .map(|(w, g, i)| ((w - g as f64).abs(), i))
        .fold(
            (0.0, 0),
            |a, x| if x.0 > a.0 || x.0.is_nan() { x } else { a },
        )
}

/// The 16-bit pattern of `v` in `dtype` (f16 or bf16), for values exact in it (multiples of
/// 1/256 in [-1, 1), as [`DecodeBatch::random`] makes); None if `v` is not exact.
pub fn half_bits(dtype: Dtype, v: f32) -> Option<u16> {
    let bits = v.to_bits();
    match dtype {
        Dtype::Bf16 => (bits & 0xffff == 0).then_some((bits >> 16) as u16),
        Dtype::F16 => {
            let sign = ((bits >> 16) & 0x8000) as u16;
            if v == 0.0 {
                return Some(sign);
            }
            let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
            let mant = bits & 0x7f_ffff;
            if !(1..=30).contains(&exp) || mant & 0x1fff != 0 {
                return None;
            }
            Some(sign | ((exp as u16) << 10) | (mant >> 13) as u16)
        }
        Dtype::F32 => None,
    }
}

/// Largest error of `got` (`[batch][q_heads][head_dim]`) against the reference, relative to the
/// largest |v| a head could average (1 here: every input is in [-1, 1)); and where.
/// The largest |error| a decode-attention output may have against [`fn@reference`] on the inputs
/// of [`DecodeBatch::random`] (exact multiples of 1/256 in [-1, 1)): each output is an average of
/// V rows in [-1, 1), accumulated in f32 with fast exponentials, and the tensor-core kernels
/// stay well below this (`augur attention check` on an H100: at most ~3.5e-4).
pub const ACCEPT_BOUND: f64 = 4e-3;

pub fn max_error(want: &DecodeOutput, got: &[f32]) -> (f64, usize) {
    largest_error(
        want.o
            .iter()
            .zip(got)
            .enumerate()
            .map(|(i, (&w, &g))| (w, g, i)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(spec: &str) -> AttentionShape {
        AttentionShape::parse(spec).unwrap()
    }

    /// A shape the decode kernels cannot take is the caller's mistake, not a device failure.
    #[test]
    fn shapes_out_of_range_are_invalid_arguments() {
        let mut s = shape("attention:q_heads=4,kv_heads=2,head_dim=64,dtype=bf16,lens=3;5,page=16");
        s.query_len = 2;
        let e = DecodeBatch::random(&s, 1).unwrap_err();
        assert!(
            matches!(&e, KernelError::Invalid(m) if m.contains("one query token")),
            "{e}"
        );
        assert!(e.to_string().starts_with("invalid argument: "), "{e}");
    }

    #[test]
    fn error_on_a_subset_of_sequences_matches_the_whole_reference() {
        let b = DecodeBatch::random(
            &shape("attention:q_heads=4,kv_heads=2,head_dim=64,dtype=bf16,lens=0;9;40,page=16"),
            5,
        )
        .unwrap();
        let want = reference(&b);
        let mut got: Vec<f32> = want.o.iter().map(|&x| x as f32).collect();
        let row = 4 * 64;
        got[2 * row + 7] += 0.5;
        got[row + 3] += 0.25;
        let (e, at) = max_error_rows(&reference_rows(&b, &[1, 2]), &got);
        assert!((e - 0.5).abs() < 1e-6 && at == 2 * row + 7, "{e} {at}");
        let (e, at) = max_error_rows(&reference_rows(&b, &[0, 1]), &got);
        assert!((e - 0.25).abs() < 1e-6 && at == row + 3, "{e} {at}");
        assert_eq!(max_error(&want, &got).1, 2 * row + 7);
        got[5] = f32::NAN;
        assert!(max_error_rows(&reference_rows(&b, &[0]), &got).0.is_nan());
    }

    #[test]
    fn one_token_gives_its_value_and_empty_sequences_give_zeros() {
        let b = DecodeBatch::random(
            &shape("attention:q_heads=4,kv_heads=2,head_dim=8,lens=1;0"),
            1,
        )
        .unwrap();
        let r = reference(&b);
        for h in 0..4 {
            let kv = h / 2;
            let v = &b.v[(b.slot(0, 0) * 2 + kv) * 8..][..8];
            for (x, &y) in r.o[h * 8..][..8].iter().zip(v) {
                assert!((x - y as f64).abs() < 1e-12);
            }
            assert!(r.o[(4 + h) * 8..][..8].iter().all(|&x| x == 0.0));
            assert_eq!(r.lse[4 + h], f64::NEG_INFINITY);
        }
    }

    #[test]
    fn a_zero_query_averages_the_values() {
        let mut b = DecodeBatch::random(
            &shape("attention:q_heads=2,kv_heads=1,head_dim=4,lens=37"),
            2,
        )
        .unwrap();
        b.q.iter_mut().for_each(|x| *x = 0.0);
        let r = reference(&b);
        for c in 0..4 {
            let mean: f64 = (0..37)
                .map(|t| b.v[b.slot(0, t) * 4 + c] as f64)
                .sum::<f64>()
                / 37.0;
            assert!((r.o[c] - mean).abs() < 1e-12 && (r.o[4 + c] - mean).abs() < 1e-12);
        }
        assert!((r.lse[0] - 37f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn paged_and_contiguous_agree_on_the_same_tokens() {
        let spec = "attention:q_heads=8,kv_heads=2,head_dim=16,lens=0;1;15;16;17;100";
        let c = DecodeBatch::random(&shape(spec), 3).unwrap();
        let mut p = DecodeBatch::random(&shape(&format!("{spec},page=16")), 3).unwrap();
        // Copy the contiguous tokens into the paged slots, then compare.
        let w = 2 * 16;
        let (mut k, mut v) = (vec![0.0; p.k.len()], vec![0.0; p.v.len()]);
        for (s, &len) in c.shape.kv_lens.iter().enumerate() {
            for t in 0..len {
                let (a, z) = (c.slot(s, t) * w, p.slot(s, t) * w);
                k[z..z + w].copy_from_slice(&c.k[a..a + w]);
                v[z..z + w].copy_from_slice(&c.v[a..a + w]);
            }
        }
        p.k = k;
        p.v = v;
        p.q = c.q.clone();
        let (rc, rp) = (reference(&c), reference(&p));
        assert_eq!(rc.o, rp.o);
        // Pages are shuffled, not in order.
        if let KvStore::Paged { table, .. } = &p.store {
            let flat: Vec<u32> = table.iter().flatten().copied().collect();
            assert!(flat.windows(2).any(|w| w[1] != w[0] + 1));
        }
    }

    #[test]
    fn inputs_are_exact_in_half_precision() {
        let b = DecodeBatch::random(&shape("attention:q_heads=2,head_dim=64,lens=50"), 4).unwrap();
        for &x in b.q.iter().chain(&b.k).chain(&b.v) {
            for dt in [Dtype::F16, Dtype::Bf16] {
                let h = half_bits(dt, x).unwrap();
                let back = match dt {
                    Dtype::Bf16 => f32::from_bits((h as u32) << 16),
                    _ => {
                        let e = ((h >> 10) & 0x1f) as i32;
                        let m = (h & 0x3ff) as f32 / 1024.0;
                        let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
                        if e == 0 {
                            s * m * 2f32.powi(-14)
                        } else {
                            s * (1.0 + m) * 2f32.powi(e - 15)
                        }
                    }
                };
                assert_eq!(back, x);
            }
        }
        assert!(b.q.iter().any(|&x| x != 0.0));
        assert_eq!(half_bits(Dtype::Bf16, 1.0 / 3.0), None);
        assert_eq!(half_bits(Dtype::F16, 1e-9), None);
    }

    #[test]
    fn bad_shapes_are_errors() {
        let mut s = shape("attention:q_heads=2,head_dim=8,lens=5");
        s.query_len = 2;
        assert!(DecodeBatch::random(&s, 0).is_err());
        s.query_len = 1;
        s.kv_heads = 3;
        assert!(DecodeBatch::random(&s, 0).is_err());
    }
}

/// FlashAttention-2's split-KV rule (`num_splits_heuristic` in flash-attention's
/// `flash_api.cpp`), the baseline of issue 8: no split when the (batch x heads x query blocks)
/// blocks fill 80% of the SMs; else the fewest splits whose wave efficiency is within 85% of the
/// best, among split counts that change the blocks per split. `n_blocks` = KV blocks of the
/// longest sequence (`ceil(max_len / block_n)`, block_n 256 for head_dim <= 64, 128 for <= 128,
/// else 64).
pub fn fa2_num_splits(
    batch_heads_mblocks: usize,
    sms: usize,
    n_blocks: usize,
    max_splits: usize,
) -> usize {
    if batch_heads_mblocks as f64 >= 0.8 * sms as f64 {
        return 1;
    }
    let max_splits = max_splits.min(sms).min(n_blocks).max(1);
    let eligible = |s: usize| s == 1 || n_blocks.div_ceil(s) != n_blocks.div_ceil(s - 1);
    let eff = |s: usize| {
        let waves = (batch_heads_mblocks * s) as f64 / sms as f64;
        waves / waves.ceil()
    };
    let best = (1..=max_splits)
        .filter(|&s| eligible(s))
        .map(eff)
        .fold(0.0f64, f64::max);
    (1..=max_splits)
        .filter(|&s| eligible(s))
        .find(|&s| eff(s) >= 0.85 * best)
        .unwrap_or(1)
}

/// The FA2 rule for a decode shape on a GPU with `sms` SMs: its split count (1: no split).
/// Heads are the KV heads FA2 packs a GQA group into (one query block per (sequence, KV head)).
pub fn fa2_splits_for(shape: &AttentionShape, sms: usize) -> usize {
    let block_n = match shape.head_dim {
        d if d <= 64 => 256,
        d if d <= 128 => 128,
        _ => 64,
    };
    let max_len = shape.kv_lens.iter().copied().max().unwrap_or(0);
    fa2_num_splits(
        shape.kv_lens.len() * shape.kv_heads,
        sms,
        max_len.div_ceil(block_n),
        128,
    )
}

#[cfg(test)]
mod fa2_tests {
    use super::*;

    #[test]
    fn fa2_rule_matches_hand_computed_cases() {
        // Enough blocks for the GPU: no split.
        assert_eq!(fa2_num_splits(132, 132, 64, 128), 1);
        assert_eq!(fa2_num_splits(106, 132, 64, 128), 1);
        // One block, 64 KV blocks: efficiency s/132; eligible splits are those that change
        // ceil(64 / s) (1..8, 10, 11, 13, 16, 22, 32, 64); the best is 64 (0.485) and the first
        // eligible one within 85% of it (s >= 54.4) is 64 itself.
        assert_eq!(fa2_num_splits(1, 132, 64, 128), 64);
        // 20 blocks: waves 20s/132, efficiency waves / ceil(waves); the best eligible is s = 13
        // (1.97 waves: 0.985); the first eligible within 85% of it (>= 0.837) is s = 6 (0.909;
        // s = 5 gives 0.758).
        assert_eq!(fa2_num_splits(20, 132, 64, 128), 6);
        // 8 blocks, 4 KV blocks: splits 1..4 eligible; efficiency 8s/132, best at s = 4 (0.242);
        // the first >= 0.206 is s = 4.
        assert_eq!(fa2_num_splits(8, 132, 4, 128), 4);
        // Only one KV block: nothing to split.
        assert_eq!(fa2_num_splits(1, 132, 1, 128), 1);
        let s = AttentionShape::parse("attention:q_heads=32,kv_heads=8,head_dim=128,lens=8192")
            .unwrap();
        // 8 blocks, 64 KV blocks of 128.
        assert_eq!(fa2_splits_for(&s, 132), fa2_num_splits(8, 132, 64, 128));
    }
}
