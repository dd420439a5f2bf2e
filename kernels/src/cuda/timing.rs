//! The one timing harness of the CUDA backend (SpMV, attention; the collectives' per-rank loop
//! follows the same throughput rule): three modes, every one timed by CU_EVENT_DEFAULT events on
//! the work's own stream.
//!
//! - **latency**: one call from an idle stream between two events, the stream synchronised after
//!   each. The start event is recorded before the host enqueues the call, so the figure includes
//!   the host's launch cost (every launch of a multi-launch call): what a single call costs.
//! - **throughput**: `batch` calls enqueued back to back between two events, no host
//!   synchronisation inside; per call = total / batch. Launches pipeline as in a solver loop: the
//!   figure includes the host only where it cannot enqueue as fast as the GPU runs.
//! - **graph**: the `batch` calls captured once into a CUDA graph (stream capture), the graph
//!   replayed between two events; per call = total / batch. No host launch cost at all: the
//!   device's own time with the graph's small gaps between nodes.
//!
//! L2: with a `flush` buffer, it is overwritten once before each timed sample (before every call
//! in latency mode, before each batch in the others). Without one, a working set that fits in L2
//! stays there across the calls of a batch, as it does in an iterative solver.

use std::sync::Arc;

use cudarc::driver::{sys, CudaSlice, CudaStream};

use super::drv;
use crate::KernelError;

/// How many calls to make untimed, then how many timed samples.
#[derive(Debug, Clone, Copy)]
pub struct TimingPlan {
    pub warmup: usize,
    /// Timed samples (each one call in latency mode, `batch` calls in the others).
    pub iterations: usize,
}

impl TimingPlan {
    /// `warmup` untimed calls, then `samples` timed samples (at least one).
    pub fn new(warmup: usize, samples: usize) -> TimingPlan {
        TimingPlan {
            warmup,
            iterations: samples.max(1),
        }
    }
}

/// How calls are timed (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum TimingMode {
    Latency,
    Throughput,
    Graph,
}

impl TimingMode {
    pub const ALL: [TimingMode; 3] = [
        TimingMode::Throughput,
        TimingMode::Graph,
        TimingMode::Latency,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TimingMode::Latency => "latency",
            TimingMode::Throughput => "throughput",
            TimingMode::Graph => "graph",
        }
    }

    pub fn parse(s: &str) -> Option<TimingMode> {
        TimingMode::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Calls per timed sample for the throughput and graph modes: enough calls that a sample lasts
/// about `target_s` given one call's latency, between 1 and `max`.
pub fn batch_for(latency_s: f64, target_s: f64, max: usize) -> usize {
    if !(latency_s > 0.0 && latency_s.is_finite()) {
        return max.max(1);
    }
    ((target_s / latency_s).ceil() as usize).clamp(1, max.max(1))
}

fn events(
    stream: &Arc<CudaStream>,
) -> Result<(cudarc::driver::CudaEvent, cudarc::driver::CudaEvent), KernelError> {
    let ev = || {
        stream
            .context()
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(drv("cuEventCreate"))
    };
    Ok((ev()?, ev()?))
}

/// Latency mode: `plan.warmup` untimed calls of `enqueue`, then `plan.iterations` calls each
/// between two events on `stream` from an idle stream (after overwriting `flush`, if given),
/// seconds each.
pub fn time_events(
    stream: &Arc<CudaStream>,
    plan: TimingPlan,
    flush: Option<&mut CudaSlice<u8>>,
    enqueue: impl FnMut() -> Result<(), KernelError>,
) -> Result<Vec<f64>, KernelError> {
    time_mode(stream, TimingMode::Latency, plan, 1, flush, enqueue)
}

/// Seconds per call of `enqueue` in `mode`, one entry per timed sample: `plan.warmup` untimed
/// calls, then `plan.iterations` samples of one call (latency) or `batch` calls (throughput,
/// graph). A graph whose capture fails (a call that cannot be captured) is an error; the stream
/// has then left capture mode and can be used again.
pub fn time_mode(
    stream: &Arc<CudaStream>,
    mode: TimingMode,
    plan: TimingPlan,
    batch: usize,
    mut flush: Option<&mut CudaSlice<u8>>,
    mut enqueue: impl FnMut() -> Result<(), KernelError>,
) -> Result<Vec<f64>, KernelError> {
    let batch = if mode == TimingMode::Latency {
        1
    } else {
        batch.max(1)
    };
    for _ in 0..plan.warmup {
        enqueue()?;
    }
    let graph = if mode == TimingMode::Graph {
        stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
        Some(capture(stream, batch, &mut enqueue)?)
    } else {
        None
    };
    if let Some(g) = &graph {
        // One untimed replay: the graph's first launch sets up its resources.
        g.launch().map_err(drv("cuGraphLaunch"))?;
    }
    let (start, stop) = events(stream)?;
    let mut times = Vec::with_capacity(plan.iterations);
    for _ in 0..plan.iterations {
        if let Some(buf) = flush.as_deref_mut() {
            stream.memset_zeros(buf).map_err(drv("L2 flush"))?;
        }
        if graph.is_some() || flush.is_some() {
            // The sample starts from an idle stream: the flush or the previous sample's replay
            // is not inside it.
            stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
        }
        start.record(stream).map_err(drv("cuEventRecord"))?;
        match &graph {
            Some(g) => g.launch().map_err(drv("cuGraphLaunch"))?,
            None => {
                for _ in 0..batch {
                    enqueue()?;
                }
            }
        }
        stop.record(stream).map_err(drv("cuEventRecord"))?;
        stop.synchronize().map_err(drv("cuEventSynchronize"))?;
        let t = start.elapsed_ms(&stop).map_err(drv("cuEventElapsedTime"))? as f64 / 1e3;
        times.push(t / batch as f64);
    }
    Ok(times)
}

/// One call measured in the three modes: medians of seconds per call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeTimes {
    pub latency_s: f64,
    pub throughput_s: f64,
    /// The graph figure, or why the calls could not be captured.
    pub graph_s: Result<f64, String>,
    /// Calls per throughput and graph sample.
    pub batch: usize,
    /// Timed samples behind each median.
    pub samples: usize,
}

