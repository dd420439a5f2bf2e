//! The device feature gatherer on AMD GPUs: the same `features.cu` as CUDA's (after
//! `portable.h`), compiled by hiprtc, its host side written against HIP's C API like
//! [`crate::cuda::gather::GpuGatherer`]: two kernels fill the exact integer sums on the device,
//! one copy brings them back, and the features come out of the same `finish_features` as the
//! CPU gatherer's. **Not yet run on AMD hardware** (`augur check --backend hip` compares it with
//! the CPU gatherer where there is one).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::time::Instant;

use augur_features::spmv::RowSums;

use super::api::{Function, Module};
use super::spmv::{arg, HipBuf, HipSpmv};
use crate::cuda::gather::{decode, ACC_N, BINS, ENTRY_POINTS, OUT_N};
use crate::cuda::module;
use crate::KernelError;

/// Blocks of the grid-stride loops at most: 16 per compute unit of the largest AMD GPUs so far
/// (MI300X: 304 CUs). The CU count is not read from the device: `hipDeviceAttribute_t`'s values
/// were renumbered between ROCm 4 and 5, and more blocks than CUs x 16 only adds atomics.
const MAX_BLOCKS: u64 = 16 * 304;

/// The features module on one AMD GPU and the gather's buffers.
pub struct HipGatherer {
    module: Module,
    functions: HashMap<&'static str, Function>,
    /// Counters, length bins, long rows and their first pieces: allocated and zeroed once (the
    /// lists grown for a matrix with more long rows), left zeroed by each gather; dropped after
    /// a failed one.
    bufs: RefCell<Option<Bufs>>,
    /// Seconds to compile (or read) and load the module.
    pub module_s: f64,
}

struct Bufs {
    acc: HipBuf<u64>,
    bins: HipBuf<u32>,
    longs: HipBuf<u64>,
    first_piece: HipBuf<u64>,
}

impl HipGatherer {
    /// Load `features.cu`'s code object for `gpu`'s ISA (compiled or from the cache).
    pub(super) fn new(gpu: &HipSpmv) -> Result<HipGatherer, KernelError> {
        let t = Instant::now();
        let (code, _) = super::code_object(module::FEATURES, &gpu.arch)?;
        let api = gpu.api();
        let mut m: Module = std::ptr::null_mut();
        // SAFETY: a complete code object for this device's ISA; out-pointer.
        api.check("hipModuleLoadData", unsafe {
            (api.module_load_data)(&mut m, code.as_ptr().cast())
        })?;
        let mut functions = HashMap::new();
        for &n in &ENTRY_POINTS {
            let c = CString::new(n).expect("no NUL in an entry point");
            let mut f: Function = std::ptr::null_mut();
            // SAFETY: the module is loaded; out-pointer.
            let r = api.check(&format!("hipModuleGetFunction({n})"), unsafe {
                (api.module_get_function)(&mut f, m, c.as_ptr())
            });
            if let Err(e) = r {
                unsafe { (api.module_unload)(m) };
                return Err(e);
            }
            functions.insert(n, f);
        }
        Ok(HipGatherer {
            module: m,
            functions,
            bufs: RefCell::new(None),
            module_s: t.elapsed().as_secs_f64(),
        })
    }

    fn function(&self, name: &str) -> Result<Function, KernelError> {
        self.functions
            .get(name)
            .copied()
            .ok_or_else(|| KernelError::Hip(format!("no kernel `{name}` in features.cu")))
    }

    /// The exact sums of a device pattern (row pointers `ptr`, column indices `idx`) on `gpu`'s
    /// stream, after whatever is already enqueued there: two kernels, one copy back.
    pub(super) fn sums(
        &self,
        gpu: &HipSpmv,
        (rows, nnz): (usize, usize),
        (ptr, idx): (*mut c_void, *mut c_void),
    ) -> Result<RowSums, KernelError> {
        if rows == 0 {
            return Ok(RowSums::NO_ROWS);
        }
        let mut guard = self.bufs.borrow_mut();
        let sums = self
            .launch(gpu, &mut guard, (rows, nnz), (ptr, idx))
            .and_then(|()| {
                let b = guard.as_ref().expect("allocated by launch");
                let mut out = vec![0u64; OUT_N];
                gpu.copy_out(&b.acc, &mut out)?;
                Ok(decode(&out))
            });
        if sums.is_err() {
            // The counters may be half-updated: start from fresh ones next time.
            *guard = None;
        }
        sums
    }

