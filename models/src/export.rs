//! Export a model as readable rules, Graphviz DOT, a Rust `select` function, or JSON.

use std::fmt::Write;

use crate::model::{IterationMode, Model, Selector, Tier};
use crate::tree::{Node, Tree};
use crate::ModelFile;

/// A number with the unit of the input it is compared with, for people: counts with k/M/G,
/// fractions as percentages.
pub fn readable(value: f64, unit: &str) -> String {
    match unit {
        "fraction" => format!("{}%", sig(value * 100.0)),
        "rows" | "columns" | "entries" | "segments" | "iterations" => {
            let a = value.abs();
            let (v, s) = if a >= 1e9 {
                (value / 1e9, "G")
            } else if a >= 1e6 {
                (value / 1e6, "M")
            } else if a >= 1e4 {
                (value / 1e3, "k")
            } else {
                (value, "")
            };
            let u = if unit == "iterations" { "" } else { unit };
            format!("{}{s}{}{u}", sig(v), if u.is_empty() { "" } else { " " })
        }
        "bytes" => {
            let a = value.abs();
            let (v, s) = if a >= (1u64 << 30) as f64 {
                (value / (1u64 << 30) as f64, " GiB")
            } else if a >= (1 << 20) as f64 {
                (value / (1 << 20) as f64, " MiB")
            } else if a >= (1 << 10) as f64 {
                (value / (1 << 10) as f64, " KiB")
            } else {
                (value, " bytes")
            };
            format!("{}{s}", sig(v))
        }
        _ => sig(value),
    }
}

/// `n` and the noun, singular when `n` is 1 ("1 layer", "3 layers"): `plural` ends in "s".
pub fn counted(n: usize, plural: &str) -> String {
    if n == 1 {
        format!("1 {}", plural.strip_suffix('s').unwrap_or(plural))
    } else {
        format!("{n} {plural}")
    }
}

/// Three significant digits, trailing zeros dropped.
pub(crate) fn sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (3 - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn unit_of(model: &Model, input: &str) -> String {
    if input == "iterations" {
        return "iterations".into();
    }
    model
        .schema
        .features
        .iter()
        .find(|f| f.name == input)
        .map_or(String::new(), |f| f.unit.clone())
}

fn leaf_text(model: &Model, class: usize, samples: usize, regret: f64, policy: bool) -> String {
    let what = if policy {
        match Tier::from_class(class) {
            Tier::Known => "known features only: use the known-features tree".to_string(),
            Tier::Sampled => "sample rows: use the sampled-features tree".to_string(),
            Tier::Gathered => {
                "gather the exact features: use the gathered-features tree".to_string()
            }
        }
    } else {
        model.kernels[class].clone()
    };
    format!(
        "-> {what}   [{}, mean regret {}%]",
        counted(samples, "samples"),
        sig(regret * 100.0)
    )
}

fn tree_text(
    model: &Model,
    t: &Tree,
    inputs: &[String],
    policy: bool,
    indent: usize,
    out: &mut String,
) {
    fn go(
        model: &Model,
        t: &Tree,
        inputs: &[String],
        policy: bool,
        i: usize,
        ind: usize,
        out: &mut String,
    ) {
        let pad = "    ".repeat(ind);
        match &t.nodes[i] {
            Node::Leaf {
                class,
                samples,
                mean_regret,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}{}",
                    leaf_text(model, *class, *samples, *mean_regret, policy)
                );
            }
            Node::Split {
                feature,
                threshold,
                left,
                right,
            } => {
                let name = &inputs[*feature];
                let _ = writeln!(
                    out,
                    "{pad}if {name} < {}:",
                    readable(*threshold, &unit_of(model, name))
                );
                go(model, t, inputs, policy, *left, ind + 1, out);
                let _ = writeln!(out, "{pad}else:");
                go(model, t, inputs, policy, *right, ind + 1, out);
            }
        }
    }
    go(model, t, inputs, policy, 0, indent, out);
}

