//! One process per GPU: where a process stands in a distributed run (its rank, the world size
//! and its GPU on the host, from the launcher's environment), and the rendezvous that gives
//! every rank the bytes rank 0 made (NCCL's unique id) over TCP to rank 0's address, or through
//! a shared file.
//!
//! Launchers, first match wins: torchrun and friends (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`),
//! Open MPI (`OMPI_COMM_WORLD_RANK`, `_SIZE`, `_LOCAL_RANK`), MPICH/Hydra and Intel MPI
//! (`PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID`), Slurm (`SLURM_PROCID`, `SLURM_NTASKS`,
//! `SLURM_LOCALID`). Rank 0's address: `MASTER_ADDR` and `MASTER_PORT` (torchrun's names; set
//! them under MPI or Slurm too), or `AUGUR_RENDEZVOUS` as `host:port` or `file:PATH`.
//!
//! Nothing waits forever: every step has a deadline, and the error names the rank that is late
//! or the address that did not answer. A file meeting place must be new for each run (put the
//! job id in its name, e.g. `file:/shared/augur-$SLURM_JOB_ID`): a rank that finds a file left
//! by an earlier run cannot tell it from rank 0's.
//!
//! Here: where a process stands ([`RankEnv`]) and where ranks meet ([`Meeting`]); the
//! rendezvous itself in `rendezvous`, NCCL's id and communicators in `nccl`.

use std::path::PathBuf;

use crate::AugurError;

mod nccl;
mod rendezvous;

pub(in crate::multi) use nccl::open_comm;
pub use nccl::{nccl_check, share_nccl_id};
pub use rendezvous::{fetch, scatter, serve, share};

/// Where this process stands in a distributed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankEnv {
    pub rank: usize,
    pub world: usize,
    /// The rank among the processes of this host: the GPU ordinal it takes.
    pub local_rank: usize,
    /// Which launcher's variables said so.
    pub launcher: &'static str,
}

/// The launchers' (rank, world, local rank) variable names, in the order they are tried.
const LAUNCHERS: [(&str, [&str; 3]); 4] = [
    ("torchrun", ["RANK", "WORLD_SIZE", "LOCAL_RANK"]),
    (
        "Open MPI",
        [
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_RANK",
        ],
    ),
    ("MPICH/PMI", ["PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"]),
    ("Slurm", ["SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"]),
];

impl RankEnv {
    /// From this process's environment; None when no launcher set a rank (a single process).
    pub fn from_env() -> Result<Option<RankEnv>, AugurError> {
        RankEnv::from_vars(|k| std::env::var(k).ok())
    }

    /// From variables looked up by `get` (the environment, or a test's table).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<RankEnv>, AugurError> {
        for (launcher, [r, w, l]) in LAUNCHERS {
            let Some(rank) = get(r) else { continue };
            let int = |name: &str, v: &str| -> Result<usize, AugurError> {
                v.trim().parse::<usize>().map_err(|_| {
                    AugurError::Invalid(format!(
                        "{launcher}: {name}={v:?} is not a non-negative integer"
                    ))
                })
            };
            let rank = int(r, &rank)?;
            let world = match get(w) {
                Some(v) => int(w, &v)?,
                None => {
                    return Err(AugurError::Invalid(format!(
                        "{launcher}: {r} is set but {w} is not: the world size is unknown"
                    )))
                }
            };
            if world == 0 || rank >= world {
                return Err(AugurError::Invalid(format!(
                    "{launcher}: {r}={rank} with {w}={world}: the rank must be below the world size"
                )));
            }
            // Without a local rank (one process per host, or a launcher that does not say),
            // GPU 0.
            let local_rank = match get(l) {
                Some(v) => int(l, &v)?,
                None => 0,
            };
            return Ok(Some(RankEnv {
                rank,
                world,
                local_rank,
                launcher,
            }));
        }
        Ok(None)
    }
}

/// Where ranks meet: rank 0's TCP address, or a file every rank can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meeting {
    Tcp(String),
    File(PathBuf),
}

