//! The HIP backend for AMD GPUs (feature `hip`): the HIP runtime and hiprtc loaded at run time
//! ([`api`]), the SpMV pool compiled by hiprtc from the same `.cu` text as CUDA's (after
//! `portable.h`), code objects cached on disk like the PTX, and [`HipSpmv`] as an
//! [`crate::device::SpmvDevice`].
//!
//! **Not yet run on AMD hardware**: there is no AMD GPU where augur is developed. What runs
//! without one is tested: loading (a clear "not available" naming the missing library or
//! device), and compiling every portable kernel for gfx90a with hiprtc, checking that each entry
//! point the CUDA build has is in the code object (CI, with Debian's ROCm 5.2).
//!
//! Pool on HIP: the eleven kernels of `spmv_csr.cu` (scalar, vector2-32, block, merge_path,
//! merge_tiled, nnz_split, binned with the same host-side binning as CUDA), rocSPARSE's generic
//! SpMV as the vendor baseline (`rocsparse_adaptive`, `rocsparse_rowsplit`; [`rocsparse`], a
//! table of our own covering the 2.x and 3.x signatures), and the device feature gatherer
//! (`features.cu`, [`HipGatherer`]). RCCL's table ([`rccl`]) loads and reads its version; left
//! out until they can be run: multi-GPU and the comm patterns on AMD (flags need fine-grained
//! memory, see `portable.h`; comm.cu compiles), and attention (tensor-core code, NVIDIA's alone).

pub mod api;
mod gather;
pub mod rccl;
pub mod rocsparse;
mod spmv;

use std::ffi::{c_char, c_int, CString};
use std::path::PathBuf;

use crate::cuda::module::{self, Source};
use crate::KernelError;
pub use gather::{HipGatherCheck, HipGatherer};
pub use spmv::{
    entry_points, hip_kernels, HipBuf, HipCsr, HipKernel, HipPrepared, HipSpmv, ROCSPARSE_KERNELS,
};

pub(crate) fn not_available(why: impl Into<String>) -> KernelError {
    KernelError::NotAvailable {
        backend: "hip".into(),
        why: why.into(),
    }
}

/// The HIP runtime loads, initialises, and sees at least one GPU: how many.
pub fn available() -> Result<usize, KernelError> {
    let api = api::api()?;
    // SAFETY: plain C calls with valid out-pointers.
    let e = unsafe { (api.init)(0) };
    if e != 0 {
        return Err(not_available(format!(
            "no AMD GPU (hipInit: {})",
            api.error_name(e)
        )));
    }
    let mut n: c_int = 0;
    let e = unsafe { (api.device_count)(&mut n) };
    if e != 0 || n <= 0 {
        return Err(not_available(format!(
            "no AMD GPU: the HIP runtime ({}) sees none",
            api.libraries
        )));
    }
    Ok(n as usize)
}

/// One AMD GPU as HIP describes it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HipDeviceInfo {
    pub ordinal: usize,
    pub name: String,
    /// The ISA hiprtc compiles for (`gfx90a`...), from the device properties or `AUGUR_HIP_ARCH`.
    pub arch: Option<String>,
}

/// Every AMD GPU.
pub fn devices() -> Result<Vec<HipDeviceInfo>, KernelError> {
    let n = available()?;
    let api = api::api()?;
    (0..n)
        .map(|i| {
            let mut name = [0 as c_char; 256];
            // SAFETY: a 256-byte buffer and its length.
            api.check("hipDeviceGetName", unsafe {
                (api.device_name)(name.as_mut_ptr(), name.len() as c_int, i as c_int)
            })?;
            // SAFETY: NUL-terminated within the buffer (HIP truncates to the length given).
            let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
                .to_string_lossy()
                .into_owned();
            Ok(HipDeviceInfo {
                ordinal: i,
                name,
                arch: device_arch(i),
            })
        })
        .collect()
}

/// The ISA of GPU `ordinal`: `AUGUR_HIP_ARCH` when set, else the `gfx...` name in its
/// properties.
fn device_arch(ordinal: usize) -> Option<String> {
    if let Ok(a) = std::env::var("AUGUR_HIP_ARCH") {
        return Some(a);
    }
    let api = api::api().ok()?;
    // Larger than hipDeviceProp_t of any ROCm so far (~1.5 KiB); zeroed.
    let mut buf = vec![0u8; 16 << 10];
    // SAFETY: the buffer is larger than the struct the function fills.
    let e = unsafe { (api.device_properties)(buf.as_mut_ptr().cast(), ordinal as c_int) };
    (e == 0).then(|| arch_from_properties(&buf)).flatten()
}

