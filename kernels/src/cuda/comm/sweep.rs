//! The comm sweep: every case (collective, pattern, size, dtype) checked and timed on a group.

use augur_features::attention::Dtype;
use augur_features::message::Collective;
use cudarc::driver::sys;

use super::super::drv;
use super::{check_dtype, DeviceBuffer, Pattern, RankComm};
use crate::KernelError;

/// One collective call to check and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub collective: Collective,
    pub dtype: Dtype,
    /// nccl-tests convention: the all-reduce buffer, the all-gather output (whole elements per
    /// rank: see [`Case::elements`]).
    pub bytes: usize,
    pub pattern: Pattern,
}

impl Case {
    /// Elements per rank's buffer (all-reduce) or piece (all-gather).
    pub fn elements(&self, world: usize) -> usize {
        match self.collective {
            Collective::AllGather => self.bytes / world / self.dtype.bytes(),
            _ => self.bytes / self.dtype.bytes(),
        }
    }

    /// The bytes the case really moves: rounded down to whole elements per piece.
    pub fn real_bytes(&self, world: usize) -> usize {
        match self.collective {
            Collective::AllGather => self.elements(world) * world * self.dtype.bytes(),
            _ => self.elements(world) * self.dtype.bytes(),
        }
    }
}

/// How cases are timed.
#[derive(Debug, Clone, Copy)]
pub struct SweepPlan {
    /// Untimed calls first.
    pub warmup: usize,
    /// Timed batches; the median batch is reported.
    pub reps: usize,
    /// A batch is enough back-to-back calls to last about this long (at least 1, at most 200).
    pub batch_s: f64,
    /// Check every case against the host before timing it.
    pub check: bool,
}

/// What one case gave.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub case: Case,
    /// Bytes really moved (see [`Case::real_bytes`]).
    pub bytes: usize,
    /// Seconds per call at the device's pace: for each batch (enqueued behind a spin kernel),
    /// the event time of the rank that started last / calls, median over batches. None when
    /// the case failed (see `error`).
    pub median_s: Option<f64>,
    pub reps: usize,
    /// Calls per timed batch.
    pub batch: usize,
    /// `exact` (every rank's result equals the host's), `skipped`, or empty on error.
    pub check: String,
    pub error: String,
}

/// Input element i of rank r: multiples of 1/4 in [-4, 4], exact in bf16, and so are sums of
/// up to 8 of them: a correct collective gives the host's bits exactly, and a value read from
/// the wrong place or rank does not.
pub(super) fn value(i: usize, r: usize) -> f32 {
    (((i * 7 + r * 13) % 33) as f32 - 16.0) * 0.25
}

/// `out` = the `n` values `f(0..n)` as `dtype` bytes (in parallel: the checks of 1 GiB messages
/// would otherwise take most of a sweep's device time).
pub(super) fn encode(dtype: Dtype, n: usize, f: impl Fn(usize) -> f32 + Sync, out: &mut Vec<u8>) {
    use rayon::prelude::*;
    let eb = dtype.bytes();
    out.clear();
    out.resize(n * eb, 0);
    const CHUNK: usize = 1 << 16;
    out.par_chunks_mut(CHUNK * eb)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (j, e) in chunk.chunks_exact_mut(eb).enumerate() {
                let v = f(c * CHUNK + j);
                match dtype {
                    Dtype::F32 => e.copy_from_slice(&v.to_le_bytes()),
                    // Exact: the values have at most 8 significant bits.
                    _ => e.copy_from_slice(&((v.to_bits() >> 16) as u16).to_le_bytes()),
                }
            }
        });
}

/// Shared by the rank threads of a sweep.
struct Meet {
    barrier: std::sync::Barrier,
    slots: std::sync::Mutex<Vec<f64>>,
}

impl Meet {
    /// Every rank puts a number in; every rank gets `fold` of them all.
    fn fold(&self, rank: usize, v: f64, init: f64, f: fn(f64, f64) -> f64) -> f64 {
        self.slots.lock().expect("no rank panics holding it")[rank] = v;
        self.barrier.wait();
        let m = self
            .slots
            .lock()
            .expect("no rank panics holding it")
            .iter()
            .copied()
            .fold(init, f);
        self.barrier.wait();
        m
    }

    fn max(&self, rank: usize, v: f64) -> f64 {
        self.fold(rank, v, f64::NEG_INFINITY, f64::max)
    }

    fn min(&self, rank: usize, v: f64) -> f64 {
        self.fold(rank, v, f64::INFINITY, f64::min)
    }
}