impl Meeting {
    /// `AUGUR_RENDEZVOUS` (`host:port` or `file:PATH`), else `MASTER_ADDR:MASTER_PORT`; None
    /// when neither is set.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<Meeting>, AugurError> {
        if let Some(v) = get("AUGUR_RENDEZVOUS") {
            return Ok(Some(match v.strip_prefix("file:") {
                Some(p) if !p.is_empty() => Meeting::File(PathBuf::from(p)),
                Some(_) => {
                    return Err(AugurError::Invalid(
                        "AUGUR_RENDEZVOUS=file: names no file".into(),
                    ))
                }
                None if v
                    .rsplit_once(':')
                    .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) =>
                {
                    Meeting::Tcp(v)
                }
                None => {
                    return Err(AugurError::Invalid(format!(
                        "AUGUR_RENDEZVOUS={v:?}: expected host:port or file:PATH"
                    )))
                }
            }));
        }
        match (get("MASTER_ADDR"), get("MASTER_PORT")) {
            (Some(a), Some(p)) => match p.trim().parse::<u16>() {
                Ok(p) => Ok(Some(Meeting::Tcp(format!("{a}:{p}")))),
                Err(_) => Err(AugurError::Invalid(format!(
                    "MASTER_PORT={p:?} is not a port number"
                ))),
            },
            (Some(_), None) => Err(AugurError::Invalid(
                "MASTER_ADDR is set but MASTER_PORT is not".into(),
            )),
            (None, Some(_)) => Err(AugurError::Invalid(
                "MASTER_PORT is set but MASTER_ADDR is not".into(),
            )),
            (None, None) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn launchers_are_read_in_order_and_checked() {
        let e = RankEnv::from_vars(vars(&[])).unwrap();
        assert_eq!(e, None);
        let e = RankEnv::from_vars(vars(&[
            ("RANK", "3"),
            ("WORLD_SIZE", "4"),
            ("LOCAL_RANK", "1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            (e.rank, e.world, e.local_rank, e.launcher),
            (3, 4, 1, "torchrun")
        );
        let e = RankEnv::from_vars(vars(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "8"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((e.rank, e.launcher), (2, "Open MPI"), "MPI before Slurm");
        let e = RankEnv::from_vars(vars(&[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")]))
            .unwrap()
            .unwrap();
        assert_eq!((e.rank, e.world, e.local_rank), (1, 2, 0));
        for (bad, needle) in [
            (vec![("RANK", "x"), ("WORLD_SIZE", "2")], "RANK=\"x\""),
            (
                vec![("RANK", "2"), ("WORLD_SIZE", "2")],
                "below the world size",
            ),
            (vec![("RANK", "0")], "WORLD_SIZE is not"),
            (
                vec![("PMI_RANK", "0"), ("PMI_SIZE", "0")],
                "below the world size",
            ),
            (
                vec![("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "-1")],
                "LOCAL_RANK",
            ),
        ] {
            let e = RankEnv::from_vars(vars(&bad)).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad:?}: {e}");
        }
    }

    #[test]
    fn meeting_places_are_parsed() {
        let m = |p: &[(&str, &str)]| Meeting::from_vars(vars(p));
        assert_eq!(m(&[]).unwrap(), None);
        assert_eq!(
            m(&[("MASTER_ADDR", "node1"), ("MASTER_PORT", "29500")]).unwrap(),
            Some(Meeting::Tcp("node1:29500".into()))
        );
        assert_eq!(
            m(&[
                ("AUGUR_RENDEZVOUS", "file:/shared/id"),
                ("MASTER_ADDR", "x")
            ])
            .unwrap(),
            Some(Meeting::File("/shared/id".into()))
        );
        assert_eq!(
            m(&[("AUGUR_RENDEZVOUS", "10.0.0.1:7000")]).unwrap(),
            Some(Meeting::Tcp("10.0.0.1:7000".into()))
        );
        for bad in [
            vec![("AUGUR_RENDEZVOUS", "nowhere")],
            vec![("AUGUR_RENDEZVOUS", "file:")],
            vec![("MASTER_ADDR", "a")],
            vec![("MASTER_ADDR", "a"), ("MASTER_PORT", "http")],
        ] {
            assert!(m(&bad).is_err(), "{bad:?}");
        }
    }
}
