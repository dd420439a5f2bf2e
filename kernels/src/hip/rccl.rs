//! RCCL, AMD's collectives library, loaded at run time through a small table of our own
//! (libloading). RCCL implements NCCL's C API under the same names (`ncclAllReduce`...), so the
//! table is written against `nccl.h`'s signatures and enum values, which RCCL keeps.
//!
//! `AUGUR_RCCL_LIBRARY` names the file to load when it is not found under the usual names; any
//! library with NCCL's C API loads through it (the device machine's check loads NVIDIA's
//! libnccl this way, since no AMD GPU or RCCL exists where augur is developed).
//!
//! **Not yet run with RCCL**: nothing in augur calls the collectives on AMD GPUs yet (the comm
//! patterns and multi-GPU SpMV need fine-grained memory and a HIP comm group; `comm.cu` compiles
//! for AMD). What runs: loading, `ncclGetVersion`, the error strings.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use libloading::Library;

use super::api::Stream;
use crate::KernelError;

pub type NcclResult = c_int;
pub type Comm = *mut c_void;

/// `ncclUniqueId`: 128 opaque bytes, passed by value to `ncclCommInitRank`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UniqueId {
    pub internal: [c_char; 128],
}

// nccl.h's ncclDataType_t and ncclRedOp_t (RCCL's rccl.h has the same values).
pub const FLOAT32: c_int = 7;
pub const FLOAT64: c_int = 8;
pub const BFLOAT16: c_int = 9;
pub const FLOAT16: c_int = 6;
pub const SUM: c_int = 0;

/// The functions, resolved once.
pub struct Rccl {
    pub get_version: unsafe extern "C" fn(*mut c_int) -> NcclResult,
    pub get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> NcclResult,
    pub comm_init_rank: unsafe extern "C" fn(*mut Comm, c_int, UniqueId, c_int) -> NcclResult,
    pub comm_init_all: unsafe extern "C" fn(*mut Comm, c_int, *const c_int) -> NcclResult,
    pub comm_destroy: unsafe extern "C" fn(Comm) -> NcclResult,
    pub comm_count: unsafe extern "C" fn(Comm, *mut c_int) -> NcclResult,
    pub comm_user_rank: unsafe extern "C" fn(Comm, *mut c_int) -> NcclResult,
    pub comm_get_async_error: unsafe extern "C" fn(Comm, *mut NcclResult) -> NcclResult,
    #[allow(clippy::type_complexity)]
    pub all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        Comm,
        Stream,
    ) -> NcclResult,
    pub all_gather:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, Comm, Stream) -> NcclResult,
    #[allow(clippy::type_complexity)]
    pub reduce_scatter: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        Comm,
        Stream,
    ) -> NcclResult,
    pub send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, Comm, Stream) -> NcclResult,
    pub recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, Comm, Stream) -> NcclResult,
    pub group_start: unsafe extern "C" fn() -> NcclResult,
    pub group_end: unsafe extern "C" fn() -> NcclResult,
    pub error_string: unsafe extern "C" fn(NcclResult) -> *const c_char,
    /// The file loaded.
    pub library: String,
    _lib: Library,
}

/// Names tried in order (the development link, ROCm's soname), also under `$ROCM_PATH/lib` and
/// `/opt/rocm/lib`; `AUGUR_RCCL_LIBRARY` first when set.
const NAMES: [&str; 2] = ["librccl.so", "librccl.so.1"];

