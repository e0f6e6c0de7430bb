//! This machine's floors, measured in the same run as the workloads they bound, at the
//! thread count of the run (`RAYON_NUM_THREADS`; bench parameter `t<threads>`):
//!
//! - `floors/copy`: copy bandwidth, 256 MiB of `f32` copied (read plus written, the byte
//!   count of every bandwidth figure), split into one contiguous piece per thread;
//! - `floors/fma-f32`, `floors/fma-f64`: the peak rate of fused multiply-adds, each
//!   thread running 12 independent chains of one vector each in registers (enough to
//!   keep two multiply-add units busy through their latency), compiled for the widest
//!   vectors the processor has (`shade_autodiff::tensor::simd::wide`, as the tensor
//!   layer's kernels are). Throughput in multiply-adds;
//! - `floors/wake`: what one split costs when the pool's other threads sleep, as they do
//!   between the kernels of a workload: a `rayon::broadcast` of nothing after 1 ms of
//!   work on the calling thread (every worker has gone to sleep by then), timed until
//!   all threads have run it and the caller has the result. On one thread, the call
//!   alone. (On the 2-vCPU machine of `docs/benchmarks.md`, about 80 µs after 50 µs
//!   of work or more, 15 µs after 10 µs, and 3 µs when the caller slept instead of
//!   working: waking a vCPU while the other one runs is what costs.)
//!
//! `cargo xtask bench --peers` divides each workload's counted multiply-adds and bytes
//! (its floor) by these rates: the larger time is the floor a workload's median is
//! divided by (`shade ÷ floor`).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
use shade_autodiff::tensor::simd::wide;
use shade_benches::measure::{threads, threads_label};
use std::hint::black_box;

fn copy_bandwidth(c: &mut Criterion) {
    // 256 MiB of f32, far beyond the last-level cache.
    let n = 64 << 20;
    let src = vec![1.0f32; n];
    let mut dst = vec![0.0f32; n];
    let per = n.div_ceil(threads());
    let mut group = c.benchmark_group("floors");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(
        (2 * n * std::mem::size_of::<f32>()) as u64,
    ));
    group.bench_function(BenchmarkId::new("copy", threads_label()), |b| {
        b.iter(|| {
            dst.par_chunks_mut(per)
                .zip(black_box(&src[..]).par_chunks(per))
                .for_each(|(d, s)| d.copy_from_slice(s));
            black_box(&mut dst);
        })
    });
    group.finish();
}

/// Independent chains per thread.
const CHAINS: usize = 12;

/// Rounds of multiply-adds per chain and call.
const ROUNDS: usize = 1 << 16;

/// `CHAINS` chains of `L` lanes, `ROUNDS` multiply-adds each, in registers; returns their
/// sum so that nothing is optimised away. The chains are named variables (an indexed
/// array of them is vectorised across chains, through the stack).
#[inline(always)]
fn chains<T: num_traits::Float, const L: usize>(b: T, c: T) -> T {
    let one = [T::one(); L];
    let (mut c0, mut c1, mut c2, mut c3, mut c4, mut c5) = (one, one, one, one, one, one);
    let (mut c6, mut c7, mut c8, mut c9, mut c10, mut c11) = (one, one, one, one, one, one);
    for _ in 0..ROUNDS {
        for j in 0..L {
            c0[j] = c0[j].mul_add(b, c);
            c1[j] = c1[j].mul_add(b, c);
            c2[j] = c2[j].mul_add(b, c);
            c3[j] = c3[j].mul_add(b, c);
            c4[j] = c4[j].mul_add(b, c);
            c5[j] = c5[j].mul_add(b, c);
            c6[j] = c6[j].mul_add(b, c);
            c7[j] = c7[j].mul_add(b, c);
            c8[j] = c8[j].mul_add(b, c);
            c9[j] = c9[j].mul_add(b, c);
            c10[j] = c10[j].mul_add(b, c);
            c11[j] = c11[j].mul_add(b, c);
        }
    }
    [c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11]
        .iter()
        .flatten()
        .fold(T::zero(), |s, &x| s + x)
}

/// The multiply-add rate of every thread of the pool at once: one [`chains`] per thread.
fn fma_rate<T: num_traits::Float + Send + Sync, const L: usize>(
    c: &mut Criterion,
    name: &str,
    b: T,
    add: T,
) {
    let t = threads();
    let mut group = c.benchmark_group("floors");
    group.sample_size(10);
    group.throughput(Throughput::Elements((t * CHAINS * L * ROUNDS) as u64));
    group.bench_function(BenchmarkId::new(name, threads_label()), |bench| {
        bench.iter(|| {
            let sums = rayon::broadcast(|_| {
                let (b, add) = (black_box(b), black_box(add));
                // Inlined into `wide`'s wrapper, so compiled for its vectors.
                wide(
                    #[inline(always)]
                    || chains::<T, L>(b, add),
                )
            });
            black_box(sums)
        })
    });
    group.finish();
}

fn wake(c: &mut Criterion) {
    let mut group = c.benchmark_group("floors");
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("wake", threads_label()), |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let busy = std::time::Instant::now();
                while busy.elapsed() < std::time::Duration::from_millis(1) {
                    std::hint::spin_loop();
                }
                let t0 = std::time::Instant::now();
                black_box(rayon::broadcast(|ctx| black_box(ctx.index())));
                total += t0.elapsed();
            }
            total
        })
    });
    group.finish();
}

fn floors(c: &mut Criterion) {
    shade_benches::pool();
    copy_bandwidth(c);
    wake(c);
    // 16 f32 or 8 f64 lanes: one 512-bit vector per chain.
    fma_rate::<f32, 16>(c, "fma-f32", 0.999_999, 1e-7);
    fma_rate::<f64, 8>(c, "fma-f64", 0.999_999_999, 1e-12);
}

criterion_group!(benches, floors);
criterion_main!(benches);
