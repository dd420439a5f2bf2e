//! Attention-shape and message features: exact values, spec parsing, clear errors.

use augur_features::attention::{AttentionShape, Dtype, KvLayout};
use augur_features::message::{Collective, LinkProbe, LinkType, MessageShape};
use augur_features::FeatureError;

#[test]
fn attention_features_exact() {
    let s = AttentionShape::parse(
        "attention:q_heads=32,kv_heads=8,head_dim=128,dtype=f16,lens=4096*2;16*30,page=16",
    )
    .unwrap();
    assert_eq!(s.kv_lens.len(), 32);
    assert_eq!(s.layout, KvLayout::Paged { page_size: 16 });
    let f = s.features().unwrap();
    let total = 2.0 * 4096.0 + 30.0 * 16.0;
    let mean = total / 32.0;
    let var =
        (2.0 * (4096.0 - mean) * (4096.0 - mean) + 30.0 * (16.0 - mean) * (16.0 - mean)) / 32.0;
    assert_eq!(
        (f.batch, f.q_heads, f.kv_heads, f.gqa_group),
        (32.0, 32.0, 8.0, 4.0)
    );
    assert_eq!((f.head_dim, f.dtype_bytes, f.query_len), (128.0, 2.0, 1.0));
    assert_eq!((f.total_kv_tokens, f.kv_len_mean), (total, mean));
    assert_eq!(
        (f.kv_len_max, f.kv_len_min, f.kv_len_max_mean),
        (4096.0, 16.0, 4096.0 / mean)
    );
    assert!((f.kv_len_cv - var.sqrt() / mean).abs() < 1e-12);
    assert_eq!((f.paged, f.page_size), (1.0, 16.0));
    // K and V of every live token of every KV head (not query head), 2 bytes each.
    assert_eq!(f.kv_bytes, 2.0 * total * 8.0 * 128.0 * 2.0);
    assert_eq!(f.seq_kv_head_pairs, 32.0 * 8.0);
    assert_eq!(
        f.values().len(),
        augur_features::attention::AttentionFeatures::schema()
            .features
            .len()
    );

    let uniform = AttentionShape {
        q_heads: 8,
        kv_heads: 8,
        head_dim: 64,
        dtype: Dtype::Bf16,
        query_len: 1,
        kv_lens: vec![100; 5],
        layout: KvLayout::Contiguous,
    };
    let f = uniform.features().unwrap();
    assert_eq!(
        (f.kv_len_cv, f.gqa_group, f.paged, f.page_size),
        (0.0, 1.0, 0.0, 0.0)
    );
    // Length-0 sequences are legal (nothing to attend to).
    let with_empty = AttentionShape::parse("attention:q_heads=4,lens=0;10").unwrap();
    assert_eq!(with_empty.features().unwrap().kv_len_min, 0.0);
}

#[test]
fn attention_errors() {
    for (spec, needle) in [
        (
            "attention:q_heads=6,kv_heads=4,lens=8",
            "multiple of kv_heads",
        ),
        ("attention:kv_heads=4,lens=8", "needs `q_heads=`"),
        ("attention:q_heads=4", "needs `lens=`"),
        ("attention:q_heads=4,lens=8,dtype=int8", "dtype `int8`"),
        (
            "attention:q_heads=4,lens=8,pages=16",
            "unknown parameter `pages`",
        ),
        ("attention:q_heads=4,lens=8;x", "KV length `x`"),
        (
            "attention:q_heads=4,lens=8,page=0",
            "page size must be >= 1",
        ),
        ("attn:q_heads=4", "expected `attention:"),
    ] {
        match AttentionShape::parse(spec) {
            Err(e @ FeatureError::Spec { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(needle) && msg.contains(spec), "{spec}: {msg}");
            }
            other => panic!("{spec}: expected a spec error, got {other:?}"),
        }
    }
    let empty = AttentionShape {
        q_heads: 1,
        kv_heads: 1,
        head_dim: 64,
        dtype: Dtype::F16,
        query_len: 1,
        kv_lens: vec![],
        layout: KvLayout::Contiguous,
    };
    assert!(matches!(empty.features(), Err(FeatureError::Shape(_))));
}

