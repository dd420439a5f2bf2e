//! How the harness and the plans time a layer ([`TpTiming`]), and the held start
//! ([`TpStart::Held`]): every GPU's stream waits on one word of host memory while the host
//! enqueues a sample's calls on every GPU, then one write releases them all at once.
//!
//! Timed from a barrier instead (every GPU idle, then the host enqueues), a sample also holds
//! the host's cost of enqueuing the calls (a cuBLASLt call, an NCCL launch, memsets and flag
//! writes: several microseconds each, and their jitter), which at small M is most of a
//! layer's time and differs by pattern: the patterns with more host calls lose. A model's
//! forward pass (or a CUDA graph) enqueues ahead of the GPU, so the device's time from a common
//! start is what a layer costs there; the barrier's figure is its latency when the host waits
//! for each layer. Both are kept: `augur overlap tp --start held|barrier`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::KernelError;

/// How a timed sample starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TpStart {
    /// Every GPU's stream waits on a host word while the host enqueues the sample's calls on
    /// every GPU; one write then releases them together. The device's time from a common
    /// start, without the host's cost of enqueuing.
    #[default]
    Held,
    /// After a barrier (every GPU idle) the host enqueues the calls while the GPUs wait for
    /// them: the layer's latency, the host's launch cost included.
    Barrier,
}

impl TpStart {
    pub fn name(self) -> &'static str {
        match self {
            TpStart::Held => "held",
            TpStart::Barrier => "barrier",
        }
    }

    pub fn parse(s: &str) -> Result<TpStart, KernelError> {
        match s {
            "held" => Ok(TpStart::Held),
            "barrier" => Ok(TpStart::Barrier),
            _ => Err(KernelError::Invalid(format!(
                "start `{s}`: held or barrier"
            ))),
        }
    }
}

/// How a layer is timed: `warmup` calls, then `samples` times a barrier and `batch` calls
/// between two events on every GPU, each sample started as `start` says; the slowest GPU's
/// median.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpTiming {
    pub warmup: usize,
    pub batch: usize,
    pub samples: usize,
    pub start: TpStart,
}

impl Default for TpTiming {
    fn default() -> Self {
        TpTiming {
            warmup: 3,
            batch: 1,
            samples: 15,
            start: TpStart::Held,
        }
    }
}

/// The bytes of host memory the word lives in: one page of its own, so that registering it
/// pins nothing else.
const PAGE: usize = 4096;

/// A group's host word for held starts, and the count of GPUs that have enqueued their part of
/// a sample. Rank 0 registers the page with the driver (portable, mapped) as its GPU opens;
/// each GPU reaches it through its own context's device address.
pub(super) struct Hold {
    page: std::ptr::NonNull<u8>,
    /// The registration's outcome (unset until rank 0 has tried).
    registered: OnceLock<Result<(), String>>,
    arrived: AtomicU64,
}

// SAFETY: the page is only touched through the atomic word and the driver's calls, which are
// thread-safe.
unsafe impl Send for Hold {}
unsafe impl Sync for Hold {}

fn layout() -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(PAGE, PAGE).expect("a page")
}

impl Hold {
    pub(super) fn new() -> Result<Hold, KernelError> {
        // SAFETY: a layout of non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout()) };
        let page = std::ptr::NonNull::new(p)
            .ok_or_else(|| KernelError::Invalid("out of host memory for a page".into()))?;
        Ok(Hold {
            page,
            registered: OnceLock::new(),
            arrived: AtomicU64::new(0),
        })
    }

    fn word(&self) -> &AtomicU32 {
        // SAFETY: the page is PAGE-aligned, zeroed and lives as long as `self`.
        unsafe { &*(self.page.as_ptr() as *const AtomicU32) }
    }

    /// Register the page with the driver (portable: every context sees it; mapped: devices
    /// read it). On rank 0's thread, its context current; the outcome is kept, and said only
    /// where a held start is asked for.
    pub(super) fn register(&self) {
        use cudarc::driver::sys;
        // SAFETY: the page is live, page-aligned and PAGE bytes long; a context is current.
        let r = unsafe {
            sys::cuMemHostRegister_v2(
                self.page.as_ptr() as *mut std::ffi::c_void,
                PAGE,
                sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP,
            )
        };
        let out = crate::cuda::check("cuMemHostRegister", r).map_err(|e| e.to_string());
        // Once per group (rank 0's opening); a second outcome would have nothing to add.
        let _ = self.registered.set(out);
    }

    /// The word's device address in the calling thread's (current) context.
    pub(super) fn device_word(&self) -> Result<u64, String> {
        match self.registered.get() {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(e.clone()),
            None => return Err("the host word was not registered".into()),
        }
        let mut d = 0;
        // SAFETY: the page is registered (mapped); a context is current.
        let r = unsafe {
            cudarc::driver::sys::cuMemHostGetDevicePointer_v2(
                &mut d,
                self.page.as_ptr() as *mut std::ffi::c_void,
                0,
            )
        };
        crate::cuda::check("cuMemHostGetDevicePointer", r).map_err(|e| e.to_string())?;
        Ok(d)
    }

    /// One GPU has enqueued its part of a sample; the count so far.
    pub(super) fn arrive(&self) -> u64 {
        self.arrived.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Wait until `n` parts have been enqueued in all; false after `limit`.
    pub(super) fn wait_arrivals(&self, n: u64, limit: std::time::Duration) -> bool {
        let t0 = std::time::Instant::now();
        while self.arrived.load(Ordering::Acquire) < n {
            if t0.elapsed() >= limit {
                return false;
            }
            std::hint::spin_loop();
        }
        true
    }

    /// Release every stream waiting for a value up to `seq`.
    pub(super) fn release(&self, seq: u32) {
        self.word().fetch_max(seq, Ordering::AcqRel);
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(Ok(())) = self.registered.get() {
            // Dropped after every GPU of the group has finished (their threads joined). It
            // needs no current context; it fails only where the registering context is gone,
            // which has unregistered the page already.
            // SAFETY: the page registered above.
            let _ = unsafe {
                cudarc::driver::sys::cuMemHostUnregister(self.page.as_ptr() as *mut std::ffi::c_void)
            };
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.page.as_ptr(), layout()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_parse_and_the_word_only_grows() {
        for s in [TpStart::Held, TpStart::Barrier] {
            assert_eq!(TpStart::parse(s.name()).unwrap(), s);
        }
        let e = TpStart::parse("eager").unwrap_err().to_string();
        assert!(e.contains("eager") && e.contains("held or barrier"), "{e}");
        let h = Hold::new().unwrap();
        // Unregistered (no GPU here): a held start is refused with why.
        assert!(h.device_word().unwrap_err().contains("not registered"));
        h.release(3);
        h.release(2);
        assert_eq!(h.word().load(Ordering::Acquire), 3);
        assert_eq!(h.arrive(), 1);
        assert_eq!(h.arrive(), 2);
        assert!(h.wait_arrivals(2, std::time::Duration::ZERO));
        assert!(!h.wait_arrivals(3, std::time::Duration::from_millis(1)));
    }
}
