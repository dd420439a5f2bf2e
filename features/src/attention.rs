//! Decode-attention shape features.
//!
//! Published selectors went wrong most often through their inputs: the *allocated* instead of the
//! *live* KV length, or query heads where KV heads were meant. So the shape holds the live KV
//! length of every sequence and names `q_heads` and `kv_heads` apart; every feature is derived
//! from those, never from buffer sizes.

use serde::{Deserialize, Serialize};

use crate::schema::feature_struct;
use crate::spec::{parse_count, SpecParams};
use crate::FeatureError;

/// Version of the attention feature schema.
pub const ATTENTION_SCHEMA_VERSION: u32 = 1;

/// Element type of Q, K and V.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F16,
    Bf16,
    F32,
}

impl Dtype {
    pub fn bytes(self) -> usize {
        match self {
            Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::F32 => 4,
        }
    }

    pub fn parse(s: &str) -> Option<Dtype> {
        match s {
            "f16" | "fp16" | "half" => Some(Dtype::F16),
            "bf16" => Some(Dtype::Bf16),
            "f32" | "fp32" => Some(Dtype::F32),
            _ => None,
        }
    }
}

/// How the KV cache is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "layout")]
pub enum KvLayout {
    /// One contiguous buffer per sequence, with a length array.
    Contiguous,
    /// Fixed-size pages through a block table.
    Paged { page_size: usize },
}

/// A batch of decode-attention problems (one or a few query tokens per sequence).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttentionShape {
    pub q_heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub dtype: Dtype,
    /// Query tokens per sequence (1 for decode).
    pub query_len: usize,
    /// Live KV length of each sequence in the batch.
    pub kv_lens: Vec<usize>,
    pub layout: KvLayout,
}

impl AttentionShape {
    /// Check the shape: at least one sequence, nonzero heads and head_dim, q_heads a multiple of
    /// kv_heads (GQA), a nonzero page size.
    pub fn validate(&self) -> Result<(), FeatureError> {
        let bad = |msg: String| Err(FeatureError::Shape(msg));
        if self.kv_lens.is_empty() {
            return bad("the batch is empty: give at least one KV length".into());
        }
        if self.q_heads == 0 || self.kv_heads == 0 || self.head_dim == 0 || self.query_len == 0 {
            return bad(format!(
                "q_heads ({}), kv_heads ({}), head_dim ({}) and query_len ({}) must be >= 1",
                self.q_heads, self.kv_heads, self.head_dim, self.query_len
            ));
        }
        if !self.q_heads.is_multiple_of(self.kv_heads) {
            return bad(format!(
                "q_heads ({}) must be a multiple of kv_heads ({}) (grouped-query attention)",
                self.q_heads, self.kv_heads
            ));
        }
        if let KvLayout::Paged { page_size: 0 } = self.layout {
            return bad("page size must be >= 1".into());
        }
        Ok(())
    }

