//! CUDA SpMV: the kernel pool of `kernels/cuda/spmv_csr.cu`, device-resident CSR matrices, launch,
//! and event timing.

use std::sync::Arc;
use std::time::Instant;

use augur_datasets::{Csr, CsrRef, Scalar};
use augur_features::spmv::RowSums;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr,
    LaunchConfig, PushKernelArg, ValidAsZeroBits,
};

use super::module;
use crate::KernelError;

mod launch;
mod timing;

/// The GPU SpMV kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum GpuKernel {
    /// One thread per row.
    Scalar,
    /// `lanes` consecutive threads of a warp per row (2, 4, 8, 16 or 32).
    Vector(u32),
    /// One block of 256 threads per row.
    Block,
    /// Equal shares of rows + nonzeros per thread (merge-path); setup: the partition search.
    MergePath,
    /// Merge-path by tiles of 1280 items (5 per thread) per block, staged through shared memory (coalesced
    /// loads, CUB style); setup: the tile partition.
    MergeTiled,
    /// Equal shares of nonzeros per warp (coalesced), segmented warp sums added with atomics
    /// into a zeroed y.
    NnzSplit,
    /// Rows binned by length (CSR-adaptive style): each bin runs with the lane count that fits
    /// it, rows longer than 4096 are cut into chunks of one block each; setup: the binning.
    Binned,
    /// cuSPARSE `cusparseSpMV` with CSR_ALG1 (`alg2: false`) or CSR_ALG2; setup: buffer and
    /// `cusparseSpMV_preprocess`.
    Cusparse { alg2: bool },
    /// L lanes per row, L from the mean row length ([`adaptive_lanes`]), rows of more than
    /// [`AD_LONG`] x L entries that stand out in their warp (more than [`AD_REL`] x its mean row,
    /// or [`AD_FAR`] x [`AD_LONG`] x L entries) shared by their block in pieces of [`AD_PIECE`]
    /// entries (atomics).
    /// One launch, no setup: the known tier's hedge on large short-row matrices (near the best
    /// `vectorN` on regular rows, no row of 10^5 entries as slow as a vector kernel makes it;
    /// rows of 10^6 entries stay on one block each).
    Adaptive,
}

// Constants shared with spmv_csr.cu, which gets them as -D defines (module::SPMV_CSR).
/// Merge items (rows + nonzeros) per thread of merge-path.
pub(crate) const MP_ITEMS: u64 = 16;
/// Steps of 32 nonzeros per warp of nnz-split.
pub(crate) const NS_STEPS: u64 = 8;
/// Nonzeros per warp of nnz-split.
const NS_WARP_ITEMS: u64 = 32 * NS_STEPS;
/// Entries per block of the long-row chunks of the binned kernel.
pub(crate) const LONG_CHUNK: usize = 4096;
/// Threads per block of merge_tiled (one tile per block of `BLOCK` threads), and merge items
/// per thread.
pub(crate) const MT_THREADS: u64 = BLOCK as u64;
pub(crate) const MT_ITEMS: u64 = 5;
/// The adaptive kernel leaves a row of more than this many entries per lane to its block when
/// the row stands out in its warp ([`AD_REL`], [`AD_FAR`]).
pub(crate) const AD_LONG: u64 = 32;
/// ... more than this many times the mean entries of its warp's rows,
pub(crate) const AD_REL: u64 = 2;
/// ... or more than this many times `AD_LONG` entries per lane whatever its warp.
pub(crate) const AD_FAR: u64 = 2;
/// Entries per piece (one warp) of the adaptive kernel's long rows.
pub(crate) const AD_PIECE: u64 = 1024;
/// Lane counts of the bins; a row of `len` entries goes to the smallest with len <= 4 x lanes.
pub(crate) const BIN_LANES: [u32; 6] = [1, 2, 4, 8, 16, 32];

/// The binned kernel's row lists, made on the host from the row pointers (for either vendor):
/// the non-empty bins as (lanes, rows), and the rows longer than [`LONG_CHUNK`] with their
/// chunks (rows, chunk rows, chunk starts).
pub(crate) struct HostBins {
    pub bins: Vec<(u32, Vec<i32>)>,
    pub long: Option<(Vec<i32>, Vec<i32>, Vec<i32>)>,
}

