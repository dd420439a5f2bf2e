//! The ways to run a tensor-parallel layer's operation ([`TpPattern`]): their names as the CLI
//! and the CSVs write them, and what each needs (peer copies, augur's kernels, pieces).

use super::TpOp;
use crate::KernelError;

/// A way to run an operation (see the `tp` module's docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpPattern {
    /// The GEMM alone, its inputs in place (not a pattern: its time).
    GemmAlone,
    /// The collective alone (not a pattern: its time).
    CommAlone,
    Bulk,
    Chunked(usize),
    /// All-gather only: every GPU pulls its peers' rows with the copy engines (one stream per
    /// peer, `cuMemcpyAsync` between peers), no SMs taken from the GEMM, in C pieces per peer;
    /// the GEMM of a piece starts once it has arrived (own rows first).
    Pull(usize),
    /// All-gather only: the copy engines' all-gather (as `pull:1`), then one GEMM over all rows.
    PullBulk,
    /// All-gather only: as `pull:C`, but every GPU pushes its rows into its peers' buffers
    /// (NVLink writes), each piece followed by an arrival flag the peer's GEMM waits for.
    Push(usize),
    /// All-gather only, producer/consumer: augur's copy kernel (comm.cu's `tp_copy_pieces`) on
    /// `sms` SMs moves the rows in `pieces` pieces per peer, pushed or pulled, while cuBLASLt's
    /// GEMMs, told to leave those SMs free, multiply each piece once its arrival word says it
    /// is there (own rows first).
    Pc {
        pieces: usize,
        sms: usize,
        push: bool,
    },
    /// All-gather only, fused: one launch of augur's TMA GEMM per GPU (gemm_fused.cu's
    /// `gemm_tma_ag_*`) whose first `sms` blocks move the rows between the GPUs (pushed or
    /// pulled, `pieces` pieces per peer, an arrival word after each) while its other blocks
    /// multiply, each tile once the pieces it reads have arrived (own rows first): no global
    /// barrier, no second kernel, no host-side ordering but the call's ready words.
    Fused {
        pieces: usize,
        sms: usize,
        push: bool,
    },
    /// Reduce-scatter only, fused: one launch of augur's TMA GEMM per GPU (gemm_fused.cu's
    /// `gemm_tma_rs_*`) whose tiles are stored by the tensor-memory unit straight into the
    /// staging of the GPU owning their rows, each counted in the owner's words once stored, while
    /// the owner's first `sms` blocks sum every GPU's partial of a tile row as soon as all have
    /// arrived: no partial product of its own, no global barrier, no second kernel. With
    /// `sms` 0 (`fused-reduce:0`, gemm_fused.cu's `gemm_tma_rsa_*`) there is no staging and no
    /// summing block: each half-tile is added into the owner's rows of the sum by a
    /// tensor-memory reduction (the owner zeroes them before its ready word), and a launch ends
    /// once every GPU's tiles of its rows were added. `splits` > 1 (`fused-reduce:0:K`, with
    /// `sms` 0 only): k cut in K ranges, more work units than tiles where M is small; each
    /// range's partial is added in f32 into the owner's f32 sum, which the owner rounds to the
    /// 16-bit type once: at the launch's end where the launch zeroes the sum (one or two GPUs,
    /// see `rs::fused`'s `in_launch`), else in a launch after it.
    FusedReduce {
        sms: usize,
        splits: usize,
    },
    /// All-gather only: augur's own all-gather in bulk (the copy kernel pushing, one block per
    /// SM), then one GEMM over all rows on every SM.
    OwnBulk,
    /// Bulk with augur's LL collective in place of NCCL's (both operations; the `ll` module):
    /// each 4-byte word sent with the call's epoch in one 8-byte store, polled by the receiver,
    /// one launch before (all-gather) or after (reduce-scatter) cuBLASLt's GEMM.
    LlBulk,
    /// All-gather only, producer/consumer with LL stores: comm.cu's LL all-gather in `pieces`
    /// calls of one piece of every GPU's rows each, on `sms` blocks on the communication stream
    /// (an event after each), while cuBLASLt's GEMMs, told to leave those SMs free, multiply
    /// this GPU's rows, then each piece once its call has ended. No arrival words: the LL
    /// stores carry the call's epoch.
    PcLl {
        pieces: usize,
        sms: usize,
    },
    /// Reduce-scatter only, producer/consumer: the GEMMs (targeting all SMs but `sms`) make
    /// every GPU's partial of piece j of every destination's rows, pushed into the
    /// destination's staging with a word in its memory; the destination's reduce kernel
    /// (comm.cu's `tp_reduce_piece_*`, `sms` blocks) sums piece j once every GPU's word says it
    /// is there, while the GEMMs of piece j + 1 run. `sm_push`: the pushes by augur's copy
    /// kernel on the same SMs, before each piece's sum (`pc-reduce-sm:C:S`), not by the copy
    /// engines (`pc-reduce:C:S`).
    PcReduce {
        pieces: usize,
        sms: usize,
        sm_push: bool,
    },
    /// Reduce-scatter only (`push-reduce:C`): each GPU's GEMMs (cuBLASLt, every SM) make its
    /// partials of its peers' rows first, piece by piece (C pieces of each GPU's rows), each
    /// pushed by the copy engines into its owner's staging once made, with a word in the owner's
    /// memory; then its own rows, piece by piece, each GEMM adding the peers' partials of that
    /// piece in its epilogue (cuBLASLt's C with beta 1: on two GPUs the peer's staged partial;
    /// on more, their sum by the reduce kernel, on the communication stream as they arrive).
    /// No SMs taken from the GEMMs, no reduce kernel after them on two GPUs: the transfers hide
    /// behind the GEMMs of later pieces. On more than one GPU only with `AUGUR_TP_UNVERIFIED`
    /// (see [`super::check`]).
    PushReduce(usize),
    /// All-reduce only, fused (`fused-all`): `fused-reduce:0`'s launch (its tiles or swapped
    /// GEMM) with each half-tile added into every GPU's whole sum, not only its rows' owner's,
    /// by tensor-memory reductions: no all-gather after it; every GPU zeroes its whole sum
    /// before its ready word, and a launch ends once every GPU's tiles of every row are there.
    /// `splits`: 0 (`fused-all`) k split by itself (in two at small M, where few SMs would
    /// read a deep B: `rs::fused`'s `all_auto_splits`); K >= 1 (`fused-all:K`) in K ranges, 1
    /// none. Split, each range's partials go in f32 into a plane of its own of every GPU's f32
    /// sum (two sums a GPU, taken in turn, each zeroed by the call two before as it adds the
    /// planes and rounds them into the whole sum at its launch's end).
    FusedAll {
        splits: usize,
    },
}

