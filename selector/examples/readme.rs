use augur::{Backend, PlanOptions, SpmvPlan};

fn main() -> Result<(), augur::AugurError> {
    // A generator spec, or a Matrix Market file (`.mtx` or `.mtx.gz`).
    let a = augur::datasets::MatrixSource::parse("stencil2d:nx=300")?
        .load::<f32>()?
        .0;
    let x = vec![1.0f32; a.cols()];
    let mut y = vec![0.0f32; a.rows()];
    let backend = Backend::auto(); // GPU 0 when CUDA is present, else the rayon CPU kernels
    let opts = PlanOptions::default().expected_iterations(500);
    let mut plan = SpmvPlan::new(&a, &backend, opts)?; // features, choice, upload, kernel setup
    println!("{}", plan.decision()); // kernel, and feature = value vs threshold at each node
    for _ in 0..500 {
        plan.run(&x, &mut y)?; // y = A x
    }
    // Row 0 of the 5-point Laplacian (4 on the diagonal, -1 to two neighbours) times ones.
    assert_eq!(y[0], 2.0);
    Ok(())
}
