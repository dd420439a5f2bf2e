//! Host work beside the calling thread: a plan checks and samples a host matrix on a rayon
//! worker while it uploads the matrix itself (the upload stays on the calling thread, whose GPU
//! handles are not `Send`).
//!
//! `rayon::in_place_scope` does this safely but costs 2-40 us at its end even when the work was
//! long done (its latch), which is more than the sample it hides; here the calling thread reads
//! one flag.

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

/// Where the worker leaves its result.
struct Slot<A> {
    done: AtomicBool,
    value: UnsafeCell<Option<std::thread::Result<A>>>,
}

/// Waits for the worker when dropped: `beside` neither returns nor unwinds while `work` may
/// still read what it borrows.
struct Wait<'a>(&'a AtomicBool);

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        while !self.0.load(Ordering::Acquire) {
            // On a worker of the pool, run its pending jobs (ours may be one of them);
            // elsewhere let the worker run.
            if rayon::yield_now().is_none() {
                std::thread::yield_now();
            }
        }
    }
}

/// Run `work` on a rayon worker and `main` on this thread at the same time; `work`'s result (or
/// its panic) and `main`'s. `work` may borrow from the caller's stack.
pub(crate) fn beside<A: Send, B>(
    work: impl FnOnce() -> A + Send,
    main: impl FnOnce() -> B,
) -> (std::thread::Result<A>, B) {
    let slot = Slot {
        done: AtomicBool::new(false),
        value: UnsafeCell::new(None),
    };
    let at = &slot as *const Slot<A> as usize;
    let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
        let r = catch_unwind(AssertUnwindSafe(work));
        // SAFETY: `slot` lives until `done` is set (the Wait below); only this job writes
        // `value`, and the caller reads it only after seeing `done`.
        let slot = unsafe { &*(at as *const Slot<A>) };
        unsafe { *slot.value.get() = Some(r) };
        slot.done.store(true, Ordering::Release);
    });
    // SAFETY: the job borrows `work`'s captures and `slot`, all of which outlive it: this
    // function does not return or unwind before the job has set `done` (its last access), since
    // `wait` is dropped on every path out of here. The job catches its own panics.
    let job: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(job) };
    rayon::spawn(job);
    let wait = Wait(&slot.done);
    let b = main();
    drop(wait);
    // SAFETY: `done` was seen (Acquire): the job wrote `value` and no longer touches it.
    let a = unsafe { (*slot.value.get()).take() }.expect("the job left its result");
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_run_and_borrow() {
        let data: Vec<u64> = (0..100_000).collect();
        let (a, b) = beside(|| data.iter().sum::<u64>(), || data.len());
        assert_eq!((a.unwrap(), b), (4_999_950_000, 100_000));
    }

    #[test]
    fn a_panic_in_the_work_comes_back_as_an_error() {
        let (a, b) = beside(|| -> u32 { panic!("boom") }, || 7);
        assert!(a.is_err());
        assert_eq!(b, 7);
    }

    #[test]
    fn a_panic_in_main_waits_for_the_work_first() {
        let flag = AtomicBool::new(false);
        let r = catch_unwind(AssertUnwindSafe(|| {
            beside(
                || {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    flag.store(true, Ordering::SeqCst);
                },
                || panic!("main"),
            )
        }));
        assert!(r.is_err());
        assert!(
            flag.load(Ordering::SeqCst),
            "unwound before the work had finished"
        );
    }

    #[test]
    fn from_inside_a_one_thread_pool_it_does_not_deadlock() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let (a, b) = pool.install(|| beside(|| 1 + 1, || 3));
        assert_eq!((a.unwrap(), b), (2, 3));
    }
}
