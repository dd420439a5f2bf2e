//! What handing a plan's host work to another thread beside the upload costs the calling thread
//! on a GPU machine (issue 18), taken apart. For each matrix given: the upload alone, then the
//! upload with work handed off before it by each way, each way timed as a plan times it (the
//! hand-off before the upload, and the wait after it), and when the work started and how long
//! it ran. Ways: `rayon` (`rayon::spawn`, what plans do), `thread` (one helper thread of this
//! program, parked between jobs, woken by `unpark`), `inline` (the work on the calling thread
//! after the upload: no hand-off). Work: `sample` (the sampled tier: bounded, a few thousand
//! entries), `rows-pool` (the gathered tier's row pass on the rayon pool), `rows-alone` (the same
//! pass on the thread that runs it). Every sample follows an upload of the same matrix, as in
//! `augur collect`. Run on the GPU machine's host:
//! `cargo build --release -p augur --example handoff`, then `handoff MATRIX...`; a CSV on stdout.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::Instant;

use augur::features::spmv::{self as fs, CsrPattern, PassOn};
use augur::kernels::cuda::CudaSpmv;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// One helper thread, parked between jobs.
struct Helper {
    job: Arc<Mutex<Option<Job>>>,
    thread: Thread,
}

impl Helper {
    fn new() -> Helper {
        let job: Arc<Mutex<Option<Job>>> = Arc::new(Mutex::new(None));
        let j = job.clone();
        let h = std::thread::spawn(move || loop {
            let next = j.lock().unwrap().take();
            match next {
                Some(f) => f(),
                None => std::thread::park(),
            }
        });
        Helper {
            job,
            thread: h.thread().clone(),
        }
    }
    fn run(&self, f: Job) {
        *self.job.lock().unwrap() = Some(f);
        self.thread.unpark();
    }
}

#[derive(Clone, Copy)]
enum Way {
    Rayon,
    Thread,
    Inline,
}

#[derive(Clone, Copy)]
enum Work {
    Sample,
    RowsPool,
    RowsAlone,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = CudaSpmv::new(0)?;
    let helper = Helper::new();
    rayon::broadcast(|_| ());
    println!(
        "matrix,rows,nnz,way,work,upload_us,handoff_us,wait_us,charged_us,job_start_us,job_us"
    );
    for spec in std::env::args().skip(1) {
        let (m, _) = augur::datasets::source::MatrixSource::parse(&spec)?.load::<f32>()?;
        // The matrix's arrays for the jobs, 'static: leaked (a probe, a few matrices).
        let m: &'static _ = Box::leak(Box::new(m));
        let p = CsrPattern::of(m);
        let known = fs::known(p);
        let reps = if m.nnz() > 20_000_000 { 5 } else { 9 };
        let upload = || -> Result<f64, Box<dyn std::error::Error>> {
            let t = Instant::now();
            let d = gpu.upload(m)?;
            gpu.stream().synchronize()?;
            let s = t.elapsed().as_secs_f64();
            drop(d);
            Ok(s)
        };
        upload()?;
        let up = median((0..reps).map(|_| upload()).collect::<Result<Vec<_>, _>>()?);
        for way in [Way::Rayon, Way::Thread, Way::Inline] {
            for work in [Work::Sample, Work::RowsPool, Work::RowsAlone] {
                let mut rows: Vec<[f64; 5]> = Vec::new();
                for rep in 0..=reps {
                    upload()?;
                    let done = Arc::new(AtomicBool::new(false));
                    let times = Arc::new(Mutex::new((0.0f64, 0.0f64)));
                    let t0 = Instant::now();
                    let job = {
                        let (done, times, known) = (done.clone(), times.clone(), known.clone());
                        move || {
                            let s = Instant::now();
                            match work {
                                Work::Sample => {
                                    let mut f = known;
                                    fs::sample_into(p, &mut f);
                                    std::hint::black_box(f);
                                }
                                Work::RowsPool => {
                                    std::hint::black_box(fs::row_features_on(p, PassOn::Pool));
                                }
                                Work::RowsAlone => {
                                    std::hint::black_box(fs::row_features_on(p, PassOn::Caller));
                                }
                            }
                            let e = Instant::now();
                            *times.lock().unwrap() =
                                ((s - t0).as_secs_f64(), (e - s).as_secs_f64());
                            done.store(true, Ordering::Release);
                        }
                    };
                    let mut job = Some(job);
                    match way {
                        Way::Rayon => rayon::spawn(job.take().unwrap()),
                        Way::Thread => helper.run(Box::new(job.take().unwrap())),
                        Way::Inline => {}
                    }
                    let start = Instant::now();
                    let d = gpu.upload(m)?;
                    let end = Instant::now();
                    if let Some(j) = job.take() {
                        j();
                    }
                    while !done.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    let after = Instant::now();
                    gpu.stream().synchronize()?;
                    drop(d);
                    let (js, jd) = *times.lock().unwrap();
                    if rep > 0 {
                        rows.push([
                            (start - t0).as_secs_f64(),
                            (after - end).as_secs_f64(),
                            (start - t0).as_secs_f64() + (after - end).as_secs_f64(),
                            js,
                            jd,
                        ]);
                    }
                }
                let col = |i: usize| median(rows.iter().map(|r| r[i]).collect()) * 1e6;
                println!(
                    "{spec},{},{},{},{},{:.1},{:.2},{:.2},{:.2},{:.1},{:.1}",
                    m.rows(),
                    m.nnz(),
                    match way {
                        Way::Rayon => "rayon",
                        Way::Thread => "thread",
                        Way::Inline => "inline",
                    },
                    match work {
                        Work::Sample => "sample",
                        Work::RowsPool => "rows-pool",
                        Work::RowsAlone => "rows-alone",
                    },
                    up * 1e6,
                    col(0),
                    col(1),
                    col(2),
                    col(3),
                    col(4),
                );
            }
        }
    }
    Ok(())
}