fn selector_text(model: &Model, s: &Selector, title: &str, out: &mut String) {
    let score = model
        .training
        .chosen
        .iter()
        .find(|c| title.starts_with(&c.features));
    let _ = writeln!(
        out,
        "\n{title} tree ({}, max depth {}, min leaf weight {}{}):",
        match s.mode {
            IterationMode::Joint => "joint mode: iterations is an input",
            IterationMode::PerK => "per-k mode: one tree per iteration count",
        },
        s.hyper.max_depth,
        s.hyper.min_weight_leaf,
        score.map_or(String::new(), |c| format!(
            "; family-grouped CV: selected/oracle {:.3}, accuracy {:.0}%",
            c.oracle_ratio,
            c.accuracy * 100.0
        )),
    );
    match s.mode {
        IterationMode::Joint => tree_text(model, &s.trees[0].tree, &s.inputs, false, 1, out),
        IterationMode::PerK => {
            for (i, kt) in s.trees.iter().enumerate() {
                let lo = if i == 0 { None } else { s.trees[i - 1].below };
                let range = match (lo, kt.below) {
                    (None, Some(b)) => format!("iterations < {}", sig(b)),
                    (Some(a), Some(b)) => format!("{} <= iterations < {}", sig(a), sig(b)),
                    (Some(a), None) => format!("iterations >= {}", sig(a)),
                    (None, None) => "any iterations".into(),
                };
                let _ = writeln!(
                    out,
                    "  for {range} (trained at {}):",
                    kt.iterations.map_or("-".into(), |k| k.to_string())
                );
                tree_text(model, &kt.tree, &s.inputs, false, 2, out);
            }
        }
    }
}

/// Indented if/else rules with feature names, readable thresholds, and each leaf's kernel,
/// sample count and mean regret.
pub fn text(model: &Model) -> String {
    let mut out = String::new();
    let t = &model.training;
    let _ = writeln!(
        out,
        "augur SpMV selector: {} backend on {}, {}, schema {} v{}, {} kernels ({})",
        model.backend,
        model.device,
        model.precision,
        model.schema.name,
        model.schema.version,
        model.kernels.len(),
        model.kernels.join(", ")
    );
    let _ = writeln!(
        out,
        "trained on {} matrices in {} families for iterations {:?}; {} families held out; training digest {}",
        t.matrices,
        t.families,
        model.iterations,
        t.held_out_families.len(),
        &t.digest[..16.min(t.digest.len())]
    );
    let _ = writeln!(
        out,
        "\nWhich features pay for their cost? (inputs: the known features and iterations; out of fold, \
         sampling paid best on {:.0}% of training samples, gathering the exact features on {:.0}%; regrets \
         include the features' cost, gathering as {})",
        t.sample_paid_share * 100.0,
        t.gather_paid_share * 100.0,
        match t.gather_cost {
            crate::train::GatherCost::Upload => "a plan from a host matrix pays it: during the upload (median per decade of nonzeros)",
            crate::train::GatherCost::UploadRaw => "a plan from a host matrix pays it: during the upload (each matrix's own figure)",
            crate::train::GatherCost::Device => "a pass over a matrix already on the device",
            crate::train::GatherCost::HostRows => "a plan from a host matrix pays it: the row pointers on the host beside the upload (the trees read no column statistics)",
        }
    );
    tree_text(
        model,
        &model.policy,
        &model.policy_inputs,
        true,
        1,
        &mut out,
    );
    selector_text(model, &model.known, "known-features", &mut out);
    selector_text(model, &model.sampled, "sampled-features", &mut out);
    selector_text(model, &model.gathered, "gathered-features", &mut out);
    if let Some(g) = &model.row_guard {
        out.push('\n');
        out.push_str(&guard_text(model, g));
    }
    out
}