impl TpPattern {
    pub fn name(self) -> String {
        match self {
            TpPattern::GemmAlone => "gemm".into(),
            TpPattern::CommAlone => "comm".into(),
            TpPattern::Bulk => "bulk".into(),
            TpPattern::Chunked(c) => format!("chunked:{c}"),
            TpPattern::Pull(c) => format!("pull:{c}"),
            TpPattern::PullBulk => "pull-bulk".into(),
            TpPattern::Push(c) => format!("push:{c}"),
            TpPattern::Pc { pieces, sms, push } => {
                format!("pc-{}:{pieces}:{sms}", if push { "push" } else { "pull" })
            }
            TpPattern::Fused { pieces, sms, push } => {
                format!(
                    "fused-{}:{pieces}:{sms}",
                    if push { "push" } else { "pull" }
                )
            }
            TpPattern::FusedReduce { sms, splits } if splits > 1 => {
                format!("fused-reduce:{sms}:{splits}")
            }
            TpPattern::FusedReduce { sms, .. } => format!("fused-reduce:{sms}"),
            TpPattern::OwnBulk => "own-bulk".into(),
            TpPattern::FusedAll { splits: 0 } => "fused-all".into(),
            TpPattern::FusedAll { splits } => format!("fused-all:{splits}"),
            TpPattern::LlBulk => "ll-bulk".into(),
            TpPattern::PcLl { pieces, sms } => format!("pc-ll:{pieces}:{sms}"),
            TpPattern::PcReduce {
                pieces,
                sms,
                sm_push,
            } => format!(
                "pc-reduce{}:{pieces}:{sms}",
                if sm_push { "-sm" } else { "" }
            ),
            TpPattern::PushReduce(c) => format!("push-reduce:{c}"),
        }
    }

