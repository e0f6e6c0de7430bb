//! The small-op rule: when a kernel hands its work to rayon's threads.
//!
//! A hand-off to rayon's pool wakes a worker (a futex wake and a context switch, tens of
//! microseconds on a loaded machine) and joins it again, also on one thread: the
//! calling thread is not one of rayon's workers. Below a few hundred thousand
//! multiply-adds that costs more than the second core gains (the policy model's
//! gradient, ~2.7 M multiply-adds in some twenty kernels, ran twice as slow on two
//! threads as on one with the threshold at 2¹⁵). Every parallel entry point of the
//! tensor layer asks [`split`] with its work and its threshold.
//!
//! A program whose calling thread is one of the pool's workers (rayon's
//! `ThreadPoolBuilder::use_current_thread`, as the examples' `--threads` and the
//! benches build it) pays one wake-up per split instead of three (its own sleep and
//! wake, and the first worker's): Cora's GAT step with dense features, 15.3 ms on one
//! thread, took 14.3 ms on two threads from outside the pool and 10.1 ms with the
//! calling thread in it. Splitting smaller kernels there does not pay either: with the
//! threshold at 2¹⁶ or 2¹⁸ for a caller in the pool, the policy gradient and Cora's
//! GCN step were slower on two threads than on one (`small_profile`, min of 5 runs).
//!
//! Nor does a helper that spins: a rayon job on the second thread calling
//! `rayon::yield_now` in a loop for the length of each gradient (and 1 ms after, so
//! that the next call finds it awake), with the thresholds lowered 32-fold while it
//! spins, so that each split is a push and a steal, not a wake-up. The policy
//! gradient over 20,000 calls took 3.03–3.34 s on two threads against 3.04–3.31 s on
//! one (`small_profile policy 20000`), the two adjoints of each product on the two
//! threads included: its kernels are 1–10 µs, and the serial rules between them
//! (allocation, zeroing, the bias sums) are a third of the time.
//!
//! Measured again on this machine (2 vCPUs under a hypervisor): two independent
//! one-thread processes of vectorised arithmetic each ran at 0.82× the speed of one
//! alone (so 1.65× is the most two threads give such work here), and one `rayon::join`
//! of the two adjoints of the policy model's output layer (`G·w` and `Gᵀ·x`, 500 k
//! multiply-adds each) per gradient, the second thread asleep, made the gradient
//! slower on two threads (124.8 → 142.5 µs, min of 5): a wake-up costs more than the
//! 12 µs it saves. With a helper woken at the start of each gradient and spinning to
//! 500 µs after it, joining the adjoints of both layers of 250 k and 500 k, the gradient
//! went from 120.4 to 113.9 µs (min of 9), and no lower with the split thresholds
//! lowered 8- to 32-fold while it spins: a core kept busy for 5 %, not kept.
//!
//! Nor a hand-off of our own without rayon (one slot, two atomic stores and loads, a
//! helper thread spinning on it; each dense product of the policy gradient of 32 k
//! multiply-adds or more halved by rows, or by panels of columns, the same bits). The
//! halves ran together in 6.2 µs a product against 10.2 µs one after the other on one
//! core (1.65×, timed inside the join, the two modes interleaved), but the rest of the
//! gradient slowed by nearly as much (about 60 → 78 µs, the same helper spinning in both
//! modes): the kernels after a product read
//! the half the helper wrote from the other core's cache. The gradient went from 113 to
//! 104 µs at best (`small_profile policy`, min of 7). Pure register arithmetic halved
//! over the same hand-off ran 1.85–1.93× faster. What would pay is a split that keeps
//! each core on its own rows from one kernel to the next, not a split per kernel; the
//! activations and their adjoints cut at the same row as the products gave no more
//! (108 µs), and a spinning helper has outliers of its own (means of 145–167 µs
//! against 113 µs without it): when the host takes the helper's core while it holds a
//! half, the caller waits.
//!
//! Nor parallelism across kernels (measured on an Intel Xeon with AVX-512, 2 vCPUs):
//! the adjoints of leaves (`dW = Gᵀ·X` of each dense and graph layer, `(Xᵀ·G)ᵀ` of a
//! sparse feature product) are read by nothing before a sweep ends, so the sweep can hand
//! each to the pool as a task and go on, the task holding `G` and `X` (`Arc`) and the
//! leaf's adjoint lent to it (the bits of the one-thread sweep). With the helper asleep,
//! each hand-off's wake-up cost the caller more than the task (policy gradient, two
//! threads, 113 → 140 µs); with one worker kept awake taking tasks through
//! `rayon::yield_now` while sweeps run, the helper did all of the `Gᵀ·X` products (10 µs
//! a gradient) and the caller's own kernels slowed by as much (its `G·W` products 31 →
//! 36 µs: the core beside a busy one runs slower), 113 → 108–113 µs; Cora's GCN step
//! 539 → 516 µs, and 501 µs with the thresholds below lowered to `2^17` (the policy
//! gradient then 122 µs). Not kept: 4 % on one workload for a thread spinning beside
//! every sweep.
//!
//! Nor, for Cora's GAT (kernels of 100–300 µs: the attention's coordinate-list product
//! and its adjoints over 13,264 edges × 64 columns), each thread on output rows of its
//! own (walking every pair, skipping the others', the same bits): through rayon, the
//! step with dense features went from 8.37 to 8.62–8.83 ms on two threads (min of 4).
//! A probe of rayon's hand-off here (a `rayon::join` after 1 ms of serial work) saw
//! the worker start 42 µs after the split, against 0.2 µs for a thread spinning on an
//! atomic. With such a spinner (a rayon job polling a one-slot hand-off and
//! `rayon::yield_now` while tapes run, so that the products' jobs still run) taking
//! half of every split from 2^15 elements, the GAT step went from 8.33 to 7.83 ms, GAT
//! with sparse features from 3.41 to 3.28 ms, and Cora's GCN step from 458 to 492 µs
//! (min of 5–6, `small_profile`, pinned): a few per cent where kernels are long, a loss
//! where they are short, for a core kept spinning. Not kept.