/// Seconds with a unit a person reads (ps to s).
fn secs(v: f64) -> String {
    let (x, u) = match v.abs() {
        0.0 => (0.0, "s"),
        a if a < 1e-9 => (v * 1e12, "ps"),
        a if a < 1e-6 => (v * 1e9, "ns"),
        a if a < 1e-3 => (v * 1e6, "us"),
        a if a < 1.0 => (v * 1e3, "ms"),
        _ => (v, "s"),
    };
    format!("{} {u}", sig(x))
}

/// The long-row guard as rules a person can check by hand.
fn guard_text(model: &Model, g: &crate::guard::RowGuard) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Long-row guard (after the trees; floors measured on {} training matrices with a row of at least {} entries):",
        g.long_row_matrices,
        crate::guard::LONG_ROW
    );
    out.push_str("  L = the longest row the tier knows: row_len_max (gathered), sampled_max_mean_ratio x mean_row_len (sampled), mean_row_len (known; never less than it); n = nnz + rows\n");
    let _ = writeln!(
        out,
        "  a pick is replaced by the fallback when iterations x floor x L > {} x (first + (iterations - 1) x per call), floor per entry of L:",
        sig(g.margin)
    );
    let floors: Vec<String> = model
        .kernels
        .iter()
        .zip(&g.floor_per_longest_entry_s)
        .filter(|(_, &f)| f > 0.0)
        .map(|(k, &f)| format!("{k} {}", secs(f)))
        .collect();
    let _ = writeln!(
        out,
        "    {}",
        if floors.is_empty() {
            "(none: no kernel is vetoed)".to_string()
        } else {
            floors.join(", ")
        }
    );
    out.push_str("  fallback by iterations (the nearest trained count on a log scale):\n");
    for f in &g.fallbacks {
        let _ = writeln!(
            out,
            "    ~{}: {}, first = {} + {} x n, per call = {} + {} x n",
            f.iterations,
            model.kernels[f.kernel],
            secs(f.first.floor_s),
            secs(f.first.per_entry_s),
            secs(f.per_iter.floor_s),
            secs(f.per_iter.per_entry_s)
        );
    }
    out
}

pub(crate) fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Graphviz DOT: one cluster per tree.
pub fn dot(model: &Model) -> String {
    let mut out = String::from(
        "digraph augur {\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\"];\n",
    );
    let mut cluster = 0usize;
    let mut add = |title: &str, t: &Tree, inputs: &[String], policy: bool, out: &mut String| {
        let p = format!("t{cluster}_");
        let _ = writeln!(
            out,
            "  subgraph cluster_{cluster} {{\n    label=\"{}\";",
            dot_escape(title)
        );
        for (i, n) in t.nodes.iter().enumerate() {
            match n {
                Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                } => {
                    let name = &inputs[*feature];
                    let _ = writeln!(
                        out,
                        "    {p}{i} [label=\"{} < {}?\"];\n    {p}{i} -> {p}{left} [label=\"yes\"];\n    {p}{i} -> {p}{right} [label=\"no\"];",
                        dot_escape(name),
                        dot_escape(&readable(*threshold, &unit_of(model, name)))
                    );
                }
                Node::Leaf {
                    class,
                    samples,
                    mean_regret,
                } => {
                    let what = if policy {
                        Tier::from_class(*class).name().to_string()
                    } else {
                        model.kernels[*class].clone()
                    };
                    let _ = writeln!(
                        out,
                        "    {p}{i} [shape=ellipse, style=filled, fillcolor=\"#e8f0fe\", label=\"{}\\n{}, regret {}%\"];",
                        dot_escape(&what),
                        counted(*samples, "samples"),
                        sig(mean_regret * 100.0)
                    );
                }
            }
        }
        out.push_str("  }\n");
        cluster += 1;
    };
    add(
        "which features?",
        &model.policy,
        &model.policy_inputs,
        true,
        &mut out,
    );
    for (name, s) in [
        ("known features", &model.known),
        ("sampled features", &model.sampled),
        ("gathered features", &model.gathered),
    ] {
        for kt in &s.trees {
            let title = match kt.iterations {
                Some(k) => format!("{name}, iterations ~ {k}"),
                None => name.to_string(),
            };
            add(&title, &kt.tree, &s.inputs, false, &mut out);
        }
    }
    if let Some(g) = &model.row_guard {
        let _ = writeln!(
            out,
            "  guard [shape=note, label=\"{}\"];",
            dot_escape(&guard_text(model, g)).replace('\n', "\\l")
        );
    }
    out.push_str("}\n");
    out
}

