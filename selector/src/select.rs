//! [`Selector`]: a trained model loaded and checked, and [`Decision`]: the kernel it picks for
//! one input with the path through the trees that led there.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use augur_features::spmv::SpmvFeatures;
use augur_features::FeatureKind;
use augur_models::model::{IterationMode, Tier, MAX_INPUTS};
use augur_models::tree::{Node, Tree};
use augur_models::{Model, ModelFile};
use serde::Serialize;

use crate::AugurError;

/// A trained SpMV selector: a model file or one built into augur.
#[derive(Debug, Clone)]
pub struct Selector {
    model: Model,
    origin: String,
    builtin: bool,
}

/// One split on the way to a leaf: `input = value < threshold` (went left) or `>=` (right).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub input: String,
    pub value: f64,
    pub threshold: f64,
    /// The value was below the threshold.
    pub below: bool,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} = {} {} {}",
            self.input,
            num(self.value),
            if self.below { "<" } else { ">=" },
            num(self.threshold)
        )
    }
}

impl From<(String, f64, f64, bool)> for Step {
    /// From a tree's named path entry: (input, value, threshold, went left).
    fn from((input, value, threshold, below): (String, f64, f64, bool)) -> Step {
        Step {
            input,
            value,
            threshold,
            below,
        }
    }
}

/// A number as a person reads it: integers plain, others with 4 significant digits.
fn num(v: f64) -> String {
    if v.is_nan() {
        "undefined (NaN, read as -1)".into()
    } else if v == v.trunc() && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 1e-3 && v.abs() < 1e6 {
        format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        format!("{v:.3e}")
    }
}

/// The kernel chosen for an input, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The kernel's name (as the backend knows it).
    pub kernel: String,
    /// Chosen by the caller (PlanOptions::kernel), not by the model.
    pub forced: bool,
    /// The iteration count the choice was made for.
    pub iterations: u32,
    /// The feature tier the choice read (its features' cost paid).
    pub tier: Tier,
    /// Shorthand: the gathered tier was read (the exact features).
    pub gathered: bool,
    /// The path through the tier policy (empty when the caller decided).
    pub policy: Vec<Step>,
    /// The tier the policy says pays for its cost here.
    pub policy_tier: Tier,
    /// Which tree chose: `known`, `sampled` or `gathered` selector, and for which iteration count.
    pub tree: String,
    /// The path through that tree.
    pub path: Vec<Step>,
    /// Training samples at the leaf reached, and the mean regret of its kernel on them
    /// (cost(choice) / cost(best) - 1).
    pub leaf_samples: usize,
    pub leaf_mean_regret: f64,
    /// The model that chose.
    pub model: String,
    /// Where the long-row guard overruled the tree (`kernel` is then its fallback).
    pub guard: Option<GuardVeto>,
    /// Anything else a reader should know (another device, a fallback).
    pub notes: Vec<String>,
}

/// The tree's pick the long-row guard overruled ([`augur_models::guard`]), and the figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuardVeto {
    /// The tree's pick.
    pub vetoed: String,
    /// The longest row the tier knew (entries; the exact one when gathered, else a lower bound).
    pub longest_row: f64,
    pub exact: bool,
    /// Seconds the vetoed kernel needs at least for the iterations (its measured floor per
    /// entry of the longest row x that row x iterations).
    pub floor_s: f64,
    /// Seconds the fallback is estimated to take (pessimistically).
    pub fallback_s: f64,
    pub margin: f64,
}

