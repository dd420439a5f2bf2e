//! The GPU feature gatherer: `kernels/cuda/features.cu` fills the exact integer sums of
//! [`augur_features::spmv::RowSums`] on the device, and the features come out of the same
//! [`augur_features::spmv::finish_features`] the CPU gatherer uses, so the values are identical.

use std::sync::Arc;
use std::time::Instant;

use augur_features::spmv::{finish_features, CsrPattern, RowSums, SpmvFeatures, SpmvGatherer};
use augur_features::FeatureError;
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PinnedHostSlice,
    PushKernelArg,
};

use super::module;
use crate::KernelError;

/// Counters of `features.cu` (results, accumulators, the long rows' count, entries and pieces,
/// the block counter).
pub(crate) const ACC_N: usize = 38;
/// The results at the front of the counters.
pub(crate) const OUT_N: usize = 17;
/// One exact bin per row length below this; rows this long or longer are listed apart and
/// split in pieces of this many entries (features.cu gets it as -DBINS and -DLONG).
pub(crate) const BINS: usize = 4096;

use super::drv;

/// The device buffers of the gather: counters, length bins, the long rows (row and length) and
/// the number of each one's first piece.
struct Bufs {
    acc: CudaSlice<u64>,
    bins: CudaSlice<u32>,
    longs: CudaSlice<u64>,
    first_piece: CudaSlice<u64>,
    /// For a gather whose copy back is enqueued behind its kernels while the host does
    /// something else ([`GpuGatherer::sums_during`]); made on first use.
    readback: Option<Readback>,
}

/// Page-locked copy of the results, and the event recorded after the copy into it (with the
/// context's event tracking off, the pinned slice's own event is never recorded, so reading it
/// would not wait).
struct Readback {
    out: PinnedHostSlice<u64>,
    copied: CudaEvent,
}

/// A pattern on the device: rows, entries, row pointers and column indices.
#[derive(Clone, Copy)]
struct Pat<'a> {
    rows: usize,
    nnz: usize,
    ptr: &'a CudaSlice<i32>,
    idx: &'a CudaSlice<i32>,
}

impl<'a> Pat<'a> {
    fn new(rows: usize, nnz: usize, ptr: &'a CudaSlice<i32>, idx: &'a CudaSlice<i32>) -> Self {
        Pat {
            rows,
            nnz,
            ptr,
            idx,
        }
    }
}

/// The feature kernels, loaded on one GPU.
pub struct GpuGatherer {
    stream: Arc<CudaStream>,
    /// Kept alive for the functions below.
    _module: Arc<CudaModule>,
    blocks: u32,
    /// Allocated and zeroed once (grown for a matrix with more long rows); each gather leaves
    /// them zeroed for the next. Dropped after a failed gather, so the next one starts clean.
    bufs: std::cell::RefCell<Option<Bufs>>,
    /// Entry points, looked up once.
    functions: std::collections::HashMap<&'static str, CudaFunction>,
}

pub(crate) const ENTRY_POINTS: [&str; 8] = [
    "feat_init",
    "feat_rows",
    "feat_cols1",
    "feat_cols2",
    "feat_cols4",
    "feat_cols8",
    "feat_cols16",
    "feat_cols32",
];

impl GpuGatherer {
    pub fn new(gpu: &super::CudaSpmv) -> Result<GpuGatherer, KernelError> {
        let (ptx, _) = module::ptx(module::FEATURES, gpu.device.compute_capability)?;
        let module = gpu
            .context()
            .load_module(ptx)
            .map_err(drv("cuModuleLoadData"))?;
        let functions = ENTRY_POINTS
            .iter()
            .map(|&n| {
                module
                    .load_function(n)
                    .map(|f| (n, f))
                    .map_err(drv("cuModuleGetFunction"))
            })
            .collect::<Result<_, _>>()?;
        Ok(GpuGatherer {
            stream: gpu.stream().clone(),
            _module: module,
            // A fixed grid of 16 blocks per SM: enough loads in flight for the grid-stride loops,
            // and few global atomics (one per block and counter).
            blocks: 16 * gpu.device.multiprocessors.max(1) as u32,
            bufs: std::cell::RefCell::new(None),
            functions,
        })
    }

