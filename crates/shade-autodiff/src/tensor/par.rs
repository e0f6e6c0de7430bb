//! The small-op rule: when a kernel hands its work to rayon's threads.
//!
//! A hand-off to rayon's pool wakes a worker (a futex wake and a context switch, tens of
//! microseconds on a loaded machine) and joins it again, also on one thread: the
//! calling thread is not one of rayon's workers. Below a few hundred thousand
//! multiply-adds that costs more than the second core gains (the policy model's
//! gradient, ~2.7 M multiply-adds in some twenty kernels, ran twice as slow on two
//! threads as on one with the threshold at 2¹⁵). Every parallel entry point of the
//! tensor layer asks [`split`] with its work and its threshold.

/// Multiply-adds (or elements) from which a kernel splits over rayon's threads: about
/// 100 µs of sparse-product work on one core, where the saved half is several times a
/// hand-off.
pub(crate) const SPLIT_MIN: usize = 1 << 18;

/// Whether a kernel of `work` multiply-adds (or elements) runs on rayon's threads: at
/// least `min` of work and more than one thread in the current pool
/// (`rayon::current_num_threads()`, so `RAYON_NUM_THREADS=1` or a one-thread pool
/// keeps everything on the calling thread).
#[inline]
pub(crate) fn split(work: usize, min: usize) -> bool {
    work >= min && rayon::current_num_threads() > 1
}
