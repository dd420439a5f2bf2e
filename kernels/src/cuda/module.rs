//! `.cu` sources compiled by NVRTC to PTX for the device's architecture, cached on disk.
//!
//! Cache key: FNV-1a of the source text, the target architecture and the compiler options, so an
//! edited kernel or another GPU compiles afresh. The cache folder is `$AUGUR_KERNEL_CACHE`, else
//! `$XDG_CACHE_HOME/augur/kernels`, else `~/.cache/augur/kernels`. Files are written to a
//! temporary name and renamed, so a crash never leaves a half-written PTX behind.

use std::path::PathBuf;

use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};

use crate::KernelError;

/// One `.cu` file of `kernels/cuda/`, with the constants it shares with the Rust side.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    pub name: &'static str,
    pub text: &'static str,
    /// Passed as `-DNAME=VALUE`: the source does not define them (it stops with `#error` when
    /// one is missing), so the kernel and the code that sizes its launches cannot disagree.
    pub defines: &'static [(&'static str, u64)],
    /// Written once for both vendors: compiled after [`PORTABLE`] (NVRTC and hiprtc). The
    /// tensor-core attention kernel is NVIDIA's alone.
    pub portable: bool,
    /// Shared text compiled before the file (after [`PORTABLE`] where portable): [`MMA`] for the
    /// tensor-core sources, else empty.
    pub prelude: &'static str,
    /// Compiled for the architecture-specific target where there is one (compute_90a on Hopper:
    /// wgmma), so the source may use instructions that only that GPU family has.
    pub arch_specific: bool,
}

/// The helpers that let one source compile for NVIDIA and AMD (`kernels/cuda/portable.h`: warp
/// shuffles, ballots and matches on 32-lane logical warps, acquire/release flags, the clock).
pub const PORTABLE: &str = include_str!("../../cuda/portable.h");

/// The tensor-core helpers of the NVIDIA-only sources (`kernels/cuda/mma.h`: m16n8k16 products
/// for f16 and bf16, cp.async, ldmatrix).
pub const MMA: &str = include_str!("../../cuda/mma.h");

/// The GEMM's prelude: [`PORTABLE`]'s flag, load and clock helpers (its NVIDIA half: the GEMM's
/// sources are NVIDIA-only), then [`MMA`].
const PORTABLE_AND_MMA: &str = concat!(
    include_str!("../../cuda/portable.h"),
    "\n",
    include_str!("../../cuda/mma.h")
);

impl Source {
    /// The text a compiler gets: [`PORTABLE`] first for a portable source, then the file, its
    /// lines numbered as in the file.
    pub fn full_text(&self) -> String {
        let portable = if self.portable { PORTABLE } else { "" };
        format!(
            "{portable}\n{}\n#line 1 \"{}.cu\"\n{}",
            self.prelude, self.name, self.text
        )
    }
}

pub const SPMV_CSR: Source = Source {
    name: "spmv_csr",
    text: include_str!("../../cuda/spmv_csr.cu"),
    defines: &[
        ("MP_ITEMS", super::spmv::MP_ITEMS),
        ("NS_STEPS", super::spmv::NS_STEPS),
        ("LONG_CHUNK", super::spmv::LONG_CHUNK as u64),
        ("MT_THREADS", super::spmv::MT_THREADS),
        ("MT_ITEMS", super::spmv::MT_ITEMS),
        ("AD_LONG", super::spmv::AD_LONG),
        ("AD_PIECE", super::spmv::AD_PIECE),
        ("AD_REL", super::spmv::AD_REL),
        ("AD_FAR", super::spmv::AD_FAR),
    ],
    portable: true,
    prelude: "",
    arch_specific: false,
};

pub const FEATURES: Source = Source {
    name: "features",
    text: include_str!("../../cuda/features.cu"),
    defines: &[
        ("LONG", super::gather::BINS as u64),
        ("BINS", super::gather::BINS as u64),
        ("XSEG", augur_features::spmv::X_SEGMENT_COLS as u64),
    ],
    portable: true,
    prelude: "",
    arch_specific: false,
};

pub const COMM: Source = Source {
    name: "comm",
    text: include_str!("../../cuda/comm.cu"),
    defines: &[
        ("MAX_RANKS", super::comm::MAX_RANKS as u64),
        ("MAX_BLOCKS", super::comm::MAX_BLOCKS as u64),
        ("TP_MAX_PIECES", super::gemm::tp::ag::MAX_PIECES as u64),
    ],
    portable: true,
    prelude: "",
    arch_specific: false,
};

/// Halo packing and CG's vector operations (issue 23), loaded by `vector::VectorKernels`.
pub const VECTOR: Source = Source {
    name: "vector",
    text: include_str!("../../cuda/vector.cu"),
    defines: &[("DOT_BLOCKS", super::vector::DOT_BLOCKS as u64)],
    portable: true,
    prelude: "",
    arch_specific: false,
};

/// Decode attention over ragged KV (issue 8), loaded by `CudaAttention`.
pub const ATTENTION: Source = Source {
    name: "attention",
    text: include_str!("../../cuda/attention.cu"),
    defines: &[("GMAX", super::attention::GMAX as u64)],
    portable: false,
    prelude: MMA,
    arch_specific: false,
};

