//! [`HipSpmv`]: one AMD GPU running the portable SpMV pool, as an [`SpmvDevice`]. Written
//! against HIP's C API through [`super::api`]; **not yet run on AMD hardware** (see the module
//! documentation of [`super`]).

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_int, c_void, CString};
use std::marker::PhantomData;
use std::time::Instant;

use augur_datasets::CsrRef;
use augur_features::spmv::RowSums;

use super::api::{self, Api, Event, Function, Module, Stream};
use super::gather::HipGatherer;
use super::rocsparse::{self, Rocsparse, SpmvAbi, SpmvCall};
use crate::cuda::module;
use crate::cuda::spmv::{
    adaptive_lanes, bin_lists, merge_pieces, merge_tiles, threads_config, BIN_LANES, MP_ITEMS,
    MT_TILE,
};
use crate::cuda::{GpuKernel, GpuScalar, TimingPlan};
use crate::device::{same_len, BackendKind, SpmvDevice};
use crate::KernelError;

/// The kernels of the pool that run on HIP from the portable source: all but cuSPARSE.
pub fn hip_kernels() -> impl Iterator<Item = GpuKernel> {
    GpuKernel::ALL
        .into_iter()
        .filter(|k| !matches!(k, GpuKernel::Cusparse { .. }))
}

/// The vendor baseline on HIP (what `cusparse_alg1`/`_alg2` are on CUDA): rocSPARSE's generic
/// SpMV with its two CSR algorithms, by name and `rocsparse_spmv_alg`.
pub const ROCSPARSE_KERNELS: [(&str, std::ffi::c_int); 2] = [
    ("rocsparse_adaptive", rocsparse::ALG_CSR_ADAPTIVE),
    ("rocsparse_rowsplit", rocsparse::ALG_CSR_ROWSPLIT),
];

/// What a prepared HIP kernel is: one of the portable pool, or rocSPARSE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HipKernel {
    Pool(GpuKernel),
    /// `rocsparse_spmv` with this `rocsparse_spmv_alg`.
    Rocsparse(std::ffi::c_int),
}

impl HipKernel {
    /// Its name, as `from_name` reads it.
    pub fn name(self) -> &'static str {
        match self {
            HipKernel::Pool(k) => k.name(),
            HipKernel::Rocsparse(alg) => ROCSPARSE_KERNELS
                .iter()
                .find(|(_, a)| *a == alg)
                .map_or("rocsparse", |(n, _)| *n),
        }
    }

    /// A kernel by its name (the pool's, or `rocsparse_adaptive`/`rocsparse_rowsplit`).
    pub fn from_name(name: &str) -> Result<HipKernel, KernelError> {
        if let Some(&(_, alg)) = ROCSPARSE_KERNELS.iter().find(|(n, _)| *n == name) {
            return Ok(HipKernel::Rocsparse(alg));
        }
        let k = GpuKernel::from_name(name)?;
        if !hip_kernels().any(|h| h == k) {
            return Err(crate::device::unsupported(
                BackendKind::Hip,
                &format!("kernel {name} (rocsparse_adaptive and rocsparse_rowsplit are HIP's vendor kernels)"),
            ));
        }
        Ok(HipKernel::Pool(k))
    }
}

/// The entry points of a portable source that the Rust side launches (on either vendor).
pub fn entry_points(source: &str) -> Vec<String> {
    match source {
        "spmv_csr" => {
            let mut v: Vec<String> = ["f32", "f64"]
                .iter()
                .flat_map(|s| {
                    hip_kernels()
                        .filter(|&k| k != GpuKernel::Binned)
                        .map(move |k| format!("spmv_{}_{s}", k.name()))
                        .chain([format!("merge_path_fixup_{s}")])
                        .chain(BIN_LANES.iter().map(move |l| format!("spmv_rows{l}_{s}")))
                        .chain([format!("zero_rows_{s}"), format!("spmv_chunks_{s}")])
                })
                .collect();
            v.push("merge_partition".into());
            v
        }
        "features" => crate::cuda::gather::ENTRY_POINTS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        "comm" => crate::cuda::comm::ENTRY_POINTS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        "vector" => crate::cuda::vector::ENTRY_POINTS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        _ => Vec::new(),
    }
}

/// Device memory of `len` elements of T (none for 0), freed on drop.
pub struct HipBuf<T> {
    ptr: *mut c_void,
    len: usize,
    api: &'static Api,
    _t: PhantomData<T>,
}

