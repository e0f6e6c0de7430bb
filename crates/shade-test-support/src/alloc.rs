//! A global allocator that counts the allocations of the calling thread, on request.
//!
//! A Rust test binary has one global allocator, and the test harness runs the binary's
//! tests on several threads at once. A process-wide counter therefore sees the
//! allocations of whatever other test runs at the same time, and an "allocates nothing"
//! assertion becomes flaky as soon as a binary holds more than one test. This allocator
//! counts only on a thread that asked for it ([`count_allocations`]), so a test measures
//! its own calls and nothing else.
//!
//! The price of that robustness: work that the measured code hands to other threads
//! (rayon's pool) is not counted. Allocation tests therefore use inputs below the
//! parallel thresholds of the kernels they call, so that every allocation happens on
//! the calling thread. A test thread is not a rayon worker, so it never runs another
//! test's jobs while it waits.
//!
//! Declare it once in the test binary (its `main.rs`):
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: shade_test_support::alloc::CountingAlloc =
//!     shade_test_support::alloc::CountingAlloc;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// `Some(n)` while the thread counts: `n` allocations so far; `None` otherwise.
    static COUNT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The system allocator, counting `alloc` and `realloc` calls on threads inside
/// [`count_allocations`]. Without such a call it only forwards.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

fn note() {
    // `try_with`: during thread teardown the slot may be gone; then nothing is counted.
    let _ = COUNT.try_with(|c| c.set(c.get().map(|n| n + 1)));
}

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds the
// `GlobalAlloc` contract; counting touches only a const-initialised thread-local `Cell`
// (no allocation, no destructor), so it cannot re-enter the allocator.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract for `alloc` is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract for `alloc_zeroed` is the system allocator's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: `ptr` came from `System` with `layout`; the caller's contract holds.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` and returns its result with the number of allocations (and reallocations)
/// it made on this thread. Nested calls count for both: the outer count includes the
/// inner one.
///
/// Counts are only meaningful when the binary's global allocator is [`CountingAlloc`];
/// with another allocator the count is always 0, so a test asserts that a cold call
/// allocates (count > 0) before it asserts that a warm one does not.
pub fn count_allocations<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let outer = COUNT.with(|c| c.replace(Some(0)));
    let r = f();
    let n = COUNT.with(|c| c.get()).unwrap_or(0);
    COUNT.with(|c| c.set(outer.map(|o| o + n)));
    (r, n)
}

/// The number of allocations `f` made on this thread (see [`count_allocations`]).
pub fn allocations(f: impl FnOnce()) -> usize {
    count_allocations(f).1
}
