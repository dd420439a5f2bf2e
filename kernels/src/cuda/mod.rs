//! The CUDA backend: driver probe, device listing, the GPU link probe, NVRTC-compiled SpMV
//! kernels with their on-disk cache, and the timing harness (`timing`).
//!
//! cudarc loads `libcuda` at run time (`dynamic-loading`) and panics when it is missing, so every
//! entry point here first checks that the library is present and that the driver initialises,
//! and returns [`KernelError::NotAvailable`] ("backend `cuda` is not available: ...") instead. A
//! machine without a GPU, driver or library therefore gets a clear error, never a panic.

use std::ffi::c_int;
use std::sync::OnceLock;

use augur_features::message::{LinkProbe, LinkType};
use augur_features::FeatureError;
use cudarc::driver::{result, sys};

use crate::KernelError;

pub mod attention;
pub mod comm;
pub mod cusparse;
mod external;
pub mod gather;
pub mod gemm;
pub mod module;
pub(crate) mod spmv;
pub mod timing;
pub mod vector;

pub use spmv::{CudaSpmv, DeviceCsr, GpuKernel, GpuScalar, Prepared};
pub use timing::{
    batch_for, time_events, time_mode, time_modes, ModeTimes, TimingMode, TimingPlan,
};

/// A raw driver call's result as a [`KernelError`] naming the call.
pub(crate) fn check(what: &str, r: cudarc::driver::sys::CUresult) -> Result<(), KernelError> {
    if r == cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(KernelError::Cuda(format!("{what}: {r:?}")))
    }
}

/// A failed driver call as a [`KernelError`] naming the call.
pub(crate) fn drv(what: &str) -> impl Fn(result::DriverError) -> KernelError + '_ {
    move |e| KernelError::Cuda(format!("{what}: {e}"))
}

/// The stream a backend's work goes on: its own non-blocking stream, never the context's legacy
/// default stream. The legacy stream is implicitly ordered with other work of the device, and a
/// peer copy between two GPUs can wait on it: MultiGpuSpmv's copy-engine all-gather, whose copies
/// and flags ran on their own stream while each GPU's legacy stream waited for that stream's
/// event, hung in 3 of 8 checks (H200 x2). Event tracking is turned off (it was off in effect on
/// the one legacy stream): callers with more streams order them by events themselves
/// (`CudaStream::join`), as MultiGpuSpmv does.
pub(crate) fn own_stream(
    ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
) -> Result<std::sync::Arc<cudarc::driver::CudaStream>, KernelError> {
    // SAFETY: every slice of this context is made after this call and used on this stream,
    // or on streams forked from it and joined back by their users before the slice is used
    // or freed here.
    unsafe { ctx.disable_event_tracking() };
    ctx.new_stream().map_err(drv("cuStreamCreate"))
}

/// GPU `ordinal` as the driver describes it, or "no GPU N" (not available).
pub fn device_info(ordinal: usize) -> Result<DeviceInfo, KernelError> {
    devices()?
        .into_iter()
        .nth(ordinal)
        .ok_or_else(|| KernelError::NotAvailable {
            backend: "cuda".into(),
            why: format!("no GPU {ordinal}"),
        })
}

/// One GPU as the driver describes it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: i32,
    pub memory_bytes: usize,
    pub l2_bytes: i32,
    pub memory_bus_bits: i32,
}

/// Peer-to-peer facts of an ordered GPU pair, from `cuDeviceGetP2PAttribute`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PeerInfo {
    pub access: bool,
    pub native_atomics: bool,
    /// The driver's relative performance rank of the link (lower is faster; 0 if no access).
    pub performance_rank: i32,
}

impl PeerInfo {
    /// NVLink when peer access and native peer atomics are both supported (native atomics across
    /// GPUs need NVLink/NVSwitch; PCIe peer access lacks them), else PCIe (peer access over PCIe,
    /// or no peer access: staged through the host).
    pub fn link(&self) -> LinkType {
        if self.access && self.native_atomics {
            LinkType::Nvlink
        } else {
            LinkType::Pcie
        }
    }
}

fn not_available(why: impl Into<String>) -> KernelError {
    KernelError::NotAvailable {
        backend: "cuda".into(),
        why: why.into(),
    }
}