impl Decision {
    /// A decision made by the caller.
    pub fn forced(kernel: &str, iterations: u32) -> Decision {
        Decision {
            kernel: kernel.to_string(),
            forced: true,
            iterations,
            tier: Tier::Known,
            gathered: false,
            policy: Vec::new(),
            policy_tier: Tier::Known,
            tree: String::new(),
            path: Vec::new(),
            leaf_samples: 0,
            leaf_mean_regret: 0.0,
            model: String::new(),
            guard: None,
            notes: vec!["kernel forced by the caller; no model consulted".into()],
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.forced {
            writeln!(f, "kernel {} (forced)", self.kernel)?;
        } else {
            writeln!(
                f,
                "kernel {} for {} iterations, chosen by model {}",
                self.kernel, self.iterations, self.model
            )?;
            let pays = match self.policy_tier {
                Tier::Known => "the known features alone pay best (no sampling, no gathering)",
                Tier::Sampled => "sampling rows pays (not a full gather)",
                Tier::Gathered => "gathering the exact features pays",
            };
            if self.policy.is_empty() {
                writeln!(f, "  features: {pays} (the policy is one leaf)")?;
            } else {
                writeln!(f, "  features: {pays}:")?;
                for s in &self.policy {
                    writeln!(f, "    {s}")?;
                }
            }
            writeln!(f, "  {}:", self.tree)?;
            for s in &self.path {
                writeln!(f, "    {s}")?;
            }
            let leaf_kernel = self.guard.as_ref().map_or(&self.kernel, |g| &g.vetoed);
            writeln!(
                f,
                "    -> {}: {} reached this leaf, mean regret {:.1}%",
                leaf_kernel,
                augur_models::export::counted(self.leaf_samples, "training samples"),
                100.0 * self.leaf_mean_regret
            )?;
            if let Some(g) = &self.guard {
                writeln!(
                    f,
                    "  long-row guard: {} overruled: the longest row ({}{} entries) alone needs at least {} for {} iterations, more than {} x the {} estimated for {} -> {}",
                    g.vetoed,
                    if g.exact { "" } else { "at least " },
                    num(g.longest_row),
                    seconds(g.floor_s),
                    self.iterations,
                    num(g.margin),
                    seconds(g.fallback_s),
                    self.kernel,
                    self.kernel
                )?;
            }
        }
        for n in &self.notes {
            writeln!(f, "  note: {n}")?;
        }
        Ok(())
    }
}

/// The steps `x` takes through `tree` whose inputs are `names`, and the leaf reached.
fn walk(tree: &Tree, names: &[String], x: &[f64]) -> (Vec<Step>, usize, usize, f64) {
    let path = tree.path(x);
    let mut steps = Vec::with_capacity(path.len());
    for w in path.windows(2) {
        if let Node::Split {
            feature,
            threshold,
            left,
            ..
        } = &tree.nodes[w[0]]
        {
            steps.push(Step {
                input: names.get(*feature).cloned().unwrap_or_default(),
                value: x[*feature],
                threshold: *threshold,
                below: w[1] == *left,
            });
        }
    }
    match &tree.nodes[*path.last().expect("a path has a leaf")] {
        Node::Leaf {
            class,
            samples,
            mean_regret,
        } => (steps, *class, *samples, *mean_regret),
        Node::Split { .. } => unreachable!("Tree::path ends at a leaf"),
    }
}

impl Selector {
    /// A validated model; `origin` names it in errors and explanations.
    pub fn from_model(model: Model, origin: impl Into<String>) -> Selector {
        Selector {
            model,
            origin: origin.into(),
            builtin: false,
        }
    }

    /// Read and validate a model file (`augur train` writes them).
    pub fn from_file(path: &Path) -> Result<Selector, AugurError> {
        Ok(Selector::from_model(
            Model::read(path)?,
            path.display().to_string(),
        ))
    }

    /// A selector by name: a built-in SpMV model (`default-cpu`, `default-cuda` (the H100's),
    /// `default-cuda-h100`, `default-cuda-h200`) or the path of a model file.
    pub fn load(arg: &str) -> Result<Arc<Selector>, AugurError> {
        Ok(match arg {
            "default-cpu" | "default-cuda" => Selector::builtin(&arg[8..])?,
            "default-cuda-h100" | "default-cuda-h200" => Arc::new(Selector::from_model(
                crate::defaults::model(&arg[8..])?,
                arg,
            )),
            path => Arc::new(Selector::from_file(Path::new(path))?),
        })
    }