    /// Buffers for `nnz` entries (first use: allocated and zeroed by `feat_init`), then the two
    /// kernels, as `GpuGatherer::launch` enqueues them.
    fn launch(
        &self,
        gpu: &HipSpmv,
        bufs: &mut Option<Bufs>,
        (rows, nnz): (usize, usize),
        (ptr, idx): (*mut c_void, *mut c_void),
    ) -> Result<(), KernelError> {
        let need = nnz / BINS + 1;
        match bufs.as_mut() {
            Some(b) if b.longs.len() < need => {
                b.longs = gpu.zeroed::<u64>(need)?;
                b.first_piece = gpu.zeroed::<u64>(need)?;
            }
            Some(_) => {}
            None => {
                let need = need.max(1024);
                let b = Bufs {
                    acc: gpu.zeroed::<u64>(ACC_N)?,
                    bins: gpu.zeroed::<u32>(BINS)?,
                    longs: gpu.zeroed::<u64>(need)?,
                    first_piece: gpu.zeroed::<u64>(need)?,
                };
                let (ap, bp) = (b.acc.device_ptr(), b.bins.device_ptr());
                // (u64* acc, unsigned* bins)
                gpu.launch_raw(self.function("feat_init")?, 1, &mut [arg(&ap), arg(&bp)])?;
                *bufs = Some(b);
            }
        }
        let b = bufs.as_ref().expect("allocated above");
        let (ap, bp, lp, fp) = (
            b.acc.device_ptr(),
            b.bins.device_ptr(),
            b.longs.device_ptr(),
            b.first_piece.device_ptr(),
        );
        let k = rows.div_ceil(100) as u64;
        let rows_i = rows as i32;
        let grid = |threads: u64| threads.div_ceil(256 * 8).clamp(1, MAX_BLOCKS) as u32;
        // (int rows, const int* ptr, u64* acc, unsigned* bins, u64* longs, u64* first_piece, u64 k)
        let mut args = [
            arg(&rows_i),
            arg(&ptr),
            arg(&ap),
            arg(&bp),
            arg(&lp),
            arg(&fp),
            arg(&k),
        ];
        gpu.launch_raw(self.function("feat_rows")?, grid(rows as u64), &mut args)?;
        // Lanes per short row as on CUDA (about half the mean length).
        let mean = nnz as f64 / rows as f64;
        let lanes = [32u32, 16, 8, 4, 2, 1]
            .into_iter()
            .find(|&l| l as f64 <= mean / 2.0)
            .unwrap_or(1);
        // (int rows, const int* ptr, const int* idx, u64* acc, unsigned* bins,
        //  const u64* longs, const u64* first_piece)
        let mut args = [
            arg(&rows_i),
            arg(&ptr),
            arg(&idx),
            arg(&ap),
            arg(&bp),
            arg(&lp),
            arg(&fp),
        ];
        let threads = (rows as u64 * lanes as u64).max(nnz as u64 / 32);
        let f = self.function(&format!("feat_cols{lanes}"))?;
        gpu.launch_raw(f, grid(threads), &mut args)
    }

    pub(super) fn unload(&self, gpu: &HipSpmv) {
        *self.bufs.borrow_mut() = None;
        let api = gpu.api();
        // SAFETY: loaded in `new`, unloaded once (by HipSpmv's drop, after its stream drained).
        unsafe { (api.module_unload)(self.module) };
    }
}

/// The AMD device gatherer against the CPU one, beside the correctness suite (`augur check
/// --backend hip` runs it on every matrix), as [`crate::cuda::gather::GatherCheck`] does on
/// CUDA: the features the same bit for bit, gathered alone and during an upload, and that upload
/// delivering the matrix intact.
pub struct HipGatherCheck {
    gpu: HipSpmv,
}

impl HipGatherCheck {
    /// On AMD GPU `ordinal`, with its own handle.
    pub fn new(ordinal: usize) -> Result<HipGatherCheck, KernelError> {
        Ok(HipGatherCheck {
            gpu: HipSpmv::new(ordinal)?,
        })
    }

    /// What differs on `m` (empty: nothing), one line per feature or array.
    pub fn compare(&self, m: &augur_datasets::Csr<f64>) -> Result<Vec<String>, KernelError> {
        use crate::device::SpmvDevice;
        use augur_features::spmv::SpmvGatherer;
        use augur_features::spmv::{finish_features, CpuGatherer, CsrPattern};
        let p = CsrPattern::of(m);
        let cpu = CpuGatherer
            .gather(p)
            .map_err(|e| KernelError::Hip(e.to_string()))?
            .values();
        let up = self.gpu.upload(m)?;
        let alone = finish_features(p, &self.gpu.gather(&up)?).values();
        let (dm, sums) = self.gpu.upload_gathering(m)?;
        let during = finish_features(p, &sums).values();
        let arrays = dm.download(&self.gpu)?;
        Ok(crate::cuda::gather::differences(
            m,
            &cpu,
            [("hip", &alone), ("hip during upload", &during)],
            arrays,
        ))
    }
}