impl ModeTimes {
    /// The median of `mode` (None for a graph that could not be captured).
    pub fn get(&self, mode: TimingMode) -> Option<f64> {
        match mode {
            TimingMode::Latency => Some(self.latency_s),
            TimingMode::Throughput => Some(self.throughput_s),
            TimingMode::Graph => self.graph_s.as_ref().ok().copied(),
        }
    }
}

/// Calls per throughput or graph sample: a sample lasts about this long (or `MAX_BATCH` calls).
pub const BATCH_TARGET_S: f64 = 500e-6;
pub const MAX_BATCH: usize = 64;

/// `enqueue` in every mode: latency first (`plan`), then throughput and graph with a batch that
/// makes a sample last about [`BATCH_TARGET_S`] ([`batch_for`]), `plan.iterations` samples each.
/// A graph that cannot be captured is recorded as its error; other failures are errors.
pub fn time_modes(
    stream: &Arc<CudaStream>,
    plan: TimingPlan,
    mut flush: Option<&mut CudaSlice<u8>>,
    mut enqueue: impl FnMut() -> Result<(), KernelError>,
) -> Result<ModeTimes, KernelError> {
    use crate::median;
    let lat = median(time_mode(
        stream,
        TimingMode::Latency,
        plan,
        1,
        flush.as_deref_mut(),
        &mut enqueue,
    )?);
    let batch = batch_for(lat, BATCH_TARGET_S, MAX_BATCH);
    let again = TimingPlan { warmup: 1, ..plan };
    let tp = median(time_mode(
        stream,
        TimingMode::Throughput,
        again,
        batch,
        flush.as_deref_mut(),
        &mut enqueue,
    )?);
    let graph = time_mode(stream, TimingMode::Graph, again, batch, flush, &mut enqueue)
        .map(median)
        .map_err(|e| e.to_string());
    Ok(ModeTimes {
        latency_s: lat,
        throughput_s: tp,
        graph_s: graph,
        batch,
        samples: plan.iterations,
    })
}

/// `batch` calls of `enqueue` captured into an instantiated graph on `stream` (relaxed capture
/// mode: the calls may look up functions; they must not synchronise or allocate).
fn capture(
    stream: &Arc<CudaStream>,
    batch: usize,
    enqueue: &mut impl FnMut() -> Result<(), KernelError>,
) -> Result<cudarc::driver::CudaGraph, KernelError> {
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
        .map_err(drv("cuStreamBeginCapture"))?;
    let mut failed = None;
    for _ in 0..batch {
        if let Err(e) = enqueue() {
            failed = Some(e);
            break;
        }
    }
    // End the capture whatever happened, so that the stream leaves capture mode.
    let ended = stream.end_capture(sys::CUgraphInstantiate_flags(0));
    if let Some(e) = failed {
        return Err(KernelError::Cuda(format!("graph capture: {e}")));
    }
    match ended {
        Ok(Some(g)) => Ok(g),
        Ok(None) => Err(KernelError::Cuda(
            "graph capture: the captured sequence was empty".into(),
        )),
        Err(e) => Err(KernelError::Cuda(format!(
            "graph capture: cuStreamEndCapture: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_aims_at_the_target() {
        assert_eq!(batch_for(5e-6, 500e-6, 64), 64);
        assert_eq!(batch_for(20e-6, 500e-6, 64), 25);
        assert_eq!(batch_for(1e-3, 500e-6, 64), 1);
        assert_eq!(batch_for(0.0, 500e-6, 64), 64);
        assert_eq!(batch_for(f64::NAN, 500e-6, 8), 8);
    }

    #[test]
    fn mode_names_round_trip() {
        for m in TimingMode::ALL {
            assert_eq!(TimingMode::parse(m.name()), Some(m));
        }
        assert_eq!(TimingMode::parse("wall"), None);
    }
}
