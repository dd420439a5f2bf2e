//! Collective-message features: which pattern moves a message fastest depends on its size, the
//! number of GPUs and the links between them.
//!
//! Sizes follow the nccl-tests convention: `bytes` is the whole buffer of one rank (the buffer
//! of an all-reduce, the gathered output of an all-gather, the input of a reduce-scatter), and
//! the bus bytes are what each rank must move over its links: 2(n-1)/n x bytes for all-reduce,
//! (n-1)/n x bytes for all-gather and reduce-scatter.

use serde::{Deserialize, Serialize};

use crate::attention::Dtype;
use crate::schema::feature_struct;
use crate::spec::{parse_count, SpecParams};
use crate::FeatureError;

/// Version of the message feature schema.
pub const MESSAGE_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
}

impl Collective {
    pub fn parse(s: &str) -> Option<Collective> {
        match s {
            "all-reduce" | "allreduce" => Some(Collective::AllReduce),
            "all-gather" | "allgather" => Some(Collective::AllGather),
            "reduce-scatter" | "reducescatter" => Some(Collective::ReduceScatter),
            _ => None,
        }
    }

    /// Bus bytes per byte of buffer on `n` ranks (nccl-tests' bus bandwidth factor).
    pub fn bus_factor(self, n: usize) -> f64 {
        let n = n as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather | Collective::ReduceScatter => (n - 1.0) / n,
        }
    }
}

/// The slowest link between the GPUs of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkType {
    /// PCIe (or through the host): the slowest.
    Pcie,
    /// NVLink peer access.
    Nvlink,
    /// All ranks on one device (world size 1).
    SameDevice,
}

impl LinkType {
    pub fn parse(s: &str) -> Option<LinkType> {
        match s {
            "pcie" => Some(LinkType::Pcie),
            "nvlink" => Some(LinkType::Nvlink),
            "same-device" | "same" => Some(LinkType::SameDevice),
            _ => None,
        }
    }
}

/// Where the link type of a GPU pair comes from. The CUDA backend implements it from the
/// driver's P2P attributes; tests and offline runs state the link instead.
pub trait LinkProbe {
    fn link(&self, a: usize, b: usize) -> Result<LinkType, FeatureError>;

    /// The slowest link among every pair of `devices` (SameDevice for one device).
    fn group_link(&self, devices: &[usize]) -> Result<LinkType, FeatureError> {
        let mut worst = LinkType::SameDevice;
        for (i, &a) in devices.iter().enumerate() {
            for &b in &devices[i + 1..] {
                worst = worst.min(self.link(a, b)?);
            }
        }
        Ok(worst)
    }
}

/// One collective call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageShape {
    pub collective: Collective,
    pub dtype: Dtype,
    /// Bytes of one rank's whole buffer (nccl-tests convention, see the module docs).
    pub bytes: usize,
    pub world_size: usize,
    pub link: LinkType,
    /// (M, N, K) of a matrix product the message is fused with, if any.
    pub gemm: Option<[usize; 3]>,
}

impl MessageShape {
    pub fn validate(&self) -> Result<(), FeatureError> {
        let bad = |m: String| Err(FeatureError::Shape(m));
        if self.world_size == 0 {
            return bad("world size must be >= 1".into());
        }
        if !self.bytes.is_multiple_of(self.dtype.bytes()) {
            return bad(format!(
                "{} bytes is not a whole number of {:?} elements ({} bytes each)",
                self.bytes,
                self.dtype,
                self.dtype.bytes()
            ));
        }
        if (self.world_size == 1) != (self.link == LinkType::SameDevice) {
            return bad(format!(
                "link {:?} with world size {}: one rank means same-device, several mean a link",
                self.link, self.world_size
            ));
        }
        Ok(())
    }

