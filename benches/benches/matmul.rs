//! Dense products of the tensor layer on one thread and on two, interleaved in the
//! same run: `sum(X · W)` and its gradient with respect to `W` (forward `X · W`,
//! reverse `Xᵀ · G`), f32, for Cora's dense features (2708 × 1433 times 1433 × 16)
//! Cora's GAT input layer (× 1433 × 64), a hidden layer of a 20k-node graph (20000 × 128
//! times 128 × 64), the two layers of the 100k-node GCN step (100000 × 128 × 64 and
//! 100000 × 64 × 16) and the policy model's products (100 × 50 × 50, 100 × 50 × 100).
//!
//! Floor: `2 m k n` multiply-adds per step (one product each way): 124 M for Cora,
//! 328 M for the hidden layer. The 1-thread run is the single-threaded ndarray
//! (`matrixmultiply`) product the tensor layer used before products were split over
//! rayon's threads, so `1-thread / 2-threads` is the gain of the split.
//!
//! `<shape>/matrixmultiply` is the baseline in the same run: the two products of a step
//! (`X · W` and `Xᵀ · G`) by ndarray's `general_mat_mul` (`matrixmultiply`, one thread,
//! packing both operands on every call), which the tensor layer used for these shapes
//! before its narrow-product kernel; `<shape>/<t>-thread ÷ <shape>/matrixmultiply` is
//! the gain (the tape's own work, a few allocations and the sum, is on the
//! candidate's side only).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ndarray::Array2;
use shade_autodiff::tensor::{self, TapeBuffers};
use shade_autodiff::{Const, Duplicated};
use shade_benches::random_dense;
use std::hint::black_box;

fn matmul_threads(c: &mut Criterion) {
    let pools: Vec<_> = [1, 2]
        .into_iter()
        .map(|n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .expect("thread pool")
        })
        .collect();
    let mut group = c.benchmark_group("matmul_threads");
    group.sample_size(20);
    for (name, m, k, n) in [
        ("cora-dense", 2708, 1433, 16),
        ("cora-gat", 2708, 1433, 64),
        ("hidden-20k", 20_000, 128, 64),
        ("gcn-100k-in", 100_000, 128, 64),
        ("gcn-100k-out", 100_000, 64, 16),
        ("policy-50", 100, 50, 50),
        ("policy-100", 100, 50, 100),
    ] {
        let x = random_dense(m, k, 1);
        let w = random_dense(k, n, 2) * 0.05;
        let mut dw = Array2::zeros((k, n));
        let mut bufs = TapeBuffers::new();
        group.throughput(Throughput::Elements((2 * m * k * n) as u64));
        let g = Array2::<f32>::ones((m, n));
        let (mut y, mut gw) = (Array2::<f32>::zeros((m, n)), Array2::<f32>::zeros((k, n)));
        group.bench_function(format!("{name}/matrixmultiply"), |b| {
            b.iter(|| {
                ndarray::linalg::general_mat_mul(1.0, &x, &w, 0.0, &mut y);
                ndarray::linalg::general_mat_mul(1.0, &x.t(), &g, 0.0, &mut gw);
                black_box((&y, &gw));
            })
        });
        for (threads, pool) in [1, 2].into_iter().zip(&pools) {
            group.bench_function(format!("{name}/{threads}-thread"), |b| {
                b.iter(|| {
                    pool.install(|| {
                        let y = tensor::gradient(
                            &mut bufs,
                            |t, (w, x)| {
                                let h = t.matmul(x, w)?;
                                t.sum(h)
                            },
                            (Duplicated(&w, &mut dw), Const(&x)),
                        )
                        .unwrap();
                        black_box(y)
                    })
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, matmul_threads);
criterion_main!(benches);
