//! Features of a tensor-parallel layer's GEMM + collective (issue 24): which way to overlap the
//! two (bulk, chunked, copy-engine pulls or pushes) depends on how long the collective is next to
//! the GEMM, how many GPUs share it, the link between them and how many waves of tiles the GEMM
//! makes (a GEMM of one wave cannot start on part of its input without idling SMs).
//!
//! The layer is C = A Bᵀ with A M x K (the tokens) and B N x K (the weight), on P GPUs:
//! - **all-gather + GEMM** (column-parallel): each GPU holds M / P rows of A and N / P rows of B;
//!   it gathers all of A and makes C's N / P columns.
//! - **GEMM + reduce-scatter** (row-parallel): A and B cut along K (K / P each); each GPU makes a
//!   partial M x N product, and the sum's rows are scattered, M / P to each GPU.
//! - **GEMM + all-reduce** (row-parallel without sequence parallelism): cut as the
//!   reduce-scatter, but every GPU receives the whole M x N sum.

use serde::{Deserialize, Serialize};

use crate::attention::Dtype;
use crate::message::LinkType;
use crate::schema::feature_struct;
use crate::spec::SpecParams;
use crate::FeatureError;

/// Version of the overlap feature schema.
/// 2: `all_reduce`, the GEMM + all-reduce's flag (the reduce-scatter's features are otherwise
/// the same).
pub const OVERLAP_SCHEMA_VERSION: u32 = 2;

/// The tile the wave count assumes (rows x columns of C per thread block: cuBLASLt's and augur's
/// common 128 x 128).
pub const WAVE_TILE: usize = 128;

/// The operations of a tensor-parallel layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverlapOp {
    /// Column-parallel: all-gather of A, then the GEMM.
    AllGatherGemm,
    /// Row-parallel: the GEMM, then reduce-scatter of C.
    GemmReduceScatter,
    /// Row-parallel without sequence parallelism: the GEMM, then all-reduce of C.
    GemmAllReduce,
}

impl OverlapOp {
    pub fn name(self) -> &'static str {
        match self {
            OverlapOp::AllGatherGemm => "all-gather+gemm",
            OverlapOp::GemmReduceScatter => "gemm+reduce-scatter",
            OverlapOp::GemmAllReduce => "gemm+all-reduce",
        }
    }

    /// Every operation, in the order models and reports list them.
    pub const ALL: [OverlapOp; 3] = [
        OverlapOp::AllGatherGemm,
        OverlapOp::GemmReduceScatter,
        OverlapOp::GemmAllReduce,
    ];

    /// Row-parallel (A and B cut along K, each GPU a partial product summed over the GPUs): the
    /// reduce-scatter and the all-reduce.
    pub fn row_parallel(self) -> bool {
        self != OverlapOp::AllGatherGemm
    }

    pub fn parse(s: &str) -> Option<OverlapOp> {
        match s {
            "all-gather+gemm" | "all-gather" => Some(OverlapOp::AllGatherGemm),
            "gemm+reduce-scatter" | "reduce-scatter" => Some(OverlapOp::GemmReduceScatter),
            "gemm+all-reduce" | "all-reduce" => Some(OverlapOp::GemmAllReduce),
            _ => None,
        }
    }

    /// The cut of an M x N x K layer on `world` GPUs: (rows of A per GPU, its share of the cut
    /// dimension: N / P for the all-gather, K / P for the reduce-scatter and the all-reduce), or
    /// why it does not cut (M and the cut dimension must split evenly, the share a multiple of
    /// 8; the all-reduce's M too, as it runs as a reduce-scatter of M / P rows per GPU and an
    /// all-gather).
    pub fn split(
        self,
        m: usize,
        n: usize,
        k: usize,
        world: usize,
    ) -> Result<(usize, usize), String> {
        let (cut, what) = match self {
            OverlapOp::AllGatherGemm => (n, "N"),
            OverlapOp::GemmReduceScatter | OverlapOp::GemmAllReduce => (k, "K"),
        };
        if world == 0
            || !m.is_multiple_of(world)
            || !cut.is_multiple_of(world)
            || !(cut / world).is_multiple_of(8)
        {
            return Err(format!(
                "{m}x{n}x{k} on {world} GPUs ({}): M and {what} must split evenly, {what} / \
                 {world} a multiple of 8",
                self.name()
            ));
        }
        Ok((m / world, cut / world))
    }
}

