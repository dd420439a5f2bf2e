//! What a plan's host work beside the upload costs on this machine (issue 18): a clock read, the
//! hand-off of a job to a rayon worker after the pool has idled 0, 1 and 10 ms (what the calling
//! thread pays to wake it, and when the job runs), and the gathered tier's row pass
//! (`spmv::row_features`, `spmv::cpu_row_sums`) on each matrix given. Run on a GPU machine's host:
//! `cargo build --release -p augur --example host_costs`, then `host_costs MATRIX...`.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = 100_000;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(Instant::now());
    }
    println!(
        "Instant::now: {:.1} ns",
        t.elapsed().as_secs_f64() * 1e9 / n as f64
    );
    rayon::broadcast(|_| ());
    for pause_ms in [0u64, 1, 10] {
        let mut v = Vec::new();
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(pause_ms));
            let f = Arc::new(AtomicBool::new(false));
            let g = f.clone();
            let t0 = Instant::now();
            rayon::spawn(move || g.store(true, Ordering::Release));
            let t1 = Instant::now();
            while !f.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            let t2 = Instant::now();
            v.push(((t1 - t0).as_secs_f64() * 1e6, (t2 - t0).as_secs_f64() * 1e6));
        }
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        println!(
            "after {pause_ms} ms idle: spawn returns {:.2} us (median), job ran by {:.2} us",
            v[10].0,
            {
                let mut w: Vec<f64> = v.iter().map(|x| x.1).collect();
                w.sort_by(|a, b| a.total_cmp(b));
                w[10]
            }
        );
    }
    for spec in std::env::args().skip(1) {
        let (m, _) = augur::datasets::source::MatrixSource::parse(&spec)?.load::<f32>()?;
        let p = augur::features::spmv::CsrPattern::of(&m);
        // Median of 9 runs, microseconds.
        let median_us = |f: &dyn Fn()| {
            let mut v: Vec<f64> = (0..9)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            v.sort_by(|a, b| a.total_cmp(b));
            v[4]
        };
        let rows_us = median_us(&|| {
            std::hint::black_box(augur::features::spmv::row_features(p));
        });
        let alone_us = median_us(&|| {
            std::hint::black_box(augur::features::spmv::row_features_on(
                p,
                augur::features::spmv::PassOn::Caller,
            ));
        });
        let known = augur::features::spmv::known(p);
        let sample_us = median_us(&|| {
            let mut f = known.clone();
            augur::features::spmv::sample_into(p, &mut f);
            std::hint::black_box(f);
        });
        let sums_us = median_us(&|| {
            std::hint::black_box(augur::features::spmv::cpu_row_sums(p));
        });
        println!(
            "{spec}: rows {} row_features {:.1} us, on this thread alone {:.1} us, cpu_row_sums {:.1} us, sample_into {:.1} us (medians, {} threads)",
            m.rows(),
            rows_us,
            alone_us,
            sums_us,
            sample_us,
            rayon::current_num_threads()
        );
    }
    Ok(())
}