    pub fn parse(s: &str) -> Result<TpPattern, KernelError> {
        match s {
            "gemm" => Ok(TpPattern::GemmAlone),
            "comm" => Ok(TpPattern::CommAlone),
            "bulk" => Ok(TpPattern::Bulk),
            "pull-bulk" => Ok(TpPattern::PullBulk),
            "own-bulk" => Ok(TpPattern::OwnBulk),
            "ll-bulk" => Ok(TpPattern::LlBulk),
            "fused-all" => Ok(TpPattern::FusedAll { splits: 0 }),
            _ if s.starts_with("fused-all:") => match s[10..].parse::<usize>() {
                Ok(splits) if splits >= 1 => Ok(TpPattern::FusedAll { splits }),
                _ => Err(KernelError::Invalid(format!(
                    "pattern `{s}`: fused-all (k split where its units leave SMs idle) or \
                     fused-all:K (k split in K >= 1 ranges, 1: none)"
                ))),
            },
            _ if s.starts_with("push-reduce") => {
                match s.strip_prefix("push-reduce:").map(str::parse::<usize>) {
                    Some(Ok(c)) if c >= 1 => Ok(TpPattern::PushReduce(c)),
                    _ => Err(KernelError::Invalid(format!(
                        "pattern `{s}`: push-reduce:C (C >= 1 pieces of each GPU's rows)"
                    ))),
                }
            }
            _ if s.starts_with("fused-reduce:") => {
                let v: Vec<Option<usize>> = s[13..]
                    .split(':')
                    .map(|v| v.parse::<usize>().ok())
                    .collect();
                match v[..] {
                    [Some(sms)] => Ok(TpPattern::FusedReduce { sms, splits: 1 }),
                    [Some(0), Some(splits)] if splits >= 1 => {
                        Ok(TpPattern::FusedReduce { sms: 0, splits })
                    }
                    _ => Err(KernelError::Invalid(format!(
                        "pattern `{s}`: fused-reduce:S (S >= 1 summing blocks, or 0: the tiles \
                         added into their owners' rows, no summing blocks) or fused-reduce:0:K \
                         (k split in K >= 1 ranges, the partials added in f32)"
                    ))),
                }
            }
            _ if s.starts_with("pc-") || s.starts_with("fused-") => {
                let fused = s.starts_with("fused-");
                let tail = if fused { &s[6..] } else { &s[3..] };
                let (kind, rest) = tail.split_once(':').unwrap_or((tail, ""));
                let two: Vec<Option<usize>> = rest
                    .split(':')
                    .map(|v| v.parse::<usize>().ok().filter(|&c| c >= 1))
                    .collect();
                match (kind, &two[..]) {
                    ("push" | "pull", [Some(pieces), Some(sms)]) if fused => Ok(TpPattern::Fused {
                        pieces: *pieces,
                        sms: *sms,
                        push: kind == "push",
                    }),
                    ("push" | "pull", [Some(pieces), Some(sms)]) => Ok(TpPattern::Pc {
                        pieces: *pieces,
                        sms: *sms,
                        push: kind == "push",
                    }),
                    ("ll", [Some(pieces), Some(sms)]) if !fused => Ok(TpPattern::PcLl {
                        pieces: *pieces,
                        sms: *sms,
                    }),
                    ("reduce" | "reduce-sm", [Some(pieces), Some(sms)]) if !fused => {
                        Ok(TpPattern::PcReduce {
                            pieces: *pieces,
                            sms: *sms,
                            sm_push: kind == "reduce-sm",
                        })
                    }
                    _ => Err(KernelError::Invalid(format!(
                        "pattern `{s}`: pc-push:C:S, pc-pull:C:S, pc-ll:C:S, pc-reduce:C:S, \
                         pc-reduce-sm:C:S, fused-push:C:S, fused-pull:C:S (C >= 1 pieces per \
                         GPU, S >= 1 SMs for the copy or reduce kernel, or the fused kernel's \
                         copy blocks) or fused-reduce:S"
                    ))),
                }
            }
            _ => {
                let count = |prefix: &str| match s.strip_prefix(prefix).map(str::parse::<usize>) {
                    Some(Ok(c)) if c >= 1 => Some(c),
                    _ => None,
                };
                match (count("chunked:"), count("pull:"), count("push:")) {
                    (Some(c), _, _) => Ok(TpPattern::Chunked(c)),
                    (_, Some(c), _) => Ok(TpPattern::Pull(c)),
                    (_, _, Some(c)) => Ok(TpPattern::Push(c)),
                    _ => Err(KernelError::Invalid(format!(
                        "pattern `{s}`: one of gemm, comm, bulk, chunked:C, pull:C, push:C (C >= \
                         1 pieces), pull-bulk, pc-push:C:S, pc-pull:C:S, pc-ll:C:S, own-bulk, \
                         ll-bulk, pc-reduce:C:S, push-reduce:C, fused-push:C:S, fused-pull:C:S, \
                         fused-reduce:S, fused-all, fused-all:K"
                    ))),
                }
            }
        }
    }