/// One layer call on a GPU group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverlapShape {
    pub op: OverlapOp,
    /// The whole layer's M, N, K.
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub dtype: Dtype,
    pub world_size: usize,
    pub link: LinkType,
    /// Streaming multiprocessors of one GPU (for the wave count).
    pub sms: usize,
}

impl OverlapShape {
    /// The cut of the layer on its GPUs, or why it does not cut: M and the cut dimension (N for
    /// the all-gather, K for the reduce-scatter) split evenly, the cut a multiple of 8.
    pub fn validate(&self) -> Result<(), FeatureError> {
        let bad = |m: String| Err(FeatureError::Shape(m));
        let p = self.world_size;
        if p < 2 {
            return bad(format!(
                "{}: {p} GPU(s); an overlap needs at least 2",
                self.op.name()
            ));
        }
        if self.link == LinkType::SameDevice {
            return bad("an overlap between GPUs needs a link, not same-device".into());
        }
        if self.sms == 0 {
            return bad("0 SMs".into());
        }
        if self.m == 0 || self.n == 0 || self.k == 0 {
            return bad(format!(
                "{} x {} x {}: every dimension at least 1",
                self.m, self.n, self.k
            ));
        }
        self.op
            .split(self.m, self.n, self.k, p)
            .map(|_| ())
            .map_err(FeatureError::Shape)
    }

    /// Parse `overlap:op=all-gather,m=8192,n=6144,k=4096,world=4[,dtype=bf16,link=nvlink,sms=132]`
    /// (`op` all-gather, reduce-scatter or all-reduce; defaults: bf16, NVLink, 132 SMs as on an H100 SXM or
    /// an H200).
    pub fn parse(spec: &str) -> Result<OverlapShape, FeatureError> {
        let mut p = SpecParams::parse(spec, "overlap")?;
        let op_text = p.text("op").ok_or_else(|| p.err("needs `op=`"))?;
        let op = OverlapOp::parse(op_text).ok_or_else(|| {
            p.err(format!(
                "op `{op_text}` is not all-gather (+ GEMM), reduce-scatter or all-reduce (GEMM +)"
            ))
        })?;
        let dtype = match p.text("dtype") {
            None => Dtype::Bf16,
            Some(d) => Dtype::parse(d)
                .ok_or_else(|| p.err(format!("dtype `{d}` is not f16, bf16 or f32")))?,
        };
        let link = match p.text("link") {
            None => LinkType::Nvlink,
            Some(l) => LinkType::parse(l)
                .ok_or_else(|| p.err(format!("link `{l}` is not nvlink or pcie")))?,
        };
        let (m, n, k) = (
            p.count("m", None)?,
            p.count("n", None)?,
            p.count("k", None)?,
        );
        let world_size = p.count("world", None)?;
        let sms = p.count("sms", Some(132))?;
        p.finish()?;
        let shape = OverlapShape {
            op,
            m,
            n,
            k,
            dtype,
            world_size,
            link,
            sms,
        };
        shape.validate().map_err(|e| match e {
            FeatureError::Shape(msg) => p.err(msg),
            other => other,
        })?;
        Ok(shape)
    }

