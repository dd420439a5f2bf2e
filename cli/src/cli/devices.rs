//! `augur devices`: the GPUs the CUDA driver sees, and the links between them.

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
    let devices = cuda::devices()?;
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
    let group = DriverLinkProbe.group_link(&all)?;
    if a.json {
        let v = serde_json::json!({ "devices": devices, "peers": pairs, "group_link": group });
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
    println!("slowest link of the group: {group:?}");
    Ok(ExitCode::SUCCESS)
}
