//! rocSPARSE, the vendor baseline on AMD GPUs (what cuSPARSE is on NVIDIA's), loaded at run time
//! through a small table of our own (libloading), like the HIP runtime in [`super::api`].
//!
//! One call changed its signature across ROCm versions: `rocsparse_spmv` takes 11 arguments in
//! rocSPARSE 2.x (ROCm 5: a call without a buffer returns the buffer's size, analysis happens on
//! the first product) and 12 in 3.x and later (ROCm 6+: a `stage` before the buffer size:
//! buffer size, preprocess, compute). The symbol is kept untyped and called through the
//! signature of the version `rocsparse_get_version` reports for the handle. Enum values are those
//! of `rocsparse-types.h`, unchanged from ROCm 5.3 (Debian bookworm's, whose headers this was
//! written against) to 7.x.
//!
//! **Not yet run on AMD hardware**: the table loads (CI installs Debian's librocsparse0 and
//! checks every symbol resolves); a handle needs an AMD GPU.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use libloading::Library;

use super::api::Stream;
use crate::KernelError;

pub type Status = c_int;
pub type Handle = *mut c_void;
pub type SpMat = *mut c_void;
pub type DnVec = *mut c_void;

// rocsparse-types.h.
pub const OPERATION_NONE: c_int = 111;
pub const INDEX_BASE_ZERO: c_int = 0;
pub const INDEXTYPE_I32: c_int = 2;
pub const DATATYPE_F32: c_int = 151;
pub const DATATYPE_F64: c_int = 152;
/// `rocsparse_spmv_alg_csr_adaptive`: row blocks from an analysis of the pattern (CSR-adaptive).
pub const ALG_CSR_ADAPTIVE: c_int = 2;
/// `rocsparse_spmv_alg_csr_stream` (2.x) / `_csr_rowsplit` (3.x): rows split over the wavefront,
/// no analysis.
pub const ALG_CSR_ROWSPLIT: c_int = 3;
/// `rocsparse_spmv_stage` of 3.x.
pub const STAGE_BUFFER_SIZE: c_int = 1;
pub const STAGE_PREPROCESS: c_int = 2;
pub const STAGE_COMPUTE: c_int = 3;

/// `rocsparse_spmv` of rocSPARSE 2.x (ROCm 5).
pub type SpmvV2 = unsafe extern "C" fn(
    Handle,
    c_int,
    *const c_void,
    SpMat,
    DnVec,
    *const c_void,
    DnVec,
    c_int,
    c_int,
    *mut usize,
    *mut c_void,
) -> Status;
/// `rocsparse_spmv` of rocSPARSE 3.x and later (ROCm 6+): the stage before the buffer size.
pub type SpmvV3 = unsafe extern "C" fn(
    Handle,
    c_int,
    *const c_void,
    SpMat,
    DnVec,
    *const c_void,
    DnVec,
    c_int,
    c_int,
    c_int,
    *mut usize,
    *mut c_void,
) -> Status;

/// The functions, resolved once.
pub struct Rocsparse {
    pub create_handle: unsafe extern "C" fn(*mut Handle) -> Status,
    pub destroy_handle: unsafe extern "C" fn(Handle) -> Status,
    pub set_stream: unsafe extern "C" fn(Handle, Stream) -> Status,
    pub get_version: unsafe extern "C" fn(Handle, *mut c_int) -> Status,
    #[allow(clippy::type_complexity)]
    pub create_csr_descr: unsafe extern "C" fn(
        *mut SpMat,
        i64,
        i64,
        i64,
        *mut c_void,
        *mut c_void,
        *mut c_void,
        c_int,
        c_int,
        c_int,
        c_int,
    ) -> Status,
    pub destroy_spmat_descr: unsafe extern "C" fn(SpMat) -> Status,
    pub create_dnvec_descr: unsafe extern "C" fn(*mut DnVec, i64, *mut c_void, c_int) -> Status,
    pub dnvec_set_values: unsafe extern "C" fn(DnVec, *mut c_void) -> Status,
    pub destroy_dnvec_descr: unsafe extern "C" fn(DnVec) -> Status,
    /// `rocsparse_spmv`, untyped: [`Rocsparse::spmv`] calls it with the version's signature.
    spmv: *const c_void,
    /// `rocsparse_get_status_name` (rocSPARSE 3.x on); older versions give only the number.
    status_name: Option<unsafe extern "C" fn(Status) -> *const c_char>,
    /// The file loaded.
    pub library: String,
    _lib: Library,
}

/// Names tried in order: the development link, then the runtime packages' sonames (ROCm 6/7's
/// .so.1, ROCm 5's and Debian's .so.0), also under `$ROCM_PATH/lib` and `/opt/rocm/lib`.
const NAMES: [&str; 3] = ["librocsparse.so", "librocsparse.so.1", "librocsparse.so.0"];

