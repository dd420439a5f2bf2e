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
    /// Compile every kernel source with NVRTC and discard the result: a compile check that needs
    /// libnvrtc but no GPU (give --arch).
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
            println!(
                "kernels/cuda/{}.cu: compiled for compute_{}{} ({} entry points, {:.2} s)",
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
