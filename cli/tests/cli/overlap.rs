//! GEMM + collective overlap (issue 24): plans, evaluation and refusals without a GPU.

use super::*;

/// `augur overlap gemm-plan` (no GPU): the TMA GEMM's kernel per shape and the rule that took
/// it; a bad shape is refused naming it.
#[test]
fn overlap_gemm_plan_says_which_kernel_and_why_without_a_gpu() {
    let o = stdout_ok(&[
        "overlap",
        "gemm-plan",
        "16,4096,4096",
        "2048,1536,4096",
        "2560,5120,3584",
    ]);
    contains_all(
        &o,
        &[
            "16x4096x4096 on 132 SMs: augur_tma_swap_32x128_k",
            "    operands swapped: M 16 <= 64",
            "2048x1536x4096 on 132 SMs: augur_tma_128x192 (",
            "128 x 192: 128 tiles, k in 1:",
            "2560x5120x3584 on 132 SMs: augur_tma_128x256_t8 (",
            "    tail split taken: 128 x 256",
        ],
    );
    let o = stdout_ok(&["overlap", "gemm-plan", "--sms", "114", "2048,1536,4096"]);
    assert!(o.starts_with("2048x1536x4096 on 114 SMs: "), "{o}");
    // The largest shape a GEMM takes is estimated, not an overflow.
    let o = stdout_ok(&["overlap", "gemm-plan", "2147483640,2147483640,131072"]);
    assert!(o.contains(" us estimated)"), "{o}");
    let out = augur(&["overlap", "gemm-plan", "2048,1536"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("2048,1536"),
        "{}",
        text(&out.stderr)
    );
    let out = augur(&["overlap", "gemm-plan", "--sms", "0", "16,16,16"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `augur overlap plan` (no GPU): the built-in model's pick per layer with the tree's path; a
/// layer that does not cut evenly and a model of another domain are refused, naming why.
#[test]
fn overlap_plan_picks_and_explains_without_a_gpu() {
    let out = augur(&[
        "overlap",
        "plan",
        "--gpus",
        "4",
        "16384,10240,8192",
        "16,6144,4096",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    let first = o.lines().next().unwrap();
    assert!(
        first.starts_with("all-gather+gemm 16384x10240x8192 on 4 GPUs: "),
        "{o}"
    );
    assert!(!first.ends_with(": bulk"), "{o}");
    // A 16-token layer: bulk with augur's LL collective (bench/results/ll-bulk-h200-2026-11-28/).
    assert!(
        o.contains("all-gather+gemm 16x6144x4096 on 4 GPUs: ll-bulk"),
        "{o}"
    );
    assert!(
        o.contains("gemm+reduce-scatter 16x6144x4096 on 4 GPUs: ll-bulk"),
        "{o}"
    );
    // The path: each GPU's shard of the 16-token layer under the trees' threshold.
    assert!(o.contains("    shard_bytes = 32768 < "), "{o}");
    // How sure: the training layers at the pick's leaf and its mean regret there.
    assert!(
        o.lines()
            .any(|l| l.starts_with("    leaf: ") && l.contains(" training layers, ll-bulk ")),
        "{o}"
    );
    let out = augur(&["overlap", "plan", "--gpus", "4", "8190,6144,4096"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("M and N must split evenly"),
        "{}",
        text(&out.stderr)
    );
    let out = augur(&[
        "overlap",
        "plan",
        "--model",
        "default-comm",
        "8192,6144,4096",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("a comm model, not an overlap one"));
}

/// `augur eval` of the built-in overlap model on `augur overlap tp` rows: the layers of weights
/// it was trained on are left out unless `--rows all`; options of other domains are refused.
#[test]
fn overlap_eval_leaves_out_the_weights_the_model_saw() {
    let mut t = String::from("device,gpus,op,dtype,m,n,k,pattern,passed,us\n");
    // N 6144, K 4096 is in the built-in model's training set; N 9600, K 3000 is not. At M 16
    // ll-bulk (the model's pick) is the fastest; at M 8192 push:1 beats the pick (pc-push:1:8).
    for (n, k) in [(6144, 4096), (9600, 3000)] {
        for (m, times) in [
            (
                16,
                [("bulk", 20.0), ("ll-bulk", 15.0), ("pc-push:1:8", 30.0)],
            ),
            (
                8192,
                [("bulk", 300.0), ("ll-bulk", 400.0), ("pc-push:1:8", 250.0)],
            ),
        ] {
            for (p, us) in times {
                t.push_str(&format!(
                    "NVIDIA H200,4,all-gather+gemm,bf16,{m},{n},{k},{p},true,{us}\n"
                ));
            }
            t.push_str(&format!(
                "NVIDIA H200,4,all-gather+gemm,bf16,{m},{n},{k},push:1,true,200\n"
            ));
        }
    }
    let runs = write_file("overlap-eval-tp.csv", t.as_bytes());
    let runs = runs.to_str().unwrap();
    let csv = temp_dir("overlap-eval").join("layers.csv");
    let out = augur(&[
        "eval",
        runs,
        "--model",
        "default-overlap",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.contains("on 2 layers (weights it was not trained on)"),
        "{o}"
    );
    assert!(
        o.contains("2 layers of weights (N, K) the model was trained on left out"),
        "{o}"
    );
    // M 16: ll-bulk, the oracle (1.000); M 8192: pc-push:1:8 at 250 us against push:1's 200.
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 3, "{rows}");
    assert!(
        rows.contains(",16,9600,3000,ll-bulk,15.000,ll-bulk,15.000,20.000,"),
        "{rows}"
    );
    assert!(
        rows.contains(",8192,9600,3000,pc-push:1:8,250.000,push:1,200.000,300.000,"),
        "{rows}"
    );
    let j = json_ok(&[
        "eval",
        runs,
        "--model",
        "default-overlap",
        "--rows",
        "all",
        "--json",
    ]);
    assert_eq!(j["layers"].as_array().unwrap().len(), 4, "{j}");
    for flag in ["--iterations", "--timing"] {
        let out = augur(&["eval", runs, "--model", "default-overlap", flag, "1"]);
        assert_eq!(out.status.code(), Some(2));
        let e = text(&out.stderr);
        assert!(
            e.contains(&format!("{flag} is not for an overlap model")),
            "{e}"
        );
    }
}

#[test]
fn overlap_run_refuses_bad_requests_before_looking_for_gpus() {
    // Each is said before any GPU is looked for: the same error on a machine with GPUs or none.
    for (args, want) in [
        (
            vec!["--pattern", "pc-reduce:2:8"],
            "pc-reduce:2:8: for the GEMM + reduce-scatter or all-reduce only",
        ),
        (vec!["--pattern", "gemm"], "a part of a layer"),
        (vec!["--pattern", "fused"], "pattern `fused`"),
        (vec!["--gpus", "4", "8190,6144,4096"], "8190"),
        (vec!["--gpus", "0"], "at least 1"),
        // A measured plan of a pattern given is checked like any other.
        (vec!["--measure", "--pattern", "gemm"], "a part of a layer"),
        (
            vec!["--op", "all-reduce", "--pattern", "own-bulk"],
            "own-bulk: for the all-gather + GEMM only",
        ),
        (
            vec!["--op", "all-reduce", "--gpus", "4", "4096,4096,4112"],
            "gemm+all-reduce",
        ),
    ] {
        let mut a = vec!["overlap", "run"];
        a.extend(args.iter().copied());
        let out = augur(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}