fn driver(what: &str, e: result::DriverError) -> KernelError {
    not_available(format!("{what} failed: {e}"))
}

/// Check, once, that the driver library loads and initialises and that a device is present.
pub fn available() -> Result<usize, KernelError> {
    static STATE: OnceLock<Result<usize, String>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            // SAFETY: only tries to dlopen the driver library by its usual names.
            if !unsafe { sys::is_culib_present() } {
                return Err(
                    "no CUDA device: the CUDA driver library (libcuda.so) is not installed".into(),
                );
            }
            result::init().map_err(|e| format!("no CUDA device: cuInit failed: {e}"))?;
            let n = result::device::get_count()
                .map_err(|e| format!("no CUDA device: cuDeviceGetCount failed: {e}"))?;
            if n <= 0 {
                return Err("no CUDA device: the driver sees no GPU".into());
            }
            Ok(n as usize)
        })
        .clone()
        .map_err(not_available)
}

fn device(ordinal: usize) -> Result<sys::CUdevice, KernelError> {
    let n = available()?;
    if ordinal >= n {
        return Err(not_available(format!(
            "GPU {ordinal} asked for, but only {n} present"
        )));
    }
    result::device::get(ordinal as c_int).map_err(|e| driver("cuDeviceGet", e))
}

/// The CUDA version the driver supports, e.g. `13.0` (`cuDriverGetVersion`).
pub fn driver_version() -> Result<String, KernelError> {
    available()?;
    let mut v: c_int = 0;
    // SAFETY: the driver library is loaded and initialised (available()); one int out-parameter.
    unsafe { sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(|e| driver("cuDriverGetVersion", e))?;
    Ok(format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// The GPUs the driver sees.
pub fn devices() -> Result<Vec<DeviceInfo>, KernelError> {
    (0..available()?)
        .map(|ordinal| {
            let dev = device(ordinal)?;
            use sys::CUdevice_attribute as A;
            // SAFETY: `dev` is a valid device handle from cuDeviceGet.
            let attr = |a: A| {
                unsafe { result::device::get_attribute(dev, a) }
                    .map_err(|e| driver("cuDeviceGetAttribute", e))
            };
            Ok(DeviceInfo {
                ordinal,
                name: result::device::get_name(dev).map_err(|e| driver("cuDeviceGetName", e))?,
                compute_capability: (
                    attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                    attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
                ),
                multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
                // SAFETY: as above.
                memory_bytes: unsafe { result::device::total_mem(dev) }
                    .map_err(|e| driver("cuDeviceTotalMem", e))?,
                l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
                memory_bus_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
            })
        })
        .collect()
}

/// Peer-to-peer facts of `a -> b` (a != b).
pub fn peer(a: usize, b: usize) -> Result<PeerInfo, KernelError> {
    let (da, db) = (device(a)?, device(b)?);
    let get = |attrib: sys::CUdevice_P2PAttribute| -> Result<i32, KernelError> {
        let mut v: c_int = 0;
        // SAFETY: valid device handles and a valid out-pointer.
        unsafe { sys::cuDeviceGetP2PAttribute(&mut v, attrib, da, db) }
            .result()
            .map_err(|e| driver("cuDeviceGetP2PAttribute", e))?;
        Ok(v)
    };
    use sys::CUdevice_P2PAttribute as P;
    Ok(PeerInfo {
        access: get(P::CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED)? != 0,
        native_atomics: get(P::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED)? != 0,
        performance_rank: get(P::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK)?,
    })
}

/// The link type of GPU pairs from the driver's P2P attributes (see [`PeerInfo::link`]). A pair
/// is as slow as its slower direction.
#[derive(Debug, Clone, Copy, Default)]
pub struct DriverLinkProbe;

impl LinkProbe for DriverLinkProbe {
    fn link(&self, a: usize, b: usize) -> Result<LinkType, FeatureError> {
        if a == b {
            return Ok(LinkType::SameDevice);
        }
        let to_feature = |e: KernelError| FeatureError::Probe(e.to_string());
        let ab = peer(a, b).map_err(to_feature)?.link();
        let ba = peer(b, a).map_err(to_feature)?.link();
        Ok(ab.min(ba))
    }
}