    /// The built-in selector for a backend on a device: on CUDA the model trained on that GPU
    /// (by its name), else the nearest one with a note (returned beside it).
    pub fn builtin_for(
        backend: &str,
        device: &str,
    ) -> Result<(Arc<Selector>, Option<String>), AugurError> {
        if backend != "cuda" {
            return Ok((Selector::builtin(backend)?, None));
        }
        static CUDA: [OnceLock<Arc<Selector>>; 2] = [OnceLock::new(), OnceLock::new()];
        let (i, note) = crate::defaults::cuda_model_index(device);
        let name = format!("cuda-{}", crate::defaults::CUDA_MODELS[i].1.to_lowercase());
        Ok((Selector::builtin_in(&CUDA[i], &name)?, note))
    }

    /// The model built into augur for `backend` (`cpu` or `cuda`), parsed once per process.
    pub fn builtin(backend: &str) -> Result<Arc<Selector>, AugurError> {
        static CPU: OnceLock<Arc<Selector>> = OnceLock::new();
        static CUDA: OnceLock<Arc<Selector>> = OnceLock::new();
        let cell = match backend {
            "cpu" => &CPU,
            "cuda" => &CUDA,
            _ => return Err(crate::defaults::model(backend).unwrap_err().into()),
        };
        Selector::builtin_in(cell, backend)
    }

    /// The built-in model `default-<name>` as a selector, parsed once into `cell`.
    fn builtin_in(
        cell: &'static OnceLock<Arc<Selector>>,
        name: &str,
    ) -> Result<Arc<Selector>, AugurError> {
        if let Some(s) = cell.get() {
            return Ok(s.clone());
        }
        let s = Arc::new(Selector {
            model: crate::defaults::model(name)?,
            origin: format!("default-{name}"),
            builtin: true,
        });
        Ok(cell.get_or_init(|| s).clone())
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// How explanations and errors name the model.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn is_builtin(&self) -> bool {
        self.builtin
    }

    /// Check the model fits a plan on `backend` (`cpu`/`cuda`), `device` (the GPU's name) and
    /// `precision` (`f32`/`f64`). Another backend is an error; another GPU or precision is an
    /// error for a model file unless `allow_other` is set; the built-in models are used on any
    /// device of their backend (there is no other), with a note. Returns the notes.
    pub fn check_for(
        &self,
        backend: &str,
        device: &str,
        precision: &str,
        allow_other: bool,
    ) -> Result<Vec<String>, AugurError> {
        let m = &self.model;
        if m.backend != backend {
            return Err(AugurError::WrongBackend {
                origin: self.origin.clone(),
                model: m.backend.clone(),
                backend: backend.into(),
            });
        }
        // Every kernel the model can pick must be one of the backend's, named with the model's
        // origin (a foreign or damaged model file failed later, at a pick, without its name).
        let unknown: Vec<&str> = m
            .kernels
            .iter()
            .filter(|k| match backend {
                "cpu" => augur_kernels::cpu::CpuKernel::from_name(k).is_err(),
                #[cfg(feature = "hip")]
                "hip" => augur_kernels::hip::HipKernel::from_name(k).is_err(),
                _ => augur_kernels::cuda::GpuKernel::from_name(k).is_err(),
            })
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(AugurError::Invalid(format!(
                "model {}: kernels {} are not kernels of the {backend} backend (a model of \
                 another augur, or damaged): retrain it",
                self.origin,
                unknown.join(", ")
            )));
        }
        let mut notes = Vec::new();
        // The CPU model's device names the thread count it was trained with; only GPUs differ
        // in kind.
        let other_device = backend == "cuda" && m.device != device;
        let other_precision = m.precision != precision;
        if other_device || other_precision {
            let what = format!("{} {}", m.device, m.precision);
            let here = format!("{device} {precision}");
            if !(allow_other || self.builtin) {
                return Err(AugurError::WrongDevice {
                    origin: self.origin.clone(),
                    model: what,
                    here,
                });
            }
            notes.push(format!(
                "model trained for {what}, used on {here}: its choices may be less good here"
            ));
        }
        Ok(notes)
    }

    /// The feature tier the policy says pays for its cost on this input (known features are
    /// read; the others may be NaN) over `iterations` products.
    pub fn tier_for(&self, f: &SpmvFeatures, iterations: u32) -> Tier {
        let mut v = [0.0; MAX_INPUTS];
        f.write_values(&mut v);
        self.model.tier_for(&v, iterations as f64)
    }

