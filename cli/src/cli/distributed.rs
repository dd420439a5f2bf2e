//! `augur distributed check`: under a launcher (torchrun, mpirun, srun), every process reads its
//! rank, world size and local rank as augur does, and the ranks meet at rank 0's address (or a
//! shared file) to share the bytes rank 0 made, as they will share NCCL's unique id. No GPU is
//! needed: run it before a distributed job to see that the launch and the rendezvous work.

use std::hash::{BuildHasher, Hasher};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use augur::multi::launch::{nccl_check, share, share_nccl_id, Meeting, RankEnv};
use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum DistributedCommand {
    /// Read this process's rank as augur does and meet the other ranks (no GPU needed): each
    /// prints its rank and the digest of what rank 0 shared, the same on every rank.
    Check(CheckArgs),
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Seconds to wait for the other ranks (rank 0) or for rank 0 (the others).
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Share NCCL's unique id instead, open one communicator per rank on GPU LOCAL_RANK and
    /// all-reduce rank + 1 (needs a CUDA GPU per rank and libnccl).
    #[arg(long)]
    nccl: bool,
}

pub fn run(c: DistributedCommand) -> anyhow::Result<ExitCode> {
    let DistributedCommand::Check(a) = c;
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        anyhow::bail!("--timeout {}: a positive number of seconds", a.timeout);
    }
    let env = RankEnv::from_env()?.context(
        "no launcher set a rank: run under torchrun, mpirun or srun, or set RANK and WORLD_SIZE \
         (and LOCAL_RANK) yourself",
    )?;
    let get = |k: &str| std::env::var(k).ok();
    let meeting = Meeting::from_vars(get)?.context(
        "no meeting place: set MASTER_ADDR and MASTER_PORT (rank 0's host and a free port), or \
         AUGUR_RENDEZVOUS=host:port or file:PATH (a file every rank can read)",
    )?;
    let at = match &meeting {
        Meeting::Tcp(a) => a.clone(),
        Meeting::File(p) => format!("file {}", p.display()),
    };
    let timeout = Duration::from_secs_f64(a.timeout);
    if a.nccl {
        let id = share_nccl_id(&env, &meeting, timeout)?;
        // Fault injection for the tests: a rank that stops between the rendezvous and NCCL.
        if std::env::var("AUGUR_FAULT").as_deref() == Ok("exit-after-rendezvous") {
            eprintln!(
                "augur: rank {}: exiting after the rendezvous (AUGUR_FAULT)",
                env.rank
            );
            return Ok(ExitCode::from(3));
        }
        let (sum, gpu) = nccl_check(&env, id, timeout)?;
        println!(
            "rank {} of {} (local rank {}, {}): met at {at}; NCCL communicator on GPU {} ({gpu}): \
             all-reduce of rank + 1 = {sum} (expected)",
            env.rank, env.world, env.local_rank, env.launcher, env.local_rank
        );
        return Ok(ExitCode::SUCCESS);
    }
    let blob = share(
        &env,
        &meeting,
        || {
            // 128 bytes no other run makes (the size of NCCL's unique id).
            let s = std::collections::hash_map::RandomState::new();
            Ok((0..16u64)
                .flat_map(|i| {
                    let mut h = s.build_hasher();
                    h.write_u64(i);
                    h.write_u32(std::process::id());
                    h.finish().to_le_bytes()
                })
                .collect())
        },
        timeout,
    )?;
    // FNV-1a: equal on every rank when the bytes are.
    let digest = blob.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    println!(
        "rank {} of {} (local rank {}, {}): met at {at}: {} bytes from rank 0, digest {digest:016x}",
        env.rank,
        env.world,
        env.local_rank,
        env.launcher,
        blob.len()
    );
    Ok(ExitCode::SUCCESS)
}