//!
//! Where a wake-up's time goes on this machine (2 vCPUs under a hypervisor; a throwaway
//! probe, a `rayon::join` whose second half a sleeping worker must steal, after busy
//! work on the calling thread; medians of 300): the worker started 42 µs after the
//! split after 1 ms of work, 24 µs after 100 µs. Pinning each of rayon's threads to its
//! own CPU changed nothing (42 and 24 µs); keeping the worker's vCPU from halting (a
//! `SCHED_IDLE` thread spinning on it) brought both to 20 µs, the cost of the wake-up's
//! interrupt between vCPUs; the halted vCPU's own wake-up is the rest. Only a worker
//! that polls memory instead of sleeping in the kernel avoids both (0.2 µs, above), at
//! the price of a core kept spinning. `cargo xtask bench --peers` measures the
//! hand-off in the same run as the workloads (`floors/wake`: a `rayon::broadcast` after
//! 1 ms of work, about 80 µs here, 3 µs when the caller slept instead of working).

/// Elements (or multiply-adds of a row-wise kernel) from which an elementwise or
/// row-wise kernel splits over rayon's threads, in [`pieces`] (products split from
/// [`PRODUCT_SPLIT_MIN`]): a few hundred µs of work on one core, where the saved half
/// is several times a hand-off. Lower does not pay: the maps and gathers of GAT's
/// attention over Cora (13,264 edges × 8 heads, kernels of 10–30 µs) split from `2^17`
/// or `2^15` elements made its step slower on two threads (`small_profile
/// gat-step-dense`, 8.77 → 9.10 and 9.15 ms, min of 4).
/// Measured with `cargo xtask bench --peers` (each process pinned to its cores): at
/// `2^18` the policy model's gradient took 358 µs on two threads against 176 µs on one,
/// and Cora's GCN step 1.67 ms against 1.22 ms (its 2708 × 16 × 7 product and the
/// sparse feature product split); at `2^20`, 186 µs and 1.22 ms, no slower than one.
pub(crate) const SPLIT_MIN: usize = 1 << 20;

/// Multiply-adds from which a product (dense or sparse) splits over rayon's threads:
/// four times [`SPLIT_MIN`]. A product runs at several multiply-adds a cycle, and the
/// workloads whose products sit between `2^20` and `2^22` (Cora's GAT with sparse
/// features: `X·W` and `Xᵀ·G` of 3.1 M, the second layer's 1.2 M) run their layers'
/// other kernels between two products, so that the worker is asleep at each: the futex
/// wake-up (an interrupt to an idle vCPU here, a few per cent of the caller's time in
/// `perf`) and the worker's start cost more than the half saved. Measured with
/// `small_profile gat-step 300` pinned as the peers bench pins (min of 4, interleaved):
/// one thread 3.41 ms; two threads 3.53 ms with products split from `2^20`, 3.38 ms
/// from `2^22`.
pub(crate) const PRODUCT_SPLIT_MIN: usize = 4 * SPLIT_MIN;

/// Whether a kernel of `work` multiply-adds (or elements) runs on rayon's threads: at
/// least `min` of work and more than one thread in the current pool
/// (`rayon::current_num_threads()`, so `RAYON_NUM_THREADS=1` or a one-thread pool
/// keeps everything on the calling thread).
#[inline]
pub(crate) fn split(work: usize, min: usize) -> bool {
    work >= min && rayon::current_num_threads() > 1
}

/// Runs `f(offset, piece)` over `out` cut into one contiguous piece per thread of the
/// current pool (each piece's length a multiple of `unit` but the last; `offset` is
/// the piece's first element), when [`split`] says `work` against `min` is worth it;
/// else once over the whole of `out`, `f(0, out)`. The pieces are disjoint, so a
/// kernel that writes each element from its own inputs gives the same bits on any
/// number of threads.
pub(crate) fn pieces<E: Send>(
    out: &mut [E],
    unit: usize,
    work: usize,
    min: usize,
    f: impl Fn(usize, &mut [E]) + Sync,
) {
    let threads = rayon::current_num_threads();
    let unit = unit.max(1);
    if !split(work, min) || out.len() < 2 * unit {
        f(0, out);
        return;
    }
    use rayon::prelude::*;
    let per = out.len().div_ceil(unit).div_ceil(threads) * unit;
    out.par_chunks_mut(per)
        .enumerate()
        .for_each(|(i, piece)| f(i * per, piece));
}

/// A rayon pool of `threads` threads, for tests that compare results across thread counts.
#[cfg(test)]
pub(crate) fn test_pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool")
}