fn load() -> Result<Rocsparse, String> {
    // The HIP runtime first: rocSPARSE needs it, and its absence is the clearer message.
    super::api::api().map_err(|e| e.to_string())?;
    let (lib, library) = super::api::open(&NAMES).ok_or_else(|| {
        "rocSPARSE (librocsparse.so) is not installed (ROCm's rocsparse package; set ROCM_PATH \
         if it is elsewhere than /opt/rocm)"
            .to_string()
    })?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is the rocSPARSE C function of that name, whose signature the
            // field it is stored in spells out (rocsparse-auxiliary.h).
            unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map(|s| *s)
                .map_err(|_| format!("{library} has no {}", $name))?
        };
    }
    // SAFETY: as above; kept as an address until the version is known.
    let spmv = unsafe { lib.get::<*const c_void>(b"rocsparse_spmv\0") }
        .map(|s| *s)
        .map_err(|_| format!("{library} has no rocsparse_spmv"))?;
    Ok(Rocsparse {
        create_handle: sym!("rocsparse_create_handle"),
        destroy_handle: sym!("rocsparse_destroy_handle"),
        set_stream: sym!("rocsparse_set_stream"),
        get_version: sym!("rocsparse_get_version"),
        create_csr_descr: sym!("rocsparse_create_csr_descr"),
        destroy_spmat_descr: sym!("rocsparse_destroy_spmat_descr"),
        create_dnvec_descr: sym!("rocsparse_create_dnvec_descr"),
        dnvec_set_values: sym!("rocsparse_dnvec_set_values"),
        destroy_dnvec_descr: sym!("rocsparse_destroy_dnvec_descr"),
        spmv,
        // SAFETY: (rocsparse_status) -> const char*, rocsparse-auxiliary.h of 3.x.
        status_name: unsafe { lib.get(b"rocsparse_get_status_name\0") }
            .ok()
            .map(|s| *s),
        library,
        _lib: lib,
    })
}

/// The table, loaded on first use; "not available" naming what is missing otherwise.
pub fn rocsparse() -> Result<&'static Rocsparse, KernelError> {
    static API: OnceLock<Result<Rocsparse, String>> = OnceLock::new();
    API.get_or_init(load)
        .as_ref()
        .map_err(|why| super::not_available(why.clone()))
}

/// Which `rocsparse_spmv` a library version has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpmvAbi {
    /// 2.x: 11 arguments.
    V2,
    /// 3.x and later: 12 (a stage).
    V3,
}

impl SpmvAbi {
    /// From `rocsparse_get_version`'s number (major * 100000 + minor * 100 + patch).
    pub fn of_version(version: c_int) -> SpmvAbi {
        if version / 100000 >= 3 {
            SpmvAbi::V3
        } else {
            SpmvAbi::V2
        }
    }
}

/// The arguments of one `rocsparse_spmv` call but the stage and the buffer.
#[derive(Clone, Copy)]
pub struct SpmvCall {
    pub handle: Handle,
    pub alpha: *const c_void,
    pub mat: SpMat,
    pub x: DnVec,
    pub beta: *const c_void,
    pub y: DnVec,
    pub compute_type: c_int,
    pub alg: c_int,
}

impl Rocsparse {
    /// `Err(rocSPARSE: what: name)` unless `s` is rocsparse_status_success.
    pub fn check(&self, what: &str, s: Status) -> Result<(), KernelError> {
        if s == 0 {
            return Ok(());
        }
        let name = self
            .status_name
            // SAFETY: returns a static string for any status.
            .map(|f| unsafe { f(s) })
            .filter(|p| !p.is_null())
            // SAFETY: non-null, NUL-terminated.
            .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            .unwrap_or_else(|| status_text(s).to_string());
        Err(KernelError::Hip(format!("rocSPARSE {what}: {name}")))
    }

    /// `rocsparse_spmv` with the signature of `abi`: for V3 the given stage; for V2 the stage
    /// is implied (a null buffer asks for its size, otherwise the product).
    ///
    /// # Safety
    /// The descriptors, handle and buffer must be alive and describe device memory of the sizes
    /// they were created with; `alpha`/`beta` point at host scalars of the compute type.
    pub unsafe fn spmv(
        &self,
        abi: SpmvAbi,
        c: SpmvCall,
        stage: c_int,
        buffer_size: *mut usize,
        buffer: *mut c_void,
    ) -> Status {
        match abi {
            SpmvAbi::V2 => {
                // SAFETY: the 2.x signature (rocsparse-functions.h of ROCm 5.3).
                let f: SpmvV2 = unsafe { std::mem::transmute(self.spmv) };
                unsafe {
                    f(
                        c.handle,
                        OPERATION_NONE,
                        c.alpha,
                        c.mat,
                        c.x,
                        c.beta,
                        c.y,
                        c.compute_type,
                        c.alg,
                        buffer_size,
                        buffer,
                    )
                }
            }
            SpmvAbi::V3 => {
                // SAFETY: the 3.x signature (rocsparse-functions.h of ROCm 6.0 on).
                let f: SpmvV3 = unsafe { std::mem::transmute(self.spmv) };
                unsafe {
                    f(
                        c.handle,
                        OPERATION_NONE,
                        c.alpha,
                        c.mat,
                        c.x,
                        c.beta,
                        c.y,
                        c.compute_type,
                        c.alg,
                        stage,
                        buffer_size,
                        buffer,
                    )
                }
            }
        }
    }
}