impl<T> HipBuf<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address (for kernel arguments and interop).
    pub fn device_ptr(&self) -> *mut c_void {
        self.ptr
    }

    fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
}

impl<T> Drop for HipBuf<T> {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: allocated by hipMalloc, freed once; hipFree waits for work using it.
            unsafe { (self.api.free)(self.ptr) };
        }
    }
}

/// A CSR matrix in device memory.
pub struct HipCsr<T> {
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    ptr: HipBuf<i32>,
    idx: HipBuf<i32>,
    val: HipBuf<T>,
}

impl<T> HipCsr<T> {
    /// Row pointers, column indices and values copied back to the host.
    pub fn download(
        &self,
        gpu: &HipSpmv,
    ) -> Result<crate::cuda::spmv::HostCsrArrays<T>, KernelError>
    where
        T: Clone + Default,
    {
        let mut ptr = vec![0i32; self.ptr.len];
        let mut idx = vec![0i32; self.idx.len];
        let mut val = vec![T::default(); self.val.len];
        gpu.copy_out(&self.ptr, &mut ptr)?;
        gpu.copy_out(&self.idx, &mut idx)?;
        gpu.copy_out(&self.val, &mut val)?;
        Ok((ptr, idx, val))
    }
}

/// A merge kernel's state: items per thread, the partition's row and entry starts, the carries.
type MergeState<T> = (i64, HipBuf<i32>, HipBuf<i32>, HipBuf<T>);

/// A kernel set up for one matrix: its entry points and, for the merge kernels, the partition
/// and the carries; for binned, its row lists.
pub struct HipPrepared<T> {
    pub kernel: HipKernel,
    pub setup_s: f64,
    /// None for binned (its entry points are per bin).
    main: Option<Function>,
    fixup: Option<Function>,
    merge: Option<MergeState<T>>,
    binned: Option<HipBins>,
    vendor: Option<RocSpmv>,
}

/// rocSPARSE set up for one matrix: its descriptors (the vectors' addresses set at each launch)
/// and work buffer.
struct RocSpmv {
    api: &'static Rocsparse,
    handle: rocsparse::Handle,
    abi: SpmvAbi,
    alg: std::ffi::c_int,
    compute_type: std::ffi::c_int,
    mat: rocsparse::SpMat,
    x: rocsparse::DnVec,
    y: rocsparse::DnVec,
    buffer: HipBuf<u8>,
    buffer_size: usize,
}

impl Drop for RocSpmv {
    fn drop(&mut self) {
        // SAFETY: created once in `rocsparse_prepare`, destroyed once.
        unsafe {
            (self.api.destroy_dnvec_descr)(self.y);
            (self.api.destroy_dnvec_descr)(self.x);
            (self.api.destroy_spmat_descr)(self.mat);
        }
    }
}

/// The binned kernel's row lists on the device: per non-empty bin (lanes, rows, their list, its
/// entry point), and the long rows with their chunks.
struct HipBins {
    bins: Vec<(u32, i32, HipBuf<i32>, Function)>,
    long: Option<HipLongRows>,
}

struct HipLongRows {
    count: i32,
    rows: HipBuf<i32>,
    chunks: i32,
    chunk_row: HipBuf<i32>,
    chunk_begin: HipBuf<i32>,
    zero: Function,
    run: Function,
}

/// One AMD GPU with the portable SpMV module loaded.
pub struct HipSpmv {
    api: &'static Api,
    pub ordinal: usize,
    pub name: String,
    pub arch: String,
    stream: Stream,
    module: Module,
    functions: RefCell<HashMap<String, Function>>,
    /// Seconds to compile (or read from the cache) and load the module.
    pub module_s: f64,
    pub module_cached: bool,
    /// rocSPARSE's handle on this stream and its `rocsparse_spmv` signature, made on first use.
    rocsparse: RefCell<Option<(rocsparse::Handle, SpmvAbi)>>,
    /// The device feature gatherer, loaded on first use.
    gatherer: OnceCell<HipGatherer>,
}

impl Drop for HipSpmv {
    fn drop(&mut self) {
        // SAFETY: made in `new`, released once, after everything on the stream.
        unsafe {
            (self.api.stream_synchronize)(self.stream);
            if let Some(g) = self.gatherer.get() {
                g.unload(self);
            }
            if let (Some((h, _)), Ok(r)) = (self.rocsparse.get_mut().take(), rocsparse::rocsparse())
            {
                (r.destroy_handle)(h);
            }
            (self.api.module_unload)(self.module);
            (self.api.stream_destroy)(self.stream);
        }
    }
}

