//! Conjugate gradients (Jacobi-preconditioned) through augur: the SpMV plan is selected and set
//! up once for the expected iteration count, then applied every iteration; on `--gpus N` the
//! product runs on N GPUs (MultiGpuSpmv). The right-hand side is `A * ones`, so the error of
//! the solution is known.
//!
//! ```text
//! cargo run --release -p augur --example cg                      # generated 3D stencil, L + I
//! cargo run --release -p augur --example cg -- ../shared/matrices/suitesparse/bcsstk16.mtx.gz
//! cargo run --release -p augur --example cg -- stencil3d:nx=300,points=27 --gpus 4
//! ```

mod common;

use std::time::Instant;

use common::{args, dot, spd_matrix, Operator, Res};

fn main() -> Res<()> {
    let args = args(1000)?;
    let a = spd_matrix(&args.matrix)?;
    let n = a.rows();
    if n != a.cols() {
        return Err(format!(
            "CG needs a square matrix, {} is {} x {}",
            args.matrix,
            n,
            a.cols()
        )
        .into());
    }
    println!("{}: {} x {}, {} nonzeros", args.matrix, n, n, a.nnz());
    let t = Instant::now();
    let mut op = Operator::new(&a, &args)?;
    println!("plan made in {:.2} ms", t.elapsed().as_secs_f64() * 1e3);

    // b = A * ones; x0 = 0; Jacobi preconditioner M = diag(A).
    let ones = vec![1.0; n];
    let mut b = vec![0.0; n];
    op.apply(&ones, &mut b)?;
    let diag: Vec<f64> = (0..n)
        .map(|r| a.get(r, r).copied().filter(|d| *d != 0.0).unwrap_or(1.0))
        .collect();
    let mut x = vec![0.0; n];
    let mut r = b.clone();
    let mut z: Vec<f64> = r.iter().zip(&diag).map(|(r, d)| r / d).collect();
    let mut p = z.clone();
    let mut ap = vec![0.0; n];
    let mut rz = dot(&r, &z);
    let bnorm = dot(&b, &b).sqrt().max(f64::MIN_POSITIVE);
    let tol = 1e-8;
    let t = Instant::now();
    let mut it = 0;
    let mut rel = dot(&r, &r).sqrt() / bnorm;
    while it < args.iterations && rel > tol {
        op.apply(&p, &mut ap)?;
        let alpha = rz / dot(&p, &ap);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
            z[i] = r[i] / diag[i];
        }
        let rz_new = dot(&r, &z);
        let beta = rz_new / rz;
        rz = rz_new;
        for i in 0..n {
            p[i] = z[i] + beta * p[i];
        }
        it += 1;
        rel = dot(&r, &r).sqrt() / bnorm;
    }
    let secs = t.elapsed().as_secs_f64();
    let err = x.iter().map(|v| (v - 1.0).abs()).fold(0.0, f64::max);
    println!(
        "CG: {it} iterations, relative residual {rel:.2e}, max |x - 1| = {err:.2e}, {:.3} ms per \
         iteration ({:.2} s)",
        secs / it.max(1) as f64 * 1e3,
        secs
    );
    if rel > tol {
        return Err(format!("CG did not reach {tol:e} in {it} iterations").into());
    }
    Ok(())
}