    /// Schema-order feature values, checked: one per feature of the model's schema.
    pub fn select_values(&self, values: &[f64], iterations: u32) -> Result<Decision, AugurError> {
        let n = self.model.schema.features.len();
        let f = SpmvFeatures::from_values(values).ok_or_else(|| {
            AugurError::Invalid(format!(
                "{} feature values given, schema `{}` v{} has {n}",
                values.len(),
                self.model.schema.name,
                self.model.schema.version
            ))
        })?;
        Ok(self.select(&f, iterations))
    }

    /// The kernel for an input with features `f` over `iterations` products, and the path that
    /// led there. The selector of the highest tier whose features are all given (not NaN)
    /// decides; the policy's verdict (which tier pays here?) is reported, and a note says when it
    /// asked for a tier whose features were not given.
    pub fn select(&self, f: &SpmvFeatures, iterations: u32) -> Decision {
        let m = &self.model;
        let k = iterations as f64;
        let mut values = [0.0; MAX_INPUTS];
        f.write_values(&mut values);
        let mut pin = [0.0; MAX_INPUTS];
        let n = m.policy_inputs_into(&values, k, &mut pin);
        let (policy, pays, _, _) = walk(&m.policy, &m.policy_inputs, &pin[..n]);
        let policy_tier = Tier::from_class(pays);
        // A tier is given when every feature of its kind that its selector reads is (a
        // selector whose gathered trees read no column statistics needs the row pointers only).
        let given = |kind: FeatureKind| {
            let sel = m.selector(match kind {
                FeatureKind::Gathered => Tier::Gathered,
                FeatureKind::Sampled => Tier::Sampled,
                FeatureKind::Known => Tier::Known,
            });
            let mut read = sel
                .features
                .iter()
                .filter(|&&i| m.schema.features[i].kind == kind)
                .peekable();
            read.peek().is_some() && read.all(|&i| !values[i].is_nan())
        };
        // Features already paid for are used even where the policy would not have computed them
        // (GatherPolicy::Always, Sample).
        let tier = if given(FeatureKind::Gathered) {
            Tier::Gathered
        } else if given(FeatureKind::Sampled) {
            Tier::Sampled
        } else {
            Tier::Known
        };
        let mut notes = Vec::new();
        if policy_tier > tier {
            notes.push(format!(
                "the policy says the {} features pay, but only the {} ones were given: the {} \
                 selector decided",
                policy_tier.name(),
                tier.name(),
                tier.name()
            ));
        }
        let sel = m.selector(tier);
        let mut buf = [0.0; MAX_INPUTS];
        let len = sel.inputs_into(&values, k, &mut buf);
        let (path, class, samples, regret) = walk(sel.tree_for(k), &sel.inputs, &buf[..len]);
        let which = tier.name();
        let tree = match (sel.mode, sel.ktree_for(k).iterations) {
            (IterationMode::PerK, Some(i)) => {
                format!("{which}-feature selector, tree trained for k = {i}")
            }
            (IterationMode::PerK, None) => format!("{which}-feature selector"),
            (IterationMode::Joint, _) => format!("{which}-feature selector (one tree over k)"),
        };
        let guard = m.guard(&values, tier, k, class);
        Decision {
            kernel: m.kernels[guard.map_or(class, |g| g.0)].clone(),
            forced: false,
            iterations,
            tier,
            gathered: tier == Tier::Gathered,
            policy,
            policy_tier,
            tree,
            path,
            leaf_samples: samples,
            leaf_mean_regret: regret,
            model: self.origin.clone(),
            guard: guard.map(|(_, v)| GuardVeto {
                vetoed: m.kernels[v.vetoed].clone(),
                longest_row: v.longest,
                exact: tier == Tier::Gathered,
                floor_s: v.floor_s,
                fallback_s: v.fallback_s,
                margin: m.row_guard.as_ref().map_or(0.0, |g| g.margin),
            }),
            notes,
        }
    }
}

/// Seconds as a person reads them (us below a millisecond).
fn seconds(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} us", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}