/// Check and time every case on every rank, one thread per rank, in order; `progress` sees
/// each result as it comes. A failure is reported in its case and the sweep goes on; a rank
/// whose launch fails while the others wait in a custom kernel would leave them waiting, so
/// every check that can fail is made before anything is enqueued (the same on every rank).
pub fn sweep(
    ranks: Vec<RankComm>,
    cases: &[Case],
    plan: SweepPlan,
    progress: &(dyn Fn(&CaseResult) + Sync),
) -> Vec<CaseResult> {
    let world = ranks.len();
    let meet = Meet {
        barrier: std::sync::Barrier::new(world),
        slots: std::sync::Mutex::new(vec![0.0; world]),
    };
    let errors: std::sync::Mutex<Vec<Vec<String>>> =
        std::sync::Mutex::new(vec![vec![String::new(); world]; cases.len()]);
    let results: std::sync::Mutex<Vec<Option<CaseResult>>> =
        std::sync::Mutex::new(vec![None; cases.len()]);
    std::thread::scope(|scope| {
        for mut rc in ranks {
            let (meet, errors, results) = (&meet, &errors, &results);
            scope.spawn(move || {
                let rank = rc.rank;
                let out = DeviceBuffer::new(&rc.ctx, rc.capacity()).map_err(|e| e.to_string());
                for (ci, case) in cases.iter().enumerate() {
                    let r = run_case(
                        &mut rc,
                        out.as_ref().map_err(String::as_str),
                        *case,
                        plan,
                        meet,
                    );
                    let mine = match &r {
                        Ok(_) => String::new(),
                        Err(e) => format!("rank {rank}: {e}"),
                    };
                    errors.lock().expect("no panic")[ci][rank] = mine;
                    meet.barrier.wait();
                    if rank == 0 {
                        let errs: Vec<String> = errors.lock().expect("no panic")[ci]
                            .iter()
                            .filter(|e| !e.is_empty())
                            .cloned()
                            .collect();
                        let res = match (r, errs.is_empty()) {
                            (Ok((median, reps, batch, check)), true) => CaseResult {
                                case: *case,
                                bytes: case.real_bytes(world),
                                median_s: Some(median),
                                reps,
                                batch,
                                check,
                                error: String::new(),
                            },
                            _ => CaseResult {
                                case: *case,
                                bytes: case.real_bytes(world),
                                median_s: None,
                                reps: 0,
                                batch: 0,
                                check: String::new(),
                                error: errs.join("; "),
                            },
                        };
                        progress(&res);
                        results.lock().expect("no panic")[ci] = Some(res);
                    }
                    meet.barrier.wait();
                }
            });
        }
    });
    results
        .into_inner()
        .expect("no panic")
        .into_iter()
        .map(|r| r.expect("rank 0 filled every case"))
        .collect()
}

