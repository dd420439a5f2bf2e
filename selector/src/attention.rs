//! Decode attention through the library: [`choose_schedule`] asks a trained attention model
//! (by default the built-in one) for a shape's schedule and says why (the tree's path);
//! [`AttentionPlan`] does that once for a shape, then uploads batches of that shape and runs
//! the chosen schedule on one GPU as often as needed.
//!
//! ```no_run
//! use augur::attention::{AttentionOptions, AttentionPlan};
//! use augur::features::attention::AttentionShape;
//! use augur::kernels::attention::DecodeBatch;
//! let shape = AttentionShape::parse("attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=4096*8")?;
//! let plan = AttentionPlan::new(&shape, AttentionOptions::default())?;
//! println!("{} because {:?}", plan.choice().schedule.name(), plan.choice().path);
//! let mut d = plan.upload(&DecodeBatch::random(&shape, 1)?)?;
//! plan.run(&mut d)?;
//! let o = plan.output(&d)?; // [batch][q_heads][head_dim]
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;

use augur_features::attention::AttentionShape;
use augur_kernels::attention::DecodeBatch;
use augur_kernels::cuda::attention::{CudaAttention, DeviceBatch, Prepared, Schedule};
use augur_models::attention::AttentionModel;

use crate::AugurError;

/// What an [`AttentionPlan`] is built with.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct AttentionOptions {
    /// GPU ordinal.
    pub device: usize,
    /// The schedule model (None: the built-in one, `augur::defaults::attention_model`).
    pub model: Option<Arc<AttentionModel>>,
    /// A schedule to run instead of the model's pick.
    pub schedule: Option<Schedule>,
}

/// Builder-style setters (the struct is `#[non_exhaustive]`: start from the default and set
/// what differs, so new options do not break callers).
impl AttentionOptions {
    /// Sets [`AttentionOptions::device`].
    pub fn device(mut self, v: usize) -> Self {
        self.device = v;
        self
    }

    /// Sets [`AttentionOptions::model`].
    pub fn model(mut self, v: Arc<AttentionModel>) -> Self {
        self.model = Some(v);
        self
    }

    /// Sets [`AttentionOptions::schedule`].
    pub fn schedule(mut self, v: Schedule) -> Self {
        self.schedule = Some(v);
        self
    }
}

/// A schedule chosen for a shape, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleChoice {
    pub schedule: Schedule,
    /// The tree's splits on the way (`feature = value < threshold`), empty when forced.
    pub path: Vec<String>,
    /// Anything worth saying (a forced schedule, a model for another GPU, a pick this build
    /// does not know).
    pub notes: Vec<String>,
    /// How sure: the model's training shapes that reach the pick's leaf, and the pick's mean
    /// regret on them (its time over their fastest schedule's, less 1). None for a schedule
    /// forced, a pick replaced, or a leaf without that record.
    pub evidence: Option<(usize, f64)>,
}

/// The schedule for `shape`: `forced` as it is, else `model`'s pick with its path; `device` is
/// the GPU's name (a model trained on another GPU is noted). Pure: no GPU needed.
pub fn choose_schedule(
    model: &AttentionModel,
    shape: &AttentionShape,
    forced: Option<Schedule>,
    device: &str,
) -> Result<ScheduleChoice, AugurError> {
    shape.validate()?;
    if let Some(s) = forced {
        return Ok(ScheduleChoice {
            schedule: s,
            path: Vec::new(),
            notes: vec!["schedule forced by the caller".into()],
            evidence: None,
        });
    }
    let mut notes = Vec::new();
    if !device.is_empty() && device != model.device {
        notes.push(format!(
            "the attention model was trained on {}, this is {device}",
            model.device
        ));
    }
    let name = model
        .choose(shape)
        .ok_or_else(|| AugurError::Invalid(format!("no features for {shape:?}")))?;
    let mut evidence = model.leaf_evidence(shape);
    let schedule = match Schedule::parse(name) {
        Some(s) => s,
        None => {
            notes.push(format!(
                "the model picked `{name}`, which this augur does not have: gqa instead"
            ));
            evidence = None;
            Schedule::Gqa
        }
    };
    let path = model
        .path(shape)
        .into_iter()
        .map(|step| crate::Step::from(step).to_string())
        .collect();
    Ok(ScheduleChoice {
        schedule,
        path,
        notes,
        evidence,
    })
}

/// A decode-attention shape planned once on one GPU: its schedule chosen (and explained), the
/// kernels loaded; batches of this shape are uploaded and run as often as needed.
pub struct AttentionPlan {
    shape: AttentionShape,
    choice: ScheduleChoice,
    gpu: CudaAttention,
}

impl AttentionPlan {
    pub fn new(
        shape: &AttentionShape,
        opts: AttentionOptions,
    ) -> Result<AttentionPlan, AugurError> {
        let model = match opts.model {
            Some(m) => m,
            None => crate::defaults::attention_model()?,
        };
        let gpu = CudaAttention::new(opts.device)?;
        let device = augur_kernels::cuda::device_info(opts.device)?.name;
        let choice = choose_schedule(&model, shape, opts.schedule, &device)?;
        Ok(AttentionPlan {
            shape: shape.clone(),
            choice,
            gpu,
        })
    }

    pub fn choice(&self) -> &ScheduleChoice {
        &self.choice
    }

    pub fn shape(&self) -> &AttentionShape {
        &self.shape
    }

    /// Upload a batch of this plan's shape (its lengths, heads, dims, dtype and layout).
    pub fn upload(&self, batch: &DecodeBatch) -> Result<DeviceBatch, AugurError> {
        if batch.shape != self.shape {
            return Err(AugurError::Invalid(
                "the batch's shape is not the plan's: plan each shape (lengths included)".into(),
            ));
        }
        Ok(self.gpu.upload(batch)?)
    }

    /// The chosen schedule's kernels and workspace for `d`, for repeated [`Self::launch`]es.
    pub fn prepare(&self, d: &DeviceBatch) -> Result<Prepared, AugurError> {
        Ok(self.gpu.prepare(d, self.choice.schedule)?)
    }

    /// Enqueue one decode step (no wait).
    pub fn launch(&self, d: &mut DeviceBatch, p: &mut Prepared) -> Result<(), AugurError> {
        Ok(self.gpu.launch(d, p)?)
    }

    /// Prepare, launch and wait.
    pub fn run(&self, d: &mut DeviceBatch) -> Result<(), AugurError> {
        Ok(self.gpu.run(d, self.choice.schedule)?)
    }

    /// o as `[batch][q_heads][head_dim]`.
    pub fn output(&self, d: &DeviceBatch) -> Result<Vec<f32>, AugurError> {
        Ok(self.gpu.output(d)?)
    }
}
