//! The rendezvous: every rank gets the bytes rank 0 made ([`share`]) or its own ([`scatter`]),
//! over TCP to rank 0's address or through a shared file, every step with a deadline.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Meeting, RankEnv};
use crate::AugurError;

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

#[cfg(test)]
mod tests {
    use super::*;

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
