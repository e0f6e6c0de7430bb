//! GradBench's GMM objective (Gaussian mixture log posterior with a Wishart prior, the
//! eval's corrected form of ADBench's), `benches/src/gradbench/gmm.rs`, with both of
//! shade's engines. Group `peers/gmm_d<d>_k<k>_n<n>`, parameter `t<threads>` (both
//! engines run on one thread whatever the count):
//!
//! - `objective`, `gradient`: the tape's form (`gmm_objective_tape`) at `f64`, and its
//!   reverse-mode gradient through a prepared (warm) `Tape`;
//! - `compiled-objective`, `compiled-gradient`: the compile-time form (`gmm_objective`,
//!   a plain `f64` function) and its generated derivative (`d_gmm_objective`).
//!
//! `cargo xtask bench --peers` compares them with JAX and PyTorch on the same data
//! (`GmmProblem::random` from `Lcg::new(1)`, whose order the peer scripts reproduce).
//! The large size (d=64, k=200, n=10⁴, compile-time engine only) is `gmm_large.rs`.
//!
//! Work: per data point and component, `d(d+1)/2` multiply-adds for `Q (x - μ)`, `d`
//! for its squared norm, one `exp` in the log-sum-exp: for d=10, k=25, n=1000 about
//! 2.1 M flops and 25 k `exp`; for d=64, k=200, n=10⁴ about 8.6 G flops and 2 M `exp`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use shade_autodiff::scalar::Tape;
use shade_benches::gradbench::Lcg;
use shade_benches::gradbench::gmm::{
    GmmGradient, GmmProblem, gmm_gradient_tape, gmm_objective_tape,
};
use shade_benches::measure::threads_label;
use std::hint::black_box;

/// ADBench's and GradBench's small size, measured with both engines.
const SMALL: (usize, usize, usize) = (10, 25, 1000);

fn problem((d, k, n): (usize, usize, usize)) -> GmmProblem {
    let mut r = Lcg::new(1);
    GmmProblem::random(d, k, n, &mut || r.next_f64())
}

/// The compile-time engine's two variants.
fn compiled(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    p: &GmmProblem,
) {
    let t = threads_label();
    group.bench_with_input(BenchmarkId::new("compiled-objective", &t), p, |b, p| {
        b.iter(|| black_box(p).objective())
    });
    let mut g = GmmGradient::zeros(p);
    group.bench_with_input(BenchmarkId::new("compiled-gradient", &t), p, |b, p| {
        b.iter(|| {
            g.clear();
            black_box(black_box(p).gradient(&mut g));
        })
    });
}

fn gmm(c: &mut Criterion) {
    let t = threads_label();
    let (d, k, n) = SMALL;
    let p = problem(SMALL);
    let params = p.params();
    let mut group = c.benchmark_group(format!("peers/gmm_d{d}_k{k}_n{n}"));
    group.sample_size(20);
    group.bench_with_input(BenchmarkId::new("objective", &t), &(), |b, ()| {
        b.iter(|| gmm_objective_tape(black_box(&params[..]), black_box(&p)))
    });
    let mut tape = Tape::new();
    let mut g = vec![0.0; params.len()];
    gmm_gradient_tape(&mut tape, &params, &p, &mut g).unwrap();
    group.bench_with_input(BenchmarkId::new("gradient", &t), &(), |b, ()| {
        b.iter(|| {
            gmm_gradient_tape(&mut tape, black_box(&params), &p, &mut g).unwrap();
            black_box(&g);
        })
    });
    compiled(&mut group, &p);
    group.finish();
}

criterion_group!(benches, gmm);
criterion_main!(benches);