    /// A grid for `threads` threads of work, each taking at least 8 items: a small matrix gets
    /// few blocks (each block ends with a handful of global atomics on the same counters, which
    /// serialise), a large one at most 16 blocks per SM.
    fn cfg(&self, threads: u64) -> LaunchConfig {
        let blocks = threads.div_ceil(256 * 8).clamp(1, self.blocks as u64) as u32;
        LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// The stream the gather's kernels run on (its `CudaSpmv`'s).
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    fn function(&self, name: &str) -> Result<&CudaFunction, KernelError> {
        self.functions
            .get(name)
            .ok_or_else(|| KernelError::Cuda(format!("no kernel `{name}` in features.cu")))
    }

    /// Buffers for a matrix of `nnz` entries: allocated (and zeroed by `feat_init`) the first
    /// time, and again when its long rows (at most nnz / 4096) outgrow the list.
    fn ready(&self, bufs: &mut Option<Bufs>, nnz: usize) -> Result<(), KernelError> {
        let need = nnz / BINS + 1;
        let s = &self.stream;
        if let Some(b) = bufs.as_mut() {
            if b.longs.len() < need {
                b.longs = s.alloc_zeros::<u64>(need).map_err(drv("cuMemAlloc"))?;
                b.first_piece = s.alloc_zeros::<u64>(need).map_err(drv("cuMemAlloc"))?;
            }
            return Ok(());
        }
        let need = need.max(1024);
        let mut b = Bufs {
            acc: s.alloc_zeros::<u64>(ACC_N).map_err(drv("cuMemAlloc"))?,
            bins: s.alloc_zeros::<u32>(BINS).map_err(drv("cuMemAlloc"))?,
            longs: s.alloc_zeros::<u64>(need).map_err(drv("cuMemAlloc"))?,
            first_piece: s.alloc_zeros::<u64>(need).map_err(drv("cuMemAlloc"))?,
            readback: None,
        };
        let mut l = s.launch_builder(self.function("feat_init")?);
        l.arg(&mut b.acc).arg(&mut b.bins);
        let one_block = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: (u64*, unsigned*) as in feat_init; acc holds ACC_N counters and bins BINS.
        unsafe { l.launch(one_block) }.map_err(drv("cuLaunchKernel"))?;
        *bufs = Some(b);
        Ok(())
    }

    /// The exact sums of a device-resident pattern (row pointers and column indices): two
    /// kernels, then one copy brings the results back. No allocation after the first gather (of
    /// a matrix this large) and no other host round trip.
    pub fn sums(
        &self,
        rows: usize,
        nnz: usize,
        ptr: &CudaSlice<i32>,
        idx: &CudaSlice<i32>,
    ) -> Result<RowSums, KernelError> {
        if rows == 0 {
            return Ok(RowSums::NO_ROWS);
        }
        let mut guard = self.bufs.borrow_mut();
        let r = self.sums_with(&mut guard, Pat::new(rows, nnz, ptr, idx));
        if r.is_err() {
            // The counters may be half-updated: start from fresh ones next time.
            *guard = None;
        }
        r
    }

    fn sums_with(&self, bufs: &mut Option<Bufs>, pat: Pat<'_>) -> Result<RowSums, KernelError> {
        self.launch(bufs, pat)?;
        let b = bufs.as_mut().expect("allocated by launch");
        let a: Vec<u64> = self
            .stream
            .clone_dtoh(&b.acc.slice(0..OUT_N))
            .map_err(drv("device to host copy"))?;
        Ok(decode(&a))
    }

    /// The exact sums of a pattern whose row pointers and column indices are on the device,
    /// gathered while the host runs `during` (e.g. copies the matrix's values on another
    /// stream): the two kernels and the copy of their results into page-locked memory are
    /// enqueued first, `during` runs, then the results are read (waiting only if the device
    /// is still busy). `during` runs whatever happens to the gather; its result comes back
    /// with the sums'.
    pub fn sums_during<R>(
        &self,
        rows: usize,
        nnz: usize,
        ptr: &CudaSlice<i32>,
        idx: &CudaSlice<i32>,
        during: impl FnOnce() -> R,
    ) -> (Result<RowSums, KernelError>, R) {
        if rows == 0 {
            return (Ok(RowSums::NO_ROWS), during());
        }
        let mut guard = self.bufs.borrow_mut();
        let enqueued = self.enqueue_with_copy(&mut guard, Pat::new(rows, nnz, ptr, idx));
        let r = during();
        let sums = enqueued.and_then(|()| {
            let rb = guard.as_ref().and_then(|b| b.readback.as_ref());
            let rb = rb.expect("made by enqueue_with_copy");
            rb.copied.synchronize().map_err(drv("cuEventSynchronize"))?;
            let a = rb.out.as_slice().map_err(drv("cuEventSynchronize"))?;
            Ok(decode(&a[..OUT_N]))
        });
        if sums.is_err() {
            *guard = None;
        }
        (sums, r)
    }

    /// The kernels and an asynchronous copy of the results into `out`.
    fn enqueue_with_copy(&self, bufs: &mut Option<Bufs>, pat: Pat<'_>) -> Result<(), KernelError> {
        self.launch(bufs, pat)?;
        let b = bufs.as_mut().expect("allocated by launch");
        if b.readback.is_none() {
            let ctx = self.stream.context();
            // SAFETY: the slice is only read after the copy below has filled it (sums_during
            // waits for `copied` first). Not write-combined: the host reads it.
            let out = unsafe { ctx.alloc_pinned_with_flags::<u64>(OUT_N, 0) }
                .map_err(drv("cuMemHostAlloc"))?;
            let copied = ctx.new_event(None).map_err(drv("cuEventCreate"))?;
            b.readback = Some(Readback { out, copied });
        }
        let rb = b.readback.as_mut().expect("made above");
        self.stream
            .memcpy_dtoh(&b.acc.slice(0..OUT_N), &mut rb.out)
            .map_err(drv("device to host copy"))?;
        rb.copied.record(&self.stream).map_err(drv("cuEventRecord"))
    }

    /// Enqueue the two kernels (buffers allocated on first use).
    fn launch(&self, bufs: &mut Option<Bufs>, pat: Pat<'_>) -> Result<(), KernelError> {
        let Pat {
            rows,
            nnz,
            ptr,
            idx,
        } = pat;
        self.ready(bufs, nnz)?;
        let b = bufs.as_mut().expect("allocated above");
        let s = &self.stream;
        let k = rows.div_ceil(100) as u64;
        let (rows_i, k_rows) = (rows as i32, rows as u64);
        let mut l = s.launch_builder(self.function("feat_rows")?);
        l.arg(&rows_i)
            .arg(ptr)
            .arg(&mut b.acc)
            .arg(&mut b.bins)
            .arg(&mut b.longs)
            .arg(&mut b.first_piece)
            .arg(&k);
        // SAFETY: (int, int*, u64*, unsigned*, u64*, u64*, u64) as in feat_rows; acc holds
        // ACC_N counters, bins BINS, longs and first_piece at least nnz / 4096 + 1 entries (a
        // listed row has 4096 entries or more).
        unsafe { l.launch(self.cfg(k_rows)) }.map_err(drv("cuLaunchKernel"))?;
        // L lanes per short row (about half the mean length); rows of 4096 entries or more are
        // split over the grid, whatever L is.
        let mean = nnz as f64 / rows as f64;
        let lanes = [32u32, 16, 8, 4, 2, 1]
            .into_iter()
            .find(|&l| l as f64 <= mean / 2.0)
            .unwrap_or(1);
        let mut l = s.launch_builder(self.function(&format!("feat_cols{lanes}"))?);
        l.arg(&rows_i)
            .arg(ptr)
            .arg(idx)
            .arg(&mut b.acc)
            .arg(&mut b.bins)
            .arg(&b.longs)
            .arg(&b.first_piece);
        let threads = (rows as u64 * lanes as u64).max(nnz as u64 / 32);
        // SAFETY: (int, int*, int*, u64*, unsigned*, u64*, u64*) as in feat_cols<L>, the list
        // and piece numbers as feat_rows left them (same stream).
        unsafe { l.launch(self.cfg(threads)) }.map_err(drv("cuLaunchKernel"))?;
        Ok(())
    }

    /// Seconds to gather the sums of a device-resident pattern, median of `reps` after one
    /// warm-up, wall clock including the launch and the copy back.
    pub fn time(
        &self,
        rows: usize,
        nnz: usize,
        ptr: &CudaSlice<i32>,
        idx: &CudaSlice<i32>,
        reps: usize,
    ) -> Result<f64, KernelError> {
        self.sums(rows, nnz, ptr, idx)?;
        let t: Vec<f64> = (0..reps.max(1))
            .map(|_| {
                let s = Instant::now();
                self.sums(rows, nnz, ptr, idx)
                    .map(|_| s.elapsed().as_secs_f64())
            })
            .collect::<Result<_, _>>()?;
        Ok(crate::median(t))
    }
}

/// The sums from the counters `features.cu` leaves at the front of `acc`.
pub(crate) fn decode(a: &[u64]) -> RowSums {
    let len3 = ((a[5] as u128) << 64) + ((a[4] as u128) << 32) + a[3] as u128;
    RowSums {
        min_len: a[0],
        max_len: a[1],
        len2: a[2],
        len3,
        empty: a[6],
        hist: [a[7], a[8], a[9], a[10], a[11], a[12]],
        bandwidth: a[13],
        dist: a[14],
        segments: a[15],
        top1pct: a[16],
    }
}

impl SpmvGatherer for GpuGatherer {
    fn name(&self) -> &'static str {
        "cuda"
    }

