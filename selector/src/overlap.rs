//! The GEMM + collective of a tensor-parallel layer through the library (issue 24):
//! [`choose_pattern`] asks a trained overlap model (by default the built-in one, H200 groups of
//! 2 and 4 GPUs) how to run a layer's all-gather + GEMM or GEMM + reduce-scatter on a group of
//! GPUs, and says why (the tree's path). Pure: no GPU needed.
//!
//! ```
//! use augur::features::overlap::OverlapShape;
//! let shape = OverlapShape::parse("overlap:op=all-gather,m=16384,n=10240,k=8192,world=4")?;
//! let model = augur::defaults::overlap_model()?;
//! let choice = augur::overlap::choose_pattern(&model, &shape, "NVIDIA H200")?;
//! println!("{} because {:?}", choice.pattern.name(), choice.path);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`gemm_kernel`] says which of augur's TMA GEMM kernels a product of one GPU runs on (the
//! one `augur_tma_auto` picks: tile, split of k, operands swapped at small M) and why. Pure too.
//!
//! ```
//! use augur::kernels::gemm::GemmShape;
//! let pick = augur::overlap::gemm_kernel(GemmShape { m: 2048, n: 1536, k: 4096 }, 132);
//! println!("{} because {:?}", pick.kernel.name(), pick.why);
//! ```
//!
//! [`LayerPlan`] runs the chosen pattern of an all-gather + GEMM or a GEMM + reduce-scatter on
//! the caller's device buffers: planned once for a layer and a group of GPUs (one thread per
//! GPU holding its context, communicator, GEMM plans and flags for the plan's life), then
//! [`LayerPlan::run`] per call. [`LayerPlan::measured`] then times the plan's pattern against
//! bulk (NCCL and cuBLASLt) on the plan's GPUs and buffers and keeps the faster: a plan that
//! never runs a layer slower than the framework's default does, for the cost of a few dozen
//! calls at plan time. `augur overlap tp` runs, checks and times every
//! pattern on buffers of its own (`augur_kernels::cuda::gemm::tp`).

use augur_features::overlap::OverlapShape;
use augur_kernels::cuda::gemm::tp::TpPattern;
use augur_models::overlap::OverlapModel;

use crate::AugurError;

/// The TMA GEMM kernel `augur_tma_auto` picks for one GPU's product C = A Bᵀ (A M x K, B N x
/// K) on a GPU of `sms` multiprocessors, its estimated time and why (the rule that took it and
/// the estimates it weighed), without a GPU.
pub fn gemm_kernel(
    shape: augur_kernels::gemm::GemmShape,
    sms: usize,
) -> augur_kernels::cuda::gemm::TmaPick {
    augur_kernels::cuda::gemm::tma_auto_explained(shape, sms)
}

/// A pattern chosen for a layer, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternChoice {
    pub pattern: TpPattern,
    /// The tree's splits on the way (`feature = value < threshold`).
    pub path: Vec<String>,
    /// Anything worth saying (a model for another GPU or group size, a pick this build does not
    /// know).
    pub notes: Vec<String>,
    /// How sure: the model's training layers that reach the pick's leaf, and the pick's mean
    /// regret on them (its time over their fastest pattern's, less 1). None for a pattern given,
    /// not chosen, or a leaf without that record.
    pub evidence: Option<(usize, f64)>,
}

