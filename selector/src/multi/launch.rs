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

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::AugurError;

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

/// A round of the rendezvous: [`Round::Share`] gives every rank the same bytes (NCCL's id, at
/// most [`MAX_BLOB`]); [`Round::Scatter`] gives each rank its own (its shard of a matrix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    Share,
    Scatter,
}

impl Round {
    /// The first bytes of every message of the round: the protocol, its version and the round
    /// (a rank of one round never takes another's answer).
    fn magic(self) -> &'static [u8; 8] {
        match self {
            Round::Share => b"augur-s2",
            Round::Scatter => b"augur-t2",
        }
    }

    fn max(self) -> u64 {
        match self {
            Round::Share => MAX_BLOB as u64,
            Round::Scatter => MAX_SCATTER,
        }
    }
}

/// Largest blob shared (an NCCL unique id is 128 bytes).
const MAX_BLOB: usize = 1 << 16;
/// Largest blob scattered to one rank (a sanity bound on a length read from the wire).
const MAX_SCATTER: u64 = 1 << 40;

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> AugurError {
    move |e| AugurError::Invalid(format!("{what}: {e}"))
}

/// Every rank's copy of the bytes rank 0 made: rank 0 calls `make` and shares its result, the
/// others receive it. TCP: rank 0 listens on the meeting address and answers each rank that
/// says hello; a file: rank 0 writes it whole (through a temporary file and a rename) and the
/// others read it once it is there. Errors after `timeout`, naming the ranks that never came or
/// the address that never answered.
pub fn share(
    env: &RankEnv,
    meeting: &Meeting,
    make: impl FnOnce() -> Result<Vec<u8>, AugurError>,
    timeout: Duration,
) -> Result<Vec<u8>, AugurError> {
    match meeting {
        Meeting::Tcp(addr) if env.rank == 0 => {
            let blob = make()?;
            let listener = TcpListener::bind(resolve(addr)?)
                .map_err(io_err(format!("rank 0: cannot listen on {addr}")))?;
            serve(listener, env.world, &blob, timeout)?;
            Ok(blob)
        }
        Meeting::Tcp(addr) => fetch(&resolve(addr)?, env.rank, env.world, timeout),
        Meeting::File(path) if env.rank == 0 => {
            let blob = make()?;
            write_file(path, Round::Share, &[], &blob)?;
            Ok(blob)
        }
        Meeting::File(path) => read_file(path, Round::Share, &[], env.rank, timeout),
    }
}

/// Each rank's own bytes from rank 0, after [`share`] at the same meeting place: rank 0 calls
/// `make`, which returns one blob per rank (its own first), and keeps its own; rank r receives
/// blob r. `nonce` (the same on every rank, e.g. what `share` gave) ties the blobs to this run:
/// a file left by another run is not taken for this one's. TCP: rank 0 listens again and
/// answers each rank's hello with its blob; a file: rank 0 writes `PATH.rank<r>` for each rank
/// (through a temporary file and a rename) and rank r reads and removes it. Errors after
/// `timeout` as [`share`] does.
pub fn scatter(
    env: &RankEnv,
    meeting: &Meeting,
    nonce: &[u8],
    make: impl FnOnce() -> Result<Vec<Vec<u8>>, AugurError>,
    timeout: Duration,
) -> Result<Vec<u8>, AugurError> {
    if env.rank == 0 {
        let mut blobs = make()?;
        if blobs.len() != env.world {
            return Err(AugurError::Invalid(format!(
                "rank 0: {} blobs to scatter to {} ranks",
                blobs.len(),
                env.world
            )));
        }
        match meeting {
            Meeting::Tcp(addr) => {
                let listener = TcpListener::bind(resolve(addr)?)
                    .map_err(io_err(format!("rank 0: cannot listen on {addr}")))?;
                let blob_of = |r: usize| -> &[u8] { &blobs[r] };
                serve_round(
                    listener,
                    env.world,
                    Round::Scatter,
                    nonce,
                    &blob_of,
                    timeout,
                )?;
            }
            Meeting::File(path) => {
                for (r, blob) in blobs.iter().enumerate().skip(1) {
                    write_file(&rank_file(path, r), Round::Scatter, nonce, blob)?;
                }
            }
        }
        return Ok(std::mem::take(&mut blobs[0]));
    }
    match meeting {
        Meeting::Tcp(addr) => fetch_round(
            &resolve(addr)?,
            env.rank,
            env.world,
            Round::Scatter,
            nonce,
            timeout,
        ),
        Meeting::File(path) => {
            let file = rank_file(path, env.rank);
            let blob = read_file(&file, Round::Scatter, nonce, env.rank, timeout)?;
            let _ = std::fs::remove_file(&file);
            Ok(blob)
        }
    }
}