    /// Parse `message:collective=all-reduce,dtype=bf16,bytes=64KiB,world=4,link=nvlink`
    /// (`gemm=MxNxK` optional; `dtype` defaults to f32, `link` to nvlink, or same-device on
    /// one rank).
    pub fn parse(spec: &str) -> Result<MessageShape, FeatureError> {
        let mut p = SpecParams::parse(spec, "message")?;
        let coll = p
            .text("collective")
            .ok_or_else(|| p.err("needs `collective=`"))?;
        let collective = Collective::parse(coll).ok_or_else(|| {
            p.err(format!(
                "collective `{coll}` is not all-reduce, all-gather or reduce-scatter"
            ))
        })?;
        let dtype = match p.text("dtype") {
            None => Dtype::F32,
            Some(d) => Dtype::parse(d)
                .ok_or_else(|| p.err(format!("dtype `{d}` is not f16, bf16 or f32")))?,
        };
        let bytes = p.count("bytes", None)?;
        let world_size = p.count("world", None)?;
        let link = match p.text("link") {
            None if world_size == 1 => LinkType::SameDevice,
            None => LinkType::Nvlink,
            Some(l) => LinkType::parse(l)
                .ok_or_else(|| p.err(format!("link `{l}` is not nvlink, pcie or same-device")))?,
        };
        let gemm = match p.text("gemm") {
            None => None,
            Some(g) => {
                let dims: Vec<Option<usize>> = g.split('x').map(parse_count).collect();
                match dims[..] {
                    [Some(m), Some(n), Some(k)] => Some([m, n, k]),
                    _ => return Err(p.err(format!("gemm `{g}` is not MxNxK"))),
                }
            }
        };
        p.finish()?;
        let shape = MessageShape {
            collective,
            dtype,
            bytes,
            world_size,
            link,
            gemm,
        };
        shape.validate().map_err(|e| match e {
            FeatureError::Shape(msg) => p.err(msg),
            other => other,
        })?;
        Ok(shape)
    }

    pub fn features(&self) -> Result<MessageFeatures, FeatureError> {
        self.validate()?;
        let bytes = self.bytes as f64;
        let is = |c: Collective| (self.collective == c) as u8 as f64;
        let link = |l: LinkType| (self.link == l) as u8 as f64;
        let [m, n, k] = self.gemm.unwrap_or([0, 0, 0]).map(|v| v as f64);
        Ok(MessageFeatures {
            bytes,
            log2_bytes: if bytes > 0.0 { bytes.log2() } else { 0.0 },
            elem_bytes: self.dtype.bytes() as f64,
            all_reduce: is(Collective::AllReduce),
            all_gather: is(Collective::AllGather),
            reduce_scatter: is(Collective::ReduceScatter),
            world_size: self.world_size as f64,
            link_nvlink: link(LinkType::Nvlink),
            link_pcie: link(LinkType::Pcie),
            same_device: link(LinkType::SameDevice),
            bus_bytes: bytes * self.collective.bus_factor(self.world_size),
            shard_bytes: bytes / self.world_size as f64,
            gemm_m: m,
            gemm_n: n,
            gemm_k: k,
            gemm_flops: 2.0 * m * n * k,
        })
    }
}

feature_struct! {
    /// Features of one collective call, in schema order (all known).
    MessageFeatures, "message", MESSAGE_SCHEMA_VERSION, {
        bytes: "bytes", Known, "Bytes of one rank's buffer: latency-bound when small, bandwidth-bound when large.";
        log2_bytes: "log2 bytes", Known, "log2 of bytes: the scale on which published cutoffs (256 KiB, 4 MiB) sit.";
        elem_bytes: "bytes", Known, "Bytes per element: vector width of the copy and reduction loops.";
        all_reduce: "flag", Known, "1 for all-reduce.";
        all_gather: "flag", Known, "1 for all-gather.";
        reduce_scatter: "flag", Known, "1 for reduce-scatter.";
        world_size: "GPUs", Known, "Ranks: one-shot reads grow with it, ring steps too.";
        link_nvlink: "flag", Known, "1 when the slowest link between the GPUs is NVLink.";
        link_pcie: "flag", Known, "1 when the slowest link between the GPUs is PCIe.";
        same_device: "flag", Known, "1 when all ranks share one device.";
        bus_bytes: "bytes", Known, "Bytes each rank moves over its links (nccl-tests bus bytes).";
        shard_bytes: "bytes", Known, "bytes / world_size: each rank's shard, what two-shot patterns move per step.";
        gemm_m: "rows", Known, "M of a fused matrix product (0 when not fused).";
        gemm_n: "columns", Known, "N of a fused matrix product (0 when not fused).";
        gemm_k: "elements", Known, "K of a fused matrix product (0 when not fused).";
        gemm_flops: "flop", Known, "2MNK of the fused product: compute that can hide communication.";
    }
}