/// CamelCase enum variant of a kernel name (`cusparse_alg1` -> `CusparseAlg1`).
pub fn variant(name: &str) -> String {
    let mut v = String::new();
    let mut up = true;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if up {
                v.extend(c.to_uppercase());
            } else {
                v.push(c);
            }
            up = false;
        } else {
            up = true;
        }
    }
    if v.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        v.insert(0, 'K');
    }
    v
}

fn rust_expr(input: &str) -> String {
    if input == "iterations" {
        "k".into()
    } else {
        format!("c(f.{input})")
    }
}

fn rust_tree(
    t: &Tree,
    inputs: &[String],
    ret: &dyn Fn(usize) -> String,
    ind: usize,
    out: &mut String,
) {
    fn go(
        t: &Tree,
        inputs: &[String],
        ret: &dyn Fn(usize) -> String,
        i: usize,
        ind: usize,
        out: &mut String,
    ) {
        let pad = "    ".repeat(ind);
        match &t.nodes[i] {
            Node::Leaf { class, .. } => {
                let _ = writeln!(out, "{pad}{}", ret(*class));
            }
            Node::Split {
                feature,
                threshold,
                left,
                right,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}if {} < {threshold:?} {{",
                    rust_expr(&inputs[*feature])
                );
                go(t, inputs, ret, *left, ind + 1, out);
                let _ = writeln!(out, "{pad}}} else {{");
                go(t, inputs, ret, *right, ind + 1, out);
                let _ = writeln!(out, "{pad}}}");
            }
        }
    }
    go(t, inputs, ret, 0, ind, out);
}

fn rust_selector(model: &Model, s: &Selector, fname: &str, out: &mut String) {
    let _ = writeln!(out, "#[allow(clippy::all, unused_variables)]\nfn {fname}(f: &SpmvFeatures, k: f64) -> SpmvKernel {{");
    let ret = |c: usize| format!("SpmvKernel::{}", variant(&model.kernels[c]));
    match s.mode {
        IterationMode::Joint => rust_tree(&s.trees[0].tree, &s.inputs, &ret, 1, out),
        IterationMode::PerK => {
            for (i, kt) in s.trees.iter().enumerate() {
                match kt.below {
                    Some(b) => {
                        let _ = writeln!(
                            out,
                            "    {}if k < {b:?} {{",
                            if i == 0 { "" } else { "} else " }
                        );
                    }
                    None if i > 0 => out.push_str("    } else {\n"),
                    None => out.push_str("    {\n"),
                }
                rust_tree(&kt.tree, &s.inputs, &ret, 2, out);
            }
            out.push_str("    }\n");
        }
    }
    out.push_str("}\n\n");
}

