//! `augur devices`: the GPUs the CUDA driver sees and the links between them, and the AMD GPUs the
//! HIP runtime sees.

use std::process::ExitCode;

use augur_features::message::LinkProbe;
use augur_kernels::cuda::{self, DriverLinkProbe};
use clap::Args;

#[derive(Args, Debug)]
pub struct DevicesArgs {
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(serde::Serialize)]
struct Pair {
    from: usize,
    to: usize,
    #[serde(flatten)]
    peer: cuda::PeerInfo,
    link: augur_features::message::LinkType,
}

pub fn run(a: DevicesArgs) -> anyhow::Result<ExitCode> {
    // The AMD GPUs, or why there are none.
    let amd = augur_kernels::hip::devices();
    let devices = match (cuda::devices(), &amd) {
        (Ok(d), _) => d,
        (Err(e), Ok(list)) if !list.is_empty() => {
            if !a.json {
                println!("CUDA: {e}");
            }
            Vec::new()
        }
        (Err(e), Ok(_)) => return Err(e.into()),
        // Both reasons, the CUDA one first.
        (Err(augur_kernels::KernelError::NotAvailable { backend, why }), Err(h)) => {
            return Err(augur_kernels::KernelError::NotAvailable {
                backend,
                why: format!("{why} (and {h})"),
            }
            .into())
        }
        (Err(e), Err(_)) => return Err(e.into()),
    };
    let mut pairs = Vec::new();
    for x in 0..devices.len() {
        for y in 0..devices.len() {
            if x != y {
                let peer = cuda::peer(x, y)?;
                pairs.push(Pair {
                    from: x,
                    to: y,
                    peer,
                    link: peer.link(),
                });
            }
        }
    }
    let all: Vec<usize> = (0..devices.len()).collect();
    let group = if devices.is_empty() {
        None
    } else {
        Some(DriverLinkProbe.group_link(&all)?)
    };
    if a.json {
        let (amd_list, amd_why) = match &amd {
            Ok(l) => (l.clone(), None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        let v = serde_json::json!({ "devices": devices, "peers": pairs, "group_link": group,
            "amd_devices": amd_list, "hip": amd_why,
            "rocsparse": amd_libraries().0, "rccl": amd_libraries().1 });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    for d in &devices {
        println!(
            "GPU {}: {} (sm_{}{}), {} SMs, {:.1} GiB, L2 {} MiB, {}-bit bus",
            d.ordinal,
            d.name,
            d.compute_capability.0,
            d.compute_capability.1,
            d.multiprocessors,
            d.memory_bytes as f64 / (1u64 << 30) as f64,
            d.l2_bytes >> 20,
            d.memory_bus_bits
        );
    }
    for p in &pairs {
        println!(
            "  {} -> {}: peer access {}, native atomics {}, rank {} => {:?}",
            p.from, p.to, p.peer.access, p.peer.native_atomics, p.peer.performance_rank, p.link
        );
    }
    if let Some(g) = group {
        println!("slowest link of the group: {g:?}");
    }
    match &amd {
        Ok(list) => {
            for d in list {
                println!(
                    "AMD GPU {}: {} ({}); HIP backend: compiled, not yet run on AMD hardware",
                    d.ordinal,
                    d.name,
                    d.arch
                        .as_deref()
                        .unwrap_or("ISA unknown: set AUGUR_HIP_ARCH")
                );
            }
        }
        Err(e) => println!("HIP: {e}"),
    }
    // AMD's libraries (or why each is missing), wherever the HIP runtime loads.
    if augur_kernels::hip::api::api().is_ok() {
        let (sparse, coll) = amd_libraries();
        println!("rocSPARSE: {sparse}\nRCCL: {coll}");
    }
    Ok(ExitCode::SUCCESS)
}

/// rocSPARSE's and RCCL's files (and RCCL's version), or why each is missing.
fn amd_libraries() -> (String, String) {
    use augur_kernels::hip::{rccl, rocsparse};
    let sparse = match rocsparse::rocsparse() {
        Ok(r) => r.library.clone(),
        Err(e) => e.to_string(),
    };
    let coll = match rccl::rccl().and_then(|r| Ok(format!("{} {}", r.library, r.version()?))) {
        Ok(s) => s,
        Err(e) => e.to_string(),
    };
    (sparse, coll)
}
