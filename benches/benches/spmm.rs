//! Sparse × dense: CSR 100k × 100k with 1M nonzeros (10 random columns per row,
//! `peer_data::csr`, the matrix the peer scripts build) times a 100k × 64 f32 matrix,
//! forward (`A · X`) and the reverse rule's product (`Aᵀ · G`, through the cached
//! transpose), against this machine's copy bandwidth (`floor-copy`, same byte count).
//! Group `peers/spmm`, parameter `t<threads>`: `cargo xtask bench --peers` compares
//! `forward` with torch.sparse and SciPy.
//!
//! Bytes (the floor): indices (8 B) + values (4 B) per nonzero, one dense row (64 × 4 B)
//! read per nonzero, the output (100k × 64 × 4 B) written: 294 MB; 64 M multiply-adds.

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use ndarray::Array2;
use shade_benches::measure::threads_label;
use shade_benches::{peer_data, spmm_bytes};
use std::hint::black_box;

fn spmm(c: &mut Criterion) {
    shade_benches::pool();
    let (n, per_row, f) = (100_000, 10, 64);
    let a = peer_data::csr(n, n, per_row, 42);
    let x = Array2::from_shape_vec((n, f), peer_data::dense_f32(n, f, 7)).expect("shape");
    let mut out = Array2::<f32>::zeros((n, f));
    a.prepare_transpose();
    let bytes = spmm_bytes(&a, f);
    let t = threads_label();
    let mut group = c.benchmark_group("peers/spmm");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_with_input(BenchmarkId::new("forward", &t), &(), |b, ()| {
        b.iter(|| {
            a.mul_dense_into(black_box(x.view()), out.view_mut())
                .unwrap();
            black_box(&mut out);
        })
    });
    group.bench_with_input(BenchmarkId::new("reverse", &t), &(), |b, ()| {
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
    group.bench_with_input(BenchmarkId::new("floor-copy", &t), &(), |b, ()| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        })
    });
    group.finish();
}

criterion_group!(benches, spmm);
criterion_main!(benches);
