//! The HIP runtime and its run-time compiler, loaded at run time (libloading) so that augur builds
//! and starts on machines without ROCm: a small table of the ~30 C functions augur calls, whose
//! signatures have been stable since ROCm 4. hiprtc is its own library from ROCm 6 on
//! (libhiprtc.so) and inside libamdhip64 before (ROCm 5, Debian bookworm's 5.2): both are tried.
//!
//! Why not a bindings crate: `hip-sys` 0.1 links libamdhip64 at build time and binds no hiprtc;
//! `cubecl-hip-sys` loads at run time but its build script pins bindings to the ROCm 6/7 version it
//! finds through `hipconfig`, which Debian's ROCm 5.2 (where CI compiles our kernels) is not among.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

use libloading::Library;

use crate::KernelError;

pub type HipError = c_int;
pub type Stream = *mut c_void;
pub type Module = *mut c_void;
pub type Function = *mut c_void;
pub type Event = *mut c_void;
pub type RtcProgram = *mut c_void;

/// The functions, resolved once.
pub struct Api {
    pub init: unsafe extern "C" fn(c_uint) -> HipError,
    pub driver_version: unsafe extern "C" fn(*mut c_int) -> HipError,
    pub device_count: unsafe extern "C" fn(*mut c_int) -> HipError,
    pub device_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> HipError,
    /// hipGetDevicePropertiesR0600 (ROCm 6+) or hipGetDeviceProperties; read only through
    /// [`super::arch_from_properties`] (the struct's layout differs between versions).
    pub device_properties: unsafe extern "C" fn(*mut c_void, c_int) -> HipError,
    pub set_device: unsafe extern "C" fn(c_int) -> HipError,
    pub stream_create: unsafe extern "C" fn(*mut Stream, c_uint) -> HipError,
    pub stream_synchronize: unsafe extern "C" fn(Stream) -> HipError,
    pub stream_destroy: unsafe extern "C" fn(Stream) -> HipError,
    pub malloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> HipError,
    pub free: unsafe extern "C" fn(*mut c_void) -> HipError,
    pub memcpy_htod_async:
        unsafe extern "C" fn(*mut c_void, *const c_void, usize, Stream) -> HipError,
    pub memcpy_dtoh_async:
        unsafe extern "C" fn(*mut c_void, *mut c_void, usize, Stream) -> HipError,
    pub memset_async: unsafe extern "C" fn(*mut c_void, c_int, usize, Stream) -> HipError,
    pub module_load_data: unsafe extern "C" fn(*mut Module, *const c_void) -> HipError,
    pub module_unload: unsafe extern "C" fn(Module) -> HipError,
    pub module_get_function: unsafe extern "C" fn(*mut Function, Module, *const c_char) -> HipError,
    #[allow(clippy::type_complexity)]
    pub module_launch_kernel: unsafe extern "C" fn(
        Function,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        Stream,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> HipError,
    pub event_create: unsafe extern "C" fn(*mut Event) -> HipError,
    pub event_record: unsafe extern "C" fn(Event, Stream) -> HipError,
    pub event_synchronize: unsafe extern "C" fn(Event) -> HipError,
    pub event_elapsed_time: unsafe extern "C" fn(*mut f32, Event, Event) -> HipError,
    pub event_destroy: unsafe extern "C" fn(Event) -> HipError,
    pub error_string: unsafe extern "C" fn(HipError) -> *const c_char,
    pub rtc: Rtc,
    /// Which files were loaded (for `augur devices`).
    pub libraries: String,
    _libs: Vec<Library>,
}

/// hiprtc.
pub struct Rtc {
    #[allow(clippy::type_complexity)]
    pub create_program: unsafe extern "C" fn(
        *mut RtcProgram,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    pub compile_program: unsafe extern "C" fn(RtcProgram, c_int, *const *const c_char) -> c_int,
    pub log_size: unsafe extern "C" fn(RtcProgram, *mut usize) -> c_int,
    pub log: unsafe extern "C" fn(RtcProgram, *mut c_char) -> c_int,
    pub code_size: unsafe extern "C" fn(RtcProgram, *mut usize) -> c_int,
    pub code: unsafe extern "C" fn(RtcProgram, *mut c_char) -> c_int,
    pub destroy_program: unsafe extern "C" fn(*mut RtcProgram) -> c_int,
}

/// Library names tried in order (the unversioned development link first, then the runtime
/// packages' sonames), also under `$ROCM_PATH/lib` and `/opt/rocm/lib`.
const HIP_NAMES: [&str; 4] = [
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
];
const RTC_NAMES: [&str; 3] = ["libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6"];

fn candidates(names: &[&str]) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    if let Some(r) = std::env::var_os("ROCM_PATH") {
        dirs.push(format!("{}/lib/", r.to_string_lossy()));
    }
    dirs.push("/opt/rocm/lib/".into());
    let mut out: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    for d in dirs {
        out.extend(names.iter().map(|n| format!("{d}{n}")));
    }
    out
}

pub(super) fn open(names: &[&str]) -> Option<(Library, String)> {
    candidates(names).into_iter().find_map(|n| {
        // SAFETY: loading a vendor library runs its initialisers; libamdhip64 and libhiprtc
        // are made to be dlopened (their own tools do).
        unsafe { Library::new(&n) }.ok().map(|l| (l, n))
    })
}

/// Resolve `name` (or the first of several) in `lib`.
macro_rules! sym {
    ($lib:expr, $($name:literal)|+) => {{
        let mut found = None;
        $(
            if found.is_none() {
                // SAFETY: the symbol is the HIP C function of that name, whose signature the
                // field it is stored in spells out (hip_runtime_api.h, hiprtc.h).
                found = unsafe { $lib.get(concat!($name, "\0").as_bytes()) }.ok().map(|s| *s);
            }
        )+
        found.ok_or_else(|| format!("{} has no {}", "the HIP runtime", [$($name),+].join(" or ")))?
    }};
}

fn load() -> Result<Api, String> {
    let (hip, hip_name) = open(&HIP_NAMES).ok_or_else(|| {
        "the HIP runtime (libamdhip64.so) is not installed (ROCm; set ROCM_PATH if it is \
         elsewhere than /opt/rocm)"
            .to_string()
    })?;
    // hiprtc: its own library (ROCm 6+), else inside libamdhip64 (ROCm 5).
    let rtc_lib = open(&RTC_NAMES);
    let rtc = {
        let l = rtc_lib.as_ref().map_or(&hip, |(l, _)| l);
        Rtc {
            create_program: sym!(l, "hiprtcCreateProgram"),
            compile_program: sym!(l, "hiprtcCompileProgram"),
            log_size: sym!(l, "hiprtcGetProgramLogSize"),
            log: sym!(l, "hiprtcGetProgramLog"),
            code_size: sym!(l, "hiprtcGetCodeSize"),
            code: sym!(l, "hiprtcGetCode"),
            destroy_program: sym!(l, "hiprtcDestroyProgram"),
        }
    };
    let libraries = match &rtc_lib {
        Some((_, n)) => format!("{hip_name}, {n}"),
        None => format!("{hip_name} (with hiprtc)"),
    };
    let api = Api {
        init: sym!(hip, "hipInit"),
        driver_version: sym!(hip, "hipDriverGetVersion"),
        device_count: sym!(hip, "hipGetDeviceCount"),
        device_name: sym!(hip, "hipDeviceGetName"),
        device_properties: sym!(
            hip,
            "hipGetDevicePropertiesR0600" | "hipGetDeviceProperties"
        ),
        set_device: sym!(hip, "hipSetDevice"),
        stream_create: sym!(hip, "hipStreamCreateWithFlags"),
        stream_synchronize: sym!(hip, "hipStreamSynchronize"),
        stream_destroy: sym!(hip, "hipStreamDestroy"),
        malloc: sym!(hip, "hipMalloc"),
        free: sym!(hip, "hipFree"),
        memcpy_htod_async: sym!(hip, "hipMemcpyHtoDAsync"),
        memcpy_dtoh_async: sym!(hip, "hipMemcpyDtoHAsync"),
        memset_async: sym!(hip, "hipMemsetAsync"),
        module_load_data: sym!(hip, "hipModuleLoadData"),
        module_unload: sym!(hip, "hipModuleUnload"),
        module_get_function: sym!(hip, "hipModuleGetFunction"),
        module_launch_kernel: sym!(hip, "hipModuleLaunchKernel"),
        event_create: sym!(hip, "hipEventCreate"),
        event_record: sym!(hip, "hipEventRecord"),
        event_synchronize: sym!(hip, "hipEventSynchronize"),
        event_elapsed_time: sym!(hip, "hipEventElapsedTime"),
        event_destroy: sym!(hip, "hipEventDestroy"),
        error_string: sym!(hip, "hipGetErrorString"),
        rtc,
        libraries,
        _libs: std::iter::once(hip)
            .chain(rtc_lib.map(|(l, _)| l))
            .collect(),
    };
    Ok(api)
}

/// The table, loaded on first use; "not available" naming what is missing otherwise.
pub fn api() -> Result<&'static Api, KernelError> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load)
        .as_ref()
        .map_err(|why| super::not_available(why.clone()))
}

impl Api {
    /// `Err(HIP: what: message)` unless `e` is hipSuccess.
    pub fn check(&self, what: &str, e: HipError) -> Result<(), KernelError> {
        if e == 0 {
            return Ok(());
        }
        Err(KernelError::Hip(format!("{what}: {}", self.error_name(e))))
    }

    /// HIP's name for an error code.
    pub fn error_name(&self, e: HipError) -> String {
        // SAFETY: hipGetErrorString returns a static string for any code.
        let msg = unsafe { (self.error_string)(e) };
        if msg.is_null() {
            format!("error {e}")
        } else {
            // SAFETY: non-null, NUL-terminated (above).
            unsafe { CStr::from_ptr(msg) }
                .to_string_lossy()
                .into_owned()
        }
    }
}

// SAFETY: the table holds function pointers and the libraries they come from, which stay loaded
// for the process; HIP's functions may be called from any thread.
unsafe impl Send for Api {}
unsafe impl Sync for Api {}
