//! ADBench's GMM objective (Gaussian mixture log-likelihood with a Wishart prior),
//! written once against `Real`: variant `objective` is the `f64` function, `gradient`
//! its reverse-mode gradient through a prepared (warm) `Tape`. Group
//! `peers/gmm_d<d>_k<k>_n<n>`, parameter `t<threads>` (the scalar tape runs on one
//! thread whatever the count): `cargo xtask bench --peers` compares both with JAX and
//! PyTorch on the same data (`objective::gmm_problem`, whose generator the peer scripts
//! reproduce).
//!
//! Work: per data point and component, `d(d+1)/2` multiply-adds for `Q (x - μ)`, `d`
//! for its squared norm, one `exp` in the log-sum-exp: for d=10, k=25, n=1000 about
//! 2.1 M flops and 25 k `exp`; for d=64, k=200, n=10⁴ about 8.6 G flops and 2 M `exp`.

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use shade_autodiff::Const;
use shade_autodiff::scalar::{Tape, shade_fn};
use shade_benches::measure::threads_label;
use std::hint::black_box;

#[path = "gmm/objective.rs"]
#[allow(dead_code, unreachable_pub)]
mod objective;
use objective::{GmmData, gmm_objective, gmm_problem};

shade_fn!(Gmm = gmm_objective(&[S], &GmmData));

/// Sizes (d, k, n) whose gradient the tape computes.
const SIZES: &[(usize, usize, usize)] = &[(10, 25, 1000)];

/// ADBench's large size. Its objective is measured; its gradient is not: the run-time
/// tape records every product of `Q (x - μ)` and would need about 20 GB at this size.
///
/// Hook for the compile-time engine (which needs no tape): add its gradient here as
/// variant `gradient` of group `peers/gmm_d64_k200_n10000`; `cargo xtask bench --peers`
/// shows "not measured" for a variant without an estimate and picks this one up once
/// it exists.
const LARGE: (usize, usize, usize) = (64, 200, 10_000);

fn gmm(c: &mut Criterion) {
    let t = threads_label();
    for &(d, k, n) in SIZES {
        let (params, data) = gmm_problem(d, k, n, 1);
        let mut group = c.benchmark_group(format!("peers/gmm_d{d}_k{k}_n{n}"));
        group.sample_size(20);
        group.bench_with_input(BenchmarkId::new("objective", &t), &(), |b, ()| {
            b.iter(|| gmm_objective(black_box(&params[..]), black_box(&data)))
        });
        let mut tape = Tape::new();
        let mut g = vec![0.0; params.len()];
        tape.gradient_into(&Gmm, &params, (Const(&data),), &mut g)
            .unwrap();
        group.bench_with_input(BenchmarkId::new("gradient", &t), &(), |b, ()| {
            b.iter(|| {
                tape.gradient_into(&Gmm, black_box(&params), (Const(&data),), &mut g)
                    .unwrap();
                black_box(&g);
            })
        });
        group.finish();
    }
    let (d, k, n) = LARGE;
    let mut group = c.benchmark_group(format!("peers/gmm_d{d}_k{k}_n{n}"));
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    let mut problem = None;
    group.bench_with_input(BenchmarkId::new("objective", &t), &(), |b, ()| {
        let (params, data) = problem.get_or_insert_with(|| gmm_problem(d, k, n, 1));
        b.iter(|| gmm_objective(black_box(&params[..]), black_box(&*data)))
    });
    group.finish();
}

criterion_group!(benches, gmm);
criterion_main!(benches);
