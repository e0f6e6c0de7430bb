//! Sparse versus dense Jacobian through `shade-interface`: a tridiagonal function
//! `yᵢ = x_{i-1} xᵢ + sin(x_{i+1}) · p` at n = 100 and 1000, its Jacobian by dense
//! chunked forward mode (`baseline`: n / 8 evaluations with 8 tangents) and by
//! `AutoSparse` over the same forward backend (sparsity detected once at preparation,
//! 3 colours: 3 compressed pushforwards per call).
//!
//! Work: one evaluation is ~4n flops; dense forward does n/8 of them with 8 tangents
//! (4n² flops in all), sparse 3 with one (12n), plus the scatter of 3n - 2 entries.

use criterion::{Criterion, criterion_group, criterion_main};
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::{
    AutoShade, AutoSparse, Constant, DerivativeMatrix, prepare_jacobian_inplace,
};
use std::hint::black_box;

fn band<S: Real>(y: &mut [S], x: &[S], p: &[f64]) {
    let n = x.len();
    for i in 0..n {
        let mut v = x[i] * x[i];
        if i > 0 {
            v = x[i - 1] * x[i];
        }
        if i + 1 < n {
            v += x[i + 1].sin() * p[0];
        }
        y[i] = v;
    }
}

shade_fn!(Band = band(&mut [S], &[S], &[f64]));

fn bench(c: &mut Criterion) {
    let p = [1.5];
    for n in [100usize, 1000] {
        let x: Vec<f64> = (0..n).map(|i| 0.01 * i as f64 - 0.5).collect();
        let y0 = vec![0.0; n];
        let mut jac = vec![0.0; n * n];
        let mut group = c.benchmark_group(format!("jacobian/sparse-vs-dense/n{n}"));
        let mut dense =
            prepare_jacobian_inplace(Band, &y0, &AutoShade::FORWARD, &x, (Constant(&p[..]),))
                .unwrap();
        dense
            .jacobian_into(&x, (Constant(&p[..]),), &mut jac)
            .unwrap();
        let reference = jac.clone();
        group.bench_function("baseline", |b| {
            b.iter(|| {
                dense
                    .jacobian_into(black_box(&x), (Constant(&p[..]),), &mut jac)
                    .unwrap();
                black_box(&jac);
            })
        });
        let backend = AutoSparse {
            inner: AutoShade::FORWARD,
        };
        let mut sparse =
            prepare_jacobian_inplace(Band, &y0, &backend, &x, (Constant(&p[..]),)).unwrap();
        // The sparse Jacobian is a `CsMat` of the detected pattern.
        let mut sjac = sparse.sparsity().clone();
        sparse
            .jacobian_into(&x, (Constant(&p[..]),), &mut sjac)
            .unwrap();
        assert_eq!(
            sjac.to_row_major(),
            reference,
            "sparse and dense Jacobians differ"
        );
        group.bench_function("autosparse-forward", |b| {
            b.iter(|| {
                sparse
                    .jacobian_into(black_box(&x), (Constant(&p[..]),), &mut sjac)
                    .unwrap();
                black_box(&sjac);
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
