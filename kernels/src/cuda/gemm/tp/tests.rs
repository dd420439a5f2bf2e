//! The tensor-parallel layers' pattern names, shape checks ([`super::check`]) and piece plans
//! ([`super::pieces_of`]), without a GPU.

use super::*;

#[test]
fn patterns_parse_and_shapes_split() {
    for s in [
        "gemm",
        "comm",
        "bulk",
        "chunked:4",
        "pull:2",
        "pull-bulk",
        "push:4",
        "pc-push:2:16",
        "pc-pull:1:8",
        "own-bulk",
        "ll-bulk",
        "pc-reduce:2:8",
        "pc-reduce-sm:2:16",
        "fused-push:2:16",
        "fused-pull:1:8",
        "fused-reduce:16",
        "push-reduce:2",
    ] {
        assert_eq!(TpPattern::parse(s).unwrap().name(), s);
    }
    assert_eq!(
        TpPattern::parse("push-reduce:4").unwrap(),
        TpPattern::PushReduce(4)
    );
    for bad in [
        "push-reduce",
        "push-reduce:0",
        "push-reduce:x",
        "push-reduce:2:8",
    ] {
        let e = TpPattern::parse(bad).unwrap_err().to_string();
        assert!(
            e.contains(bad) && e.contains("push-reduce:C (C >= 1"),
            "{e}"
        );
    }
    assert_eq!(
        TpPattern::parse("pc-pull:4:32").unwrap(),
        TpPattern::Pc {
            pieces: 4,
            sms: 32,
            push: false
        }
    );
    for bad in ["chunked:0", "chunked:x", "fused", "pull:0", "pull"] {
        let e = TpPattern::parse(bad).unwrap_err().to_string();
        assert!(e.contains(bad) && e.contains("chunked:C"), "{e}");
    }
    for bad in [
        "pc-push:2",
        "pc-push:0:16",
        "pc-pull:2:0",
        "pc-push:2:16:1",
        "pc-push:a:b",
        "fused-push:2",
        "fused-pull:0:8",
    ] {
        let e = TpPattern::parse(bad).unwrap_err().to_string();
        assert!(
            e.contains(bad) && e.contains("pc-push:C:S") && e.contains("fused-pull:C:S"),
            "{e}"
        );
    }
    assert_eq!(
        TpPattern::parse("fused-pull:4:16").unwrap(),
        TpPattern::Fused {
            pieces: 4,
            sms: 16,
            push: false
        }
    );
    let pull = TpPattern::Pull(2);
    assert!(pull.applies(TpOp::AllGatherGemm) && !pull.applies(TpOp::GemmReduceScatter));
    assert!(TpPattern::Chunked(2).applies(TpOp::GemmReduceScatter));
    let s = GemmShape {
        m: 4096,
        n: 6144,
        k: 4096,
    };
    assert_eq!(split(TpOp::AllGatherGemm, s, 4).unwrap(), (1024, 1536));
    assert_eq!(split(TpOp::GemmReduceScatter, s, 4).unwrap(), (1024, 1024));
    let odd = GemmShape { n: 6144 + 8, ..s };
    let e = split(TpOp::AllGatherGemm, odd, 4).unwrap_err().to_string();
    assert!(e.contains("M and N must split evenly"), "{e}");
    assert!(split(TpOp::GemmReduceScatter, odd, 4).is_ok());
    // What check refuses for one pattern on 4 GPUs.
    let err = |op, shape, p| check(op, shape, 4, &[p]).unwrap_err().to_string();
    let e = err(TpOp::AllGatherGemm, s, TpPattern::Chunked(3));
    assert!(e.contains("1024 rows per GPU do not split in 3"), "{e}");
    let e = err(TpOp::GemmReduceScatter, s, TpPattern::PullBulk);
    assert!(
        e.contains("pull-bulk: for the all-gather + GEMM only"),
        "{e}"
    );
    let e = err(
        TpOp::AllGatherGemm,
        s,
        TpPattern::parse("pc-reduce:2:8").unwrap(),
    );
    assert!(
        e.contains("pc-reduce:2:8: for the GEMM + reduce-scatter or all-reduce only"),
        "{e}"
    );
    // N 6148 with 3 rows per GPU: 18444 values, not whole vectors of 8.
    let odd_n = GemmShape {
        m: 12,
        n: 6148,
        ..s
    };
    let e = err(
        TpOp::GemmReduceScatter,
        odd_n,
        TpPattern::parse("pc-reduce:1:8").unwrap(),
    );
    assert!(
        e.contains("3 rows x N 6148") && e.contains("16-byte"),
        "{e}"
    );
    // push-reduce: the row-parallel operations', at most 64 pieces, its pieces whole; on more
    // than one GPU only with AUGUR_TP_UNVERIFIED (which the tests do not set), and on more than
    // two the reduce kernel's whole vectors.
    let pr = TpPattern::PushReduce(2);
    assert!(pr.applies(TpOp::GemmReduceScatter) && pr.applies(TpOp::GemmAllReduce));
    let e = err(TpOp::AllGatherGemm, s, pr);
    assert!(
        e.contains("push-reduce:2: for the GEMM + reduce-scatter or all-reduce only"),
        "{e}"
    );
    assert!(check(TpOp::GemmReduceScatter, s, 1, &[pr]).is_ok());
    let e = check(TpOp::GemmReduceScatter, s, 1, &[TpPattern::PushReduce(3)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("4096 rows per GPU do not split in 3"), "{e}");
    let e = check(TpOp::GemmReduceScatter, s, 1, &[TpPattern::PushReduce(128)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("push-reduce:128: at most 64 pieces"), "{e}");
    // No whole vectors without the reduce kernel: N 6148, a row per piece.
    let rows_of_one = GemmShape { m: 2, ..odd_n };
    assert!(check(TpOp::GemmReduceScatter, rows_of_one, 1, &[pr]).is_ok());
    if std::env::var_os("AUGUR_TP_UNVERIFIED").is_none() {
        for world in [2, 4] {
            let e = check(TpOp::GemmReduceScatter, s, world, &[pr])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("push-reduce:2 on {world} GPUs: not yet reliable"))
                    && e.contains("AUGUR_TP_UNVERIFIED=1"),
                "{e}"
            );
        }
    }
    let e = err(TpOp::AllGatherGemm, s, TpPattern::Push(128));
    assert!(e.contains("push:128: at most 64 pieces"), "{e}");
    let pc = |pieces, sms| TpPattern::Pc {
        pieces,
        sms,
        push: true,
    };
    let e = err(TpOp::AllGatherGemm, s, pc(2, 300));
    assert!(e.contains("pc-push:2:300: at most 256 SMs"), "{e}");
    let e = err(TpOp::GemmReduceScatter, s, TpPattern::OwnBulk);
    assert!(
        e.contains("own-bulk: for the all-gather + GEMM only"),
        "{e}"
    );
    // The all-reduce takes the reduce-scatter's patterns (its cut and checks too) and refuses
    // the all-gather's.
    let ar = TpOp::GemmAllReduce;
    for q in [
        "bulk",
        "chunked:2",
        "pc-reduce:2:8",
        "fused-reduce:0",
        "fused-reduce:0:2",
    ] {
        let q = TpPattern::parse(q).unwrap();
        assert!(q.applies(ar) && q.applies(TpOp::GemmReduceScatter), "{q:?}");
    }
    let e = err(ar, s, TpPattern::Pull(1));
    assert!(e.contains("pull:1: for the all-gather + GEMM only"), "{e}");
    let e = err(ar, odd_n, TpPattern::parse("pc-reduce:1:8").unwrap());
    assert!(
        e.contains("3 rows x N 6148") && e.contains("16-byte"),
        "{e}"
    );
    assert_eq!(
        split(ar, s, 4).unwrap(),
        split(TpOp::GemmReduceScatter, s, 4).unwrap()
    );
    // fused-all: the all-reduce's only; on one and two GPUs (more only with
    // AUGUR_TP_UNVERIFIED, which the tests do not set).
    let fa = TpPattern::parse("fused-all").unwrap();
    assert_eq!(fa.name(), "fused-all");
    assert!(fa.applies(ar) && !fa.applies(TpOp::GemmReduceScatter));
    let e = err(TpOp::GemmReduceScatter, s, fa);
    assert!(
        e.contains("fused-all: for the GEMM + all-reduce only"),
        "{e}"
    );
    let two = GemmShape { m: 256, ..s };
    assert!(check(ar, two, 2, &[fa]).is_ok());
    // fused-all:K: k / P in K ranges of whole 64-steps (K 1: none).
    let fa2 = TpPattern::parse("fused-all:2").unwrap();
    assert_eq!(fa2, TpPattern::FusedAll { splits: 2 });
    assert_eq!(fa2.name(), "fused-all:2");
    assert_eq!(
        TpPattern::parse("fused-all:1").unwrap().name(),
        "fused-all:1"
    );
    for bad in ["fused-all:0", "fused-all:", "fused-all:x"] {
        let e = TpPattern::parse(bad).unwrap_err().to_string();
        assert!(
            e.contains("fused-all:K (k split in K >= 1 ranges"),
            "{bad}: {e}"
        );
    }
    assert!(check(ar, two, 2, &[fa2]).is_ok());
    let odd_k = GemmShape {
        k: 2 * 64 * 3,
        ..two
    };
    let e = check(ar, odd_k, 2, &[TpPattern::FusedAll { splits: 4 }])
        .unwrap_err()
        .to_string();
    assert!(e.contains("fused-all:4"), "{e}");
    // Any rows per GPU (every map covers the whole sum): 96 here.
    assert!(check(ar, GemmShape { m: 192, ..s }, 2, &[fa]).is_ok());
    if std::env::var_os("AUGUR_TP_UNVERIFIED").is_none() {
        let e = check(ar, GemmShape { m: 512, ..s }, 4, &[fa])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("fused-all on 4 GPUs: checked on one and two only"),
            "{e}"
        );
    }
    // ll-bulk: both operations, a GPU's share in whole 4-byte words (two 16-bit values).
    let ll = TpPattern::LlBulk;
    assert!(ll.applies(TpOp::AllGatherGemm) && ll.applies(TpOp::GemmReduceScatter));
    assert!(check(TpOp::AllGatherGemm, s, 4, &[ll]).is_ok());
    assert!(check(TpOp::GemmReduceScatter, s, 4, &[ll]).is_ok());
    // M 12 on 4 GPUs: 3 rows; N 6145 (the reduce-scatter's share) and K 4101 (the
    // all-gather's) odd, so 3 x 6145 and 3 x 4101 values.
    let odd_n = GemmShape {
        m: 12,
        n: 6145,
        k: 4096,
    };
    // Refused for words that are not whole, naming the pattern, rows and width.
    let not_words = |op, shape, pat, says: &str| {
        let e = err(op, shape, pat);
        assert!(e.contains(says) && e.contains("4-byte words"), "{e}");
    };
    not_words(
        TpOp::GemmReduceScatter,
        odd_n,
        ll,
        "ll-bulk: 3 rows x N 6145 per GPU and piece",
    );
    let odd_k = GemmShape {
        m: 12,
        n: 6144,
        k: 4101,
    };
    not_words(TpOp::AllGatherGemm, odd_k, ll, "ll-bulk: 3 rows x K 4101");
    // pc-ll:C:S: the all-gather's only; each piece whole words (K 4101, 6 rows per GPU in 2
    // pieces of 3).
    let pcll = TpPattern::parse("pc-ll:2:16").unwrap();
    assert_eq!(pcll, TpPattern::PcLl { pieces: 2, sms: 16 });
    assert_eq!(pcll.name(), "pc-ll:2:16");
    assert!(!pcll.applies(TpOp::GemmReduceScatter));
    assert!(check(TpOp::AllGatherGemm, s, 4, &[pcll]).is_ok());
    not_words(
        TpOp::AllGatherGemm,
        GemmShape { m: 24, ..odd_k },
        pcll,
        "pc-ll:2:16: 3 rows x K 4101",
    );
    let even = GemmShape {
        m: 24,
        k: 4102,
        ..odd_k
    };
    assert!(check(TpOp::AllGatherGemm, even, 4, &[pcll]).is_ok());
    let wide = TpPattern::PcLl {
        pieces: 1,
        sms: 300,
    };
    let e = err(TpOp::AllGatherGemm, s, wide);
    assert!(e.contains("pc-ll:1:300: at most 256 SMs"), "{e}");
    // K 4100: a row is 8200 bytes, so 3 rows (M 12 on 4 GPUs) are no whole 16-byte vectors.
    let odd_k = GemmShape {
        m: 12,
        k: 4100,
        ..s
    };
    let e = err(TpOp::AllGatherGemm, odd_k, pc(1, 16));
    assert!(
        e.contains("3 rows x K 4100") && e.contains("16-byte"),
        "{e}"
    );
    let fused = TpPattern::Fused {
        pieces: 1,
        sms: 8,
        push: true,
    };
    let e = err(TpOp::AllGatherGemm, odd_k, fused);
    assert!(
        e.contains("fused-push:1:8") && e.contains("1536 x 4100") && e.contains("multiples of 8"),
        "{e}"
    );
    for bad in [
        "fused-reduce:-1",
        "fused-reduce:x",
        "fused-reduce:2:8",
        "fused-reduce:0:0",
        "fused-reduce:0:4:1",
    ] {
        let e = TpPattern::parse(bad).unwrap_err().to_string();
        assert!(
            e.contains(bad) && e.contains("fused-reduce:S") && e.contains("fused-reduce:0:K"),
            "{e}"
        );
    }
    // fused-reduce:0: the tiles added into their owners' rows, no summing blocks.
    let add = TpPattern::parse("fused-reduce:0").unwrap();
    assert_eq!(add, TpPattern::FusedReduce { sms: 0, splits: 1 });
    assert_eq!(add.name(), "fused-reduce:0");
    assert_eq!(TpPattern::parse("fused-reduce:0:1").unwrap(), add);
    // fused-reduce:0:K: k split, the partials added in f32.
    let split = TpPattern::parse("fused-reduce:0:4").unwrap();
    assert_eq!(split, TpPattern::FusedReduce { sms: 0, splits: 4 });
    assert_eq!(split.name(), "fused-reduce:0:4");
    // 4096 / 4 = 1024 per GPU: 16 steps of 64, no 32 ranges of them.
    let e = err(
        TpOp::GemmReduceScatter,
        s,
        TpPattern::FusedReduce { sms: 0, splits: 32 },
    );
    assert!(
        e.contains("fused-reduce:0:32") && e.contains("16 steps of 64"),
        "{e}"
    );
    assert!(check(TpOp::GemmReduceScatter, s, 2, &[split]).is_ok());
    let e = err(
        TpOp::GemmReduceScatter,
        s,
        TpPattern::FusedReduce { sms: 8, splits: 2 },
    );
    assert!(e.contains("only with 0 summing blocks"), "{e}");
    let fr = TpPattern::FusedReduce { sms: 16, splits: 1 };
    assert!(fr.applies(TpOp::GemmReduceScatter) && !fr.applies(TpOp::AllGatherGemm));
    // N 6148: the sum's rows are no whole 16-byte vectors.
    let e = err(TpOp::GemmReduceScatter, GemmShape { n: 6148, ..s }, fr);
    assert!(
        e.contains("fused-reduce:16") && e.contains("6148 x 1024"),
        "{e}"
    );
    let e = err(TpOp::GemmReduceScatter, s, fused);
    assert!(
        e.contains("fused-push:1:8: for the all-gather + GEMM only"),
        "{e}"
    );
    let e = err(
        TpOp::AllGatherGemm,
        s,
        TpPattern::Fused {
            pieces: 65,
            sms: 8,
            push: true,
        },
    );
    assert!(e.contains("at most 64 pieces"), "{e}");
    assert!(check(TpOp::AllGatherGemm, odd_k, 4, &[TpPattern::Push(1)]).is_ok());
    assert_eq!(
        pieces_of(
            &[
                pc(2, 16),
                TpPattern::OwnBulk,
                TpPattern::Push(2),
                pc(2, 16),
                TpPattern::Fused {
                    pieces: 4,
                    sms: 8,
                    push: false
                }
            ],
            false
        ),
        vec![(2, 0), (2, 16)]
    );
    // The fused launches: one per distinct count of blocks, in order.
    let fused_of = |p: &TpPattern| match p {
        TpPattern::Fused { sms, .. } | TpPattern::FusedReduce { sms, .. } => Some(*sms),
        _ => None,
    };
    let pats: Vec<TpPattern> = [
        "fused-push:2:16",
        "bulk",
        "fused-pull:1:8",
        "fused-reduce:16",
    ]
    .iter()
    .map(|s| TpPattern::parse(s).unwrap())
    .collect();
    assert_eq!(fused_counts(&pats, fused_of), vec![8, 16]);
    assert!(fused_counts(&[TpPattern::Bulk], fused_of).is_empty());
    let launches = [8usize, 16];
    let words = None;
    let e = fused_launch(&launches, |l| *l, 16, words, "fused-reduce")
        .unwrap_err()
        .to_string();
    assert!(e.contains("fused-reduce run without its set-up"), "{e}");
    assert_eq!(
        pieces_of(
            &[
                TpPattern::Chunked(4),
                TpPattern::Bulk,
                TpPattern::Chunked(2)
            ],
            false
        ),
        vec![(2, 0), (4, 0)]
    );
    // pc-push / pc-pull: the copy kernel's own waits on two and four GPUs, the last piece's
    // GEMMs on every SM on two (other counts only when asked).
    let asked = std::env::var_os("AUGUR_TP_UNVERIFIED").is_some();
    use super::ag::{pc_tail, pc_waits, CopyWaits};
    assert_eq!(pc_waits(2), CopyWaits::Ready);
    assert_eq!(pc_waits(4), CopyWaits::Ready);
    let other = if asked {
        CopyWaits::Ready
    } else {
        CopyWaits::Stream
    };
    assert_eq!((pc_waits(3), pc_waits(8)), (other, other));
    assert!(pc_tail(2));
    assert_eq!((pc_tail(4), pc_tail(8)), (asked, asked));
    // pc-push / pc-pull: with pc_tail the last piece's GEMMs on every SM too, else not.
    assert_eq!(
        pieces_of(&[pc(1, 8), pc(2, 16)], true),
        vec![(1, 0), (1, 8), (2, 0), (2, 16)]
    );
    assert_eq!(
        pieces_of(&[pc(1, 8), pc(2, 16)], false),
        vec![(1, 8), (2, 16)]
    );
}
