//! ADBench's GMM objective (Gaussian mixture log-likelihood with a Wishart prior),
//! written once against `Real`: the `f64` objective is the `baseline`, the reverse-mode
//! gradient through a prepared (warm) `Tape` is compared against it.
//!
//! Work: per data point and component, `d(d+1)/2` multiply-adds for `Q (x - μ)`, `d`
//! for its squared norm, one `exp` in the log-sum-exp: for d=10, k=25, n=1000 about
//! 2.1 M flops and 25 k `exp`.

use criterion::{Criterion, criterion_group, criterion_main};
use shade_autodiff::Const;
use shade_autodiff::scalar::{Tape, shade_fn};
use std::hint::black_box;

#[path = "gmm/objective.rs"]
#[allow(dead_code, unreachable_pub)]
mod objective;
use objective::{GmmData, gmm_objective, gmm_problem};

shade_fn!(Gmm = gmm_objective(&[S], &GmmData));

/// Problem sizes (d, k, n). ADBench's d=64, k=200, n=10000 would need a tape of
/// about 20 GB without checkpointing, so it is not run.
const SIZES: &[(usize, usize, usize)] = &[(10, 25, 1000)];

fn gmm(c: &mut Criterion) {
    for &(d, k, n) in SIZES {
        let (params, data) = gmm_problem(d, k, n, 1);
        let mut group = c.benchmark_group(format!("gmm/d{d}-k{k}-n{n}"));
        group.sample_size(20);
        group.bench_function("baseline", |b| {
            b.iter(|| gmm_objective(black_box(&params[..]), black_box(&data)))
        });
        let mut tape = Tape::new();
        let mut g = vec![0.0; params.len()];
        tape.gradient_into(&Gmm, &params, (Const(&data),), &mut g)
            .unwrap();
        group.bench_function("gradient", |b| {
            b.iter(|| {
                tape.gradient_into(&Gmm, black_box(&params), (Const(&data),), &mut g)
                    .unwrap();
                black_box(&g);
            })
        });
        group.finish();
    }
}

criterion_group!(benches, gmm);
criterion_main!(benches);
