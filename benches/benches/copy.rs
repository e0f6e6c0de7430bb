//! This machine's copy bandwidth: the floor that memory-bound kernels (sparse × dense,
//! segment reductions) are compared against, measured in the same run as they are.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn copy_bandwidth(c: &mut Criterion) {
    // 256 MiB of f32, far beyond the last-level cache.
    let n = 64 << 20;
    let src = vec![1.0f32; n];
    let mut dst = vec![0.0f32; n];
    let mut group = c.benchmark_group("memory");
    group.sample_size(10);
    // Bytes read plus bytes written, the count used for every bandwidth figure.
    group.throughput(Throughput::Bytes(
        (2 * n * std::mem::size_of::<f32>()) as u64,
    ));
    group.bench_function("floor-copy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        })
    });
    group.finish();
}

criterion_group!(benches, copy_bandwidth);
criterion_main!(benches);
