//! The GPU feature gatherer: `kernels/cuda/features.cu` fills the exact integer sums of
//! [`augur_features::spmv::RowSums`] on the device, and the features come out of the same
//! [`augur_features::spmv::finish_features`] the CPU gatherer uses, so the values are identical.

use std::sync::Arc;
use std::time::Instant;

use augur_features::spmv::{finish_features, CsrPattern, RowSums, SpmvFeatures, SpmvGatherer};
use augur_features::FeatureError;
use cudarc::driver::{CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::module;
use crate::KernelError;

const ACC_N: usize = 22;

fn drv(what: &str) -> impl Fn(cudarc::driver::DriverError) -> KernelError + '_ {
    move |e| KernelError::Cuda(format!("{what}: {e}"))
}

/// The feature kernels, loaded on one GPU.
pub struct GpuGatherer {
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    blocks: u32,
}

impl GpuGatherer {
    pub fn new(gpu: &super::CudaSpmv) -> Result<GpuGatherer, KernelError> {
        let (ptx, _) = module::ptx(module::FEATURES, gpu.device.compute_capability)?;
        let module = gpu
            .context()
            .load_module(ptx)
            .map_err(drv("cuModuleLoadData"))?;
        Ok(GpuGatherer {
            stream: gpu.stream().clone(),
            module,
            // A fixed grid of 16 blocks per SM: enough loads in flight for the grid-stride loops,
            // and few global atomics (one per block and counter).
            blocks: 16 * gpu.device.multiprocessors.max(1) as u32,
        })
    }

    fn cfg(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// The exact sums of a device-resident pattern (row pointers and column indices): every
    /// kernel is enqueued on the stream and one copy brings the counters back.
    pub fn sums(
        &self,
        rows: usize,
        nnz: usize,
        ptr: &CudaSlice<i32>,
        idx: &CudaSlice<i32>,
    ) -> Result<RowSums, KernelError> {
        let s = &self.stream;
        let f = |name: &str| {
            self.module
                .load_function(name)
                .map_err(drv("cuModuleGetFunction"))
        };
        let k = rows.div_ceil(100) as u64;
        let mut init = [0u64; ACC_N];
        init[0] = u64::MAX;
        init[19] = k;
        let mut acc = s.clone_htod(&init).map_err(drv("host to device copy"))?;
        let rows_i = rows as i32;
        if rows > 0 {
            let kr = f("feat_rows")?;
            let mut b = s.launch_builder(&kr);
            b.arg(&rows_i).arg(ptr).arg(&mut acc);
            // SAFETY: (int, int*, u64*) as in feat_rows; acc holds ACC_N counters.
            unsafe { b.launch(self.cfg()) }.map_err(drv("cuLaunchKernel"))?;
            // Rows of similar length: L lanes per row (about half the mean length), coalesced.
            // A few very long rows would serialise on their lanes: then balance by entries.
            let max_len = s
                .clone_dtoh(&acc.slice(1..2))
                .map_err(drv("device to host copy"))?[0];
            let mean = nnz as f64 / rows as f64;
            if max_len > 1024 && max_len as f64 > 16.0 * mean {
                let kc = f("feat_cols_chunked")?;
                let nnz_i = nnz as i32;
                let mut b = s.launch_builder(&kc);
                b.arg(&rows_i).arg(&nnz_i).arg(ptr).arg(idx).arg(&mut acc);
                // SAFETY: (int, int, int*, int*, u64*) as in feat_cols_chunked.
                unsafe { b.launch(self.cfg()) }.map_err(drv("cuLaunchKernel"))?;
            } else {
                let lanes = [32u32, 16, 8, 4, 2, 1]
                    .into_iter()
                    .find(|&l| l as f64 <= mean / 2.0)
                    .unwrap_or(1);
                let kc = f(&format!("feat_cols{lanes}"))?;
                let mut b = s.launch_builder(&kc);
                b.arg(&rows_i).arg(ptr).arg(idx).arg(&mut acc);
                // SAFETY: (int, int*, int*, u64*) as in feat_cols<L>.
                unsafe { b.launch(self.cfg()) }.map_err(drv("cuLaunchKernel"))?;
            }
            self.top_sum(rows_i, ptr, k, &mut acc)?;
        }
        let a: Vec<u64> = s.clone_dtoh(&acc).map_err(drv("device to host copy"))?;
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

    /// Entries in the `k` longest rows, into acc[16]: radix select of the k-th largest length on
    /// the device (8 bits a pass), then the sum of the lengths above it. No host round trip.
    fn top_sum(
        &self,
        rows: i32,
        ptr: &CudaSlice<i32>,
        k: u64,
        acc: &mut CudaSlice<u64>,
    ) -> Result<(), KernelError> {
        let s = &self.stream;
        let f = |name: &str| {
            self.module
                .load_function(name)
                .map_err(drv("cuModuleGetFunction"))
        };
        let (hist_k, pick_k) = (f("len_radix_hist")?, f("radix_pick")?);
        let mut hist = s.alloc_zeros::<u64>(256).map_err(drv("cuMemAlloc"))?;
        let one_block = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        for shift in [24i32, 16, 8, 0] {
            let mut b = s.launch_builder(&hist_k);
            b.arg(&rows).arg(ptr).arg(&*acc).arg(&shift).arg(&mut hist);
            // SAFETY: (int, int*, u64*, int, u64*) as in len_radix_hist; 256 bins.
            unsafe { b.launch(self.cfg()) }.map_err(drv("cuLaunchKernel"))?;
            let mut b = s.launch_builder(&pick_k);
            b.arg(&mut hist).arg(&shift).arg(&mut *acc);
            // SAFETY: (u64*, int, u64*) as in radix_pick; one block of 256 threads, 256 bins.
            unsafe { b.launch(one_block) }.map_err(drv("cuLaunchKernel"))?;
        }
        let above = f("len_sum_above")?;
        let mut b = s.launch_builder(&above);
        b.arg(&rows).arg(ptr).arg(&mut *acc);
        // SAFETY: (int, int*, u64*) as in len_sum_above.
        unsafe { b.launch(self.cfg()) }.map_err(drv("cuLaunchKernel"))?;
        let fin = f("top_finish")?;
        let mut b = s.launch_builder(&fin);
        b.arg(&k).arg(&mut *acc);
        // SAFETY: (u64, u64*) as in top_finish; one thread.
        unsafe { b.launch(LaunchConfig::for_num_elems(1)) }.map_err(drv("cuLaunchKernel"))?;
        Ok(())
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
        let mut t: Vec<f64> = (0..reps.max(1))
            .map(|_| {
                let s = Instant::now();
                self.sums(rows, nnz, ptr, idx)
                    .map(|_| s.elapsed().as_secs_f64())
            })
            .collect::<Result<_, _>>()?;
        t.sort_by(f64::total_cmp);
        Ok(t[t.len() / 2])
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