/// The pattern `model` picks for `shape`, with its path; `device` is the GPUs' name (a model
/// trained on another GPU, or on other group sizes, is noted). A pick this build cannot run
/// for the shape's operation falls back to `bulk`, noted.
pub fn choose_pattern(
    model: &OverlapModel,
    shape: &OverlapShape,
    device: &str,
) -> Result<PatternChoice, AugurError> {
    shape.validate()?;
    let mut notes = Vec::new();
    if !device.is_empty() && device != model.device {
        notes.push(format!(
            "the overlap model was trained on {}, this is {device}",
            model.device
        ));
    }
    if !model.training.world_sizes.contains(&shape.world_size) {
        notes.push(format!(
            "the overlap model was trained on groups of {:?} GPUs, this one has {}",
            model.training.world_sizes, shape.world_size
        ));
    } else if let Some(w) = model
        .tree_for(shape.op, shape.world_size)
        .and_then(|t| t.world_size)
        .filter(|&w| w != shape.world_size)
    {
        // The model has this GPU count, but not for this operation (the all-reduce's tree of
        // two GPUs, say, picking for four).
        notes.push(format!(
            "the overlap model's {} tree was trained on groups of {w} GPUs, this one has {}",
            shape.op.name(),
            shape.world_size
        ));
    }
    let name = model.choose(shape).ok_or_else(|| {
        AugurError::Invalid(format!(
            "the overlap model has no tree for {} (trained on {})",
            shape.op.name(),
            model
                .trees
                .iter()
                .map(|t| t.op.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let gemm = augur_kernels::gemm::GemmShape {
        m: shape.m,
        n: shape.n,
        k: shape.k,
    };
    let mut evidence = model.leaf_evidence(shape);
    let pattern = match TpPattern::parse(name) {
        Ok(p) if p.applies(shape.op) => {
            // A pick the layer's cut or GPU count does not allow (a chunked one needs rows that
            // split in its pieces, `fused-all` one or two GPUs): bulk, noted.
            match augur_kernels::cuda::gemm::tp::check(shape.op, gemm, shape.world_size, &[p]) {
                Ok(_) => p,
                Err(e) => {
                    notes.push(format!(
                        "the model picked `{name}`, which cannot run here ({e}): bulk instead"
                    ));
                    evidence = None;
                    TpPattern::Bulk
                }
            }
        }
        _ => {
            notes.push(format!(
                "the model picked `{name}`, which this augur cannot run for {}: bulk instead",
                shape.op.name()
            ));
            evidence = None;
            TpPattern::Bulk
        }
    };
    let path = model
        .path(shape)
        .into_iter()
        .map(|step| crate::Step::from(step).to_string())
        .collect();
    Ok(PatternChoice {
        pattern,
        path,
        notes,
        evidence,
    })
}

/// A tensor-parallel layer planned on a group of GPUs and the caller's buffers, with the
/// pattern the overlap model chose for it (see the module docs).
#[derive(Debug)]
pub struct LayerPlan {
    choice: PatternChoice,
    plan: augur_kernels::cuda::gemm::tp::plan::TpPlan,
    measured: Option<Measured>,
}

/// What [`LayerPlan::measured`] timed at plan time (seconds per call, the slowest GPU's
/// median, as [`TpPlan::time`](augur_kernels::cuda::gemm::tp::plan::TpPlan::time) measures).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// The model's pick (or the pattern given).
    pub picked: TpPattern,
    pub picked_s: f64,
    /// Bulk: NCCL's collective then (or after) cuBLASLt's GEMM.
    pub bulk_s: f64,
}

impl Measured {
    /// Whether the plan keeps the pick: measured no slower than bulk (a tie keeps the pick,
    /// which the model found faster on its runs, or the caller named).
    pub fn keeps_pick(&self) -> bool {
        self.picked_s <= self.bulk_s
    }

    /// The pattern the plan runs.
    pub fn kept(&self) -> TpPattern {
        if self.keeps_pick() {
            self.picked
        } else {
            TpPattern::Bulk
        }
    }

    /// The note a measured plan's choice carries.
    fn note(&self) -> String {
        format!(
            "measured at plan time: `{}` {:.1} us, bulk {:.1} us per call: {} kept",
            self.picked.name(),
            self.picked_s * 1e6,
            self.bulk_s * 1e6,
            if self.keeps_pick() {
                format!("`{}`", self.picked.name())
            } else {
                "bulk".into()
            }
        )
    }
}

impl LayerPlan {
    /// Choose the pattern for `op` on layer `shape` (A M x K, B N x K, C = A Bᵀ; the
    /// all-gather cuts A and B by rows, the reduce-scatter both along K) on the GPUs
    /// `ordinals` (the link between them asked of the driver), or take `pattern` when given
    /// (noted), and plan it on `buffers[rank]` for GPU `ordinals[rank]`.
    ///
    /// # Safety
    /// As [`TpPlan::new`](augur_kernels::cuda::gemm::tp::plan::TpPlan::new):
    /// each buffer a live cuMemAlloc or cudaMalloc allocation of its GPU's primary context, of
    /// the sizes [`TpBuffers`](augur_kernels::cuda::gemm::tp::plan::TpBuffers) gives for `op`,
    /// live and written by nothing else during a call until the plan is dropped.
    pub unsafe fn new(
        model: &OverlapModel,
        op: augur_features::overlap::OverlapOp,
        ordinals: &[usize],
        shape: augur_kernels::gemm::GemmShape,
        dtype: augur_features::attention::Dtype,
        pattern: Option<TpPattern>,
        buffers: &[augur_kernels::cuda::gemm::tp::plan::TpBuffers],
    ) -> Result<LayerPlan, AugurError> {
        use augur_features::message::LinkProbe;
        use augur_kernels::cuda::gemm::tp::plan::TpPlan;
        let dev =
            augur_kernels::cuda::device_info(*ordinals.first().ok_or_else(|| {
                AugurError::Invalid("a layer plan needs at least one GPU".into())
            })?)?;
        let link = augur_kernels::cuda::DriverLinkProbe.group_link(ordinals)?;
        let layer = OverlapShape {
            op,
            m: shape.m,
            n: shape.n,
            k: shape.k,
            dtype,
            world_size: ordinals.len(),
            link,
            sms: dev.multiprocessors.max(1) as usize,
        };
        let choice = match pattern {
            Some(p) => PatternChoice {
                pattern: p,
                path: Vec::new(),
                notes: vec![format!("pattern {} given, not chosen", p.name())],
                evidence: None,
            },
            None => choose_pattern(model, &layer, &dev.name)?,
        };
        // SAFETY: the caller's buffers, as this function's contract says.
        let plan = unsafe { TpPlan::new(op, ordinals, shape, dtype, choice.pattern, buffers) }?;
        Ok(LayerPlan {
            choice,
            plan,
            measured: None,
        })
    }

    /// This plan, measured: unless its pattern is bulk (chosen, given, or fallen back to), it
    /// and bulk (a second plan on the same GPUs and buffers) are each timed as `timing` says
    /// (warm-up calls first; each call writes the layer's outputs), and the plan keeps the
    /// faster ([`Measured::keeps_pick`]), its choice noting both times. A plan-time cost of
    /// (warm-up + samples x batch) calls of each and bulk's set-up. Where bulk cannot be
    /// planned or timed, the pattern stays, noted; an error timing the pattern itself is the
    /// call's. The buffers' contents are overwritten by the timed calls.
    pub fn measured(
        self,
        timing: augur_kernels::cuda::gemm::tp::TpTiming,
    ) -> Result<LayerPlan, AugurError> {
        let mut plan = self;
        if plan.choice.pattern == TpPattern::Bulk {
            plan.choice
                .notes
                .push("not measured: the pattern is bulk".into());
            return Ok(plan);
        }
        let picked_s = plan.plan.time(timing)?;
        // SAFETY: the buffers `LayerPlan::new`'s caller promised live until this plan is
        // dropped; the bulk plan replaces the pattern's (dropped then) or is dropped here, and
        // the two never run at once.
        let bulk = unsafe { plan.plan.with_pattern(TpPattern::Bulk) }
            .and_then(|b| b.time(timing).map(|t| (b, t)));
        let (bulk, bulk_s) = match bulk {
            Ok(b) => b,
            Err(e) => {
                // The pick planned and ran: it stays, unmeasured against bulk.
                plan.choice.notes.push(format!(
                    "not measured: bulk could not be planned or timed ({e})"
                ));
                return Ok(plan);
            }
        };
        let m = Measured {
            picked: plan.choice.pattern,
            picked_s,
            bulk_s,
        };
        if !m.keeps_pick() {
            plan.plan = bulk;
            plan.choice.pattern = TpPattern::Bulk;
            // The leaf's record was the pick's.
            plan.choice.evidence = None;
        }
        plan.choice.notes.push(m.note());
        plan.measured = Some(m);
        Ok(plan)
    }

    /// What [`LayerPlan::measured`] timed (None for a plan made by [`LayerPlan::new`], or one
    /// whose model picked bulk).
    pub fn measurement(&self) -> Option<Measured> {
        self.measured
    }

    /// Run the layer `calls` times on every GPU; returns once all have finished.
    pub fn run(&self, calls: usize) -> Result<(), AugurError> {
        Ok(self.plan.run(calls)?)
    }

    /// The pattern, and why.
    pub fn choice(&self) -> &PatternChoice {
        &self.choice
    }

    /// The plan underneath (its timing, shape and GPUs).
    pub fn plan(&self) -> &augur_kernels::cuda::gemm::tp::plan::TpPlan {
        &self.plan
    }
}

impl AsRef<augur_kernels::cuda::gemm::tp::plan::TpPlan> for LayerPlan {
    fn as_ref(&self) -> &augur_kernels::cuda::gemm::tp::plan::TpPlan {
        &self.plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_plan_keeps_the_faster_and_says_so() {
        let m = |picked_s: f64, bulk_s: f64| Measured {
            picked: TpPattern::FusedReduce { sms: 0, splits: 1 },
            picked_s,
            bulk_s,
        };
        let slower = m(110e-6, 100e-6);
        assert!(!slower.keeps_pick());
        assert_eq!(slower.kept(), TpPattern::Bulk);
        assert_eq!(
            slower.note(),
            "measured at plan time: `fused-reduce:0` 110.0 us, bulk 100.0 us per call: bulk kept"
        );
        let faster = m(80e-6, 100e-6);
        assert!(faster.keeps_pick());
        assert_eq!(faster.kept(), faster.picked);
        assert!(
            faster.note().ends_with("`fused-reduce:0` kept"),
            "{}",
            faster.note()
        );
        // A tie keeps the model's pick.
        assert!(m(100e-6, 100e-6).keeps_pick());
    }

    #[test]
    fn the_built_in_model_picks_by_shape_and_says_why() {
        let model = crate::defaults::overlap_model().unwrap();
        let shape = |spec: &str| OverlapShape::parse(spec).unwrap();
        // Large all-gather on 4 GPUs: an overlapping pattern; a 16-token one: no overlap
        // pattern that cuts the work (bulk, own-bulk or ll-bulk: the transfer whole, then the
        // GEMM).
        let big = shape("overlap:op=all-gather,m=16384,n=10240,k=8192,world=4");
        let c = choose_pattern(&model, &big, "NVIDIA H200").unwrap();
        assert!(
            matches!(
                c.pattern,
                TpPattern::Pc { .. } | TpPattern::Push(_) | TpPattern::Pull(_)
            ),
            "{c:?}"
        );
        assert!(!c.path.is_empty() && c.notes.is_empty(), "{c:?}");
        // How sure: the training layers at its leaf, the pick's mean regret there.
        assert!(
            c.evidence
                .is_some_and(|(n, r)| n > 0 && (0.0..0.5).contains(&r)),
            "{c:?}"
        );
        let small = shape("overlap:op=all-gather,m=16,n=6144,k=4096,world=4");
        let c = choose_pattern(&model, &small, "NVIDIA H200").unwrap();
        assert!(
            matches!(
                c.pattern,
                TpPattern::Bulk | TpPattern::OwnBulk | TpPattern::LlBulk
            ),
            "{c:?}"
        );
        // The reduce-scatter's pick is one of its own patterns.
        let rs = shape("overlap:op=reduce-scatter,m=16384,n=8192,k=8192,world=4");
        let c = choose_pattern(&model, &rs, "NVIDIA H100 80GB HBM3").unwrap();
        assert!(c.pattern.applies(rs.op), "{c:?}");
        assert!(
            c.notes.iter().any(|n| n.contains("trained on NVIDIA H200")),
            "{c:?}"
        );
        // Another group size is noted; a layer that does not cut is refused, naming why.
        let eight = shape("overlap:op=all-gather,m=8192,n=6144,k=4096,world=8");
        let c = choose_pattern(&model, &eight, "").unwrap();
        assert!(
            c.notes.iter().any(|n| n.contains("groups of [2, 4]")),
            "{c:?}"
        );
        // The all-reduce: trees of two GPUs only; picking for four says so.
        let ar = shape("overlap:op=all-reduce,m=4096,n=8192,k=8192,world=2");
        let c = choose_pattern(&model, &ar, "NVIDIA H200").unwrap();
        assert!(c.pattern.applies(ar.op) && c.notes.is_empty(), "{c:?}");
        let ar4 = OverlapShape {
            world_size: 4,
            ..ar
        };
        let c = choose_pattern(&model, &ar4, "NVIDIA H200").unwrap();
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("gemm+all-reduce tree was trained on groups of 2 GPUs")),
            "{c:?}"
        );
        // Its pick there, `fused-all`, is refused on four GPUs (unverified): bulk, noted.
        if std::env::var_os("AUGUR_TP_UNVERIFIED").is_none() {
            assert_eq!(c.pattern, TpPattern::Bulk, "{c:?}");
            // The leaf's record is the refused pick's, not bulk's.
            assert_eq!(c.evidence, None, "{c:?}");
            assert!(
                c.notes
                    .iter()
                    .any(|n| n.contains("picked `fused-all`, which cannot run here")),
                "{c:?}"
            );
        }
        let odd = OverlapShape { m: 8190, ..big };
        let e = choose_pattern(&model, &odd, "").unwrap_err().to_string();
        assert!(e.contains("8190"), "{e}");
    }
}