pub(crate) fn bin_lists(ptr: &[i32]) -> HostBins {
    let rows = ptr.len().saturating_sub(1);
    let mut lists: Vec<Vec<i32>> = vec![Vec::new(); BIN_LANES.len()];
    let (mut long_rows, mut chunk_row, mut chunk_begin) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rows {
        let (s, e) = (ptr[r] as usize, ptr[r + 1] as usize);
        let len = e - s;
        if len > LONG_CHUNK {
            long_rows.push(r as i32);
            for c in (s..e).step_by(LONG_CHUNK) {
                chunk_row.push(r as i32);
                chunk_begin.push(c as i32);
            }
        } else {
            let b = BIN_LANES
                .iter()
                .position(|&l| len <= 4 * l as usize)
                .unwrap_or(BIN_LANES.len() - 1);
            lists[b].push(r as i32);
        }
    }
    HostBins {
        bins: BIN_LANES
            .iter()
            .copied()
            .zip(lists)
            .filter(|(_, l)| !l.is_empty())
            .collect(),
        long: (!long_rows.is_empty()).then_some((long_rows, chunk_row, chunk_begin)),
    }
}

impl GpuKernel {
    pub const ALL: [GpuKernel; 14] = [
        GpuKernel::Scalar,
        GpuKernel::Vector(2),
        GpuKernel::Vector(4),
        GpuKernel::Vector(8),
        GpuKernel::Vector(16),
        GpuKernel::Vector(32),
        GpuKernel::Block,
        GpuKernel::MergePath,
        GpuKernel::MergeTiled,
        GpuKernel::NnzSplit,
        GpuKernel::Binned,
        GpuKernel::Cusparse { alg2: false },
        GpuKernel::Cusparse { alg2: true },
        GpuKernel::Adaptive,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GpuKernel::Scalar => "scalar",
            GpuKernel::Vector(2) => "vector2",
            GpuKernel::Vector(4) => "vector4",
            GpuKernel::Vector(8) => "vector8",
            GpuKernel::Vector(16) => "vector16",
            GpuKernel::Vector(32) => "vector32",
            GpuKernel::Vector(_) => "vector?",
            GpuKernel::Block => "block",
            GpuKernel::MergePath => "merge_path",
            GpuKernel::MergeTiled => "merge_tiled",
            GpuKernel::NnzSplit => "nnz_split",
            GpuKernel::Binned => "binned",
            GpuKernel::Cusparse { alg2: false } => "cusparse_alg1",
            GpuKernel::Cusparse { alg2: true } => "cusparse_alg2",
            GpuKernel::Adaptive => "adaptive",
        }
    }

    pub fn from_name(name: &str) -> Result<GpuKernel, KernelError> {
        GpuKernel::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| KernelError::UnknownKernel {
                name: name.to_string(),
                known: GpuKernel::ALL.map(|k| k.name()).join(", "),
            })
    }

    fn entry(self, suffix: &str) -> String {
        format!("spmv_{}_{suffix}", self.name())
    }

    pub(crate) fn config(self, rows: usize, nnz: usize) -> LaunchConfig {
        let threads = match self {
            GpuKernel::Scalar => rows as u64,
            GpuKernel::Vector(l) => rows as u64 * l as u64,
            GpuKernel::Block => rows as u64 * BLOCK as u64,
            GpuKernel::MergePath => merge_pieces(rows, nnz),
            GpuKernel::MergeTiled => merge_tiles(rows, nnz) * BLOCK as u64,
            GpuKernel::NnzSplit => (nnz as u64).div_ceil(NS_WARP_ITEMS) * 32,
            GpuKernel::Adaptive => (rows as u64).div_ceil(32 / adaptive_lanes(rows, nnz)) * 32,
            GpuKernel::Cusparse { .. } | GpuKernel::Binned => 0,
        };
        threads_config(threads)
    }
}

const BLOCK: u32 = 256;

/// Lanes per row of the adaptive kernel (passed to `spmv_adaptive_*` as `lanes`; HIP too): 1 for
/// a mean row below 16 entries, else the power of two at or below a quarter of the mean, at
/// most 32 (on the training matrices' regular rows the best `vectorN` by mean length).
pub(crate) fn adaptive_lanes(rows: usize, nnz: usize) -> u64 {
    let mean = (nnz as u64).checked_div(rows as u64).unwrap_or(0);
    let mut l = 1;
    if mean >= 16 {
        while l < 32 && 2 * l <= mean / 4 {
            l *= 2;
        }
    }
    l
}

