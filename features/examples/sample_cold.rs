//! What the sampled tier costs on the calling thread with the matrix out of the caches (issue 18):
//! for each generator spec, the tier (`sample_into`) and the longest-row probe alone, each run
//! after a 1 GiB buffer (larger than the last-level caches seen here, 300 MiB) is written
//! through to evict the CSR arrays; medians and minima of 9.
//! A plan does this work on a helper thread beside the upload; this says what doing it inline
//! would cost instead.
//!
//!     cargo run --release -p augur-features --example sample_cold -- SPEC...
//!     (e.g. uniform:rows=1e6,cols=1e6,row_len=8,seed=1)

use augur_datasets::generate::Generator;
use augur_features::spmv::{known, probe_longest_row, sample_into, CsrPattern};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut evict = vec![1u8; 1 << 30];
    let mut flush = |salt: u8| {
        for (i, v) in evict.iter_mut().enumerate().step_by(64) {
            *v = v.wrapping_add(i as u8 ^ salt);
        }
        std::hint::black_box(&evict);
    };
    println!("spec,rows,nnz,tier_median_us,tier_min_us,probe_median_us,probe_min_us");
    for spec in std::env::args().skip(1) {
        let a = Generator::parse(&spec)?.generate::<f32>()?;
        let m = CsrPattern::of(&a);
        let mut f = known(m);
        let (mut tier, mut probe) = (Vec::new(), Vec::new());
        for rep in 0..9u8 {
            flush(rep);
            let t = Instant::now();
            sample_into(m, &mut f);
            tier.push(t.elapsed().as_secs_f64() * 1e6);
            flush(rep.wrapping_add(100));
            let t = Instant::now();
            std::hint::black_box(probe_longest_row(m.indptr));
            probe.push(t.elapsed().as_secs_f64() * 1e6);
        }
        tier.sort_by(f64::total_cmp);
        probe.sort_by(f64::total_cmp);
        println!(
            "{spec},{},{},{:.1},{:.1},{:.1},{:.1}",
            m.rows,
            m.indptr.last().copied().unwrap_or(0),
            tier[4],
            tier[0],
            probe[4],
            probe[0]
        );
    }
    Ok(())
}
