use augur_features::spmv::{known, sample_into, CsrPattern};
fn build(rows: usize, per: usize, cols: usize, local: bool) -> (Vec<i32>, Vec<i32>) {
    let mut p = vec![0i32];
    let mut i = Vec::new();
    let mut z = 12345u64;
    for r in 0..rows {
        let mut v: Vec<i32> = (0..per)
            .map(|k| {
                if local {
                    ((r + k * 7) % cols) as i32
                } else {
                    z = z
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((z >> 33) as usize % cols) as i32
                }
            })
            .collect();
        v.sort();
        v.dedup();
        i.extend(v);
        p.push(i.len() as i32);
    }
    (p, i)
}
fn main() {
    for (rows, per, local) in [
        (1000usize, 5usize, true),
        (250_000, 6, true),
        (1_000_000, 9, false),
        (4_000_000, 10, true),
    ] {
        let (p, i) = build(rows, per, rows, local);
        let m = CsrPattern {
            rows,
            cols: rows,
            indptr: &p,
            indices: &i,
        };
        let mut f = known(m);
        let mut ts = vec![];
        for _ in 0..21 {
            let t = std::time::Instant::now();
            sample_into(m, &mut f);
            ts.push(t.elapsed().as_secs_f64() * 1e6);
        }
        ts.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "rows {rows} nnz {}: median {:.2} us min {:.2} | {:.4} {:.4} {:.4}",
            i.len(),
            ts[10],
            ts[0],
            f.sampled_warp_seg_per_entry,
            f.sampled_diag_dist,
            f.sampled_max_mean_ratio
        );
    }
}