    /// Whether it moves rows between peers itself (the copy engines' pulls and pushes, and
    /// augur's copy kernel), with peer access and flags in the peers' memory.
    pub fn copies(self) -> bool {
        matches!(
            self,
            TpPattern::Pull(_)
                | TpPattern::PullBulk
                | TpPattern::Push(_)
                | TpPattern::Pc { .. }
                | TpPattern::Fused { .. }
                | TpPattern::OwnBulk
        )
    }

    /// Whether SMs move the rows in 16-byte vectors (augur's copy kernel, or the fused
    /// kernel's copy blocks).
    pub(super) fn sm_copies(self) -> bool {
        self.kernel_copies() || matches!(self, TpPattern::Fused { .. })
    }

    /// Whether it runs augur's copy kernel (and so needs comm.cu's module).
    pub fn kernel_copies(self) -> bool {
        matches!(self, TpPattern::Pc { .. } | TpPattern::OwnBulk)
    }

    /// Whether it is a pattern of `op` (those moving rows between peers themselves are the
    /// all-gather's only, the reduce kernel's the row-parallel operations': the reduce-scatter,
    /// and the all-reduce, which runs any reduce-scatter pattern then NCCL's all-gather).
    pub fn applies(self, op: TpOp) -> bool {
        match self {
            TpPattern::PcReduce { .. }
            | TpPattern::PushReduce(_)
            | TpPattern::FusedReduce { .. } => op.row_parallel(),
            TpPattern::PcLl { .. } => op == TpOp::AllGatherGemm,
            TpPattern::FusedAll { .. } => op == TpOp::GemmAllReduce,
            _ => op == TpOp::AllGatherGemm || !self.copies(),
        }
    }

    /// Whether it computes the output (and so is checked).
    pub(super) fn computes(self) -> bool {
        !matches!(self, TpPattern::CommAlone)
    }

    /// The pieces each GPU's rows are cut in, for the patterns that cut them (1 for those that
    /// move them whole before one GEMM).
    pub fn pieces(self) -> Option<usize> {
        match self {
            TpPattern::Chunked(c)
            | TpPattern::Pull(c)
            | TpPattern::Push(c)
            | TpPattern::PushReduce(c) => Some(c),
            TpPattern::Pc { pieces, .. }
            | TpPattern::PcReduce { pieces, .. }
            | TpPattern::PcLl { pieces, .. }
            | TpPattern::Fused { pieces, .. } => Some(pieces),
            TpPattern::PullBulk | TpPattern::OwnBulk => Some(1),
            _ => None,
        }
    }

    /// The SMs left to augur's copy kernel beside the GEMMs (0: the GEMMs take every SM).
    pub(super) fn kernel_sms(self) -> usize {
        match self {
            TpPattern::Pc { sms, .. }
            | TpPattern::PcReduce { sms, .. }
            | TpPattern::PcLl { sms, .. } => sms,
            _ => 0,
        }
    }
}
