//! Conjugate gradients (Jacobi-preconditioned) through augur: the SpMV plan is selected and set
//! up once for the expected iteration count, then applied every iteration; on `--gpus N` the
//! product runs on N GPUs (MultiGpuSpmv). The right-hand side is `A * ones`, so the error of
//! the solution is known.
//!
//! ```text
//! cargo run --release -p augur --example cg                      # generated 3D stencil, L + I
//! cargo run --release -p augur --example cg -- ../shared/matrices/suitesparse/bcsstk16.mtx.gz
//! cargo run --release -p augur --example cg -- stencil3d:nx=300,points=27 --gpus 4 --halo
//! ```
//!
//! On `--gpus N` the whole iteration runs on the GPUs (`MultiGpuSpmv::cg`: dot products summed
//! over the GPUs by NCCL, scalars in device memory); elsewhere the vectors live on the host.

mod common;

use std::time::Instant;

use augur::multi::Group;
use augur::{AugurError, MultiGpuSpmv};
use common::{args, dot, explain, multi_options, spd_matrix, Args, Operator, Res};

const TOL: f64 = 1e-8;

fn main() -> Res<()> {
    let args = args(1000)?;
    if args.distributed {
        return distributed(&args);
    }
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

    // b = A * ones (the row sums); x0 = 0; Jacobi preconditioner M = diag(A).
    let ones = vec![1.0; n];
    let mut b = vec![0.0; n];
    match &mut op {
        Operator::One(_) => op.apply(&ones, &mut b)?,
        // Every rank of a group needs b's rows of its own shard: from the host here.
        Operator::Multi(_) => {
            let ptr = a.indptr();
            let ptr = ptr.raw_storage();
            for (r, v) in b.iter_mut().enumerate() {
                *v = a.data()[ptr[r] as usize..ptr[r + 1] as usize].iter().sum();
            }
        }
    }
    if let Operator::Multi(m) = &mut op {
        return on_gpus(m, &b, &args);
    }
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
    let tol = TOL;
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

/// One rank of a group the launcher started: rank 0 loads the matrix and sends each rank its
/// part (`MultiGpuSpmv::distributed_from_root`); every rank makes b's entries of its own rows
/// from them.
fn distributed(args: &Args) -> Res<()> {
    let g = Group::join(std::time::Duration::from_secs(120))?
        .ok_or("--distributed: no launcher set RANK / WORLD_SIZE")?;
    println!("rank {} of {}", g.env.rank, g.env.world);
    let spec = args.matrix.clone();
    let t = Instant::now();
    let (mut m, share) = MultiGpuSpmv::distributed_from_root(
        || spd_matrix(&spec).map_err(|e| AugurError::Invalid(format!("{spec}: {e}"))),
        &g,
        multi_options(args),
        true,
    )?;
    println!(
        "{}: {} x {}, {} nonzeros; this rank holds rows {:?}",
        args.matrix, share.rows, share.cols, share.nnz, share.own
    );
    if share.rows != share.cols {
        return Err(format!(
            "CG needs a square matrix, {} is {} x {}",
            args.matrix, share.rows, share.cols
        )
        .into());
    }
    println!("plan made in {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
    explain(&m);
    // b = A * ones: this rank's entries are its rows' sums (cg reads no others).
    let own = share
        .own_rows
        .as_ref()
        .ok_or("the rank's rows were not kept")?;
    let mut b = vec![0.0; share.rows];
    for (r, v) in b[share.own.clone()].iter_mut().enumerate() {
        *v = own.outer_view(r).map_or(0.0, |row| row.data().iter().sum());
    }
    on_gpus(&mut m, &b, args)
}

/// CG on the GPUs: every vector and scalar stays there (`MultiGpuSpmv::cg`); the host reads the
/// residual every 10 iterations.
fn on_gpus(m: &mut MultiGpuSpmv<f64>, b: &[f64], args: &Args) -> Res<()> {
    let t = Instant::now();
    let r = m.cg(b, TOL, args.iterations as usize, 10)?;
    let secs = t.elapsed().as_secs_f64();
    // The rows this process's GPUs hold (all of them, but across processes).
    let bounds = m.row_bounds();
    let err = m
        .local_ranks()
        .iter()
        .flat_map(|&q| &r.x[bounds[q]..bounds[q + 1]])
        .map(|v| (v - 1.0).abs())
        .fold(0.0, f64::max);
    let rel = r.relative_residuals.last().copied().unwrap_or(0.0);
    println!(
        "CG on the GPUs: {} iterations to {TOL:e} ({} enqueued), relative residual {rel:.2e}, \
         max |x - 1| = {err:.2e}, {:.3} ms per iteration (set-up {:.1} ms; {secs:.2} s in all)",
        r.iterations.map_or("no".into(), |i| i.to_string()),
        r.enqueued,
        r.solve_s / r.enqueued.max(1) as f64 * 1e3,
        r.setup_s * 1e3,
    );
    match r.iterations {
        Some(_) => Ok(()),
        None => Err(format!("CG did not reach {TOL:e} in {} iterations", r.enqueued).into()),
    }
}
