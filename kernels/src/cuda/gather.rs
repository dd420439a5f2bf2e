//! The GPU feature gatherer: `kernels/cuda/features.cu` fills the exact integer sums of
//! [`augur_features::spmv::RowSums`] on the device, and the features come out of the same
//! [`augur_features::spmv::finish_features`] the CPU gatherer uses, so the values are identical.

use std::sync::Arc;
use std::time::Instant;

use augur_features::spmv::{finish_features, CsrPattern, RowSums, SpmvFeatures, SpmvGatherer};
use augur_features::FeatureError;
use cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};

use super::module;
use crate::KernelError;

const ACC_N: usize = 23;

use super::drv;

/// The feature kernels, loaded on one GPU.
pub struct GpuGatherer {
    stream: Arc<CudaStream>,
    /// Kept alive for the functions below.
    _module: Arc<CudaModule>,
    blocks: u32,
    /// The counters and the radix histogram, allocated once and reused by every gather.
    bufs: std::cell::RefCell<Option<(CudaSlice<u64>, CudaSlice<u64>)>>,
    /// Entry points, looked up once.
    functions: std::collections::HashMap<&'static str, CudaFunction>,
}

const ENTRY_POINTS: [&str; 10] = [
    "feat_init",
    "feat_rows",
    "feat_cols1",
    "feat_cols2",
    "feat_cols4",
    "feat_cols8",
    "feat_cols16",
    "feat_cols32",
    "len_radix_step",
    "len_sum_above",
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

    /// The exact sums of a device-resident pattern (row pointers and column indices): seven
    /// kernels enqueued back to back (set-up, row statistics, column statistics, four radix
    /// passes with the pick folded into their last block, the top-1% sum), then one copy brings
    /// the counters back. No allocation and no other host round trip.
    pub fn sums(
        &self,
        rows: usize,
        nnz: usize,
        ptr: &CudaSlice<i32>,
        idx: &CudaSlice<i32>,
    ) -> Result<RowSums, KernelError> {
        let s = &self.stream;
        let f = |name: &str| -> Result<&CudaFunction, KernelError> {
            self.functions
                .get(name)
                .ok_or_else(|| KernelError::Cuda(format!("no kernel `{name}` in features.cu")))
        };
        let mut bufs = self.bufs.borrow_mut();
        if bufs.is_none() {
            *bufs = Some((
                s.alloc_zeros::<u64>(ACC_N).map_err(drv("cuMemAlloc"))?,
                s.alloc_zeros::<u64>(256).map_err(drv("cuMemAlloc"))?,
            ));
        }
        let (acc, hist) = bufs.as_mut().expect("allocated above");
        let k = rows.div_ceil(100) as u64;
        let one_block = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let init = f("feat_init")?;
        let mut b = s.launch_builder(init);
        b.arg(&mut *acc).arg(&mut *hist).arg(&k);
        // SAFETY: (u64*, u64*, u64) as in feat_init; acc holds ACC_N and hist 256 counters.
        unsafe { b.launch(one_block) }.map_err(drv("cuLaunchKernel"))?;
        let rows_i = rows as i32;
        if rows > 0 {
            let kr = f("feat_rows")?;
            let mut b = s.launch_builder(kr);
            b.arg(&rows_i).arg(ptr).arg(&mut *acc);
            // SAFETY: (int, int*, u64*) as in feat_rows; acc holds ACC_N counters.
            unsafe { b.launch(self.cfg(rows as u64)) }.map_err(drv("cuLaunchKernel"))?;
            // L lanes per row (about half the mean length); the kernel itself switches to
            // balancing by entries when feat_rows found a few very long rows.
            let mean = nnz as f64 / rows as f64;
            let lanes = [32u32, 16, 8, 4, 2, 1]
                .into_iter()
                .find(|&l| l as f64 <= mean / 2.0)
                .unwrap_or(1);
            let kc = f(&format!("feat_cols{lanes}"))?;
            let nnz_i = nnz as i32;
            let mut b = s.launch_builder(kc);
            b.arg(&rows_i).arg(&nnz_i).arg(ptr).arg(idx).arg(&mut *acc);
            // SAFETY: (int, int, int*, int*, u64*) as in feat_cols<L>.
            let threads = (rows as u64 * lanes as u64).max(nnz as u64 / 32);
            unsafe { b.launch(self.cfg(threads)) }.map_err(drv("cuLaunchKernel"))?;
            let step = f("len_radix_step")?;
            for shift in [24i32, 16, 8, 0] {
                let mut b = s.launch_builder(step);
                b.arg(&rows_i)
                    .arg(ptr)
                    .arg(&mut *acc)
                    .arg(&shift)
                    .arg(&mut *hist);
                // SAFETY: (int, int*, u64*, int, u64*) as in len_radix_step; 256 bins, blocks of
                // 256 threads (the pick clears one bin per thread).
                unsafe { b.launch(self.cfg(rows as u64)) }.map_err(drv("cuLaunchKernel"))?;
            }
            let above = f("len_sum_above")?;
            let mut b = s.launch_builder(above);
            b.arg(&rows_i).arg(ptr).arg(&mut *acc).arg(&k);
            // SAFETY: (int, int*, u64*, u64) as in len_sum_above.
            unsafe { b.launch(self.cfg(rows as u64)) }.map_err(drv("cuLaunchKernel"))?;
        }
        let a: Vec<u64> = s.clone_dtoh(&*acc).map_err(drv("device to host copy"))?;
        let len3 = ((a[5] as u128) << 64) + ((a[4] as u128) << 32) + a[3] as u128;
        Ok(RowSums {
            min_len: if rows == 0 { 0 } else { a[0] },
            max_len: a[1],
            len2: a[2],
            len3,
            empty: a[6],
            hist: [a[7], a[8], a[9], a[10], a[11], a[12]],
            bandwidth: a[13],
            dist: a[14],
            segments: a[15],
            top1pct: if rows == 0 { 0 } else { a[16] },
        })
    }

    /// Seconds to gather the sums of a device-resident pattern, median of `reps` after one
    /// warm-up, wall clock including the host round trips the radix select makes.
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