fn rank_file(path: &Path, rank: usize) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(format!(".rank{rank}"));
    PathBuf::from(p)
}

fn resolve(addr: &str) -> Result<SocketAddr, AugurError> {
    addr.to_socket_addrs()
        .map_err(io_err(format!("rendezvous address {addr}")))?
        .next()
        .ok_or_else(|| AugurError::Invalid(format!("rendezvous address {addr}: no address")))
}

/// Rank 0's side of [`share`]: answer `world - 1` hellos (each rank once) with `blob`.
pub fn serve(
    listener: TcpListener,
    world: usize,
    blob: &[u8],
    timeout: Duration,
) -> Result<(), AugurError> {
    serve_round(listener, world, Round::Share, &[], &|_| blob, timeout)
}

/// A message's head: the round's magic, the nonce's length and the nonce, the blob's length.
fn head(round: Round, nonce: &[u8], len: usize) -> Vec<u8> {
    let mut h = Vec::with_capacity(20 + nonce.len());
    h.extend_from_slice(round.magic());
    h.extend_from_slice(&(nonce.len() as u32).to_le_bytes());
    h.extend_from_slice(nonce);
    h.extend_from_slice(&(len as u64).to_le_bytes());
    h
}

/// Rank 0's side of a round: answer `world - 1` hellos (each rank once), rank r with
/// `blob_of(r)`.
fn serve_round<'b>(
    listener: TcpListener,
    world: usize,
    round: Round,
    nonce: &[u8],
    blob_of: &dyn Fn(usize) -> &'b [u8],
    timeout: Duration,
) -> Result<(), AugurError> {
    if let Some(b) = (1..world)
        .map(blob_of)
        .find(|b| b.len() as u64 > round.max())
    {
        return Err(AugurError::Invalid(format!(
            "rendezvous: {} bytes to send, at most {}",
            b.len(),
            round.max()
        )));
    }
    let deadline = Instant::now() + timeout;
    let at = listener
        .local_addr()
        .map_or_else(|_| "?".into(), |a| a.to_string());
    listener
        .set_nonblocking(true)
        .map_err(io_err(format!("rank 0: listening on {at}")))?;
    let mut seen = BTreeSet::new();
    while seen.len() + 1 < world {
        match listener.accept() {
            Ok((mut s, peer)) => {
                let left = deadline.saturating_duration_since(Instant::now());
                s.set_nonblocking(false)
                    .and_then(|_| s.set_read_timeout(Some(left.max(Duration::from_millis(1)))))
                    .and_then(|_| s.set_write_timeout(Some(left.max(Duration::from_millis(1)))))
                    .map_err(io_err(format!("rank 0: connection from {peer}")))?;
                let mut hello = [0u8; 16];
                if s.read_exact(&mut hello).is_err() || &hello[..8] != round.magic() {
                    // Not one of ours (a port scanner, another program, another round): not
                    // counted.
                    continue;
                }
                let (rank, their_world) = (
                    u32::from_le_bytes(hello[8..12].try_into().expect("4 bytes")) as usize,
                    u32::from_le_bytes(hello[12..16].try_into().expect("4 bytes")) as usize,
                );
                if their_world != world || rank == 0 || rank >= world {
                    return Err(AugurError::Invalid(format!(
                        "rank 0 (world {world}): {peer} says it is rank {rank} of {their_world}"
                    )));
                }
                if !seen.insert(rank) {
                    return Err(AugurError::Invalid(format!(
                        "rank 0: rank {rank} said hello twice (from {peer}): two processes with one rank?"
                    )));
                }
                let blob = blob_of(rank);
                s.write_all(&head(round, nonce, blob.len()))
                    .and_then(|_| s.write_all(blob))
                    .map_err(io_err(format!("rank 0: answering rank {rank} at {peer}")))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let missing: Vec<String> = (1..world)
                        .filter(|r| !seen.contains(r))
                        .map(|r| r.to_string())
                        .collect();
                    return Err(AugurError::Invalid(format!(
                        "rank 0: rank{} {} did not reach {at} within {:.0} s (failed to start, \
                         or cannot reach this host?)",
                        if missing.len() > 1 { "s" } else { "" },
                        missing.join(", "),
                        timeout.as_secs_f64()
                    )));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(io_err(format!("rank 0: accepting on {at}"))(e)),
        }
    }
    Ok(())
}

/// A rank's side of [`share`]: say hello to rank 0 at `addr` (retrying until it listens) and
/// read the blob.
pub fn fetch(
    addr: &SocketAddr,
    rank: usize,
    world: usize,
    timeout: Duration,
) -> Result<Vec<u8>, AugurError> {
    fetch_round(addr, rank, world, Round::Share, &[], timeout)
}

fn fetch_round(
    addr: &SocketAddr,
    rank: usize,
    world: usize,
    round: Round,
    nonce: &[u8],
    timeout: Duration,
) -> Result<Vec<u8>, AugurError> {
    let deadline = Instant::now() + timeout;
    // Set when rank 0 closed a connection unanswered: it was still serving the round before
    // (it skips hellos of other rounds), or the port is another program's.
    let mut unanswered = false;
    let late = |unanswered: bool| {
        AugurError::Invalid(format!(
            "rank {rank}: rank 0 did not answer at {addr} within {:.0} s ({})",
            timeout.as_secs_f64(),
            if unanswered {
                "it closed every connection unanswered: another program on that port, or a \
                 rank 0 stuck in another round of the rendezvous?"
            } else {
                "not started, failed, or the address is wrong?"
            }
        ))
    };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(late(unanswered));
        }
        let mut s = match TcpStream::connect_timeout(addr, left.min(Duration::from_secs(1))) {
            Ok(s) => s,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(20).min(left));
                continue;
            }
        };
        let io = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => late(unanswered),
            _ => AugurError::Invalid(format!("rank {rank}: talking to rank 0 at {addr}: {e}")),
        };
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        s.set_read_timeout(Some(left)).map_err(io)?;
        s.set_write_timeout(Some(left)).map_err(io)?;
        let mut hello = Vec::with_capacity(16);
        hello.extend_from_slice(round.magic());
        hello.extend_from_slice(&(rank as u32).to_le_bytes());
        hello.extend_from_slice(&(world as u32).to_le_bytes());
        let mut magic = [0u8; 12];
        match s.write_all(&hello).and_then(|_| s.read_exact(&mut magic)) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::BrokenPipe
                ) =>
            {
                // Closed unanswered: try again until the deadline.
                unanswered = true;
                std::thread::sleep(Duration::from_millis(20).min(left));
                continue;
            }
            Err(e) => return Err(io(e)),
        }
        if &magic[..8] != round.magic() {
            return Err(AugurError::Invalid(format!(
                "rank {rank}: {addr} is not augur's rank 0 (another program on that port?)"
            )));
        }
        let k = u32::from_le_bytes(magic[8..12].try_into().expect("4 bytes")) as usize;
        let mut theirs = vec![0u8; k.min(4096)];
        s.read_exact(&mut theirs).map_err(io)?;
        if k > 4096 || theirs != nonce {
            return Err(AugurError::Invalid(format!(
                "rank {rank}: rank 0 at {addr} answered for another run (its nonce differs)"
            )));
        }
        let mut len = [0u8; 8];
        s.read_exact(&mut len).map_err(io)?;
        let n = u64::from_le_bytes(len);
        if n > round.max() {
            return Err(AugurError::Invalid(format!(
                "rank {rank}: rank 0 at {addr} announced {n} bytes, at most {}",
                round.max()
            )));
        }
        // Grown as the bytes come, not by the length announced.
        let mut blob = Vec::new();
        (&mut s).take(n).read_to_end(&mut blob).map_err(io)?;
        if blob.len() as u64 != n {
            return Err(AugurError::Invalid(format!(
                "rank {rank}: rank 0 at {addr} announced {n} bytes and sent {}",
                blob.len()
            )));
        }
        return Ok(blob);
    }
}