    pub fn features(&self) -> Result<OverlapFeatures, FeatureError> {
        self.validate()?;
        let p = self.world_size as f64;
        let eb = self.dtype.bytes() as f64;
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        let rows = m / p;
        // What one GPU multiplies (rows of C x columns x depth) and moves.
        let (c_cols, depth, shard) = match self.op {
            OverlapOp::AllGatherGemm => (n / p, k, rows * k * eb),
            OverlapOp::GemmReduceScatter | OverlapOp::GemmAllReduce => (n, k / p, rows * n * eb),
        };
        let flops = 2.0 * m * c_cols * depth;
        // The all-reduce receives P - 1 shards of partials, then P - 1 shards of the sum.
        let phases = if self.op == OverlapOp::GemmAllReduce {
            2.0
        } else {
            1.0
        };
        let moved = phases * (p - 1.0) * shard;
        let tiles = (self.m.div_ceil(WAVE_TILE) * (c_cols as usize).div_ceil(WAVE_TILE)) as f64;
        Ok(OverlapFeatures {
            all_gather: (self.op == OverlapOp::AllGatherGemm) as u8 as f64,
            all_reduce: (self.op == OverlapOp::GemmAllReduce) as u8 as f64,
            world_size: p,
            link_nvlink: (self.link == LinkType::Nvlink) as u8 as f64,
            elem_bytes: eb,
            m,
            n,
            k,
            log2_m: m.log2(),
            rows_per_rank: rows,
            gemm_cols: c_cols,
            gemm_depth: depth,
            shard_bytes: shard,
            moved_bytes: moved,
            gemm_flops: flops,
            bytes_per_flop: moved / flops,
            tile_waves: tiles / self.sms as f64,
        })
    }
}