/// One case on one rank: (median seconds per call, reps, batch, check).
fn run_case(
    rc: &mut RankComm,
    out: Result<&DeviceBuffer, &str>,
    case: Case,
    plan: SweepPlan,
    meet: &Meet,
) -> Result<(f64, usize, usize, String), KernelError> {
    let world = rc.world;
    let n = case.elements(world);
    let eb = case.dtype.bytes();
    // Checks that decide whether anything is enqueued: the same outcome on every rank.
    check_dtype(case.dtype)?;
    if !Pattern::of(case.collective).contains(&case.pattern) {
        return Err(KernelError::Invalid(format!(
            "{} is not a pattern of {:?}",
            case.pattern.name(),
            case.collective
        )));
    }
    let out = out.map_err(|e| KernelError::Cuda(format!("output buffer: {e}")))?;
    if case.real_bytes(world) > rc.capacity() || n == 0 {
        return Err(KernelError::Invalid(format!(
            "{} bytes: outside 1 element .. the {}-byte buffers",
            case.bytes,
            rc.capacity()
        )));
    }
    if case.pattern == Pattern::Nccl && !rc.has_nccl() {
        return Err(KernelError::Invalid("opened without NCCL".into()));
    }
    if case.pattern == Pattern::TwoShot && rc.tmp.is_none() {
        return Err(KernelError::Invalid(
            "opened without scratch buffers".into(),
        ));
    }
    let offsets: Vec<u64> = (0..=world).map(|q| (q * n * eb) as u64).collect();
    let out_ptr = out.ptr();
    let call = |rc: &mut RankComm| -> Result<(), KernelError> {
        match case.collective {
            Collective::AllReduce => rc.all_reduce(case.pattern, case.dtype, n, out_ptr),
            _ => rc.all_gather(case.pattern, case.dtype, &offsets),
        }
    };
    let rank = rc.rank;
    let mut check = "skipped".to_string();
    if plan.check {
        let mut bytes = Vec::new();
        let total = case.real_bytes(world);
        match case.collective {
            Collective::AllReduce => {
                encode(case.dtype, n, |i| value(i, rank), &mut bytes);
                rc.write(0, &bytes)?;
                rc.fill(out_ptr, total, 0xff)?;
            }
            _ => {
                rc.fill(rc.buf(), total, 0xff)?;
                encode(case.dtype, n, |i| value(rank * n + i, rank), &mut bytes);
                rc.write(rank * n * eb, &bytes)?;
            }
        }
        meet.barrier.wait();
        call(rc)?;
        let mut got = vec![0u8; total];
        match case.collective {
            Collective::AllReduce => {
                rc.read(out_ptr, &mut got)?;
                encode(
                    case.dtype,
                    n,
                    |i| (0..world).map(|r| value(i, r)).sum::<f32>(),
                    &mut bytes,
                );
            }
            _ => {
                rc.read(rc.buf(), &mut got)?;
                encode(case.dtype, n * world, |i| value(i, i / n), &mut bytes);
            }
        }
        let wrong = {
            use rayon::prelude::*;
            got.par_iter()
                .zip(bytes.par_iter())
                .position_first(|(a, b)| a != b)
        };
        // Every rank learns whether any rank's result was wrong, so that all of them leave this
        // case at the same point (the host barriers and the kernels pair up rank by rank).
        if meet.max(rank, f64::from(u8::from(wrong.is_some()))) > 0.0 {
            return Err(KernelError::Cuda(match wrong {
                Some(i) => format!(
                    "wrong result at element {} of {} (byte {i}: {:#04x}, expected {:#04x})",
                    i / eb,
                    got.len() / eb,
                    got[i],
                    bytes[i]
                ),
                None => "another GPU's result was wrong".into(),
            }));
        }
        check = "exact".into();
    }
    meet.barrier.wait();
    let ev = || {
        rc.ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(drv("cuEventCreate"))
    };
    let (start, stop) = (ev()?, ev()?);
    // Warm-up, and one timed call to size the batches (the slowest rank's time decides).
    for _ in 0..plan.warmup {
        call(rc)?;
    }
    meet.barrier.wait();
    start.record(&rc.stream).map_err(drv("cuEventRecord"))?;
    call(rc)?;
    stop.record(&rc.stream).map_err(drv("cuEventRecord"))?;
    stop.synchronize().map_err(drv("cuEventSynchronize"))?;
    let one = start.elapsed_ms(&stop).map_err(drv("cuEventElapsedTime"))? as f64 / 1e3;
    let one = meet.max(rank, one);
    let batch = ((plan.batch_s / one.max(1e-7)).ceil() as usize).clamp(1, 200);
    // Each batch: a spin kernel keeps the stream busy while the host enqueues the calls, so that
    // they run back to back at the device's pace (launch costs hidden, as in a CUDA graph). The
    // spin lasts twice the host's enqueue time of the batch before; the first batch only
    // measures that and is not kept. Per batch, the time of the rank that started last (the
    // least event time: it waits for nobody at its first call) / calls; median over batches.
    let mut enqueue_s = 50e-6 * batch as f64;
    let mut times = Vec::with_capacity(plan.reps);
    let mut late = 0usize;
    for rep in 0..=plan.reps.max(1) {
        meet.barrier.wait();
        rc.spin(2.0 * enqueue_s + 20e-6)?;
        let t0 = std::time::Instant::now();
        start.record(&rc.stream).map_err(drv("cuEventRecord"))?;
        for _ in 0..batch {
            call(rc)?;
        }
        stop.record(&rc.stream).map_err(drv("cuEventRecord"))?;
        let host = t0.elapsed().as_secs_f64();
        // Whether the GPU had reached the calls before the host finished enqueuing them.
        let reached = start.is_complete();
        enqueue_s = host;
        stop.synchronize().map_err(drv("cuEventSynchronize"))?;
        let t = start.elapsed_ms(&stop).map_err(drv("cuEventElapsedTime"))? as f64 / 1e3;
        let t = meet.min(rank, t / batch as f64);
        if rep > 0 {
            late += usize::from(reached);
            times.push(t);
        }
    }
    if late > 0 && rank == 0 {
        eprintln!(
            "augur: note: {} {:?} {} B: the GPU caught up with the host in {late} of {} batches",
            case.pattern.name(),
            case.collective,
            case.bytes,
            plan.reps.max(1)
        );
    }
    Ok((crate::median(times), plan.reps.max(1), batch, check))
}