pub(crate) fn threads_config(threads: u64) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (threads.div_ceil(BLOCK as u64).max(1) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

pub(crate) fn merge_pieces(rows: usize, nnz: usize) -> u64 {
    (rows as u64 + nnz as u64).div_ceil(MP_ITEMS)
}

/// Merge items per block of merge_tiled.
pub(crate) const MT_TILE: u64 = MT_THREADS * MT_ITEMS;

pub(crate) fn merge_tiles(rows: usize, nnz: usize) -> u64 {
    (rows as u64 + nnz as u64).div_ceil(MT_TILE)
}

/// A kernel set up for one matrix: its setup cost and the buffers it keeps.
pub struct Prepared<T> {
    pub kernel: GpuKernel,
    /// Seconds of setup on the device (merge-path's partition, cuSPARSE's buffer and
    /// preprocessing; 0 for the others).
    pub setup_s: f64,
    setup: Setup<T>,
    funcs: Funcs,
}

/// What a prepared kernel keeps from its setup: one state per kind of kernel.
enum Setup<T> {
    /// Nothing (scalar, vector, block, nnz-split; the balanced and binned kernels on a matrix
    /// with no rows).
    Plain,
    /// Merge-path and merge-tiled: the partition and the carries.
    Merge(MergeBuffers<T>),
    /// cuSPARSE's descriptors, buffer and preprocessing.
    Cusparse(super::cusparse::CusparseSpmv),
    /// The binned kernel's row lists.
    Binned(BinBuffers),
}

/// The entry points a prepared kernel launches, looked up once at setup: a launch then does no
/// name formatting or `cuModuleGetFunction` (host time that throughput timing of small matrices
/// would see on every call).
#[derive(Default)]
struct Funcs {
    main: Option<CudaFunction>,
    fixup: Option<CudaFunction>,
    zero_rows: Option<CudaFunction>,
    chunks: Option<CudaFunction>,
    /// One per bin of [`BinBuffers::bins`], same order.
    rows: Vec<CudaFunction>,
}

/// The binned kernel's row lists.
struct BinBuffers {
    /// (lanes, rows in the bin, their indices).
    bins: Vec<(u32, i32, CudaSlice<i32>)>,
    long: Option<LongRows>,
}

/// Rows longer than LONG_CHUNK and their chunks.
struct LongRows {
    count: i32,
    rows: CudaSlice<i32>,
    chunks: i32,
    chunk_row: CudaSlice<i32>,
    chunk_begin: CudaSlice<i32>,
}

struct MergeBuffers<T> {
    pieces: i64,
    start_row: CudaSlice<i32>,
    carry_row: CudaSlice<i32>,
    carry_val: CudaSlice<T>,
}

use super::timing::TimingPlan;

/// A value type the GPU kernels take.
pub trait GpuScalar: Scalar + DeviceRepr + ValidAsZeroBits {
    const SUFFIX: &'static str;
}
impl GpuScalar for f32 {
    const SUFFIX: &'static str = "f32";
}
impl GpuScalar for f64 {
    const SUFFIX: &'static str = "f64";
}

/// Row pointers, column indices and values copied back to the host.
pub type HostCsrArrays<T> = (Vec<i32>, Vec<i32>, Vec<T>);

impl<T> DeviceCsr<T> {
    /// Row pointers and column indices on the device (what the feature gatherer reads).
    pub fn pattern(&self) -> (&CudaSlice<i32>, &CudaSlice<i32>) {
        (&self.ptr, &self.idx)
    }

    /// Copy the three arrays back (row pointers, column indices, values), e.g. to check an
    /// upload.
    pub fn download(&self, gpu: &CudaSpmv) -> Result<HostCsrArrays<T>, KernelError>
    where
        T: DeviceRepr + Default + Clone,
    {
        Ok((
            gpu.dtoh(&self.ptr)?,
            gpu.dtoh(&self.idx)?,
            gpu.dtoh(&self.val)?,
        ))
    }

    /// Row pointers, column indices and values on the device.
    pub(super) fn raw(&self) -> (&CudaSlice<i32>, &CudaSlice<i32>, &CudaSlice<T>) {
        (&self.ptr, &self.idx, &self.val)
    }
}

/// A CSR matrix in device memory.
pub struct DeviceCsr<T> {
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    pub(super) ptr: CudaSlice<i32>,
    pub(super) idx: CudaSlice<i32>,
    pub(super) val: CudaSlice<T>,
}

/// One GPU with the SpMV module loaded.
pub struct CudaSpmv {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    pub device: super::DeviceInfo,
    /// Seconds to compile (or read from the cache) and load the module.
    pub module_s: f64,
    pub module_cached: bool,
    cusparse: std::cell::OnceCell<super::cusparse::Handle>,
    /// A second stream for copies that overlap work on `stream`, and two events to order them
    /// (made on first use).
    copy_stream: std::cell::OnceCell<(Arc<CudaStream>, CudaEvent, CudaEvent)>,
    /// The feature gatherer, loaded on first use ([`CudaSpmv::gatherer`]).
    gatherer: std::cell::OnceCell<super::gather::GpuGatherer>,
    /// Events ordering this stream with a caller's (`launch_external`), made on first use.
    pub(super) joins: std::cell::OnceCell<super::external::Joins>,
}

use super::drv;

impl CudaSpmv {
    /// Open GPU `ordinal` and load the SpMV kernels (compiled by NVRTC or read from the cache).
    pub fn new(ordinal: usize) -> Result<CudaSpmv, KernelError> {
        let device = super::device_info(ordinal)?;
        let ctx = CudaContext::new(ordinal).map_err(drv("cuCtxCreate"))?;
        let stream = super::own_stream(&ctx)?;
        let t = Instant::now();
        let (ptx, cached) = module::ptx(module::SPMV_CSR, device.compute_capability)?;
        let module = ctx.load_module(ptx).map_err(drv("cuModuleLoadData"))?;
        Ok(CudaSpmv {
            ctx,
            stream,
            module,
            device,
            module_s: t.elapsed().as_secs_f64(),
            module_cached: cached,
            cusparse: std::cell::OnceCell::new(),
            copy_stream: std::cell::OnceCell::new(),
            gatherer: std::cell::OnceCell::new(),
            joins: std::cell::OnceCell::new(),
        })
    }

    /// The same GPU, context and loaded module with work enqueued on `stream` (a stream of this
    /// context): a second handle whose plans run beside this one's, e.g. the multi-GPU halo's
    /// remote block on the communication stream while the local block runs here. Device memory
    /// of either is usable by both; ordering work between the two streams is the caller's.
    pub fn on_stream(&self, stream: Arc<CudaStream>) -> CudaSpmv {
        CudaSpmv {
            ctx: self.ctx.clone(),
            stream,
            module: self.module.clone(),
            device: self.device.clone(),
            module_s: 0.0,
            module_cached: true,
            cusparse: std::cell::OnceCell::new(),
            copy_stream: std::cell::OnceCell::new(),
            gatherer: std::cell::OnceCell::new(),
            joins: std::cell::OnceCell::new(),
        }
    }

    /// This GPU's feature gatherer, loaded on first use together with what its first gather
    /// during an upload would pay once ([`CudaSpmv::warm_upload_gathering`]): a plan counts that
    /// as loading modules, not in its upload.
    pub fn gatherer(&self) -> Result<&super::gather::GpuGatherer, KernelError> {
        if let Some(g) = self.gatherer.get() {
            return Ok(g);
        }
        let g = super::gather::GpuGatherer::new(self)?;
        self.warm_upload_gathering(&g)?;
        Ok(self.gatherer.get_or_init(|| g))
    }

    fn cusparse_handle(&self) -> Result<&super::cusparse::Handle, KernelError> {
        if let Some(h) = self.cusparse.get() {
            return Ok(h);
        }
        let h = super::cusparse::Handle::new(&self.stream)?;
        Ok(self.cusparse.get_or_init(|| h))
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    fn function(&self, k: GpuKernel, suffix: &str) -> Result<CudaFunction, KernelError> {
        self.function_named(&k.entry(suffix))
    }

    fn function_named(&self, name: &str) -> Result<CudaFunction, KernelError> {
        self.module
            .load_function(name)
            .map_err(drv("cuModuleGetFunction"))
    }

    /// Copy a matrix to the device.
    pub fn upload<'a, T: GpuScalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
    ) -> Result<DeviceCsr<T>, KernelError> {
        let a = a.into();
        let s = &self.stream;
        Ok(DeviceCsr {
            rows: a.rows(),
            cols: a.cols(),
            nnz: a.nnz(),
            ptr: s
                .clone_htod(a.indptr())
                .map_err(drv("upload row pointers"))?,
            idx: s.clone_htod(a.indices()).map_err(drv("upload indices"))?,
            val: s.clone_htod(a.data()).map_err(drv("upload values"))?,
        })
    }

    /// Copy a matrix to the device and gather its exact feature sums meanwhile: the row
    /// pointers and column indices go first, then the gather's two kernels run on them while
    /// the values copy on a second stream, so a plan made from a host matrix pays for gathering
    /// only what does not fit under the copy of the values (two launches and a wait on the
    /// results if the gather is still running; `augur collect` records both uploads as
    /// `upload_s` and `upload_gather_s`). The matrix is ready on [`CudaSpmv::stream`] after.
    pub fn upload_gathering<'a, T: GpuScalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
        gatherer: &super::gather::GpuGatherer,
    ) -> Result<(DeviceCsr<T>, RowSums), KernelError> {
        let a = a.into();
        let s = &self.stream;
        if !Arc::ptr_eq(gatherer.stream(), s) {
            return Err(KernelError::Invalid(
                "upload_gathering: the gatherer was made for another CudaSpmv (its kernels must \
                 run on this one's stream)"
                    .into(),
            ));
        }
        if a.nnz() == 0 || a.rows() == 0 {
            let d = self.upload(a)?;
            let (ptr, idx) = d.pattern();
            let sums = gatherer.sums(a.rows(), a.nnz(), ptr, idx)?;
            return Ok((d, sums));
        }
        let (c, before, after) = match self.copy_stream.get() {
            Some(c) => c,
            None => {
                let c = s.fork().map_err(drv("cuStreamCreate"))?;
                let e1 = self.ctx.new_event(None).map_err(drv("cuEventCreate"))?;
                let e2 = self.ctx.new_event(None).map_err(drv("cuEventCreate"))?;
                self.copy_stream.get_or_init(|| (c, e1, e2))
            }
        };
        let ptr = s
            .clone_htod(a.indptr())
            .map_err(drv("upload row pointers"))?;
        let idx = s.clone_htod(a.indices()).map_err(drv("upload indices"))?;
        // SAFETY: filled by the copy below before anything reads it (`s` waits for `c`).
        let mut val = unsafe { s.alloc::<T>(a.nnz()) }.map_err(drv("cuMemAlloc"))?;
        // The copy stream starts after the allocation (stream-ordered on `s`), not after the
        // gather enqueued next.
        before.record(s).map_err(drv("cuEventRecord"))?;
        c.wait(before).map_err(drv("cuStreamWaitEvent"))?;
        // (A rayon worker doing the copy while this thread gathers was slower on the H100:
        // 83 us added at 1e6-1e7 nonzeros against 19 us, bench/results/upload-overlap-2026-11-24.)
        let (sums, copied) = gatherer.sums_during(a.rows(), a.nnz(), &ptr, &idx, || {
            c.memcpy_htod(a.data(), &mut val)
        });
        // Everything later on `s` (kernels, the free of `val`) comes after the values; if that
        // cannot be ordered, wait for the copy here before `val` can be freed.
        let ordered = after.record(c).and_then(|()| s.wait(after));
        if copied.is_err() || ordered.is_err() {
            let _ = c.synchronize();
        }
        copied.map_err(drv("upload values"))?;
        ordered.map_err(drv("cuStreamWaitEvent"))?;
        let sums = sums?;
        Ok((
            DeviceCsr {
                rows: a.rows(),
                cols: a.cols(),
                nnz: a.nnz(),
                ptr,
                idx,
                val,
            },
            sums,
        ))
    }

    /// Pay once what the first [`CudaSpmv::upload_gathering`] of a process would: the second
    /// stream and its events, the page-locked result buffer, the first launch of the gather's
    /// kernels (loaded lazily by the driver). ~1.5-2 ms on a fresh H100 process; a plan counts
    /// it with the gatherer's module load (`SetupCost::modules_s`), not in its upload.
    pub fn warm_upload_gathering(
        &self,
        gatherer: &super::gather::GpuGatherer,
    ) -> Result<(), KernelError> {
        let tiny: Csr<f32> = Csr::new((2, 2), vec![0, 1, 2], vec![0, 1], vec![1.0, 1.0]);
        self.upload_gathering(&tiny, gatherer)?;
        self.stream
            .synchronize()
            .map_err(drv("cuStreamSynchronize"))
    }

    pub fn htod<T: DeviceRepr>(&self, v: &[T]) -> Result<CudaSlice<T>, KernelError> {
        self.stream
            .clone_htod(v)
            .map_err(drv("host to device copy"))
    }

    pub fn dtoh<T: DeviceRepr + Default + Clone>(
        &self,
        d: &CudaSlice<T>,
    ) -> Result<Vec<T>, KernelError> {
        self.stream
            .clone_dtoh(d)
            .map_err(drv("device to host copy"))
    }
}