/// `fn guard`: the long-row guard as the model applies it (the pick itself without one).
fn rust_guard(model: &Model, out: &mut String) {
    out.push_str("/// The long-row guard: the fallback where the longest row the tier knows proves `pick` slow.\n#[allow(clippy::all, unused_variables)]\nfn guard(f: &SpmvFeatures, t: Tier, k: f64, pick: SpmvKernel) -> SpmvKernel {\n");
    let Some(g) = &model.row_guard else {
        out.push_str("    pick\n}\n\n");
        return;
    };
    out.push_str("    let per: f64 = match pick {\n");
    for (k, &v) in model.kernels.iter().zip(&g.floor_per_longest_entry_s) {
        if v > 0.0 {
            let _ = writeln!(out, "        SpmvKernel::{} => {v:?},", variant(k));
        }
    }
    out.push_str("        _ => return pick,\n    };\n");
    out.push_str("    // (iterations, fallback, first: floor, per entry, per call: floor, per entry)\n    let fallbacks: [(f64, SpmvKernel, f64, f64, f64, f64); ");
    let _ = writeln!(out, "{}] = [", g.fallbacks.len());
    for f in &g.fallbacks {
        let _ = writeln!(
            out,
            "        ({:?}, SpmvKernel::{}, {:?}, {:?}, {:?}, {:?}),",
            f.iterations.max(1) as f64,
            variant(&model.kernels[f.kernel]),
            f.first.floor_s,
            f.first.per_entry_s,
            f.per_iter.floor_s,
            f.per_iter.per_entry_s
        );
    }
    out.push_str("    ];\n");
    let _ = write!(
        out,
        "    let lk = k.max(1.0).ln();
    let mut fb = fallbacks[0];
    for c in fallbacks {{
        if (c.0.ln() - lk).abs() < (fb.0.ln() - lk).abs() {{
            fb = c;
        }}
    }}
    if fb.1 == pick {{
        return pick;
    }}
    let g = |v: f64| if v.is_finite() {{ v }} else {{ 0.0 }};
    let mean = g(f.mean_row_len);
    let longest = match t {{
        Tier::Gathered => g(f.row_len_max),
        Tier::Sampled => g(f.sampled_max_mean_ratio) * mean,
        Tier::Known => 0.0,
    }}
    .max(mean);
    let k = k.max(1.0);
    let n = g(f.nnz) + g(f.rows);
    let fallback_s = (fb.2 + fb.3 * n) + (k - 1.0) * (fb.4 + fb.5 * n);
    if k * per * longest > {:?} * fallback_s {{
        fb.1
    }} else {{
        pick
    }}
}}

",
        g.margin
    );
}

/// A Rust module: `enum SpmvKernel` and `fn select(f: &SpmvFeatures, iterations: u32) ->
/// SpmvKernel`, equivalent to [`Model::choose`]. It needs `augur_features` in scope.
pub fn rust(model: &Model) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Generated by `augur export --format rust` from a model for the {} backend ({}, {}),\n\
         // schema {} v{}, training digest {}. Do not edit: retrain and export again.\n",
        model.backend,
        model.device,
        model.precision,
        model.schema.name,
        model.schema.version,
        model.training.digest
    );
    out.push_str("use augur_features::spmv::SpmvFeatures;\n\n");
    out.push_str("/// The kernels the model chooses from.\n#[derive(Debug, Clone, Copy, PartialEq, Eq)]\npub enum SpmvKernel {\n");
    for k in &model.kernels {
        let _ = writeln!(out, "    {},", variant(k));
    }
    out.push_str("}\n\nimpl SpmvKernel {\n    /// The kernel's name in augur.\n    pub fn name(self) -> &'static str {\n        match self {\n");
    for k in &model.kernels {
        let _ = writeln!(out, "            SpmvKernel::{} => {k:?},", variant(k));
    }
    out.push_str("        }\n    }\n}\n\n");
    out.push_str("/// NaN (a feature undefined for this input) compares below every value, as in training.\n#[inline]\nfn c(v: f64) -> f64 {\n    if v.is_nan() { -1.0 } else { v }\n}\n\n");
    out.push_str("/// The feature tiers, cheapest first.\n#[derive(Debug, Clone, Copy, PartialEq, Eq)]\npub enum Tier {\n    Known,\n    Sampled,\n    Gathered,\n}\n\n");
    out.push_str("/// The kernel for a matrix with these features, for `iterations` SpMVs (the features of\n/// the tier `tier` says are computed).\npub fn select(f: &SpmvFeatures, iterations: u32) -> SpmvKernel {\n    let k = iterations as f64;\n    let t = tier(f, k);\n    let pick = match t {\n        Tier::Known => select_known(f, k),\n        Tier::Sampled => select_sampled(f, k),\n        Tier::Gathered => select_gathered(f, k),\n    };\n    guard(f, t, k, pick)\n}\n\n");
    rust_guard(model, &mut out);
    out.push_str("/// Which features pay for their cost (from the known features and the iterations).\n#[allow(clippy::all, unused_variables)]\npub fn tier(f: &SpmvFeatures, k: f64) -> Tier {\n");
    rust_tree(
        &model.policy,
        &model.policy_inputs,
        &|c| format!("Tier::{:?}", Tier::from_class(c)),
        1,
        &mut out,
    );
    out.push_str("}\n\n");
    rust_selector(model, &model.known, "select_known", &mut out);
    rust_selector(model, &model.sampled, "select_sampled", &mut out);
    rust_selector(model, &model.gathered, "select_gathered", &mut out);
    out
}