/// Dense GEMM on tensor cores (issue 24), loaded by `gemm::CudaGemm`.
pub const GEMM: Source = Source {
    name: "gemm",
    // The TMA GEMMs (gemm_tma.cu) build on gemm.cu's types and wgmma helpers, the fused
    // kernels (gemm_fused.cu) on the TMA GEMM: one text, one module.
    text: concat!(
        include_str!("../../cuda/gemm.cu"),
        include_str!("../../cuda/gemm_tma.cu"),
        include_str!("../../cuda/gemm_fused.cu")
    ),
    defines: &[
        ("GEMM_STAGES", super::gemm::STAGES as u64),
        ("WG_STAGES", super::gemm::WG_STAGES as u64),
        ("SWAP_STAGES", super::gemm::SWAP_STAGES as u64),
        ("MAX_RANKS", super::comm::MAX_RANKS as u64),
        ("TP_MAX_PIECES", super::gemm::tp::ag::MAX_PIECES as u64),
    ],
    portable: false,
    prelude: PORTABLE_AND_MMA,
    arch_specific: true,
};

/// Every kernel source, for `augur kernels build` and the compile check.
pub const SOURCES: &[Source] = &[SPMV_CSR, FEATURES, COMM, VECTOR, ATTENTION, GEMM];

/// NVRTC's options for `src` on `arch`: the architecture, the language, the shared constants.
pub fn options(src: Source, arch: (i32, i32)) -> Vec<String> {
    let suffix = if src.arch_specific && arch.0 == 9 {
        "a"
    } else {
        ""
    };
    let mut o = vec![
        format!("--gpu-architecture=compute_{}{}{suffix}", arch.0, arch.1),
        "--std=c++17".into(),
    ];
    o.extend(src.defines.iter().map(|(n, v)| format!("-D{n}={v}")));
    o
}

pub(crate) fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0u8]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("AUGUR_KERNEL_CACHE") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("augur").join("kernels")
}

/// Where the PTX of `src` for `arch` is cached.
pub fn cache_path(src: Source, arch: (i32, i32)) -> PathBuf {
    let opts = options(src, arch);
    let text = src.full_text();
    let mut parts = vec![text.as_str()];
    parts.extend(opts.iter().map(String::as_str));
    cache_dir().join(format!(
        "{}-sm{}{}-{:016x}.ptx",
        src.name,
        arch.0,
        arch.1,
        fnv1a(&parts)
    ))
}

/// Compile `src` for `arch` with NVRTC, without the cache. Needs only libnvrtc, no GPU.
pub fn compile(src: Source, arch: (i32, i32)) -> Result<String, KernelError> {
    // SAFETY: only tries to dlopen libnvrtc by its usual names.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(KernelError::NotAvailable {
            backend: "cuda".into(),
            why: "NVRTC (libnvrtc.so) is not installed".into(),
        });
    }
    let opts = CompileOptions {
        options: options(src, arch),
        name: Some(format!("{}.cu", src.name)),
        ..Default::default()
    };
    compile_ptx_with_opts(src.full_text(), opts)
        .map(|p| p.to_src())
        .map_err(|e| KernelError::Compile {
            source_name: format!("kernels/cuda/{}.cu", src.name),
            compiler: "NVRTC",
            log: e.to_string(),
        })
}

/// The PTX of `src` for `arch`: from the cache, or compiled and cached. True when cached.
pub fn ptx(src: Source, arch: (i32, i32)) -> Result<(Ptx, bool), KernelError> {
    let path = cache_path(src, arch);
    if let Ok(text) = std::fs::read_to_string(&path) {
        return Ok((Ptx::from_src(text), true));
    }
    let text = compile(src, arch)?;
    // A cache that cannot be written costs a recompile next time, nothing more.
    if std::fs::create_dir_all(path.parent().expect("cache path has a folder")).is_ok() {
        let tmp = path.with_extension(format!("partial-{}", std::process::id()));
        if std::fs::write(&tmp, &text).is_ok() && std::fs::rename(&tmp, &path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    Ok((Ptx::from_src(text), false))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shared constant comes from the host: the source guards it with `#error` and never
    /// defines it itself (a `#define` there would be a second copy that could drift).
    #[test]
    fn shared_constants_are_defined_by_the_host_only() {
        for src in SOURCES {
            for (name, _) in src.defines {
                assert!(
                    src.text.contains(&format!("#ifndef {name}\n#error")),
                    "{}.cu does not stop without -D{name}",
                    src.name
                );
                assert!(
                    !src.text.contains(&format!("#define {name} ")),
                    "{}.cu defines {name} itself",
                    src.name
                );
            }
            let o = options(*src, (9, 0));
            assert!(src
                .defines
                .iter()
                .all(|(n, v)| o.contains(&format!("-D{n}={v}"))));
        }
        // And the cache key changes with them: another value, another PTX file.
        let mut other = SPMV_CSR;
        other.defines = &[("MP_ITEMS", 32)];
        assert_ne!(cache_path(SPMV_CSR, (9, 0)), cache_path(other, (9, 0)));
    }
}