fn load() -> Result<Rccl, String> {
    let chosen = std::env::var("AUGUR_RCCL_LIBRARY").ok();
    let opened = match &chosen {
        Some(path) => {
            // SAFETY: loading a collectives library runs its initialisers (made to be dlopened).
            let l = unsafe { Library::new(path) }
                .map_err(|e| format!("AUGUR_RCCL_LIBRARY={path} does not load: {e}"))?;
            (l, path.clone())
        }
        None => super::api::open(&NAMES).ok_or_else(|| {
            "RCCL (librccl.so) is not installed (ROCm's rccl package; set ROCM_PATH if it is \
             elsewhere than /opt/rocm, or AUGUR_RCCL_LIBRARY to the file)"
                .to_string()
        })?,
    };
    let (lib, library) = opened;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is the NCCL-API C function of that name, whose signature the
            // field it is stored in spells out (nccl.h / rccl.h).
            unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map(|s| *s)
                .map_err(|_| format!("{library} has no {} (not an NCCL-API library?)", $name))?
        };
    }
    Ok(Rccl {
        get_version: sym!("ncclGetVersion"),
        get_unique_id: sym!("ncclGetUniqueId"),
        comm_init_rank: sym!("ncclCommInitRank"),
        comm_init_all: sym!("ncclCommInitAll"),
        comm_destroy: sym!("ncclCommDestroy"),
        comm_count: sym!("ncclCommCount"),
        comm_user_rank: sym!("ncclCommUserRank"),
        comm_get_async_error: sym!("ncclCommGetAsyncError"),
        all_reduce: sym!("ncclAllReduce"),
        all_gather: sym!("ncclAllGather"),
        reduce_scatter: sym!("ncclReduceScatter"),
        send: sym!("ncclSend"),
        recv: sym!("ncclRecv"),
        group_start: sym!("ncclGroupStart"),
        group_end: sym!("ncclGroupEnd"),
        error_string: sym!("ncclGetErrorString"),
        library,
        _lib: lib,
    })
}

/// The table, loaded on first use; "not available" naming what is missing otherwise.
pub fn rccl() -> Result<&'static Rccl, KernelError> {
    static API: OnceLock<Result<Rccl, String>> = OnceLock::new();
    API.get_or_init(load)
        .as_ref()
        .map_err(|why| super::not_available(why.clone()))
}

impl Rccl {
    /// `Err(RCCL: what: message)` unless `r` is ncclSuccess.
    pub fn check(&self, what: &str, r: NcclResult) -> Result<(), KernelError> {
        if r == 0 {
            return Ok(());
        }
        // SAFETY: returns a static string for any code.
        let p = unsafe { (self.error_string)(r) };
        let msg = if p.is_null() {
            format!("error {r}")
        } else {
            // SAFETY: non-null, NUL-terminated.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        Err(KernelError::Hip(format!("RCCL {what}: {msg}")))
    }

    /// The library's version as `major.minor.patch` (NCCL's encoding: major * 10000 + minor *
    /// 100 + patch from 2.9 on, major * 1000 + minor * 100 + patch before). No GPU needed.
    pub fn version(&self) -> Result<String, KernelError> {
        let mut v: c_int = 0;
        // SAFETY: out-pointer.
        self.check("ncclGetVersion", unsafe { (self.get_version)(&mut v) })?;
        Ok(version_text(v))
    }
}

/// NCCL's version number as text.
pub fn version_text(v: c_int) -> String {
    if v >= 10000 {
        format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
    } else {
        format!("{}.{}.{}", v / 1000, v / 100 % 10, v % 100)
    }
}

// SAFETY: function pointers and the library they come from, loaded for the process; the NCCL
// API may be called from any thread.
unsafe impl Send for Rccl {}
unsafe impl Sync for Rccl {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_nccl_encodes_them() {
        assert_eq!(version_text(22703), "2.27.3");
        assert_eq!(version_text(2804), "2.8.4");
        assert_eq!(std::mem::size_of::<UniqueId>(), 128);
    }

    /// Where RCCL (or, through AUGUR_RCCL_LIBRARY, any NCCL-API library) loads, every function
    /// resolves and the version reads; elsewhere loading says what is missing.
    #[test]
    fn the_table_loads_or_says_what_is_missing() {
        match rccl() {
            Ok(r) => {
                let v = r.version().unwrap();
                assert!(v.starts_with("2."), "{v}");
                eprintln!("RCCL table: {} {v}", r.library);
            }
            Err(e) => {
                let m = e.to_string();
                assert!(m.starts_with("backend `hip` is not available: "), "{m}");
                assert!(
                    m.contains("librccl") || m.contains("AUGUR_RCCL_LIBRARY"),
                    "{m}"
                );
                eprintln!("SKIPPED: {m}");
            }
        }
    }
}