/// A launch of a [`Prepared`] whose entry points were not looked up (not made by `prepare`).
fn unprepared() -> KernelError {
    KernelError::Invalid("SpMV kernel launched without prepare".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The adaptive kernel's lanes per row (the kernel's `lanes` argument): 1 below a mean of 16
    /// entries, then the power of two at or below a quarter of the mean, at most 32; and its
    /// launch covers every row with 32 / lanes rows per warp.
    #[test]
    fn adaptive_lanes_follow_the_mean_row_and_the_grid_covers_every_row() {
        for (mean, lanes) in [
            (0, 1),
            (3, 1),
            (15, 1),
            (16, 4),
            (31, 4),
            (32, 8),
            (64, 16),
            (128, 32),
            (5000, 32),
        ] {
            assert_eq!(adaptive_lanes(1000, 1000 * mean), lanes, "mean {mean}");
        }
        assert_eq!(adaptive_lanes(0, 0), 1);
        for (rows, nnz) in [
            (1, 1),
            (31, 100),
            (1000, 3000),
            (1000, 500_000),
            (999_983, 64_000_000),
        ] {
            let per_warp = 32 / adaptive_lanes(rows, nnz);
            let c = GpuKernel::Adaptive.config(rows, nnz);
            let warps = c.grid_dim.0 as u64 * (c.block_dim.0 as u64 / 32);
            assert!(
                warps * per_warp >= rows as u64,
                "{rows} rows, {nnz} entries"
            );
            assert!((warps - 8) * per_warp < rows as u64, "one block too many");
        }
    }

    /// Every row lands in exactly one place: the smallest bin with len <= 4 x lanes (lengths
    /// past 128 in the last bin), or, past LONG_CHUNK, the long rows with one chunk per
    /// LONG_CHUNK entries starting inside the row.
    #[test]
    fn rows_are_binned_by_length_and_long_rows_chunked() {
        let lens = [0usize, 1, 4, 5, 9, 33, 128, 129, 4096, 4097, 9000, 3];
        let mut ptr = vec![0i32];
        for l in lens {
            ptr.push(ptr.last().unwrap() + l as i32);
        }
        let h = bin_lists(&ptr);
        let in_bin = |lanes: u32| -> Vec<i32> {
            h.bins
                .iter()
                .find(|(l, _)| *l == lanes)
                .map_or(Vec::new(), |(_, r)| r.clone())
        };
        assert_eq!(in_bin(1), vec![0, 1, 2, 11]);
        assert_eq!(in_bin(2), vec![3]);
        assert_eq!(in_bin(4), vec![4]);
        assert_eq!(in_bin(16), vec![5]);
        assert_eq!(in_bin(32), vec![6, 7, 8]);
        assert!(h.bins.iter().all(|(_, r)| !r.is_empty()));
        let (long, chunk_row, chunk_begin) = h.long.expect("two long rows");
        assert_eq!(long, vec![9, 10]);
        assert_eq!(chunk_row, vec![9, 9, 10, 10, 10]);
        for (r, b) in chunk_row.iter().zip(&chunk_begin) {
            let r = *r as usize;
            assert!(ptr[r] <= *b && *b < ptr[r + 1]);
        }
        assert!(bin_lists(&[0]).bins.is_empty() && bin_lists(&[0]).long.is_none());
    }
}