impl HipSpmv {
    /// Open AMD GPU `ordinal` and load the SpMV kernels (compiled by hiprtc for its ISA, or read
    /// from the cache). Without ROCm or an AMD GPU: "not available", naming what is missing.
    pub fn new(ordinal: usize) -> Result<HipSpmv, KernelError> {
        let info = super::devices()?
            .into_iter()
            .nth(ordinal)
            .ok_or_else(|| super::not_available(format!("no AMD GPU {ordinal}")))?;
        let arch = info.arch.clone().ok_or_else(|| {
            super::not_available(format!(
                "the ISA of {} could not be read from its properties; set AUGUR_HIP_ARCH \
                 (e.g. gfx90a)",
                info.name
            ))
        })?;
        let api = api::api()?;
        // SAFETY: plain C calls with valid out-pointers.
        api.check("hipSetDevice", unsafe {
            (api.set_device)(ordinal as c_int)
        })?;
        let mut stream: Stream = std::ptr::null_mut();
        // hipStreamNonBlocking = 1: no implicit order with the null stream.
        api.check("hipStreamCreateWithFlags", unsafe {
            (api.stream_create)(&mut stream, 1)
        })?;
        let t = Instant::now();
        let (code, cached) = super::code_object(module::SPMV_CSR, &arch)?;
        let mut m: Module = std::ptr::null_mut();
        // SAFETY: a complete code object for this device's ISA.
        let loaded = api.check("hipModuleLoadData", unsafe {
            (api.module_load_data)(&mut m, code.as_ptr().cast())
        });
        if let Err(e) = loaded {
            unsafe { (api.stream_destroy)(stream) };
            return Err(e);
        }
        Ok(HipSpmv {
            api,
            ordinal,
            name: info.name,
            arch,
            stream,
            module: m,
            functions: RefCell::new(HashMap::new()),
            module_s: t.elapsed().as_secs_f64(),
            module_cached: cached,
            rocsparse: RefCell::new(None),
            gatherer: OnceCell::new(),
        })
    }

    fn function(&self, name: &str) -> Result<Function, KernelError> {
        if let Some(&f) = self.functions.borrow().get(name) {
            return Ok(f);
        }
        let c = CString::new(name).expect("no NUL in an entry point");
        let mut f: Function = std::ptr::null_mut();
        // SAFETY: the module is loaded; out-pointer.
        self.api
            .check(&format!("hipModuleGetFunction({name})"), unsafe {
                (self.api.module_get_function)(&mut f, self.module, c.as_ptr())
            })?;
        self.functions.borrow_mut().insert(name.to_string(), f);
        Ok(f)
    }

