//! Sparse × dense: CSR 100k × 100k with 1M random nonzeros times a 100k × 64 f32
//! matrix, forward (`A · X`) and the reverse rule's product (`Aᵀ · G`, through the
//! cached transpose), against this machine's copy bandwidth (`floor-copy`, same byte
//! count). Bytes: indices + values + one dense row per nonzero + output.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ndarray::Array2;
use shade_benches::{random_csr, random_dense, spmm_bytes};
use std::hint::black_box;

fn spmm(c: &mut Criterion) {
    let (n, nnz, f) = (100_000, 1_000_000, 64);
    let a = random_csr(n, n, nnz, 42);
    let x = random_dense(n, f, 7);
    let mut out = Array2::<f32>::zeros((n, f));
    a.prepare_transpose();
    let bytes = spmm_bytes(&a, f);
    let mut group = c.benchmark_group("spmm");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("forward", |b| {
        b.iter(|| {
            a.mul_dense_into(black_box(x.view()), out.view_mut())
                .unwrap();
            black_box(&mut out);
        })
    });
    group.bench_function("reverse", |b| {
        b.iter(|| {
            a.transpose_mul_dense_into(black_box(x.view()), out.view_mut())
                .unwrap();
            black_box(&mut out);
        })
    });
    // A copy moving the same number of bytes (half read, half written).
    let len = (bytes / 2 / 4) as usize;
    let src = vec![1.0f32; len];
    let mut dst = vec![0.0f32; len];
    group.bench_function("floor-copy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        })
    });
    group.finish();
}

criterion_group!(benches, spmm);
criterion_main!(benches);
