//! The small-op rule: when a kernel hands its work to rayon's threads.
//!
//! A hand-off to rayon's pool wakes a worker (a futex wake and a context switch, tens of
//! microseconds on a loaded machine) and joins it again, also on one thread: the
//! calling thread is not one of rayon's workers. Below a few hundred thousand
//! multiply-adds that costs more than the second core gains (the policy model's
//! gradient, ~2.7 M multiply-adds in some twenty kernels, ran twice as slow on two
//! threads as on one with the threshold at 2¹⁵). Every parallel entry point of the
//! tensor layer asks [`split`] with its work and its threshold.

/// Multiply-adds (or elements) from which a kernel splits over rayon's threads: a few
/// hundred µs of work on one core, where the saved half is several times a hand-off.
/// Measured with `cargo xtask bench --peers` (each process pinned to its cores): at
/// `2^18` the policy model's gradient took 358 µs on two threads against 176 µs on one,
/// and Cora's GCN step 1.67 ms against 1.22 ms (its 2708 × 16 × 7 product and the
/// sparse feature product split); at `2^20`, 186 µs and 1.22 ms, no slower than one.
pub(crate) const SPLIT_MIN: usize = 1 << 20;

/// Whether a kernel of `work` multiply-adds (or elements) runs on rayon's threads: at
/// least `min` of work and more than one thread in the current pool
/// (`rayon::current_num_threads()`, so `RAYON_NUM_THREADS=1` or a one-thread pool
/// keeps everything on the calling thread).
#[inline]
pub(crate) fn split(work: usize, min: usize) -> bool {
    work >= min && rayon::current_num_threads() > 1
}

/// Work (multiply-adds) from which a kernel called on one of rayon's own threads splits
/// ([`split_here`]): a step run inside the pool (`shade_gnn`'s training step) hands its
/// halves to the other worker by work stealing, without the calling thread's wake-up
/// and sleep, and a half no one has stolen yet is taken back by the caller, so a split
/// costs a few hundred nanoseconds instead of a hand-off.
pub(crate) const SPLIT_MIN_IN_POOL: usize = 1 << 16;

/// Whether the calling thread is one of the current pool's workers.
#[inline]
pub(crate) fn in_pool() -> bool {
    rayon::current_thread_index().is_some()
}

/// [`split`] with the threshold of where the kernel runs: `min` on a thread outside
/// the pool (the hand-off to rayon), [`SPLIT_MIN_IN_POOL`] on one of its workers.
#[inline]
pub(crate) fn split_here(work: usize, min: usize) -> bool {
    let threads = rayon::current_num_threads();
    threads > 1
        && work
            >= if in_pool() {
                SPLIT_MIN_IN_POOL.min(min)
            } else {
                min
            }
}