    /// Uploads the pattern, then gathers on the device.
    fn gather(&self, m: CsrPattern<'_>) -> Result<SpmvFeatures, FeatureError> {
        let err = |e: KernelError| FeatureError::Probe(e.to_string());
        let ptr = self
            .stream
            .clone_htod(m.indptr)
            .map_err(|e| err(KernelError::Cuda(e.to_string())))?;
        let idx = self
            .stream
            .clone_htod(m.indices)
            .map_err(|e| err(KernelError::Cuda(e.to_string())))?;
        let nnz = m.indptr.last().map_or(0, |&p| p as usize);
        let sums = self.sums(m.rows, nnz, &ptr, &idx).map_err(err)?;
        Ok(finish_features(m, &sums))
    }
}

/// The GPU gatherer against the CPU one, beside the correctness suite (`augur check --backend
/// cuda` runs it on every matrix): the features must be the same bit for bit, gathered alone and
/// gathered during an upload ([`super::CudaSpmv::upload_gathering`]), and that upload must
/// deliver the matrix intact.
pub struct GatherCheck {
    gpu: super::CudaSpmv,
    gatherer: GpuGatherer,
}

impl GatherCheck {
    /// On GPU `ordinal`, with its own handle (a suite may hold another).
    pub fn new(ordinal: usize) -> Result<GatherCheck, KernelError> {
        let gpu = super::CudaSpmv::new(ordinal)?;
        let gatherer = GpuGatherer::new(&gpu)?;
        Ok(GatherCheck { gpu, gatherer })
    }