/// The model file itself.
pub fn json(model: &Model) -> String {
    model.to_json()
}

// ---- class trees (comm patterns, attention schedules) ----------------------------------------

/// A tree whose leaves name one of `classes`, over `inputs` (features of `schema`, for their
/// units), as it is exported: `noun` names what a leaf's samples are ("messages", "shapes").
pub(crate) struct ClassTree<'a> {
    pub tree: &'a Tree,
    pub inputs: &'a [String],
    pub classes: &'a [String],
    pub schema: &'a augur_features::FeatureSchema,
    pub noun: &'a str,
}

impl ClassTree<'_> {
    fn unit(&self, input: &str) -> String {
        self.schema
            .features
            .iter()
            .find(|f| f.name == input)
            .map_or(String::new(), |f| f.unit.clone())
    }

    /// Readable rules, indented by `indent` levels.
    pub fn text(&self, indent: usize, out: &mut String) {
        self.text_node(0, indent, out);
    }

    fn text_node(&self, i: usize, ind: usize, out: &mut String) {
        let pad = "    ".repeat(ind);
        match &self.tree.nodes[i] {
            Node::Leaf {
                class,
                samples,
                mean_regret,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}-> {}   [{}, mean regret {}%]",
                    self.classes[*class],
                    counted(*samples, self.noun),
                    sig(mean_regret * 100.0)
                );
            }
            Node::Split {
                feature,
                threshold,
                left,
                right,
            } => {
                let name = &self.inputs[*feature];
                let _ = writeln!(
                    out,
                    "{pad}if {name} < {}:",
                    readable(*threshold, &self.unit(name))
                );
                self.text_node(*left, ind + 1, out);
                let _ = writeln!(out, "{pad}else:");
                self.text_node(*right, ind + 1, out);
            }
        }
    }

    /// Graphviz nodes and edges, node ids prefixed by `prefix`, lines indented by `pad`.
    pub fn dot(&self, prefix: &str, pad: &str, out: &mut String) {
        for (i, n) in self.tree.nodes.iter().enumerate() {
            match n {
                Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                } => {
                    let name = &self.inputs[*feature];
                    let _ = writeln!(
                        out,
                        "{pad}{prefix}{i} [label=\"{} < {}?\"];\n{pad}{prefix}{i} -> {prefix}{left} [label=\"yes\"];\n{pad}{prefix}{i} -> {prefix}{right} [label=\"no\"];",
                        dot_escape(name),
                        dot_escape(&readable(*threshold, &self.unit(name)))
                    );
                }
                Node::Leaf {
                    class,
                    samples,
                    mean_regret,
                } => {
                    let _ = writeln!(
                        out,
                        "{pad}{prefix}{i} [shape=ellipse, style=filled, fillcolor=\"#e8f0fe\", label=\"{}\\n{}, regret {}%\"];",
                        dot_escape(&self.classes[*class]),
                        counted(*samples, self.noun),
                        sig(mean_regret * 100.0)
                    );
                }
            }
        }
    }

    /// Rust statements returning `Some(Enum::Variant)` from `f.<input>` comparisons.
    pub fn rust(&self, enum_name: &str, indent: usize, out: &mut String) {
        self.rust_node(0, enum_name, indent, out);
    }

    fn rust_node(&self, i: usize, en: &str, ind: usize, out: &mut String) {
        let pad = "    ".repeat(ind);
        match &self.tree.nodes[i] {
            Node::Leaf { class, .. } => {
                let _ = writeln!(
                    out,
                    "{pad}return Some({en}::{});",
                    variant(&self.classes[*class])
                );
            }
            Node::Split {
                feature,
                threshold,
                left,
                right,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}if f.{} < {threshold:?} {{",
                    self.inputs[*feature]
                );
                self.rust_node(*left, en, ind + 1, out);
                let _ = writeln!(out, "{pad}}} else {{");
                self.rust_node(*right, en, ind + 1, out);
                let _ = writeln!(out, "{pad}}}");
            }
        }
    }
}

