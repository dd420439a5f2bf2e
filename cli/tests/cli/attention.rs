//! Decode attention: `collect attention`, its model and its plan.

use super::*;

/// Attention runs measured on an H200 (committed under bench/results): train, export, eval
/// (with FlashAttention-2 varlen and PyTorch SDPA beside, in two timing modes) and merge.
#[test]
fn attention_runs_train_export_eval_and_merge() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let res = format!("{root}/bench/results/attention-grid-h200-2026-11-24");
    let runs = format!("{res}/attention-runs.csv.gz");
    let baselines = format!("{res}/baselines.csv");
    let dir = temp_dir("attention-cli");
    let model = dir.join("attention.json");
    let m = model.to_str().unwrap();
    let o = augur(&["train", &runs, "--out", m]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(
        t.contains("attention model for") && t.contains("groups held out"),
        "{t}"
    );
    let o = augur(&["export", m]);
    let t = text(&o.stdout);
    assert!(
        t.contains("decode-attention schedule model") && t.contains("-> "),
        "{t}"
    );
    let o = augur(&["export", m, "--format", "rust"]);
    assert!(text(&o.stdout).contains("pub fn select(f: &AttentionFeatures)"));
    let csv = dir.join("shapes.csv");
    let eval = |extra: &[&str]| {
        let base: [&str; 6] = ["eval", &runs, "--model", m, "--baselines", &baselines];
        let o = augur(&[&base[..], extra].concat());
        assert!(o.status.success(), "{}", text(&o.stderr));
        o
    };
    let t = text(&eval(&["--csv", csv.to_str().unwrap()]).stdout);
    assert!(
        t.contains("held-out groups")
            && t.contains("throughput timing")
            && t.contains("x fa2_varlen")
            && t.contains("x sdpa"),
        "{t}"
    );
    // A working trainer lands near the oracle on its own grid (0.975 measured; a broken one,
    // e.g. labels shuffled, lands near the best single schedule's 0.78).
    let all: f64 = t
        .lines()
        .find(|l| l.starts_with("all "))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(all >= 0.9, "{t}");
    let shapes = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(shapes.lines().count(), 283);
    assert!(
        shapes
            .lines()
            .next()
            .unwrap()
            .contains(",fa2_varlen_us,sdpa_us,"),
        "{shapes}"
    );
    // The graph mode compares graph figures on both sides: FlashAttention-2 varlen without
    // PyTorch's per-call host time is nearer augur's pick than in throughput mode.
    let geo = |timing: &str| -> f64 {
        let o = eval(&["--timing", timing, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["summary"][0]["vs_baselines"]["fa2_varlen"]["geomean"]
            .as_f64()
            .unwrap()
    };
    let (tp, graph) = (geo("throughput"), geo("graph"));
    assert!(graph < tp && graph > 1.0, "{graph} {tp}");
    let o = augur(&["eval", &runs, "--model", m, "--timing", "wall"]);
    assert!(!o.status.success() && text(&o.stderr).contains("timing `wall`"));
    // Runs of the first format (one per-launch figure) are refused with what to do.
    let old =
        format!("{root}/bench/results/attention-grid-h200-2026-11-22-w3/attention-runs.csv.gz");
    let o = augur(&["train", &old, "--out", m]);
    let e = text(&o.stderr);
    assert!(
        !o.status.success() && e.contains("format 1") && e.contains("re-run"),
        "{e}"
    );
    // So are SDPA-only files of the old script as baselines.
    let sdpa = format!("{root}/bench/results/attention-grid-h200-2026-11-22-w3/sdpa.csv");
    let o = augur(&["eval", &runs, "--model", m, "--baselines", &sdpa]);
    let e = text(&o.stderr);
    assert!(!o.status.success() && e.contains("baselines script"), "{e}");
    merge_twice_keeps_the_rows(&dir, &runs);
    // A damaged row names its file and line.
    let bad = dir.join("bad.csv");
    let damaged: Vec<String> = read_text(&runs)
        .lines()
        .take(4)
        .enumerate()
        .map(|(i, l)| {
            if i == 3 {
                l.replacen(",ok,", ",okay,", 1)
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&bad, damaged.join("\n") + "\n").unwrap();
    let o = augur(&["train", bad.to_str().unwrap(), "--out", m]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("bad.csv:4"), "{}", text(&o.stderr));
}

/// `attention plan` (offline, the built-in model) names the shape in the words of its spec and
/// rounds the numbers of its reasons as `export` does.
#[test]
fn attention_plan_reads_like_its_spec() {
    let s = stdout_ok(&[
        "attention",
        "plan",
        "attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=32000;64*63",
        "attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=4096,page=16",
    ]);
    contains_all(
        &s,
        &[
            "dtype=bf16, 64 sequences, contiguous KV",
            "1 sequence, paged KV (16 tokens a page)",
            "because ",
        ],
    );
    // How sure, per shape: its leaf's training shapes.
    assert_eq!(s.matches(" training shapes, ").count(), 2, "{s}");
    assert!(!s.contains("Bf16") && !s.contains("Contiguous"), "{s}");
    // No number with more than 4 decimals.
    for w in s.split_whitespace() {
        if let Some((_, frac)) = w.split_once('.') {
            if w.parse::<f64>().is_ok() {
                assert!(frac.len() <= 4, "`{w}` in:\n{s}");
            }
        }
    }
}