    fn alloc<T>(&self, len: usize) -> Result<HipBuf<T>, KernelError> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        if len > 0 {
            // SAFETY: out-pointer; size in bytes.
            self.api.check("hipMalloc", unsafe {
                (self.api.malloc)(&mut ptr, len * std::mem::size_of::<T>())
            })?;
        }
        Ok(HipBuf {
            ptr,
            len,
            api: self.api,
            _t: PhantomData,
        })
    }

    pub(super) fn api(&self) -> &'static Api {
        self.api
    }

    /// The feature gatherer (its module loaded on first use).
    pub fn gatherer(&self) -> Result<&HipGatherer, KernelError> {
        if let Some(g) = self.gatherer.get() {
            return Ok(g);
        }
        let g = HipGatherer::new(self)?;
        Ok(self.gatherer.get_or_init(|| g))
    }

    /// Copy `d` into `host` (same length), synchronised.
    pub(super) fn copy_out<T>(&self, d: &HipBuf<T>, host: &mut [T]) -> Result<(), KernelError> {
        same_len("read", d.len, host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        // SAFETY: both sides hold d.bytes() bytes; synchronised before returning.
        self.api.check("hipMemcpyDtoHAsync", unsafe {
            (self.api.memcpy_dtoh_async)(host.as_mut_ptr().cast(), d.ptr, d.bytes(), self.stream)
        })?;
        self.sync()
    }

    pub(super) fn zeroed<T>(&self, n: usize) -> Result<HipBuf<T>, KernelError> {
        let v = self.alloc::<T>(n)?;
        if n > 0 {
            // SAFETY: `v` holds v.bytes() bytes.
            self.api.check("hipMemsetAsync", unsafe {
                (self.api.memset_async)(v.ptr, 0, v.bytes(), self.stream)
            })?;
        }
        Ok(v)
    }

    fn copy_in<T>(&self, host: &[T], d: &mut HipBuf<T>) -> Result<(), KernelError> {
        if host.is_empty() {
            return Ok(());
        }
        // SAFETY: both sides hold `d.bytes()` bytes; the stream is synchronised before the
        // host slice can go away.
        self.api.check("hipMemcpyHtoDAsync", unsafe {
            (self.api.memcpy_htod_async)(d.ptr, host.as_ptr().cast(), d.bytes(), self.stream)
        })?;
        self.sync()
    }

    fn sync(&self) -> Result<(), KernelError> {
        // SAFETY: the stream is alive.
        self.api.check("hipStreamSynchronize", unsafe {
            (self.api.stream_synchronize)(self.stream)
        })
    }

    /// The binned kernel's setup: the row pointers read back, the rows binned on the host
    /// (as on CUDA), the lists uploaded, the entry points looked up.
    fn bin_rows<T>(&self, a: &HipCsr<T>, sfx: &str) -> Result<HipBins, KernelError> {
        let mut ptr = vec![0i32; a.rows + 1];
        // SAFETY: the row pointers hold rows + 1 i32; synchronised before reading.
        self.api.check("hipMemcpyDtoHAsync", unsafe {
            (self.api.memcpy_dtoh_async)(
                ptr.as_mut_ptr().cast(),
                a.ptr.ptr,
                a.ptr.bytes(),
                self.stream,
            )
        })?;
        self.sync()?;
        let host = bin_lists(&ptr);
        let upload = |v: &[i32]| -> Result<HipBuf<i32>, KernelError> {
            let mut d = self.alloc(v.len())?;
            self.copy_in(v, &mut d)?;
            Ok(d)
        };
        let mut bins = Vec::new();
        for (lanes, list) in &host.bins {
            let f = self.function(&format!("spmv_rows{lanes}_{sfx}"))?;
            bins.push((*lanes, list.len() as i32, upload(list)?, f));
        }
        let long = match &host.long {
            None => None,
            Some((rows, chunk_row, chunk_begin)) => Some(HipLongRows {
                count: rows.len() as i32,
                rows: upload(rows)?,
                chunks: chunk_row.len() as i32,
                chunk_row: upload(chunk_row)?,
                chunk_begin: upload(chunk_begin)?,
                zero: self.function(&format!("zero_rows_{sfx}"))?,
                run: self.function(&format!("spmv_chunks_{sfx}"))?,
            }),
        };
        Ok(HipBins { bins, long })
    }

    /// The binned kernel: the long rows zeroed and their chunks added (one block per chunk),
    /// then each bin with its lane count. `m`: row pointers, indices, values, x, y.
    fn launch_binned(&self, b: &HipBins, m: [*mut c_void; 5]) -> Result<(), KernelError> {
        let [pp, ip, vp, xp, yp] = m;
        if let Some(l) = &b.long {
            let rp = l.rows.ptr;
            // (int n, const int* rows_list, T* y)
            let mut args = [arg(&l.count), arg(&rp), arg(&yp)];
            self.launch_raw(l.zero, threads_config(l.count as u64).grid_dim.0, &mut args)?;
            let (cr, cb) = (l.chunk_row.ptr, l.chunk_begin.ptr);
            // (int nchunks, const int* chunk_row, const int* chunk_begin, ptr, idx, val, x, y)
            let mut args = [
                arg(&l.chunks),
                arg(&cr),
                arg(&cb),
                arg(&pp),
                arg(&ip),
                arg(&vp),
                arg(&xp),
                arg(&yp),
            ];
            self.launch_raw(l.run, l.chunks as u32, &mut args)?;
        }
        for (lanes, n, list, f) in &b.bins {
            let lp = list.ptr;
            // (int n, const int* rows_list, ptr, idx, val, x, y)
            let mut args = [
                arg(n),
                arg(&lp),
                arg(&pp),
                arg(&ip),
                arg(&vp),
                arg(&xp),
                arg(&yp),
            ];
            let grid = threads_config(*n as u64 * *lanes as u64).grid_dim.0;
            self.launch_raw(*f, grid, &mut args)?;
        }
        Ok(())
    }

    /// rocSPARSE's handle for this GPU's stream (made once) and the signature of its SpMV.
    fn rocsparse_handle(
        &self,
    ) -> Result<(&'static Rocsparse, rocsparse::Handle, SpmvAbi), KernelError> {
        let r = rocsparse::rocsparse()?;
        if let Some((h, abi)) = *self.rocsparse.borrow() {
            return Ok((r, h, abi));
        }
        let mut h: rocsparse::Handle = std::ptr::null_mut();
        // SAFETY: out-pointers; the stream is alive as long as the handle (destroyed first).
        r.check("rocsparse_create_handle", unsafe {
            (r.create_handle)(&mut h)
        })?;
        let mut version: c_int = 0;
        let made = r
            .check("rocsparse_set_stream", unsafe {
                (r.set_stream)(h, self.stream)
            })
            .and_then(|()| {
                r.check("rocsparse_get_version", unsafe {
                    (r.get_version)(h, &mut version)
                })
            });
        if let Err(e) = made {
            unsafe { (r.destroy_handle)(h) };
            return Err(e);
        }
        let abi = SpmvAbi::of_version(version);
        *self.rocsparse.borrow_mut() = Some((h, abi));
        Ok((r, h, abi))
    }

    /// rocSPARSE's setup for `a`: descriptors, the work buffer, and (3.x) the preprocess stage.
    fn rocsparse_prepare<T: GpuScalar>(
        &self,
        alg: c_int,
        a: &HipCsr<T>,
        x: &HipBuf<T>,
        y: &mut HipBuf<T>,
    ) -> Result<RocSpmv, KernelError> {
        let (api, handle, abi) = self.rocsparse_handle()?;
        let compute_type = if T::SUFFIX == "f64" {
            rocsparse::DATATYPE_F64
        } else {
            rocsparse::DATATYPE_F32
        };
        let mut p = RocSpmv {
            api,
            handle,
            abi,
            alg,
            compute_type,
            mat: std::ptr::null_mut(),
            x: std::ptr::null_mut(),
            y: std::ptr::null_mut(),
            buffer: self.alloc::<u8>(0)?,
            buffer_size: 0,
        };
        // SAFETY: out-pointers; the arrays are device memory of the sizes given (rows + 1 row
        // pointers, nnz indices and values, cols and rows vector entries), alive while the
        // prepared kernel is (it is used with the matrix and vectors it was made for, or ones of
        // the same sizes: launch sets the vectors' addresses).
        api.check("rocsparse_create_csr_descr", unsafe {
            (api.create_csr_descr)(
                &mut p.mat,
                a.rows as i64,
                a.cols as i64,
                a.nnz as i64,
                a.ptr.ptr,
                a.idx.ptr,
                a.val.ptr,
                rocsparse::INDEXTYPE_I32,
                rocsparse::INDEXTYPE_I32,
                rocsparse::INDEX_BASE_ZERO,
                compute_type,
            )
        })?;
        api.check("rocsparse_create_dnvec_descr", unsafe {
            (api.create_dnvec_descr)(&mut p.x, x.len as i64, x.ptr, compute_type)
        })?;
        api.check("rocsparse_create_dnvec_descr", unsafe {
            (api.create_dnvec_descr)(&mut p.y, y.len as i64, y.ptr, compute_type)
        })?;
        let (one, zero) = (T::one(), T::zero());
        let call = p.call(&one, &zero);
        let mut size = 0usize;
        // SAFETY: descriptors made above; a null buffer (2.x) or the size stage (3.x) only
        // writes the size.
        api.check("rocsparse_spmv (buffer size)", unsafe {
            api.spmv(
                abi,
                call,
                rocsparse::STAGE_BUFFER_SIZE,
                &mut size,
                std::ptr::null_mut(),
            )
        })?;
        p.buffer = self.alloc::<u8>(size.max(1))?;
        p.buffer_size = size;
        if abi == SpmvAbi::V3 {
            // SAFETY: as above, with the buffer of the size asked for.
            api.check("rocsparse_spmv (preprocess)", unsafe {
                api.spmv(
                    abi,
                    call,
                    rocsparse::STAGE_PREPROCESS,
                    &mut p.buffer_size,
                    p.buffer.ptr,
                )
            })?;
        }
        self.sync()?;
        Ok(p)
    }

    pub(super) fn launch_raw(
        &self,
        f: Function,
        grid: u32,
        args: &mut [*mut c_void],
    ) -> Result<(), KernelError> {
        // SAFETY: `args` point at values matching the entry point's parameters (the callers
        // spell each signature out as in spmv_csr.cu), alive for the call.
        self.api.check("hipModuleLaunchKernel", unsafe {
            (self.api.module_launch_kernel)(
                f,
                grid.max(1),
                1,
                1,
                256,
                1,
                1,
                0,
                self.stream,
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }
}

impl RocSpmv {
    fn call<T>(&self, alpha: &T, beta: &T) -> SpmvCall {
        SpmvCall {
            handle: self.handle,
            alpha: (alpha as *const T).cast(),
            mat: self.mat,
            x: self.x,
            beta: (beta as *const T).cast(),
            y: self.y,
            compute_type: self.compute_type,
            alg: self.alg,
        }
    }

    /// y = A x on the handle's stream (the vectors' addresses set first: a plan may swap them).
    fn launch<T: GpuScalar>(
        &mut self,
        x: &HipBuf<T>,
        y: &mut HipBuf<T>,
    ) -> Result<(), KernelError> {
        let api = self.api;
        // SAFETY: descriptors made by rocsparse_prepare for vectors of these sizes (checked by
        // the caller); host-side updates of the addresses.
        api.check("rocsparse_dnvec_set_values", unsafe {
            (api.dnvec_set_values)(self.x, x.ptr)
        })?;
        api.check("rocsparse_dnvec_set_values", unsafe {
            (api.dnvec_set_values)(self.y, y.ptr)
        })?;
        let (one, zero) = (T::one(), T::zero());
        let call = self.call(&one, &zero);
        // SAFETY: as in rocsparse_prepare; host scalars read before the call returns (host
        // pointer mode, the handle's default).
        api.check("rocsparse_spmv", unsafe {
            api.spmv(
                self.abi,
                call,
                rocsparse::STAGE_COMPUTE,
                &mut self.buffer_size,
                self.buffer.ptr,
            )
        })
    }
}

/// A pointer to `v` as a kernel argument.
pub(super) fn arg<V>(v: &V) -> *mut c_void {
    v as *const V as *mut c_void
}

impl SpmvDevice for HipSpmv {
    type Matrix<'a, T: GpuScalar + 'a> = HipCsr<T>;
    type Vector<T: GpuScalar> = HipBuf<T>;
    type Kernel<T: GpuScalar> = HipPrepared<T>;

    fn kind(&self) -> BackendKind {
        BackendKind::Hip
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn kernel_names(&self) -> Vec<&'static str> {
        hip_kernels()
            .map(|k| k.name())
            .chain(ROCSPARSE_KERNELS.iter().map(|(n, _)| *n))
            .collect()
    }

    fn upload<'a, T: GpuScalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
    ) -> Result<HipCsr<T>, KernelError> {
        let a = a.into();
        let mut ptr = self.alloc::<i32>(a.rows() + 1)?;
        let mut idx = self.alloc::<i32>(a.nnz())?;
        let mut val = self.alloc::<T>(a.nnz())?;
        self.copy_in(a.indptr(), &mut ptr)?;
        self.copy_in(a.indices(), &mut idx)?;
        self.copy_in(a.data(), &mut val)?;
        Ok(HipCsr {
            rows: a.rows(),
            cols: a.cols(),
            nnz: a.nnz(),
            ptr,
            idx,
            val,
        })
    }

    fn prepare_gather(&self) -> Result<(), KernelError> {
        self.gatherer().map(|_| ())
    }

    /// A device pass over the uploaded pattern (two kernels and one copy back). An upload with
    /// gathering is the trait's upload then this, in order: unlike CUDA's (the gather overlapping
    /// the values' copy on a second stream), nothing overlaps on HIP yet; worth doing once it can
    /// be measured on AMD.
    fn gather<T: GpuScalar>(&self, a: &HipCsr<T>) -> Result<RowSums, KernelError> {
        let g = self.gatherer()?;
        g.sums(self, (a.rows, a.nnz), (a.ptr.ptr, a.idx.ptr))
    }

    fn vector<T: GpuScalar>(&self, host: &[T]) -> Result<HipBuf<T>, KernelError> {
        let mut v = self.alloc(host.len())?;
        self.copy_in(host, &mut v)?;
        Ok(v)
    }

    fn zeros<T: GpuScalar>(&self, n: usize) -> Result<HipBuf<T>, KernelError> {
        self.zeroed(n)
    }

    fn len<T: GpuScalar>(&self, v: &HipBuf<T>) -> usize {
        v.len
    }

    fn write<T: GpuScalar>(&self, host: &[T], v: &mut HipBuf<T>) -> Result<(), KernelError> {
        same_len("write", v.len, host.len())?;
        self.copy_in(host, v)
    }

    fn read<T: GpuScalar>(&self, v: &HipBuf<T>, host: &mut [T]) -> Result<(), KernelError> {
        self.copy_out(v, host)
    }

    fn prepare<T: GpuScalar>(
        &self,
        kernel: &str,
        a: &HipCsr<T>,
        x: &HipBuf<T>,
        y: &mut HipBuf<T>,
    ) -> Result<HipPrepared<T>, KernelError> {
        let hk = HipKernel::from_name(kernel)?;
        crate::error::check_dims(a.rows, a.cols, x.len, y.len)?;
        let t = Instant::now();
        let sfx = T::SUFFIX;
        let k = match hk {
            HipKernel::Pool(k) => k,
            HipKernel::Rocsparse(alg) => {
                let vendor = Some(self.rocsparse_prepare(alg, a, x, y)?);
                return Ok(HipPrepared {
                    kernel: hk,
                    setup_s: t.elapsed().as_secs_f64(),
                    main: None,
                    fixup: None,
                    merge: None,
                    binned: None,
                    vendor,
                });
            }
        };
        if k == GpuKernel::Binned {
            let binned = if a.rows > 0 {
                Some(self.bin_rows(a, sfx)?)
            } else {
                None
            };
            return Ok(HipPrepared {
                kernel: hk,
                setup_s: t.elapsed().as_secs_f64(),
                main: None,
                fixup: None,
                merge: None,
                binned,
                vendor: None,
            });
        }
        let main = Some(self.function(&format!("spmv_{}_{sfx}", k.name()))?);
        let merge_kind = matches!(k, GpuKernel::MergePath | GpuKernel::MergeTiled);
        let (fixup, merge) = if merge_kind && a.rows > 0 {
            let tiled = k == GpuKernel::MergeTiled;
            let pieces = if tiled {
                merge_tiles(a.rows, a.nnz)
            } else {
                merge_pieces(a.rows, a.nnz)
            };
            let start_row = self.zeroed::<i32>(pieces as usize + 1)?;
            let carry_row = self.zeroed::<i32>(pieces as usize)?;
            let carry_val = self.zeroed::<T>(pieces as usize)?;
            let part = self.function("merge_partition")?;
            let (rows, nnz, np) = (a.rows as i32, a.nnz as i32, pieces as i64);
            let items = if tiled { MT_TILE } else { MP_ITEMS } as i64;
            let (pp, sp) = (a.ptr.ptr, start_row.ptr);
            // (int rows, int nnz, const int* ptr, long long pieces, long long items, int* start_row)
            let mut args = [
                arg(&rows),
                arg(&nnz),
                arg(&pp),
                arg(&np),
                arg(&items),
                arg(&sp),
            ];
            let grid = threads_config(pieces + 1).grid_dim.0;
            self.launch_raw(part, grid, &mut args)?;
            self.sync()?;
            let fixup = self.function(&format!("merge_path_fixup_{sfx}"))?;
            (Some(fixup), Some((np, start_row, carry_row, carry_val)))
        } else {
            (None, None)
        };
        Ok(HipPrepared {
            kernel: hk,
            setup_s: t.elapsed().as_secs_f64(),
            main,
            fixup,
            merge,
            binned: None,
            vendor: None,
        })
    }

    fn setup_s<T: GpuScalar>(&self, k: &HipPrepared<T>) -> f64 {
        k.setup_s
    }

    fn launch<T: GpuScalar>(
        &self,
        p: &mut HipPrepared<T>,
        a: &HipCsr<T>,
        x: &HipBuf<T>,
        y: &mut HipBuf<T>,
    ) -> Result<(), KernelError> {
        crate::error::check_dims(a.rows, a.cols, x.len, y.len)?;
        if a.rows == 0 {
            return Ok(());
        }
        if let Some(v) = &mut p.vendor {
            return v.launch(x, y);
        }
        let HipKernel::Pool(k) = p.kernel else {
            return Err(KernelError::Invalid(
                "rocSPARSE kernel launched without prepare".into(),
            ));
        };
        if k == GpuKernel::NnzSplit {
            // SAFETY: y holds y.bytes() bytes.
            self.api.check("hipMemsetAsync", unsafe {
                (self.api.memset_async)(y.ptr, 0, y.bytes(), self.stream)
            })?;
            if a.nnz == 0 {
                return Ok(());
            }
        }
        let (rows, nnz) = (a.rows as i32, a.nnz as i32);
        // The adaptive kernel's lanes per row (set in its arm below, where it is an argument).
        let lanes: i32;
        let (pp, ip, vp, xp, yp) = (a.ptr.ptr, a.idx.ptr, a.val.ptr, x.ptr, y.ptr);
        if let Some(b) = &p.binned {
            return self.launch_binned(b, [pp, ip, vp, xp, yp]);
        }
        let main = p
            .main
            .ok_or_else(|| KernelError::Invalid("SpMV kernel launched without prepare".into()))?;
        let grid = k.config(a.rows, a.nnz).grid_dim.0;
        // (int rows, const int* ptr, const int* idx, const T* val, const T* x, T* y, ...)
        let mut args = vec![arg(&rows), arg(&pp), arg(&ip), arg(&vp), arg(&xp), arg(&yp)];
        match (&p.merge, k) {
            (_, GpuKernel::NnzSplit) => args.push(arg(&nnz)),
            (_, GpuKernel::Adaptive) => {
                lanes = adaptive_lanes(a.rows, a.nnz) as i32;
                args.push(arg(&lanes))
            }
            (Some((pieces, start, crow, cval)), _) => {
                // ..., int nnz, long long pieces, const int* start_row, int* carry_row, T* carry_val
                let (sp, crp, cvp) = (start.ptr, crow.ptr, cval.ptr);
                let mut more = [arg(&nnz), arg(pieces), arg(&sp), arg(&crp), arg(&cvp)];
                args.extend_from_slice(&more);
                self.launch_raw(main, grid, &mut args)?;
                let fix = p.fixup.ok_or_else(|| {
                    KernelError::Invalid("merge kernel launched without prepare".into())
                })?;
                // (int rows, long long pieces, const int* carry_row, const T* carry_val, T* y)
                more = [arg(&rows), arg(pieces), arg(&crp), arg(&cvp), arg(&yp)];
                let g = threads_config(*pieces as u64).grid_dim.0;
                return self.launch_raw(fix, g, &mut more);
            }
            _ => {}
        }
        self.launch_raw(main, grid, &mut args)
    }

    fn synchronize(&self) -> Result<(), KernelError> {
        self.sync()
    }

    /// Between two HIP events from an idle stream.
    fn time(
        &self,
        plan: TimingPlan,
        mut enqueue: impl FnMut() -> Result<(), KernelError>,
    ) -> Result<Vec<f64>, KernelError> {
        let api = self.api;
        let mut ev: [Event; 2] = [std::ptr::null_mut(); 2];
        for e in &mut ev {
            // SAFETY: out-pointer.
            api.check("hipEventCreate", unsafe { (api.event_create)(e) })?;
        }
        let result = (|| {
            for _ in 0..plan.warmup {
                enqueue()?;
            }
            self.sync()?;
            (0..plan.iterations.max(1))
                .map(|_| {
                    // SAFETY: events and stream alive; out-pointer for the time.
                    api.check("hipEventRecord", unsafe {
                        (api.event_record)(ev[0], self.stream)
                    })?;
                    enqueue()?;
                    api.check("hipEventRecord", unsafe {
                        (api.event_record)(ev[1], self.stream)
                    })?;
                    api.check("hipEventSynchronize", unsafe {
                        (api.event_synchronize)(ev[1])
                    })?;
                    let mut ms = 0f32;
                    api.check("hipEventElapsedTime", unsafe {
                        (api.event_elapsed_time)(&mut ms, ev[0], ev[1])
                    })?;
                    Ok(ms as f64 * 1e-3)
                })
                .collect()
        })();
        for e in ev {
            // SAFETY: created above, destroyed once.
            unsafe { (api.event_destroy)(e) };
        }
        result
    }
}