feature_struct! {
    /// Features of one tensor-parallel layer call, in schema order (all known from the shape).
    OverlapFeatures, "overlap", OVERLAP_SCHEMA_VERSION, {
        all_gather: "flag", Known, "1 for all-gather + GEMM (column-parallel), 0 for GEMM + reduce-scatter or all-reduce (row-parallel).";
        all_reduce: "flag", Known, "1 for GEMM + all-reduce (row-parallel, every GPU receives the whole sum), else 0.";
        world_size: "GPUs", Known, "GPUs sharing the layer: how many peers each GPU exchanges with.";
        link_nvlink: "flag", Known, "1 when the slowest link between the GPUs is NVLink.";
        elem_bytes: "bytes", Known, "Bytes per element of A, B and C.";
        m: "rows", Known, "M of the whole layer (tokens).";
        n: "columns", Known, "N of the whole layer (output features).";
        k: "elements", Known, "K of the whole layer (input features).";
        log2_m: "log2 rows", Known, "log2 M: token counts span 16 to 16384.";
        rows_per_rank: "rows", Known, "M / P: the rows each GPU owns (of A for the all-gather, of the sum for the reduce-scatter; the all-reduce's reduce-scatter half).";
        gemm_cols: "columns", Known, "Columns of C one GPU makes (N / P for the all-gather, N for the reduce-scatter).";
        gemm_depth: "elements", Known, "The depth of one GPU's product (K, or K / P for the reduce-scatter).";
        shard_bytes: "bytes", Known, "Bytes one GPU contributes to the collective (its rows of A, or one destination's rows of its partial).";
        moved_bytes: "bytes", Known, "Bytes one GPU receives: (P - 1) shards (2 (P - 1) for the all-reduce: the partials, then the sums).";
        gemm_flops: "flop", Known, "2 x the multiply-adds of one GPU's product: compute that can hide the transfer.";
        bytes_per_flop: "bytes/flop", Known, "moved_bytes / gemm_flops: the transfer's time over the GEMM's, up to a constant of the device (peak flop/s over link bandwidth).";
        tile_waves: "waves", Known, "Tiles of 128 x 128 of one GPU's C per SM: below one wave a GEMM cut in pieces idles SMs.";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(op: OverlapOp, m: usize, n: usize, k: usize, p: usize) -> OverlapShape {
        OverlapShape {
            op,
            m,
            n,
            k,
            dtype: Dtype::Bf16,
            world_size: p,
            link: LinkType::Nvlink,
            sms: 132,
        }
    }

    #[test]
    fn the_cut_of_each_operation() {
        // Llama-3-8B's QKV on 4 GPUs, 8192 tokens: each GPU owns 2048 rows of A (16 MiB of
        // bf16) and receives three shards; it makes 1536 columns over K 4096.
        let f = shape(OverlapOp::AllGatherGemm, 8192, 6144, 4096, 4)
            .features()
            .unwrap();
        assert_eq!(f.rows_per_rank, 2048.0);
        assert_eq!(f.gemm_cols, 1536.0);
        assert_eq!(f.shard_bytes, 2048.0 * 4096.0 * 2.0);
        assert_eq!(f.moved_bytes, 3.0 * f.shard_bytes);
        assert_eq!(f.gemm_flops, 2.0 * 8192.0 * 1536.0 * 4096.0);
        assert_eq!(f.tile_waves, (64.0 * 12.0) / 132.0);
        assert_eq!(f.all_gather, 1.0);
        // The down projection on 2 GPUs: K cut, the sum's 4096 rows of N 4096 scattered.
        let f = shape(OverlapOp::GemmReduceScatter, 8192, 4096, 14336, 2)
            .features()
            .unwrap();
        assert_eq!((f.gemm_cols, f.gemm_depth), (4096.0, 7168.0));
        assert_eq!(f.shard_bytes, 4096.0 * 4096.0 * 2.0);
        assert_eq!(f.bytes_per_flop, f.moved_bytes / f.gemm_flops);
        assert_eq!(f.all_gather, 0.0);
        assert_eq!(OverlapFeatures::schema().features.len(), f.values().len());
        // The all-reduce: the same product, twice the bytes received.
        let r = shape(OverlapOp::GemmAllReduce, 8192, 4096, 14336, 2)
            .features()
            .unwrap();
        assert_eq!((r.gemm_cols, r.gemm_depth), (f.gemm_cols, f.gemm_depth));
        assert_eq!(r.shard_bytes, f.shard_bytes);
        assert_eq!(r.moved_bytes, 2.0 * f.moved_bytes);
        assert_eq!((r.all_gather, r.all_reduce, f.all_reduce), (0.0, 1.0, 0.0));
        let e = shape(OverlapOp::GemmAllReduce, 100, 64, 64, 8)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("gemm+all-reduce"), "{e}");
    }

    #[test]
    fn a_shape_that_does_not_cut_says_why() {
        let e = shape(OverlapOp::AllGatherGemm, 8192, 6144 + 8, 4096, 4)
            .features()
            .unwrap_err()
            .to_string();
        assert!(e.contains("M and N must split evenly"), "{e}");
        let e = shape(OverlapOp::GemmReduceScatter, 100, 64, 64, 8)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("M and K must split evenly"), "{e}");
        let e = shape(OverlapOp::AllGatherGemm, 64, 64, 64, 1)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 2"), "{e}");
        let s = OverlapShape::parse("overlap:op=all-gather,m=8192,n=6144,k=4096,world=4").unwrap();
        assert_eq!(s, shape(OverlapOp::AllGatherGemm, 8192, 6144, 4096, 4));
        let e = OverlapShape::parse("overlap:op=all-gather,m=8192,n=6148,k=4096,world=4")
            .unwrap_err()
            .to_string();
        assert!(e.contains("must split evenly"), "{e}");
        let e = OverlapShape::parse("overlap:op=gather,m=8,n=8,k=8,world=2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("op `gather`"), "{e}");
        for s in ["all-gather+gemm", "gemm+reduce-scatter", "gemm+all-reduce"] {
            assert_eq!(OverlapOp::parse(s).unwrap().name(), s);
        }
        assert!(OverlapOp::parse("all-to-all").is_none());
    }
}
