//! Power iteration through augur: the largest eigenvalue (in magnitude) of a matrix. With
//! `--gpus N` the iterate stays on the GPUs: `MultiGpuSpmv::iterate` runs `x <- A x` with the
//! all-gathered y as the next x, and the host only normalises every few steps.
//!
//! ```text
//! cargo run --release -p augur --example power_iteration          # generated 3D stencil, L + I
//! cargo run --release -p augur --example power_iteration -- ../shared/matrices/suitesparse/1138_bus.mtx.gz
//! cargo run --release -p augur --example power_iteration -- stencil3d:nx=300,points=27 --gpus 4
//! ```

mod common;

use std::time::Instant;

use common::{args, dot, spd_matrix, Operator, Res};

/// Products between normalisations on the GPUs (the values grow by at most the largest
/// eigenvalue per product; 8 stay far from overflow for these matrices).
const STEPS: usize = 8;

fn main() -> Res<()> {
    let args = args(400)?;
    if args.distributed {
        // Its quotients read the whole x on the host, which a rank of a group does not hold.
        return Err(
            "power_iteration runs in one process: use --gpus N (the cg example takes \
                    --distributed)"
                .into(),
        );
    }
    let a = spd_matrix(&args.matrix)?;
    let n = a.rows();
    if n != a.cols() {
        return Err(format!(
            "power iteration needs a square matrix, not {} x {}",
            n,
            a.cols()
        )
        .into());
    }
    println!("{}: {} x {}, {} nonzeros", args.matrix, n, n, a.nnz());
    let mut op = Operator::new(&a, &args)?;
    // A start with a component along every eigenvector (not a constant vector: for L + I that
    // is an eigenvector of the smallest eigenvalue).
    let mut x: Vec<f64> = (0..n)
        .map(|i| 1.0 + ((i * 7919) % 1000) as f64 / 1000.0)
        .collect();
    let norm = dot(&x, &x).sqrt();
    x.iter_mut().for_each(|v| *v /= norm);
    let mut y = vec![0.0; n];
    let mut lambda = 0.0;
    let t = Instant::now();
    let mut done = 0;
    while done < args.iterations as usize {
        let steps = STEPS.min(args.iterations as usize - done);
        match &mut op {
            Operator::Multi(m) => {
                // steps - 1 products on the GPUs, then one through the host for the quotient.
                m.set_x(&x)?;
                m.iterate(steps - 1)?;
                x = m.x()?;
                let norm = dot(&x, &x).sqrt();
                x.iter_mut().for_each(|v| *v /= norm);
                m.run(&x, &mut y)?;
            }
            Operator::One(_) => {
                for _ in 0..steps {
                    op.apply(&x, &mut y)?;
                    let norm = dot(&y, &y).sqrt();
                    x.iter_mut().zip(&y).for_each(|(xi, yi)| *xi = yi / norm);
                }
                op.apply(&x, &mut y)?;
            }
        }
        // Rayleigh quotient of the normalised x.
        let new = dot(&x, &y);
        let norm = dot(&y, &y).sqrt();
        x.iter_mut().zip(&y).for_each(|(xi, yi)| *xi = yi / norm);
        done += steps;
        let change = (new - lambda).abs() / new.abs().max(f64::MIN_POSITIVE);
        lambda = new;
        if change < 1e-10 {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    // Residual ||A x - lambda x|| of the final unit x.
    op.apply(&x, &mut y)?;
    let res = y
        .iter()
        .zip(&x)
        .map(|(yi, xi)| (yi - lambda * xi).powi(2))
        .sum::<f64>()
        .sqrt();
    if !lambda.is_finite() || res > 0.05 * lambda.abs() {
        return Err(
            format!("power iteration did not settle: lambda {lambda}, residual {res:.2e}").into(),
        );
    }
    println!(
        "power iteration: {done} products, largest eigenvalue {lambda:.10}, residual \
         ||Ax - lambda x|| = {res:.2e}, {:.2} s",
        secs
    );
    Ok(())
}
