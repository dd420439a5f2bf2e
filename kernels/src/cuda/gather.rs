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

const ACC_N: usize = 16;

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
            // A fixed grid of 4 blocks per SM: grid-stride loops, few global atomics.
            blocks: 4 * gpu.device.multiprocessors.max(1) as u32,
        })
    }

    fn cfg(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// The exact sums of a device-resident pattern (row pointers and column indices).
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
        let mut init = [0u64; ACC_N];
        init[0] = u64::MAX;
        let mut acc = s.clone_htod(&init).map_err(drv("host to device copy"))?;
        let (rows_i, nnz_i) = (rows as i32, nnz as i32);
        if rows > 0 {
            let k = f("feat_rows")?;
            let mut b = s.launch_builder(&k);
            b.arg(&rows_i).arg(ptr).arg(&mut acc);
            // SAFETY: (int, int*, u64*) as in feat_rows; acc holds ACC_N counters.
            unsafe { b.launch(self.cfg()) }.map_err(drv("cuLaunchKernel"))?;
            let k = f("feat_cols")?;
            let mut b = s.launch_builder(&k);
            b.arg(&rows_i).arg(&nnz_i).arg(ptr).arg(idx).arg(&mut acc);
            // SAFETY: (int, int, int*, int*, u64*) as in feat_cols.
            unsafe { b.launch(self.cfg()) }.map_err(drv("cuLaunchKernel"))?;
        }
        let a: Vec<u64> = s.clone_dtoh(&acc).map_err(drv("device to host copy"))?;
        let top1pct = self.top_sum(rows, ptr, rows.div_ceil(100))?;
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
            top1pct,
        })
    }

    /// Entries in the `k` longest rows: radix select of the k-th largest length, 8 bits a pass,
    /// then the sum of the lengths above it.
    fn top_sum(&self, rows: usize, ptr: &CudaSlice<i32>, k: usize) -> Result<u64, KernelError> {
        if rows == 0 || k == 0 {
            return Ok(0);
        }
        let s = &self.stream;
        let hist_k = self
            .module
            .load_function("len_radix_hist")
            .map_err(drv("cuModuleGetFunction"))?;
        let rows_i = rows as i32;
        let (mut prefix, mut mask, mut want) = (0u32, 0u32, k as u64);
        for shift in [24i32, 16, 8, 0] {
            let mut hist = s.alloc_zeros::<u64>(256).map_err(drv("cuMemAlloc"))?;
            let mut b = s.launch_builder(&hist_k);
            b.arg(&rows_i)
                .arg(ptr)
                .arg(&prefix)
                .arg(&mask)
                .arg(&shift)
                .arg(&mut hist);
            // SAFETY: (int, int*, unsigned, unsigned, int, u64*) as in len_radix_hist; 256 bins.
            unsafe { b.launch(self.cfg()) }.map_err(drv("cuLaunchKernel"))?;
            let h: Vec<u64> = s.clone_dtoh(&hist).map_err(drv("device to host copy"))?;
            // Walk the digits from the top until the k-th largest is inside one of them.
            let mut digit = 0u32;
            for d in (0..256u32).rev() {
                if h[d as usize] >= want {
                    digit = d;
                    break;
                }
                want -= h[d as usize];
            }
            prefix |= digit << shift;
            mask |= 255u32 << shift;
        }
        let t = prefix; // the k-th largest length
        let above_k = self
            .module
            .load_function("len_sum_above")
            .map_err(drv("cuModuleGetFunction"))?;
        let mut out = s.alloc_zeros::<u64>(2).map_err(drv("cuMemAlloc"))?;
        let mut b = s.launch_builder(&above_k);
        b.arg(&rows_i).arg(ptr).arg(&t).arg(&mut out);
        // SAFETY: (int, int*, unsigned, u64*) as in len_sum_above; out holds 2 counters.
        unsafe { b.launch(self.cfg()) }.map_err(drv("cuLaunchKernel"))?;
        let o: Vec<u64> = s.clone_dtoh(&out).map_err(drv("device to host copy"))?;
        let (count, sum) = (o[0], o[1]);
        Ok(sum + (k as u64 - count) * t as u64)
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
