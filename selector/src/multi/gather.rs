//! How y reaches every GPU: the gather modes, and the comm model's choice among them.

use super::MultiOptions;
use crate::AugurError;
use augur_datasets::Csr;
use augur_features::attention::Dtype;
use augur_features::message::{Collective, LinkProbe, LinkType, MessageShape};
use augur_kernels::cuda::comm::Pattern;
use augur_kernels::cuda::{self, DriverLinkProbe};
use augur_models::comm::CommModel;
use serde::Serialize;

/// How the y shards reach every GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GatherMode {
    /// The communication-pattern model's pick for this all-gather (bytes of y, GPUs, link):
    /// one of the modes below; NCCL (all-gather) with chunks > 1.
    #[default]
    Auto,
    /// Padded `ncclAllGather` plus local copies.
    AllGather,
    /// One grouped `ncclBroadcast` per shard (all-gather-v).
    Broadcasts,
    /// augur's LL all-gather (data and flag in one 8-byte store; no barrier).
    Ll,
    /// augur's pull all-gather (each GPU reads the other shards' rows over peer access).
    Pull,
    /// augur's push all-gather (each GPU writes its rows into every other GPU's y).
    Push,
    /// Copy engines (`cuMemcpyAsync` between peers), ordered by stream flag writes and waits,
    /// on the group's own stream joined to the products' stream by events. (While the products
    /// ran on the legacy default stream, this hung in 8 of 16 checks on H200 x2; on their own
    /// non-blocking stream, 0 of 16: `bench/results/comm-h200x2-ll-2026-11-22/ce-hang.csv`.)
    CopyEngine,
}

impl GatherMode {
    pub fn name(self) -> &'static str {
        match self {
            GatherMode::Auto => "auto",
            GatherMode::AllGather => "all-gather",
            GatherMode::Broadcasts => "broadcasts",
            GatherMode::Ll => "ll",
            GatherMode::Pull => "pull",
            GatherMode::Push => "push",
            GatherMode::CopyEngine => "copy-engine",
        }
    }

    /// The comm pattern of an augur mode (None for the NCCL modes and Auto).
    pub fn pattern(self) -> Option<Pattern> {
        match self {
            GatherMode::Ll => Some(Pattern::Ll),
            GatherMode::Pull => Some(Pattern::Pull),
            GatherMode::Push => Some(Pattern::Push),
            GatherMode::CopyEngine => Some(Pattern::CopyEngine),
            _ => None,
        }
    }

    /// The mode of a comm model's all-gather pattern.
    pub fn from_pattern(name: &str) -> Option<GatherMode> {
        match Pattern::parse(name)? {
            Pattern::Nccl => Some(GatherMode::AllGather),
            Pattern::Ll => Some(GatherMode::Ll),
            Pattern::Pull => Some(GatherMode::Pull),
            Pattern::Push => Some(GatherMode::Push),
            Pattern::CopyEngine => Some(GatherMode::CopyEngine),
            Pattern::OneShot | Pattern::TwoShot => None,
        }
    }
}

/// How the gather mode was chosen.
#[derive(Debug, Clone, Serialize)]
pub struct GatherChoice {
    pub mode: GatherMode,
    /// The all-gather as the comm model saw it.
    pub bytes: usize,
    pub gpus: usize,
    /// The model's path: `feature = value </>= threshold` per split (empty when not asked).
    pub path: Vec<String>,
    pub notes: Vec<String>,
}

/// Resolve [`GatherMode::Auto`] with the comm model: the all-gather of y (rows x value bytes)
/// on these GPUs (probes the link and the device, then [`gather_choice`]).
pub(super) fn choose_gather<T>(
    a: &Csr<T>,
    ordinals: &[usize],
    opts: &MultiOptions,
) -> Result<GatherChoice, AugurError> {
    let bytes = a.rows() * std::mem::size_of::<T>();
    let n = ordinals.len();
    if opts.gather != GatherMode::Auto || n < 2 || opts.chunks > 1 {
        // The model is not asked: nothing to probe.
        return Ok(gather_choice(
            None,
            opts.gather,
            bytes,
            n,
            opts.chunks,
            LinkType::Nvlink,
            "",
        ));
    }
    let model = match &opts.comm_model {
        Some(m) => m.clone(),
        None => crate::defaults::comm_model()?,
    };
    let link = DriverLinkProbe
        .group_link(ordinals)
        .map_err(|e| AugurError::Invalid(format!("GPU links: {e}")))?;
    let device = cuda::devices()?
        .get(ordinals[0])
        .map(|d| d.name.clone())
        .unwrap_or_default();
    Ok(gather_choice(
        Some(&model),
        GatherMode::Auto,
        bytes,
        n,
        opts.chunks,
        link,
        &device,
    ))
}

/// How y of `bytes` is exchanged on `n` GPUs of `device` joined by `link` when `mode` is asked
/// for: a mode other than Auto as it is; Auto as the comm model picks it (NCCL's padded
/// all-gather on one GPU, with chunks > 1 or without a model).
pub fn gather_choice(
    model: Option<&CommModel>,
    mode: GatherMode,
    bytes: usize,
    n: usize,
    chunks: usize,
    link: LinkType,
    device: &str,
) -> GatherChoice {
    let mut c = GatherChoice {
        mode,
        bytes,
        gpus: n,
        path: Vec::new(),
        notes: Vec::new(),
    };
    if mode != GatherMode::Auto {
        return c;
    }
    c.mode = GatherMode::AllGather;
    if n < 2 {
        return c;
    }
    if chunks > 1 {
        c.notes
            .push("chunks > 1: NCCL's padded all-gather (augur's patterns take one chunk)".into());
        return c;
    }
    let Some(model) = model else {
        c.notes
            .push("no comm model: NCCL's padded all-gather".into());
        return c;
    };
    // The all-gather moves bytes; the model was trained on f32 and bf16 elements: ask for f32
    // elements of the same bytes.
    let shape = MessageShape {
        collective: Collective::AllGather,
        dtype: Dtype::F32,
        bytes: bytes.next_multiple_of(4),
        world_size: n,
        link,
        gemm: None,
    };
    if device != model.device {
        c.notes.push(format!(
            "the comm model was trained on {}, this is {device}",
            model.device
        ));
    }
    match model.choose(&shape).and_then(GatherMode::from_pattern) {
        Some(m) => {
            c.mode = m;
            c.path = model
                .path(&shape)
                .into_iter()
                .map(|(f, v, t, left)| format!("{f} = {v} {} {t}", if left { "<" } else { ">=" }))
                .collect();
        }
        None => c
            .notes
            .push("the comm model has no all-gather tree: NCCL's padded all-gather".into()),
    }
    c
}
