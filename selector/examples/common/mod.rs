//! What the examples share: argument parsing, the matrix, and one operator over a single-device
//! plan or a multi-GPU one.

use std::error::Error;

use augur::datasets::{Csr, MatrixSource};
use augur::multi::Group;
use augur::{Backend, GatherMode, MultiGpuSpmv, MultiOptions, PlanOptions, SpmvPlan};

pub type Res<T> = Result<T, Box<dyn Error>>;

/// `[MATRIX] [--gpus N | --distributed] [--halo] [--cpu] [--iterations K]`; MATRIX defaults to
/// a generated 3D stencil. `--distributed`: this process is one rank of a group the launcher
/// started (torchrun, mpirun, srun; one GPU each).
pub struct Args {
    pub matrix: String,
    pub gpus: Option<usize>,
    /// With --gpus: exchange only the halo (else the comm model's all-gather or the halo).
    pub halo: bool,
    pub distributed: bool,
    pub cpu: bool,
    pub iterations: u32,
}

pub fn args(default_iterations: u32) -> Res<Args> {
    let mut a = Args {
        matrix: "stencil3d:nx=48,points=27".into(),
        gpus: None,
        halo: false,
        distributed: false,
        cpu: false,
        iterations: default_iterations,
    };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--gpus" => a.gpus = Some(it.next().ok_or("--gpus needs a count")?.parse()?),
            "--cpu" => a.cpu = true,
            "--halo" => a.halo = true,
            "--distributed" => a.distributed = true,
            "--iterations" => {
                a.iterations = it.next().ok_or("--iterations needs a count")?.parse()?
            }
            s if s.starts_with("--") => return Err(format!("unknown option {s}").into()),
            s => a.matrix = s.to_string(),
        }
    }
    Ok(a)
}

/// The matrix as a symmetric positive definite one: a generated pattern (symmetric for the
/// stencils) gets graph-Laplacian values plus the identity, `L + I` (diagonally dominant);
/// a file is taken as it is (use an SPD one, e.g. bcsstk or *_bus).
pub fn spd_matrix(spec: &str) -> Res<Csr<f64>> {
    let src = MatrixSource::parse(spec)?;
    let (a, _) = src.load::<f64>()?;
    if std::path::Path::new(spec).exists() {
        return Ok(a);
    }
    let ptr = a.indptr().raw_storage().to_vec();
    let idx = a.indices().to_vec();
    let mut val = vec![0.0; idx.len()];
    for r in 0..a.rows() {
        let (s, e) = (ptr[r] as usize, ptr[r + 1] as usize);
        let off = idx[s..e].iter().filter(|&&c| c as usize != r).count() as f64;
        for k in s..e {
            val[k] = if idx[k] as usize == r {
                off + 1.0
            } else {
                -1.0
            };
        }
    }
    Ok(Csr::new((a.rows(), a.cols()), ptr, idx, val))
}

/// The multi-GPU options the arguments ask for.
pub fn multi_options(args: &Args) -> MultiOptions {
    let opts = PlanOptions::default().expected_iterations(args.iterations);
    let mopts = MultiOptions::default().plan(opts);
    if args.halo {
        mopts.gather(GatherMode::Halo)
    } else {
        mopts
    }
}

/// Print the exchange chosen and every shard's decision.
pub fn explain(m: &MultiGpuSpmv<f64>) {
    println!("exchange: {}", m.gather().mode.name());
    for note in &m.gather().notes {
        println!("  {note}");
    }
    for s in m.shards() {
        println!("shard {} on GPU {} (rows {:?}):", s.rank, s.gpu, s.rows);
        print!("{}", s.decision);
    }
}

/// `y = A x` through a single-device plan or across GPUs.
pub enum Operator<'a> {
    One(Box<SpmvPlan<'a, f64>>),
    Multi(Box<MultiGpuSpmv<f64>>),
}

impl<'a> Operator<'a> {
    /// A plan for `iterations` products: on `--gpus N` GPUs, else on the CPU with `--cpu`, else
    /// on GPU 0 when present, else on the CPU. Prints each decision and why.
    pub fn new(a: &'a Csr<f64>, args: &Args) -> Res<Operator<'a>> {
        let opts = PlanOptions::default().expected_iterations(args.iterations);
        if args.gpus.is_some() || args.distributed {
            let mopts = multi_options(args);
            let m = match args.gpus {
                Some(n) => {
                    let ordinals: Vec<usize> = (0..n).collect();
                    MultiGpuSpmv::on_devices(a, &ordinals, mopts)?
                }
                None => {
                    let g = Group::join(std::time::Duration::from_secs(120))?
                        .ok_or("--distributed: no launcher set RANK / WORLD_SIZE")?;
                    println!("rank {} of {}", g.env.rank, g.env.world);
                    MultiGpuSpmv::distributed(a, &g, mopts)?
                }
            };
            explain(&m);
            return Ok(Operator::Multi(Box::new(m)));
        }
        let backend = if args.cpu {
            Backend::cpu()
        } else {
            Backend::auto()
        };
        let p = SpmvPlan::new(a, &backend, opts)?;
        println!("{} on {}:", backend.kind(), backend.device());
        print!("{}", p.decision());
        Ok(Operator::One(Box::new(p)))
    }

    pub fn apply(&mut self, x: &[f64], y: &mut [f64]) -> Res<()> {
        match self {
            Operator::One(p) => p.run(x, y)?,
            Operator::Multi(m) => m.run(x, y)?,
        }
        Ok(())
    }
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
