//! `augur kernels ...`: compile the `.cu` kernels ahead of time.

use std::process::ExitCode;
use std::time::Instant;

use augur_kernels::cuda::{self, module};
use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum KernelsCommand {
    /// Compile every kernel source with NVRTC for a GPU's architecture into the on-disk cache,
    /// so that the first run does not pay for it.
    Build(ArchArgs),
    /// Compile every kernel source with NVRTC (or the portable ones with hiprtc: --hip) and
    /// discard the result: a compile check that needs the compiler's library but no GPU.
    Check(ArchArgs),
}

#[derive(Args, Debug)]
pub struct ArchArgs {
    /// Target architecture as MAJOR.MINOR (e.g. 9.0); default: that of --device.
    #[arg(long, value_parser = parse_arch)]
    arch: Option<(i32, i32)>,
    /// GPU whose architecture to target when --arch is not given.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Compile the portable sources (SpMV, features, comm) with hiprtc for this AMD ISA (e.g.
    /// gfx90a) instead; `check` also makes sure every entry point the CUDA build defines (NVRTC,
    /// when it loads) and every one augur launches is in the code object. Needs the HIP runtime
    /// library, no GPU.
    #[arg(long, value_name = "GFX")]
    hip: Option<String>,
    /// `check` only: also assemble each source's PTX with this ptxas (e.g. from the PyPI wheel
    /// `nvidia-cuda-nvcc`) for the PTX's own target, so that inline assembly NVRTC passes
    /// through unread is checked without a GPU too (the driver would first read it at load).
    #[arg(long, value_name = "PATH")]
    ptxas: Option<std::path::PathBuf>,
}

fn parse_arch(s: &str) -> Result<(i32, i32), String> {
    let bad = || format!("`{s}` is not MAJOR.MINOR, e.g. 9.0");
    let (a, b) = s.split_once('.').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
}

pub fn run(cmd: KernelsCommand) -> anyhow::Result<ExitCode> {
    let (args, keep) = match &cmd {
        KernelsCommand::Build(a) => (a, true),
        KernelsCommand::Check(a) => (a, false),
    };
    if let Some(isa) = &args.hip {
        return hip(isa, args.arch, keep);
    }
    let arch = match args.arch {
        Some(a) => a,
        None => {
            cuda::devices()?
                .get(args.device)
                .ok_or_else(|| anyhow::anyhow!("no GPU {}", args.device))?
                .compute_capability
        }
    };
    for src in module::SOURCES {
        let t = Instant::now();
        if keep {
            let (_, cached) = module::ptx(*src, arch)?;
            println!(
                "kernels/cuda/{}.cu -> {} ({}, {:.2} s)",
                src.name,
                module::cache_path(*src, arch).display(),
                if cached { "already cached" } else { "compiled" },
                t.elapsed().as_secs_f64()
            );
        } else {
            let ptx = module::compile(*src, arch)?;
            let entries = ptx.matches(".entry").count();
            let assembled = match &args.ptxas {
                Some(ptxas) => format!("; {}", assemble(ptxas, src.name, &ptx)?),
                None => String::new(),
            };
            println!(
                "kernels/cuda/{}.cu: compiled for compute_{}{} ({} entry points, {:.2} s{assembled})",
                src.name,
                arch.0,
                arch.1,
                entries,
                t.elapsed().as_secs_f64()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Assemble `ptx` (of kernels/cuda/`name`.cu) with `ptxas` for the target its `.target` line
/// names, the machine code discarded: what the driver's JIT would refuse is refused here, with
/// ptxas's log.
fn assemble(ptxas: &std::path::Path, name: &str, ptx: &str) -> anyhow::Result<String> {
    let target = ptx
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .map(|t| t.split(',').next().unwrap_or(t).trim().to_string())
        .ok_or_else(|| anyhow::anyhow!("kernels/cuda/{name}.cu: the PTX names no .target"))?;
    let dir = std::env::temp_dir().join(format!("augur-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (input, output) = (
        dir.join(format!("{name}.ptx")),
        dir.join(format!("{name}.cubin")),
    );
    std::fs::write(&input, ptx)?;
    let t = Instant::now();
    let run = std::process::Command::new(ptxas)
        .arg(format!("-arch={target}"))
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = run.map_err(|e| anyhow::anyhow!("ptxas `{}`: {e}", ptxas.display()))?;
    if !out.status.success() {
        anyhow::bail!(
            "ptxas refused kernels/cuda/{name}.cu's PTX for {target} ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(format!(
        "assembled by ptxas for {target}, {:.2} s",
        t.elapsed().as_secs_f64()
    ))
}

/// `--hip ISA`: the portable sources through hiprtc.
fn hip(isa: &str, cuda_arch: Option<(i32, i32)>, keep: bool) -> anyhow::Result<ExitCode> {
    use augur_kernels::hip;
    let mut missing_any = false;
    for src in module::SOURCES.iter().filter(|s| s.portable) {
        let t = Instant::now();
        if keep {
            let (_, cached) = hip::code_object(*src, isa)?;
            println!(
                "kernels/cuda/{}.cu -> {} ({}, {:.2} s)",
                src.name,
                hip::cache_path(*src, isa).display(),
                if cached { "already cached" } else { "compiled" },
                t.elapsed().as_secs_f64()
            );
            continue;
        }
        let code = hip::compile(*src, isa)?;
        let secs = t.elapsed().as_secs_f64();
        // What must be there: what augur launches, and (NVRTC permitting) all the CUDA build has.
        let mut want = hip::entry_points(src.name);
        let nvidia = match module::compile(*src, cuda_arch.unwrap_or((9, 0))) {
            Ok(ptx) => {
                let e: Vec<String> = hip::ptx_entry_points(&ptx)
                    .into_iter()
                    .map(String::from)
                    .collect();
                let n = e.len();
                want.extend(e);
                format!("all {n} of the CUDA build")
            }
            Err(e) => format!("the CUDA build not compared: {e}"),
        };
        want.sort();
        want.dedup();
        let names: Vec<&str> = want.iter().map(String::as_str).collect();
        let missing = hip::missing_entry_points(&code, &names);
        println!(
            "kernels/cuda/{}.cu: compiled by hiprtc for {isa} ({} bytes, {:.2} s); entry points: {} \
             checked ({nvidia}), {} missing{}",
            src.name,
            code.len(),
            secs,
            names.len(),
            missing.len(),
            if missing.is_empty() {
                String::new()
            } else {
                format!(": {}", missing.join(", "))
            }
        );
        missing_any |= !missing.is_empty();
    }
    if missing_any {
        anyhow::bail!("entry points missing from the {isa} code objects (above)");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_is_given_the_ptx_target_and_its_refusal_is_an_error() {
        let ptx = ".version 9.0\n.target sm_90a\n.address_size 64\n";
        // `true` and `false` stand in for a ptxas that accepts and one that refuses.
        let ok = assemble(std::path::Path::new("true"), "gemm", ptx).unwrap();
        assert!(ok.contains("sm_90a"), "{ok}");
        let e = assemble(std::path::Path::new("false"), "gemm", ptx)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ptxas refused kernels/cuda/gemm.cu") && e.contains("sm_90a"),
            "{e}"
        );
        let e = assemble(std::path::Path::new("true"), "vector", ".version 9.0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("vector.cu") && e.contains(".target"), "{e}");
        let e = assemble(std::path::Path::new("/nonexistent/ptxas"), "gemm", ptx)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/ptxas"), "{e}");
    }
}