#[test]
fn message_features_exact() {
    let m = MessageShape::parse("message:collective=all-reduce,bytes=64KiB,world=4,dtype=bf16")
        .unwrap();
    assert_eq!(
        (m.collective, m.link),
        (Collective::AllReduce, LinkType::Nvlink)
    );
    let f = m.features().unwrap();
    assert_eq!((f.bytes, f.log2_bytes, f.elem_bytes), (65536.0, 16.0, 2.0));
    assert_eq!(
        (f.all_reduce, f.all_gather, f.reduce_scatter),
        (1.0, 0.0, 0.0)
    );
    assert_eq!(f.bus_bytes, 65536.0 * 2.0 * 3.0 / 4.0);
    assert_eq!(f.shard_bytes, 16384.0);
    assert_eq!(
        (f.link_nvlink, f.link_pcie, f.same_device, f.gemm_flops),
        (1.0, 0.0, 0.0, 0.0)
    );

    let g = MessageShape::parse(
        "message:collective=all-gather,bytes=2^20,world=2,link=pcie,gemm=4096x1024x512",
    )
    .unwrap()
    .features()
    .unwrap();
    assert_eq!(g.bus_bytes, 1048576.0 / 2.0);
    assert_eq!(
        (g.link_pcie, g.gemm_m, g.gemm_n, g.gemm_k),
        (1.0, 4096.0, 1024.0, 512.0)
    );
    assert_eq!(g.gemm_flops, 2.0 * 4096.0 * 1024.0 * 512.0);

    let one = MessageShape::parse("message:collective=reduce-scatter,bytes=1MiB,world=1").unwrap();
    assert_eq!(one.link, LinkType::SameDevice);
    let f = one.features().unwrap();
    assert_eq!((f.bus_bytes, f.same_device), (0.0, 1.0));
}

#[test]
fn message_errors() {
    for (spec, needle) in [
        (
            "message:collective=broadcast,bytes=8,world=2",
            "collective `broadcast`",
        ),
        (
            "message:collective=all-reduce,bytes=6,world=2",
            "not a whole number of F32 elements",
        ),
        (
            "message:collective=all-reduce,bytes=8,world=2,link=same-device",
            "several mean a link",
        ),
        (
            "message:collective=all-reduce,bytes=8,world=0",
            "world size must be >= 1",
        ),
        (
            "message:collective=all-reduce,bytes=8,world=2,gemm=4x4",
            "is not MxNxK",
        ),
        (
            "message:collective=all-reduce,bytes=1.5,world=2",
            "not a whole number",
        ),
        ("message:collective=all-reduce,world=2", "needs `bytes=`"),
    ] {
        match MessageShape::parse(spec) {
            Err(e @ FeatureError::Spec { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(needle), "{spec}: {msg}");
            }
            other => panic!("{spec}: expected a spec error, got {other:?}"),
        }
    }
}

/// A group's link is its slowest pair.
#[test]
fn group_link_is_the_slowest_pair() {
    struct Table;
    impl LinkProbe for Table {
        fn link(&self, a: usize, b: usize) -> Result<LinkType, FeatureError> {
            Ok(if a / 2 == b / 2 {
                LinkType::Nvlink
            } else {
                LinkType::Pcie
            })
        }
    }
    assert_eq!(Table.group_link(&[0]).unwrap(), LinkType::SameDevice);
    assert_eq!(Table.group_link(&[0, 1]).unwrap(), LinkType::Nvlink);
    assert_eq!(Table.group_link(&[0, 1, 2]).unwrap(), LinkType::Pcie);
}

/// Without a GPU, driver or library the CUDA backend answers with a clear error, never a panic;
/// with one, the driver's link probe answers for every pair.
#[test]
fn cuda_probe_is_a_clear_error_or_an_answer() {
    use augur_kernels::cuda;
    match cuda::available() {
        Err(e) => {
            let msg = e.to_string();
            assert!(
                // The library names what is missing, not a flag of the command-line tool.
                msg.contains("no CUDA device") && !msg.contains("--backend"),
                "{msg}"
            );
            assert!(cuda::devices().is_err());
            let probe = cuda::DriverLinkProbe.group_link(&[0, 1]);
            assert!(matches!(probe, Err(FeatureError::Probe(_))), "{probe:?}");
            // A single device needs no driver: same-device.
            assert_eq!(
                cuda::DriverLinkProbe.group_link(&[0]).unwrap(),
                LinkType::SameDevice
            );
        }
        Ok(n) => {
            let devices = cuda::devices().unwrap();
            assert_eq!(devices.len(), n);
            let all: Vec<usize> = (0..n).collect();
            cuda::DriverLinkProbe.group_link(&all).unwrap();
            assert!(
                cuda::peer(0, n).is_err(),
                "a GPU beyond the count is an error"
            );
        }
    }
}