/// The first NUL-terminated `gfx<digits/letters>` string in a device-properties struct: its
/// `gcnArchName` ("gfx90a:sramecc+:xnack-"), cut at the first colon. The struct's layout differs
/// between ROCm versions; the name field is the only one that starts with "gfx".
pub fn arch_from_properties(buf: &[u8]) -> Option<String> {
    let mut i = 0;
    while i + 4 <= buf.len() {
        if &buf[i..i + 3] == b"gfx" && (i == 0 || buf[i - 1] == 0) {
            let end = buf[i..].iter().position(|&b| b == 0)? + i;
            let s = std::str::from_utf8(&buf[i..end]).ok()?;
            let isa = s.split(':').next()?;
            if isa.len() > 3 && isa[3..].bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Some(isa.to_string());
            }
        }
        i += 1;
    }
    None
}

/// hiprtc's options for `src` on `arch`.
pub fn options(src: Source, arch: &str) -> Vec<String> {
    let mut o = vec![
        format!("--offload-arch={arch}"),
        "-O3".into(),
        "-std=c++17".into(),
    ];
    o.extend(src.defines.iter().map(|(n, v)| format!("-D{n}={v}")));
    o
}

/// Compile a portable source for `arch` (`gfx90a`...) with hiprtc, without the cache: the code
/// object. Needs the HIP runtime library, no GPU. hiprtc of ROCm 5.2 aborts the process on an ISA
/// it does not know (gfx940 and later): give it one it supports.
pub fn compile(src: Source, arch: &str) -> Result<Vec<u8>, KernelError> {
    if !src.portable {
        return Err(KernelError::Invalid(format!(
            "kernels/cuda/{}.cu is NVIDIA-only (not written against portable.h)",
            src.name
        )));
    }
    if arch.is_empty() || !arch.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(KernelError::Invalid(format!(
            "`{arch}` is not an AMD GPU architecture (gfx90a, gfx942, ...)"
        )));
    }
    let rtc = &api::api()?.rtc;
    let text = CString::new(src.full_text()).map_err(|_| {
        KernelError::Invalid(format!("kernels/cuda/{}.cu holds a NUL byte", src.name))
    })?;
    let name = CString::new(format!("{}.cu", src.name)).expect("no NUL in a source name");
    let opts: Vec<CString> = options(src, arch)
        .into_iter()
        .map(|o| CString::new(o).expect("no NUL in an option"))
        .collect();
    let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let mut prog: api::RtcProgram = std::ptr::null_mut();
    let fail = |what: &str, code: c_int| KernelError::Hip(format!("{what} returned {code}"));
    // SAFETY: valid NUL-terminated strings that outlive the calls; no headers.
    let e = unsafe {
        (rtc.create_program)(
            &mut prog,
            text.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if e != 0 {
        return Err(fail("hiprtcCreateProgram", e));
    }
    let result = (|| {
        // SAFETY: `prog` was created above; the option pointers outlive the call.
        let e = unsafe { (rtc.compile_program)(prog, ptrs.len() as c_int, ptrs.as_ptr()) };
        if e != 0 {
            let mut n = 0usize;
            // SAFETY: out-pointer, then a buffer of the size it gave.
            unsafe { (rtc.log_size)(prog, &mut n) };
            let mut log = vec![0u8; n.max(1)];
            unsafe { (rtc.log)(prog, log.as_mut_ptr().cast()) };
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            return Err(KernelError::Compile {
                source_name: format!("kernels/cuda/{}.cu ({arch})", src.name),
                compiler: "hiprtc",
                log: String::from_utf8_lossy(&log[..end]).into_owned(),
            });
        }
        let mut n = 0usize;
        // SAFETY: as above.
        let e = unsafe { (rtc.code_size)(prog, &mut n) };
        if e != 0 {
            return Err(fail("hiprtcGetCodeSize", e));
        }
        let mut code = vec![0u8; n];
        let e = unsafe { (rtc.code)(prog, code.as_mut_ptr().cast()) };
        if e != 0 {
            return Err(fail("hiprtcGetCode", e));
        }
        Ok(code)
    })();
    // SAFETY: created above, destroyed once.
    unsafe { (rtc.destroy_program)(&mut prog) };
    result
}

/// Where the code object of `src` for `arch` is cached (beside the PTX).
pub fn cache_path(src: Source, arch: &str) -> PathBuf {
    let text = src.full_text();
    let opts = options(src, arch);
    let mut parts = vec![text.as_str()];
    parts.extend(opts.iter().map(String::as_str));
    module::cache_dir().join(format!(
        "{}-{arch}-{:016x}.co",
        src.name,
        module::fnv1a(&parts)
    ))
}

/// The code object of `src` for `arch`: from the cache, or compiled and cached. True when cached.
pub fn code_object(src: Source, arch: &str) -> Result<(Vec<u8>, bool), KernelError> {
    let path = cache_path(src, arch);
    if let Ok(code) = std::fs::read(&path) {
        return Ok((code, true));
    }
    let code = compile(src, arch)?;
    if std::fs::create_dir_all(path.parent().expect("cache path has a folder")).is_ok() {
        let tmp = path.with_extension(format!("partial-{}", std::process::id()));
        if std::fs::write(&tmp, &code).is_ok() && std::fs::rename(&tmp, &path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    Ok((code, false))
}

/// Entry points among `names` that a code object does not define: each kernel `K` has a kernel
/// descriptor symbol `K.kd`, found as a whole entry of the object's string tables.
pub fn missing_entry_points<'a>(code: &[u8], names: &[&'a str]) -> Vec<&'a str> {
    names
        .iter()
        .copied()
        .filter(|n| {
            let needle = format!("\0{n}.kd\0");
            !code.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
        .collect()
}

/// The entry points of a PTX text (`.entry NAME(`), for comparing the two vendors' builds.
pub fn ptx_entry_points(ptx: &str) -> Vec<&str> {
    ptx.match_indices(".entry ")
        .filter_map(|(i, m)| {
            let rest = &ptx[i + m.len()..];
            let end = rest.find(|c: char| c == '(' || c.is_whitespace())?;
            Some(&rest[..end])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_isa_is_found_in_any_properties_layout() {
        let mut buf = vec![0u8; 2048];
        buf[..19].copy_from_slice(b"AMD Instinct MI250X");
        let at = 1160;
        let name = b"gfx90a:sramecc+:xnack-";
        buf[at..at + name.len()].copy_from_slice(name);
        assert_eq!(arch_from_properties(&buf).as_deref(), Some("gfx90a"));
        // Not at a string's start, or no digits after "gfx": not a name.
        let mut other = vec![0u8; 64];
        other[4..10].copy_from_slice(b"xgfx90");
        other[20..23].copy_from_slice(b"gfx");
        assert_eq!(arch_from_properties(&other), None);
    }

    #[test]
    fn entry_points_are_whole_symbols() {
        let code = b"\x7fELF...\0spmv_scalar_f32.kd\0spmv_scalar_f32\0spmv_vector2_f32\0";
        let names = ["spmv_scalar_f32", "spmv_vector2_f32", "spmv_scalar_f3"];
        assert_eq!(
            missing_entry_points(code, &names),
            vec!["spmv_vector2_f32", "spmv_scalar_f3"]
        );
        let ptx = ".visible .entry spmv_scalar_f32(\n.param .u32 a\n)\n.entry feat_init (\n";
        assert_eq!(ptx_entry_points(ptx), vec!["spmv_scalar_f32", "feat_init"]);
    }

    #[test]
    fn bad_architectures_and_nvidia_only_sources_are_refused_before_loading() {
        let e = compile(module::SPMV_CSR, "gfx90a; rm").unwrap_err();
        assert!(e.to_string().contains("not an AMD GPU architecture"), "{e}");
        let e = compile(module::ATTENTION, "gfx90a").unwrap_err();
        assert!(e.to_string().contains("NVIDIA-only"), "{e}");
    }

    /// Where the HIP runtime is not installed, loading says so; where it is (CI installs
    /// Debian's ROCm 5.2), every portable source compiles for gfx90a and defines every entry
    /// point the Rust side launches.
    #[test]
    fn the_portable_kernels_compile_for_gfx90a_where_hiprtc_is_installed() {
        let api = match api::api() {
            Ok(a) => a,
            Err(e) => {
                let m = e.to_string();
                assert!(
                    m.contains("backend `hip` is not available") && m.contains("libamdhip64"),
                    "{m}"
                );
                eprintln!("SKIPPED: {m}");
                return;
            }
        };
        eprintln!("HIP runtime: {}", api.libraries);
        for src in module::SOURCES.iter().filter(|s| s.portable) {
            let code = compile(*src, "gfx90a").unwrap();
            assert!(
                code.starts_with(b"\x7fELF"),
                "{}: not an ELF code object",
                src.name
            );
            let want = entry_points(src.name);
            assert!(!want.is_empty());
            let names: Vec<&str> = want.iter().map(String::as_str).collect();
            assert_eq!(
                missing_entry_points(&code, &names),
                Vec::<&str>::new(),
                "{}",
                src.name
            );
        }
    }
}

#[cfg(test)]
mod loading_tests {
    /// Without an AMD GPU (every machine here), opening one is a clear error naming what is
    /// missing, never a panic: the library when ROCm is absent, the GPU when it is present.
    #[test]
    fn opening_a_gpu_without_one_says_what_is_missing() {
        match super::available() {
            Ok(n) => assert!(n > 0),
            Err(e) => {
                let m = e.to_string();
                assert!(m.starts_with("backend `hip` is not available: "), "{m}");
                assert!(m.contains("libamdhip64") || m.contains("no AMD GPU"), "{m}");
                let e = crate::device::Device::hip(0).unwrap_err().to_string();
                assert_eq!(e, m);
                eprintln!("{m}");
            }
        }
    }
}
