//! A matrix's features, and trained models of any domain: loaded, explained, exported.

use super::*;

pub(crate) fn feature_dict<'py>(py: Python<'py>, f: &SpmvFeatures) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let schema = SpmvFeatures::schema();
    for (n, v) in schema.names().zip(f.values()) {
        if !v.is_nan() {
            d.set_item(n, v)?;
        }
    }
    Ok(d)
}

/// Every SpMV feature of a CSR pattern (known, sampled and exact), computed on the host.
#[pyfunction]
pub(crate) fn features<'py>(
    py: Python<'py>,
    indptr: &Bound<'py, PyAny>,
    indices: &Bound<'py, PyAny>,
    shape: (usize, usize),
) -> PyResult<Bound<'py, PyDict>> {
    let name = format!("the {} x {} matrix", shape.0, shape.1);
    let (p, i) = (index(indptr, "indptr")?, index(indices, "indices")?);
    let build = |n: usize| vec![1.0f32; n];
    let a = match (&p, &i) {
        (Index::I32(p), Index::I32(i)) => {
            let (p, i) = (contiguous(p, "indptr")?, contiguous(i, "indices")?);
            augur::datasets::csr_from_arrays(&name, shape, p, i, &build(i.len()))
        }
        (Index::I64(p), Index::I64(i)) => {
            let (p, i) = (contiguous(p, "indptr")?, contiguous(i, "indices")?);
            augur::datasets::csr_from_arrays(&name, shape, p, i, &build(i.len()))
        }
        _ => {
            return Err(value_err(
                "indptr and indices must have the same dtype (both int32 or both int64)",
            ))
        }
    }
    .map_err(|e| py_err(e.into()))?
    .0;
    let f = CpuGatherer
        .gather(CsrPattern::of(&a))
        .map_err(|e| py_err(e.into()))?;
    feature_dict(py, &f)
}

/// A trained model of any domain (SpMV, collectives, attention).
#[pyclass(frozen, module = "augur._augur")]
pub struct Model {
    model: AnyModel,
    origin: String,
}

#[pymethods]
impl Model {
    /// A model file, or a built-in model by name: "default-cpu", "default-cuda",
    /// "default-cuda-h100", "default-cuda-h200", "default-comm", "default-attention",
    /// "default-overlap".
    #[staticmethod]
    fn load(name_or_path: &str) -> PyResult<Model> {
        let model = augur::defaults::load_any(name_or_path).map_err(|e| py_err(e.into()))?;
        Ok(Model {
            model,
            origin: name_or_path.to_string(),
        })
    }