/// Rank 0's file: written beside its final name and renamed, so no rank reads half of it.
fn write_file(path: &Path, round: Round, nonce: &[u8], blob: &[u8]) -> Result<(), AugurError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        f.write_all(&head(round, nonce, blob.len()))?;
        f.write_all(blob)?;
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err(format!("rank 0: writing {}", path.display()))(e)
    })
}

/// A rank's file of `round` at `path`, once rank 0 wrote it (a file of another run, by its
/// nonce, is waited past: rank 0 replaces it).
fn read_file(
    path: &Path,
    round: Round,
    nonce: &[u8],
    rank: usize,
    timeout: Duration,
) -> Result<Vec<u8>, AugurError> {
    let deadline = Instant::now() + timeout;
    let mut stale = false;
    // The head (magic, nonce, length) first: a file of another run is not read whole again
    // and again while rank 0 has yet to replace it.
    let k = 12 + nonce.len();
    loop {
        if let Ok(mut f) = std::fs::File::open(path) {
            let mut head = vec![0u8; k + 8];
            let read = f.read_exact(&mut head).is_ok();
            let ours = read
                && &head[..8] == round.magic()
                && u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) as usize
                    == nonce.len();
            if !ours {
                return Err(AugurError::Invalid(format!(
                    "rank {rank}: {} is not a rendezvous file of augur's (a stale file of \
                     another run or version? remove it before launching)",
                    path.display()
                )));
            }
            let n = u64::from_le_bytes(head[k..k + 8].try_into().expect("8 bytes"));
            let size = f.metadata().map_or(0, |m| m.len());
            if &head[12..k] == nonce && size.checked_sub(k as u64 + 8) == Some(n) {
                let mut blob = Vec::new();
                f.read_to_end(&mut blob)
                    .map_err(io_err(format!("rank {rank}: reading {}", path.display())))?;
                if blob.len() as u64 == n {
                    return Ok(blob);
                }
            }
            stale = true;
        }
        if Instant::now() >= deadline {
            return Err(AugurError::Invalid(format!(
                "rank {rank}: rank 0 did not write {} within {:.0} s{}",
                path.display(),
                timeout.as_secs_f64(),
                if stale {
                    " (the file there is another run's)"
                } else {
                    ""
                }
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// NCCL's unique id made by rank 0 and given to every rank by [`share`] (128 bytes).
pub fn share_nccl_id(
    env: &RankEnv,
    meeting: &Meeting,
    timeout: Duration,
) -> Result<cudarc::nccl::sys::ncclUniqueId, AugurError> {
    if !super::nccl_available() {
        return Err(AugurError::Nccl(
            "libnccl cannot be loaded here (install NCCL, or put it on LD_LIBRARY_PATH)".into(),
        ));
    }
    let bytes = share(
        env,
        meeting,
        || {
            let id = cudarc::nccl::Id::new().map_err(super::nccl_err("ncclGetUniqueId"))?;
            Ok(id.internal().iter().map(|&c| c as u8).collect())
        },
        timeout,
    )?;
    let mut id = cudarc::nccl::sys::ncclUniqueId { internal: [0; 128] };
    if bytes.len() != id.internal.len() {
        return Err(AugurError::Invalid(format!(
            "rank {}: rank 0 shared {} bytes, not an NCCL unique id (128)",
            env.rank,
            bytes.len()
        )));
    }
    for (d, &b) in id.internal.iter_mut().zip(&bytes) {
        *d = b as std::ffi::c_char;
    }
    Ok(id)
}

/// `ncclConfig_t` as NCCL 2.17 laid it out (NCCL reads a caller's config by its `size` and
/// `version`, so this older layout is valid with later libraries); unset fields as
/// `NCCL_CONFIG_INITIALIZER` leaves them.
#[repr(C)]
struct NcclConfig217 {
    size: usize,
    magic: std::ffi::c_uint,
    version: std::ffi::c_uint,
    blocking: std::ffi::c_int,
    cga_cluster_size: std::ffi::c_int,
    min_ctas: std::ffi::c_int,
    max_ctas: std::ffi::c_int,
    net_name: *const std::ffi::c_char,
    split_share: std::ffi::c_int,
}

impl NcclConfig217 {
    fn new(blocking: bool) -> NcclConfig217 {
        let undef = i32::MIN; // NCCL_CONFIG_UNDEF_INT
        NcclConfig217 {
            size: std::mem::size_of::<NcclConfig217>(),
            magic: 0xcafe_beef,
            version: 21700,
            blocking: blocking.into(),
            cga_cluster_size: undef,
            min_ctas: undef,
            max_ctas: undef,
            net_name: std::ptr::null(),
            split_share: undef,
        }
    }
}

/// The communicator of a group of processes. It is opened without blocking, so that a rank that
/// never comes is an error after `deadline` (the communicator aborted), not a hang. Once every
/// rank has joined, the data path gets a blocking one split from it: NCCL runs every call of a
/// non-blocking communicator on a thread it starts for that call, which cost 16-46% of an
/// iteration of the 4-GPU halo product (2026-11-27, 4 x H200). A rank that stops later is
/// still found by the polling waits (`Shard::wait`, which aborts the communicator after the
/// timeout). Returns (the blocking communicator, the first one): the first must outlive the
/// split one (NCCL aborts a communicator's splits with it), so free it after. The calling
/// thread's current CUDA context is the rank's GPU.
pub(super) fn open_comm(
    id: cudarc::nccl::sys::ncclUniqueId,
    env: &RankEnv,
    deadline: Instant,
) -> Result<(cudarc::nccl::sys::ncclComm_t, cudarc::nccl::sys::ncclComm_t), AugurError> {
    use cudarc::nccl::sys;
    let parent = open_nonblocking(id, env, deadline)?;
    let mut cfg = NcclConfig217::new(true);
    let mut comm: sys::ncclComm_t = std::ptr::null_mut();
    // SAFETY: a live communicator every rank splits now, right after all of them joined it
    // (color 0 and key = rank: the same group in the same order), an out-pointer, and a config
    // NCCL reads up to its `size`.
    let r = unsafe {
        sys::ncclCommSplit(
            parent,
            0,
            env.rank as i32,
            &mut comm,
            (&mut cfg as *mut NcclConfig217).cast(),
        )
    };
    // The split of a non-blocking communicator is done (and `comm` filled) when the parent is
    // no longer in progress (NVIDIA/nccl#1472); bounded like the rest of joining.
    wait_comm(parent, r, env, deadline, "splitting the communicator")?;
    if comm.is_null() {
        // SAFETY: a communicator NCCL handed out; abort frees it without the other ranks.
        unsafe { sys::ncclCommAbort(parent) };
        return Err(AugurError::Nccl(format!(
            "rank {}: ncclCommSplit gave no communicator (communicator aborted)",
            env.rank
        )));
    }
    Ok((comm, parent))
}

/// [`open_comm`]'s first communicator: without blocking, every step bounded by `deadline`.
fn open_nonblocking(
    id: cudarc::nccl::sys::ncclUniqueId,
    env: &RankEnv,
    deadline: Instant,
) -> Result<cudarc::nccl::sys::ncclComm_t, AugurError> {
    use cudarc::nccl::sys;
    let mut cfg = NcclConfig217::new(false);
    let mut comm: sys::ncclComm_t = std::ptr::null_mut();
    // SAFETY: out-pointer, a valid id, and a config NCCL reads up to its `size`.
    let r = unsafe {
        sys::ncclCommInitRankConfig(
            &mut comm,
            env.world as i32,
            id,
            env.rank as i32,
            (&mut cfg as *mut NcclConfig217).cast(),
        )
    };
    if comm.is_null() {
        return Err(AugurError::Nccl(format!(
            "rank {}: ncclCommInitRankConfig: {r:?} (no communicator)",
            env.rank
        )));
    }
    wait_comm(comm, r, env, deadline, "opening the communicator")?;
    Ok(comm)
}

/// Finish a call on a non-blocking communicator that returned `called`: poll until it is done;
/// when it failed, failed later or is not done by `deadline`, abort the communicator.
fn wait_comm(
    comm: cudarc::nccl::sys::ncclComm_t,
    called: cudarc::nccl::sys::ncclResult_t,
    env: &RankEnv,
    deadline: Instant,
    what: &str,
) -> Result<(), AugurError> {
    use cudarc::nccl::sys::{self, ncclResult_t};
    if !matches!(
        called,
        ncclResult_t::ncclSuccess | ncclResult_t::ncclInProgress
    ) {
        // SAFETY: a communicator NCCL handed out; abort frees it.
        unsafe { sys::ncclCommAbort(comm) };
        return Err(AugurError::Nccl(format!(
            "rank {}: {what}: {called:?} (communicator aborted)",
            env.rank
        )));
    }
    loop {
        let mut state = ncclResult_t::ncclSuccess;
        // SAFETY: a communicator NCCL handed out, not yet destroyed.
        let r = unsafe { sys::ncclCommGetAsyncError(comm, &mut state) };
        let failed = match (r, state) {
            (ncclResult_t::ncclSuccess, ncclResult_t::ncclSuccess) => return Ok(()),
            (ncclResult_t::ncclSuccess, ncclResult_t::ncclInProgress) => {
                if Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                format!(
                    "not done by the deadline: a rank of the {} did not join or stopped \
                     (communicator aborted)",
                    env.world
                )
            }
            (ncclResult_t::ncclSuccess, e) | (e, _) => format!("{e:?} (communicator aborted)"),
        };
        // SAFETY: as above; abort frees it without waiting for the other ranks.
        unsafe { sys::ncclCommAbort(comm) };
        return Err(AugurError::Nccl(format!(
            "rank {}: {what}: {failed}",
            env.rank
        )));
    }
}

/// NCCL across processes, checked: with the id from [`share_nccl_id`], each rank opens its
/// communicator on its local GPU (`local_rank`) and all-reduces rank + 1. Returns the sum every
/// rank read, which must be world (world + 1) / 2 (else an error), and the GPU's name. Joining
/// has `timeout` (a non-blocking communicator, aborted when late; see [`open_comm`]). What `augur
/// distributed check --nccl` runs.
pub fn nccl_check(
    env: &RankEnv,
    id: cudarc::nccl::sys::ncclUniqueId,
    timeout: Duration,
) -> Result<(f64, String), AugurError> {
    use cudarc::nccl::sys;
    let deadline = Instant::now() + timeout;
    let backend = crate::Backend::cuda(env.local_rank)?;
    let g = backend
        .as_device()
        .as_cuda()
        .ok_or_else(|| AugurError::Invalid(format!("rank {}: not a CUDA backend", env.rank)))?;
    let drv = |what: &'static str| {
        move |e: cudarc::driver::DriverError| AugurError::Invalid(format!("{what}: {e}"))
    };
    g.context()
        .bind_to_thread()
        .map_err(drv("cuCtxSetCurrent"))?;
    let (comm, joined) = open_comm(id, env, deadline)?;
    let stream = g.stream().clone();
    let run = || -> Result<f64, AugurError> {
        let mut buf = stream
            .clone_htod(&[(env.rank + 1) as f32])
            .map_err(drv("cuMemcpyHtoD"))?;
        {
            use cudarc::driver::DevicePtrMut;
            let (ptr, _sync) = buf.device_ptr_mut(&stream);
            // SAFETY: one f32 of device memory of this GPU, in place, on its stream.
            let r = unsafe {
                sys::ncclAllReduce(
                    ptr as *const std::ffi::c_void,
                    ptr as *mut std::ffi::c_void,
                    1,
                    sys::ncclDataType_t::ncclFloat32,
                    sys::ncclRedOp_t::ncclSum,
                    comm,
                    stream.cu_stream() as sys::cudaStream_t,
                )
            };
            wait_comm(comm, r, env, deadline, "the all-reduce")?;
        }
        Ok(stream.clone_dtoh(&buf).map_err(drv("cuMemcpyDtoH"))?[0] as f64)
    };
    let got = run();
    // SAFETY: done with them, the split one first (after an NCCL error wait_comm already
    // aborted it; after a copy's error it is still open).
    unsafe {
        match &got {
            Ok(_) => {
                sys::ncclCommDestroy(comm);
                sys::ncclCommDestroy(joined);
            }
            Err(AugurError::Nccl(_)) => {
                sys::ncclCommAbort(joined);
            }
            Err(_) => {
                sys::ncclCommAbort(comm);
                sys::ncclCommAbort(joined);
            }
        }
    };
    let got = got?;
    let want = (env.world * (env.world + 1) / 2) as f64;
    if got != want {
        return Err(AugurError::Nccl(format!(
            "rank {}: the all-reduce of rank + 1 over {} ranks gave {got}, not {want}",
            env.rank, env.world
        )));
    }
    Ok((got, backend.device()))
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

    fn env(rank: usize, world: usize) -> RankEnv {
        RankEnv {
            rank,
            world,
            local_rank: rank,
            launcher: "test",
        }
    }

    #[test]
    fn every_rank_gets_rank_zeros_bytes_over_tcp() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let blob: Vec<u8> = (0..128u8).collect();
        let world = 4;
        let t = Duration::from_secs(20);
        std::thread::scope(|s| {
            let root = s.spawn(|| serve(listener, world, &blob, t));
            let others: Vec<_> = (1..world)
                .map(|r| s.spawn(move || fetch(&addr, r, world, t)))
                .collect();
            for o in others {
                assert_eq!(o.join().unwrap().unwrap(), blob);
            }
            root.join().unwrap().unwrap();
        });
    }

    #[test]
    fn a_missing_rank_is_named_not_waited_for() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = Duration::from_secs(2);
        std::thread::scope(|s| {
            let root = s.spawn(|| serve(listener, 4, b"id", t));
            // Ranks 1 and 3 come; rank 2 never starts.
            let a = s.spawn(move || fetch(&addr, 1, 4, t));
            let b = s.spawn(move || fetch(&addr, 3, 4, t));
            let e = root.join().unwrap().unwrap_err().to_string();
            assert!(e.contains("rank 2 did not reach"), "{e}");
            assert_eq!(a.join().unwrap().unwrap(), b"id");
            assert_eq!(b.join().unwrap().unwrap(), b"id");
        });
        // And a rank whose rank 0 never comes.
        let dead = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let e = fetch(&dead, 1, 2, Duration::from_millis(300))
            .unwrap_err()
            .to_string();
        assert!(e.contains("rank 1: rank 0 did not answer"), "{e}");
    }

    #[test]
    fn a_rank_claimed_twice_or_out_of_the_world_is_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = Duration::from_secs(5);
        std::thread::scope(|s| {
            let root = s.spawn(|| serve(listener, 3, b"id", t));
            fetch(&addr, 1, 3, t).unwrap();
            let _ = fetch(&addr, 1, 3, Duration::from_millis(500));
            let e = root.join().unwrap().unwrap_err().to_string();
            assert!(e.contains("rank 1 said hello twice"), "{e}");
        });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::scope(|s| {
            let root = s.spawn(|| serve(listener, 3, b"id", t));
            let _ = fetch(&addr, 1, 4, Duration::from_millis(500));
            let e = root.join().unwrap().unwrap_err().to_string();
            assert!(e.contains("says it is rank 1 of 4"), "{e}");
        });
    }

    #[test]
    fn each_rank_gets_its_own_bytes_over_tcp_and_files() {
        let world = 4;
        let t = Duration::from_secs(20);
        let blobs: Vec<Vec<u8>> = (0..world)
            .map(|r| (0..1000 * r + 3).map(|i| (i * 7 + r) as u8).collect())
            .collect();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let m = Meeting::Tcp(listener.local_addr().unwrap().to_string());
        drop(listener);
        let dir = std::env::temp_dir().join(format!("augur-scatter-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = Meeting::File(dir.join("run"));
        for meeting in [&m, &f] {
            std::thread::scope(|s| {
                let others: Vec<_> = (1..world)
                    .map(|r| {
                        s.spawn(move || {
                            scatter(&env(r, world), meeting, b"run-7", || unreachable!(), t)
                        })
                    })
                    .collect();
                let own = scatter(&env(0, world), meeting, b"run-7", || Ok(blobs.clone()), t);
                assert_eq!(own.unwrap(), blobs[0]);
                for (r, o) in others.into_iter().enumerate() {
                    assert_eq!(o.join().unwrap().unwrap(), blobs[r + 1], "{meeting:?}");
                }
            });
        }
        // Read files are removed; a file of another run (its nonce) is waited past, not taken.
        assert!(!rank_file(&dir.join("run"), 1).exists());
        let stale = rank_file(&dir.join("run"), 1);
        write_file(&stale, Round::Scatter, b"run-6", b"old").unwrap();
        let e = scatter(
            &env(1, 2),
            &f,
            b"run-7",
            || unreachable!(),
            Duration::from_millis(200),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("another run's"), "{e}");
        std::thread::scope(|s| {
            let late = s.spawn(|| scatter(&env(1, 2), &f, b"run-7", || unreachable!(), t));
            std::thread::sleep(Duration::from_millis(50));
            scatter(
                &env(0, 2),
                &f,
                b"run-7",
                || Ok(vec![vec![1], vec![2, 3]]),
                t,
            )
            .unwrap();
            assert_eq!(late.join().unwrap().unwrap(), vec![2, 3]);
        });
        // Over TCP, a rank 0 of another run is refused by its nonce; one of the first round is
        // not taken for this one.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::scope(|s| {
            s.spawn(move || serve_round(listener, 2, Round::Scatter, b"run-6", &|_| &[9u8], t));
            let e = fetch_round(&addr, 1, 2, Round::Scatter, b"run-7", t)
                .unwrap_err()
                .to_string();
            assert!(e.contains("another run"), "{e}");
        });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::scope(|s| {
            let root = s.spawn(move || serve(listener, 2, b"id", Duration::from_millis(300)));
            let e = fetch_round(&addr, 1, 2, Round::Scatter, b"", Duration::from_millis(300))
                .unwrap_err()
                .to_string();
            assert!(e.contains("closed every connection unanswered"), "{e}");
            assert!(root.join().unwrap().is_err());
        });
        // A length announced far past what comes: read as it comes, then refused (no buffer
        // of the announced size).
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::scope(|s| {
            s.spawn(move || {
                let (mut c, _) = listener.accept().unwrap();
                let mut hello = [0u8; 16];
                c.read_exact(&mut hello).unwrap();
                c.write_all(&head(Round::Scatter, b"n", 1 << 39)).unwrap();
                c.write_all(b"only this").unwrap();
            });
            let e = fetch_round(&addr, 1, 2, Round::Scatter, b"n", t)
                .unwrap_err()
                .to_string();
            assert!(e.contains("announced 549755813888 bytes and sent 9"), "{e}");
        });
        // Rank 0 must make one blob per rank.
        let e = scatter(&env(0, 3), &f, b"", || Ok(vec![vec![]]), t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 blobs to scatter to 3 ranks"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_file_meeting_place_shares_too() {
        let dir = std::env::temp_dir().join(format!("augur-rdv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("id");
        let _ = std::fs::remove_file(&path);
        let m = Meeting::File(path.clone());
        let t = Duration::from_secs(10);
        std::thread::scope(|s| {
            let late = s.spawn(|| share(&env(2, 3), &m, || unreachable!(), t));
            std::thread::sleep(Duration::from_millis(50));
            let root = share(&env(0, 3), &m, || Ok(vec![7u8; 128]), t).unwrap();
            assert_eq!(late.join().unwrap().unwrap(), root);
        });
        // A file that is not one of ours: refused, not read as an id.
        std::fs::write(&path, b"hello").unwrap();
        let e = share(&env(1, 3), &m, || unreachable!(), t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a rendezvous file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