    /// What differs on `m` (empty: nothing), one line per feature or array.
    pub fn compare(&self, m: &augur_datasets::Csr<f64>) -> Result<Vec<String>, KernelError> {
        use augur_features::spmv::CpuGatherer;
        let p = CsrPattern::of(m);
        let probe = |e: FeatureError| KernelError::Cuda(e.to_string());
        let cpu = CpuGatherer.gather(p).map_err(probe)?.values();
        let alone = self.gatherer.gather(p).map_err(probe)?.values();
        let (dm, sums) = self.gpu.upload_gathering(m, &self.gatherer)?;
        let during = finish_features(p, &sums).values();
        let arrays = dm.download(&self.gpu)?;
        Ok(differences(
            m,
            &cpu,
            [("gpu", &alone), ("gpu during upload", &during)],
            arrays,
        ))
    }
}

/// What a device gatherer's check found on `m` (empty: nothing): each feature of `gathered`
/// (named by who gathered it) unlike the CPU gatherer's `cpu` to the bit, and the arrays an
/// upload with gathering left on the device unlike the host's. Shared by the CUDA and HIP checks.
pub(crate) fn differences(
    m: &augur_datasets::Csr<f64>,
    cpu: &[f64],
    gathered: [(&str, &Vec<f64>); 2],
    (ptr, idx, val): super::spmv::HostCsrArrays<f64>,
) -> Vec<String> {
    let schema = SpmvFeatures::schema();
    let mut diff = Vec::new();
    for (what, g) in gathered {
        diff.extend(
            cpu.iter()
                .zip(g)
                .zip(schema.names())
                .filter(|((c, g), _)| c.to_bits() != g.to_bits())
                .map(|((c, g), n)| format!("{n}: cpu {c} {what} {g}")),
        );
    }
    let intact = [
        ("row pointers", ptr[..] == m.indptr().raw_storage()[..]),
        ("indices", idx[..] == m.indices()[..]),
        (
            "values",
            val.iter()
                .map(|v| v.to_bits())
                .eq(m.data().iter().map(|v| v.to_bits())),
        ),
    ];
    if intact.iter().any(|(_, ok)| !ok) {
        let parts: Vec<String> = intact
            .iter()
            .map(|(w, ok)| format!("{w} {}", if *ok { "intact" } else { "DIFFER" }))
            .collect();
        diff.push(format!("upload with gathering: {}", parts.join(", ")));
    }
    diff
}