/// rocsparse_status names (rocsparse-types.h) for versions without `rocsparse_get_status_name`.
pub fn status_text(s: Status) -> &'static str {
    match s {
        0 => "success",
        1 => "invalid handle",
        2 => "not implemented",
        3 => "invalid pointer",
        4 => "invalid size",
        5 => "memory error",
        6 => "internal error",
        7 => "invalid value",
        8 => "arch mismatch",
        9 => "zero pivot",
        10 => "not initialized",
        11 => "type mismatch",
        12 => "requires sorted storage",
        _ => "unknown status",
    }
}

// SAFETY: function pointers and the library they come from, loaded for the process; rocSPARSE's
// functions may be called from any thread (one handle per thread at a time, which HipSpmv keeps).
unsafe impl Send for Rocsparse {}
unsafe impl Sync for Rocsparse {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spmv_signature_follows_the_major_version() {
        // rocSPARSE 2.3.3 (ROCm 5.3), 2.5.4 (ROCm 5.7), 3.0.2 (ROCm 6.0), 4.0.2 (ROCm 7.0).
        assert_eq!(SpmvAbi::of_version(200303), SpmvAbi::V2);
        assert_eq!(SpmvAbi::of_version(200504), SpmvAbi::V2);
        assert_eq!(SpmvAbi::of_version(300002), SpmvAbi::V3);
        assert_eq!(SpmvAbi::of_version(400002), SpmvAbi::V3);
        assert_eq!(status_text(3), "invalid pointer");
    }

    /// Where rocSPARSE is installed (CI installs Debian's librocsparse0 when it runs as root),
    /// every function of the table resolves; where it is not, loading says what is missing.
    /// `AUGUR_EXPECT_ROCSPARSE=1` (CI) makes its absence a failure.
    #[test]
    fn the_table_loads_where_rocsparse_is_installed() {
        match rocsparse() {
            Ok(r) => eprintln!("rocSPARSE: {}", r.library),
            Err(e) => {
                let m = e.to_string();
                assert!(m.starts_with("backend `hip` is not available: "), "{m}");
                assert!(
                    m.contains("librocsparse") || m.contains("libamdhip64"),
                    "{m}"
                );
                assert!(
                    std::env::var_os("AUGUR_EXPECT_ROCSPARSE").is_none(),
                    "AUGUR_EXPECT_ROCSPARSE is set but: {m}"
                );
                eprintln!("SKIPPED: {m}");
            }
        }
    }

    /// The enum values above, against the installed headers where they are (librocsparse-dev;
    /// CI installs it with AUGUR_EXPECT_ROCSPARSE=1).
    #[test]
    fn the_constants_match_the_installed_header() {
        let Ok(h) = std::fs::read_to_string("/usr/include/rocsparse/rocsparse-types.h")
            .or_else(|_| std::fs::read_to_string("/opt/rocm/include/rocsparse/rocsparse-types.h"))
        else {
            assert!(
                std::env::var_os("AUGUR_EXPECT_ROCSPARSE").is_none(),
                "AUGUR_EXPECT_ROCSPARSE is set but rocsparse-types.h is not installed"
            );
            eprintln!("SKIPPED: no rocsparse-types.h");
            return;
        };
        // An enumerator's line: `    name = value, /**< ... */`.
        let value = |name: &str| -> Option<c_int> {
            h.lines().find_map(|l| {
                let rest = l.trim_start().strip_prefix(name)?;
                let rest = rest.trim_start().strip_prefix('=')?;
                let num: String = rest
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                num.parse().ok()
            })
        };
        for (name, want) in [
            ("rocsparse_operation_none", OPERATION_NONE),
            ("rocsparse_index_base_zero", INDEX_BASE_ZERO),
            ("rocsparse_indextype_i32", INDEXTYPE_I32),
            ("rocsparse_datatype_f32_r", DATATYPE_F32),
            ("rocsparse_datatype_f64_r", DATATYPE_F64),
            ("rocsparse_spmv_alg_csr_adaptive", ALG_CSR_ADAPTIVE),
        ] {
            assert_eq!(value(name), Some(want), "{name}");
        }
        let split = value("rocsparse_spmv_alg_csr_rowsplit")
            .or_else(|| value("rocsparse_spmv_alg_csr_stream"));
        assert_eq!(split, Some(ALG_CSR_ROWSPLIT));
    }
}
