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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
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
    /// Only the halo: each shard receives the x entries its rows read from other shards (NCCL
    /// send/recv, overlapped with the local block's product); x and y stay split by rows.
    /// Square matrices, one chunk per shard.
    Halo,
}

/// [`GatherMode::Auto`] exchanges the halo when the busiest shard's halo is at most this share
/// of what the all-gather brings it, and that all-gather is at least [`HALO_MIN_BYTES`].
/// Measured on H200 x2 and x4 (docs/BENCHMARKS.md, 2026-11-27; 300 iterations, one process):
/// at 1-2% (the 1.1e8 stencil) and ~0% (banded) the halo takes 0.54-0.69x of NCCL's
/// all-gather's time on 2 GPUs and 0.33-0.42x on 4; R-MAT scale 23 with random columns, 37% of
/// the all-gather on 2 GPUs and 29% on 4, still gains 1.16x over the comm model's all-gather
/// pattern on 2 GPUs and 1.39x over NCCL's on 4: the halo moves fewer bytes, and its exchange and
/// remote block run beside the local product. Nothing between 37% and 100% was measured; at 100%
/// (a randomly permuted matrix) the halo moves what the all-gather does plus its own work (11-14
/// us a product on one H100), so the rule stops at one half.
pub const HALO_SHARE: f64 = 0.5;

/// The all-gather bytes per shard below which [`GatherMode::Auto`] keeps it whatever the halo:
/// 4 MiB take ~10 us on NVLink (~400 GB/s a direction), about what the halo's own launches
/// cost (see [`HALO_SHARE`]).
pub const HALO_MIN_BYTES: usize = 4 << 20;

/// Whether [`GatherMode::Auto`] takes the halo, the halo's bytes on the busiest shard, and the
/// note that says why, for shards of the square `a` cut at `bounds` (two or more).
pub(super) fn halo_rule<T: Sync>(
    a: &Csr<T>,
    bounds: &[usize],
    what: &str,
) -> (bool, usize, String) {
    let t = super::partition::traffic_of(a, bounds);
    let busiest = t
        .iter()
        .max_by_key(|s| s.halo_entries)
        .expect("two shards or more");
    let share = busiest.halo_entries as f64 / busiest.allgather_entries.max(1) as f64;
    let size = std::mem::size_of::<T>();
    let gather_bytes = busiest.allgather_entries * size;
    let take = share <= HALO_SHARE && gather_bytes >= HALO_MIN_BYTES;
    let note = format!(
        "{what}the busiest shard ({}) reads {} x entries of other shards; the all-gather brings \
         it {} ({:.1}%, {:.2} MB): the halo is taken at <= {:.0}% of at least {:.1} MB",
        busiest.rank,
        busiest.halo_entries,
        busiest.allgather_entries,
        100.0 * share,
        gather_bytes as f64 / 1e6,
        100.0 * HALO_SHARE,
        HALO_MIN_BYTES as f64 / 1e6
    );
    (take, busiest.halo_entries * size, note)
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
            GatherMode::Halo => "halo",
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
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
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
pub(super) fn choose_gather<T: Sync>(
    a: &Csr<T>,
    ordinals: &[usize],
    opts: &MultiOptions,
    bounds: &[usize],
) -> Result<GatherChoice, AugurError> {
    let bytes = a.rows() * std::mem::size_of::<T>();
    let n = ordinals.len();
    let mut halo_note = None;
    if opts.gather == GatherMode::Auto && n >= 2 && opts.chunks == 1 && a.rows() == a.cols() {
        let (take, halo_bytes, note) = halo_rule(a, bounds, "halo: ");
        if take {
            return Ok(GatherChoice {
                mode: GatherMode::Halo,
                bytes: halo_bytes,
                gpus: n,
                path: Vec::new(),
                notes: vec![note],
            });
        }
        halo_note = Some(note);
    }
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
    let mut c = gather_choice(
        Some(&model),
        GatherMode::Auto,
        bytes,
        n,
        opts.chunks,
        link,
        &device,
    );
    c.notes.extend(halo_note);
    Ok(c)
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

#[cfg(test)]
mod tests {
    use super::*;
    use augur_datasets::generate::Generator;

    fn gen(spec: &str) -> Csr<f64> {
        Generator::parse(spec).unwrap().generate().unwrap()
    }

    /// Auto takes the halo for a stencil (a few planes per shard) before asking the comm model
    /// (nothing probed: no GPU needed), names the numbers, and leaves asked-for modes alone.
    #[test]
    fn auto_takes_the_halo_when_it_is_a_small_share_of_the_all_gather() {
        // 1.7e6 rows: each shard's all-gather brings it 1.3e6 x 8 bytes (> HALO_MIN_BYTES).
        let a = gen("stencil3d:nx=120,points=7");
        let bounds = super::super::partition_rows(&a, 4);
        let c = choose_gather(&a, &[0, 1, 2, 3], &MultiOptions::default(), &bounds).unwrap();
        assert_eq!(c.mode, GatherMode::Halo);
        let t = super::super::shard_traffic(&a, 4).unwrap();
        let busiest = t.iter().map(|s| s.halo_entries).max().unwrap();
        assert_eq!(c.bytes, busiest * 8);
        assert!(
            c.notes[0].contains(&format!("reads {busiest} x entries")),
            "{:?}",
            c.notes
        );
        // The same structure, small: the all-gather is too cheap for the halo's launches (the
        // rule alone: keeping the all-gather asks the comm model, which probes the GPUs).
        let small = gen("stencil3d:nx=24,points=27");
        let b = super::super::partition_rows(&small, 4);
        let (take, _, note) = halo_rule(&small, &b, "");
        assert!(!take, "{note}");
        assert!(note.contains("at least 4.2 MB"), "{note}");
        // R-MAT with random columns on 2 shards: the halo is a third of the all-gather (4.2 MB
        // of f64), which the halo still wins on two H200 (R-MAT scale 23 at 37%: 1.16x).
        let rmat = gen("rmat:scale=20,ef=8,seed=1");
        let b = super::super::partition_rows(&rmat, 2);
        let (take, _, note) = halo_rule(&rmat, &b, "");
        assert!(take, "{note}");
        assert!(note.contains("(33.") && note.contains("<= 50%"), "{note}");
        // Asked for: as asked, no analysis.
        let opts = MultiOptions::default().gather(GatherMode::Pull);
        let c = choose_gather(&a, &[0, 1, 2, 3], &opts, &bounds).unwrap();
        assert_eq!(c.mode, GatherMode::Pull);
        assert!(c.notes.is_empty());
        // One GPU: nothing to exchange.
        let one = super::super::partition_rows(&a, 1);
        let c = choose_gather(&a, &[0], &MultiOptions::default(), &one).unwrap();
        assert_eq!(c.mode, GatherMode::AllGather);
    }
}
