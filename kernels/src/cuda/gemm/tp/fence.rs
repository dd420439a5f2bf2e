//! The GPUs' threads meeting on the host, bounded: a [`Fence`] returns an error rather than wait
//! for good when a peer's thread does not come (it failed, or it is itself blocked), as every
//! other wait of the harness does. `push-reduce` meets on one twice a call on more than one GPU
//! (rs/copies.rs; `AUGUR_TP_PR_FENCE=0` leaves it out).

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A reusable barrier of `n` threads whose wait gives up after a limit.
pub(super) struct Fence {
    n: usize,
    /// (threads arrived at the current meeting, meetings completed).
    state: Mutex<(usize, u64)>,
    met: Condvar,
}

impl Fence {
    pub(super) fn new(n: usize) -> Fence {
        Fence {
            n,
            state: Mutex::new((0, 0)),
            met: Condvar::new(),
        }
    }

    /// Wait until all `n` threads have arrived at this meeting (true), or `limit` has passed
    /// (false: this thread leaves the meeting, so that one arriving later is not released by
    /// a count that includes it).
    pub(super) fn wait(&self, limit: Duration) -> bool {
        let t0 = Instant::now();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let meeting = st.1;
        st.0 += 1;
        if st.0 == self.n {
            *st = (0, meeting.wrapping_add(1));
            self.met.notify_all();
            return true;
        }
        loop {
            let left = limit.saturating_sub(t0.elapsed());
            if left.is_zero() {
                st.0 -= 1;
                return false;
            }
            st = self
                .met
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            if st.1 != meeting {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn threads_meet_again_and_again() {
        let f = Fence::new(3);
        let passed = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..3 {
                let (f, passed) = (&f, &passed);
                s.spawn(move || {
                    for round in 0..50 {
                        if (round + t) % 7 == 0 {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        assert!(f.wait(Duration::from_secs(20)), "round {round}");
                        passed.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(passed.load(Ordering::Relaxed), 150);
    }

    #[test]
    fn a_missing_thread_ends_the_wait_and_a_late_one_is_not_let_through() {
        let f = Fence::new(2);
        let t0 = Instant::now();
        assert!(!f.wait(Duration::from_millis(50)));
        assert!(t0.elapsed() >= Duration::from_millis(50));
        // The first left the meeting: the late one waits alone, and gives up too.
        assert!(!f.wait(Duration::from_millis(20)));
        // Both at the next meeting pass.
        std::thread::scope(|s| {
            let h = s.spawn(|| f.wait(Duration::from_secs(20)));
            assert!(f.wait(Duration::from_secs(20)));
            assert!(h.join().unwrap());
        });
    }
}