    /// Parse `attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=4096*2;16*30,page=16`.
    /// `lens` lists live KV lengths separated by `;`, each optionally repeated `*count`;
    /// `query_len` defaults to 1, `dtype` to bf16, `page` (a page size) to none (contiguous).
    pub fn parse(spec: &str) -> Result<AttentionShape, FeatureError> {
        let mut p = SpecParams::parse(spec, "attention")?;
        let q_heads = p.count("q_heads", None)?;
        let kv_heads = p.count("kv_heads", Some(q_heads))?;
        let head_dim = p.count("head_dim", Some(128))?;
        let dtype = match p.text("dtype") {
            None => Dtype::Bf16,
            Some(d) => Dtype::parse(d)
                .ok_or_else(|| p.err(format!("dtype `{d}` is not f16, bf16 or f32")))?,
        };
        let query_len = p.count("query_len", Some(1))?;
        let lens_text = p
            .text("lens")
            .ok_or_else(|| p.err("needs `lens=` (live KV lengths, e.g. lens=4096*2;16*30)"))?;
        let mut kv_lens = Vec::new();
        for item in lens_text
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let (len, times) = match item.split_once('*') {
                Some((l, t)) => (l, t),
                None => (item, "1"),
            };
            let len = parse_count(len).ok_or_else(|| p.err(format!("KV length `{len}`")))?;
            let times = parse_count(times).ok_or_else(|| p.err(format!("count `{times}`")))?;
            if kv_lens.len() + times > 1 << 24 {
                return Err(p.err("more than 2^24 sequences"));
            }
            kv_lens.extend(std::iter::repeat_n(len, times));
        }
        let layout = match p.text("page") {
            None => KvLayout::Contiguous,
            Some(t) => KvLayout::Paged {
                page_size: parse_count(t).ok_or_else(|| p.err(format!("page `{t}`")))?,
            },
        };
        p.finish()?;
        let shape = AttentionShape {
            q_heads,
            kv_heads,
            head_dim,
            dtype,
            query_len,
            kv_lens,
            layout,
        };
        shape.validate().map_err(|e| match e {
            FeatureError::Shape(msg) => p.err(msg),
            other => other,
        })?;
        Ok(shape)
    }

    /// The features of this shape.
    pub fn features(&self) -> Result<AttentionFeatures, FeatureError> {
        self.validate()?;
        let n = self.kv_lens.len() as f64;
        let total: f64 = self.kv_lens.iter().map(|&l| l as f64).sum();
        let mean = total / n;
        let var = self
            .kv_lens
            .iter()
            .map(|&l| (l as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        let max = *self.kv_lens.iter().max().expect("validated non-empty") as f64;
        let min = *self.kv_lens.iter().min().expect("validated non-empty") as f64;
        let (paged, page_size) = match self.layout {
            KvLayout::Contiguous => (0.0, 0.0),
            KvLayout::Paged { page_size } => (1.0, page_size as f64),
        };
        let elem = self.dtype.bytes() as f64;
        Ok(AttentionFeatures {
            batch: n,
            q_heads: self.q_heads as f64,
            kv_heads: self.kv_heads as f64,
            gqa_group: (self.q_heads / self.kv_heads) as f64,
            head_dim: self.head_dim as f64,
            dtype_bytes: elem,
            query_len: self.query_len as f64,
            kv_len_mean: mean,
            kv_len_max: max,
            kv_len_min: min,
            kv_len_cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
            kv_len_max_mean: if mean > 0.0 { max / mean } else { 0.0 },
            total_kv_tokens: total,
            paged,
            page_size,
            kv_bytes: 2.0 * total * self.kv_heads as f64 * self.head_dim as f64 * elem,
            seq_kv_head_pairs: n * self.kv_heads as f64,
        })
    }
}

feature_struct! {
    /// Features of a decode-attention shape, in schema order (all known: O(batch) to compute).
    AttentionFeatures, "attention", ATTENTION_SCHEMA_VERSION, {
        batch: "sequences", Known, "Sequences in the batch: with kv_heads, the parallelism of one-CTA-per-sequence schedules.";
        q_heads: "heads", Known, "Query heads.";
        kv_heads: "heads", Known, "KV heads (not query heads): how many distinct K/V streams are read.";
        gqa_group: "heads", Known, "q_heads / kv_heads: query heads sharing one K/V stream, the reuse GQA-packed schedules exploit.";
        head_dim: "elements", Known, "Head dimension: bytes per token and the width of the dot products.";
        dtype_bytes: "bytes", Known, "Bytes per element of K and V.";
        query_len: "tokens", Known, "Query tokens per sequence (1 for decode).";
        kv_len_mean: "tokens", Known, "Mean live KV length: work per sequence.";
        kv_len_max: "tokens", Known, "Longest live KV length: the critical path without KV splitting.";
        kv_len_min: "tokens", Known, "Shortest live KV length.";
        kv_len_cv: "ratio", Known, "Coefficient of variation of KV lengths: raggedness that idles CTAs of per-sequence schedules.";
        kv_len_max_mean: "ratio", Known, "Longest / mean KV length: how far the longest sequence drags the batch.";
        total_kv_tokens: "tokens", Known, "Live KV tokens of the whole batch.";
        paged: "flag", Known, "1 when the KV cache is paged through a block table, else 0.";
        page_size: "tokens", Known, "Tokens per page (0 when contiguous).";
        kv_bytes: "bytes", Known, "K and V bytes a decode step must read: the memory-bound floor.";
        seq_kv_head_pairs: "CTAs", Known, "batch x kv_heads: CTAs of the GQA-packed schedule, against the SM count.";
    }
}