    /// "spmv", "comm", "attention" or "overlap".
    #[getter]
    fn domain(&self) -> &'static str {
        self.model.domain()
    }

    /// The device the model was trained on.
    #[getter]
    fn device(&self) -> String {
        match &self.model {
            AnyModel::Spmv(m) => m.device.clone(),
            AnyModel::Comm(m) => m.device.clone(),
            AnyModel::Attention(m) => m.device.clone(),
            AnyModel::Overlap(m) => m.device.clone(),
        }
    }

    /// The model as "text", "dot" (Graphviz), "rust" or "json".
    fn export(&self, format: &str) -> PyResult<String> {
        let f: ExportFormat = format
            .parse()
            .map_err(|e: augur::models::ModelError| value_err(e.to_string()))?;
        Ok(self.model.export(f))
    }

    /// An SpMV model's choice for a matrix with these features (a dict as `augur.features`
    /// returns; features left out count as not computed) over `iterations` products.
    #[pyo3(signature = (features, iterations=1))]
    fn select(&self, features: &Bound<'_, PyDict>, iterations: u32) -> PyResult<PyDecision> {
        let AnyModel::Spmv(m) = &self.model else {
            return Err(value_err(format!(
                "{} is a {} model; select() is for SpMV models",
                self.origin,
                self.domain()
            )));
        };
        let schema = SpmvFeatures::schema();
        let mut values = vec![f64::NAN; schema.features.len()];
        for (k, v) in features.iter() {
            let k: String = k.extract()?;
            let i = schema.names().position(|n| n == k).ok_or_else(|| {
                value_err(format!(
                    "unknown feature `{k}`; the schema has: {}",
                    schema.names().collect::<Vec<_>>().join(", ")
                ))
            })?;
            values[i] = v
                .extract::<f64>()
                .map_err(|_| value_err(format!("feature `{k}` is not a number")))?;
        }
        let s = Arc::new(Selector::from_model((**m).clone(), self.origin.clone()));
        let d = s
            .select_values(&values, iterations.max(1))
            .map_err(py_err)?;
        Ok(PyDecision::of(&d))
    }

    /// A collectives, attention or overlap model's choice for a shape given as augur's spec
    /// string (`message:collective=all-reduce,dtype=bf16,bytes=64KiB,world=4,link=nvlink`,
    /// `attention:q_heads=32,kv_heads=8,head_dim=128,lens=4096*2;16*30`, or
    /// `overlap:op=all-gather,m=8192,n=6144,k=4096,world=4`): (the pattern or schedule, the
    /// path through the tree, notes). No GPU needed.
    fn choose(&self, spec: &str) -> PyResult<(String, Vec<String>, Vec<String>)> {
        let c = self.cost_choice(spec, "choose")?;
        Ok((c.pick, c.path, c.notes))
    }

    /// How sure a collectives, attention or overlap model's pick for a shape is (the spec as for
    /// `choose`): the training inputs that reach the pick's leaf and the pick's mean regret on
    /// them (its time over their fastest's, less 1), or None where the pick is not the tree's
    /// (one this build or layer cannot run, replaced) or its leaf has no record. No GPU needed.
    fn evidence(&self, spec: &str) -> PyResult<Option<(usize, f64)>> {
        Ok(self.cost_choice(spec, "evidence")?.evidence)
    }

    /// An SpMV model's kernels.
    #[getter]
    fn kernels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match &self.model {
            AnyModel::Spmv(m) => PyList::new(py, &m.kernels),
            _ => PyList::new(py, Vec::<String>::new()),
        }
    }

    fn __repr__(&self) -> String {
        format!("Model({:?}, domain={:?})", self.origin, self.domain())
    }
}

/// A cost-labelled model's pick for a spec string, as `choose` and `evidence` report it.
struct CostChoice {
    pick: String,
    path: Vec<String>,
    notes: Vec<String>,
    evidence: Option<(usize, f64)>,
}

impl Model {
    /// The pick of a collectives, attention or overlap model for `spec`, with its path, notes
    /// and leaf evidence; `method` names the Python method for an SpMV model's refusal.
    fn cost_choice(&self, spec: &str, method: &str) -> PyResult<CostChoice> {
        use augur::features::attention::AttentionShape;
        use augur::features::message::MessageShape;
        let feature = |e: augur::features::FeatureError| value_err(e.to_string());
        match &self.model {
            AnyModel::Comm(m) => {
                let shape = MessageShape::parse(spec).map_err(feature)?;
                shape.validate().map_err(feature)?;
                let pick = m.choose(&shape).ok_or_else(|| {
                    value_err(format!(
                        "{} has no tree for {:?}",
                        self.origin, shape.collective
                    ))
                })?;
                let path = m
                    .path(&shape)
                    .into_iter()
                    .map(|(n, v, t, below)| {
                        format!("{n} = {v} {} {t}", if below { "<" } else { ">=" })
                    })
                    .collect();
                Ok(CostChoice {
                    pick: pick.to_string(),
                    path,
                    notes: Vec::new(),
                    evidence: m.leaf_evidence(&shape),
                })
            }
            AnyModel::Attention(m) => {
                let shape = AttentionShape::parse(spec).map_err(feature)?;
                let c = augur::attention::choose_schedule(m, &shape, None, "").map_err(py_err)?;
                Ok(CostChoice {
                    pick: c.schedule.name().to_string(),
                    path: c.path,
                    notes: c.notes,
                    evidence: c.evidence,
                })
            }
            AnyModel::Overlap(m) => {
                let shape = augur::features::overlap::OverlapShape::parse(spec).map_err(feature)?;
                let c = augur::overlap::choose_pattern(m, &shape, "").map_err(py_err)?;
                Ok(CostChoice {
                    pick: c.pattern.name(),
                    path: c.path,
                    notes: c.notes,
                    evidence: c.evidence,
                })
            }
            AnyModel::Spmv(_) => Err(value_err(format!(
                "{} is an SpMV model: {method}() is for collectives, attention and overlap \
                 models; use select(features, iterations)",
                self.origin
            ))),
        }
    }
}