/// One tree of a model with a tree per group (a comm model's collectives, an overlap model's
/// operations): the group's label, the Rust condition that selects it, and the tree.
pub(crate) struct GroupTree<'a> {
    pub label: String,
    pub condition: String,
    pub tree: ClassTree<'a>,
}

/// Graphviz DOT of a grouped model: graph `graph`, one cluster per group, node ids prefixed by
/// `prefix` and the group's index.
pub(crate) fn grouped_dot(graph: &str, prefix: char, groups: &[GroupTree]) -> String {
    let mut out = format!(
        "digraph {graph} {{\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\"];\n"
    );
    for (c, g) in groups.iter().enumerate() {
        let _ = writeln!(
            out,
            "  subgraph cluster_{c} {{\n    label=\"{}\";",
            dot_escape(&g.label)
        );
        g.tree.dot(&format!("{prefix}{c}_"), "    ", &mut out);
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}

/// What a grouped model's Rust module says beside its trees.
pub(crate) struct GroupedRust<'a> {
    /// The comment and `use` lines at the top.
    pub header: String,
    /// The enum of the classes, e.g. `CommPattern`.
    pub enum_name: &'a str,
    /// The features type `select` takes, e.g. `MessageFeatures`.
    pub features: &'a str,
    /// `select`'s doc line, e.g. "The pattern for a message (None for a collective the model
    /// was not trained on)."
    pub select_doc: &'a str,
}

/// A Rust module for a grouped model: the enum of the union of the groups' classes (first seen
/// first), its names, and `fn select(f) -> Option<Enum>` with one `if` per group.
pub(crate) fn grouped_rust(r: &GroupedRust, groups: &[GroupTree]) -> String {
    let e = r.enum_name;
    let mut names: Vec<&str> = Vec::new();
    for g in groups {
        for p in g.tree.classes {
            if !names.contains(&p.as_str()) {
                names.push(p);
            }
        }
    }
    let mut out = format!(
        "{}/// The patterns the model chooses from.\n#[derive(Debug, Clone, Copy, PartialEq, Eq)]\npub enum {e} {{\n",
        r.header
    );
    for n in &names {
        let _ = writeln!(out, "    {},", variant(n));
    }
    let _ = write!(out, "}}\n\nimpl {e} {{\n    /// The pattern's name in augur.\n    pub fn name(self) -> &'static str {{\n        match self {{\n");
    for n in &names {
        let _ = writeln!(out, "            {e}::{} => \"{n}\",", variant(n));
    }
    let _ = write!(
        out,
        "        }}\n    }}\n}}\n\n/// {}\n#[allow(clippy::all, unused_variables)]\npub fn select(f: &{}) -> Option<{e}> {{\n",
        r.select_doc, r.features
    );
    for g in groups {
        let _ = writeln!(out, "    if {} {{", g.condition);
        g.tree.rust(e, 2, &mut out);
        out.push_str("    }\n");
    }
    out.push_str("    None\n}\n");
    out
}
