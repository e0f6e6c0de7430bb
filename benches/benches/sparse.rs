//! Sparse against dense differentiation through the interface (`AutoSparse`), in one
//! run:
//!
//! - `sparse/jacobian/n10000`: a banded Jacobian (half-bandwidth 2: 5 colours) of
//!   `n = 10⁴` outputs; `baseline` is the dense forward-mode Jacobian of
//!   `AutoShade::FORWARD` (⌈n/8⌉ evaluations with 8 tangents, an `n × n` buffer of
//!   800 MB), against `AutoSparse { inner: AutoShade::FORWARD }` (one batched
//!   pushforward, a `CsMat`) and the sparse preparation (detection and colouring, paid
//!   once).
//! - `sparse/hessian/n10000`: the Hessian of a sum of local terms (the chained
//!   Rosenbrock function, tridiagonal: 3 star colours); `baseline` is the dense
//!   forward-over-reverse Hessian of `SecondOrder { FORWARD, REVERSE }` (⌈n/8⌉
//!   recordings with 8 directions), against `AutoSparse` over the same backend.
//! - `sparse/jacobian/n1000000`: the banded Jacobian at `n = 10⁶`, which a dense
//!   Jacobian cannot store (8 TB). `floor-eval` is one `f64` evaluation of the function;
//!   `dense-8-columns` is one batched pushforward of 8 unit tangents, `n / 8 = 125000`
//!   of which a dense Jacobian would take.
//!
//! The colour counts are in the function names and printed on stderr.

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use shade_autodiff::scalar::Real;
use shade_interface::{
    AutoShade, AutoSparse, SecondOrder, prepare_hessian, prepare_jacobian_inplace,
    prepare_pushforward_inplace, shade_fn,
};
use std::hint::black_box;
use std::time::Duration;

/// `yᵢ = xᵢ² + Σ_{d=1,2} sin(x_{i-d}) x_{i+d}` (missing neighbours dropped): a Jacobian
/// of half-bandwidth 2.
fn band<S: Real>(y: &mut [S], x: &[S]) {
    let n = x.len();
    for i in 0..n {
        let mut v = x[i] * x[i];
        for d in 1..=2 {
            if i >= d && i + d < n {
                v += x[i - d].sin() * x[i + d];
            }
        }
        y[i] = v;
    }
}

shade_fn!(Band = band(&mut [S], &[S]));

/// The chained Rosenbrock function `Σᵢ 100 (x_{i+1} − xᵢ²)² + (1 − xᵢ)²`.
fn chained<S: Real>(x: &[S]) -> S {
    let mut acc = S::zero();
    for w in x.windows(2) {
        acc += (w[1] - w[0] * w[0]).powi(2) * 100.0 + (-w[0] + 1.0).powi(2);
    }
    acc
}

shade_fn!(Chained = chained(&[S]));

fn point(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 0.5 + 0.3 * ((i % 17) as f64 / 17.0))
        .collect()
}

/// The sparse result is the dense one: every stored entry, and nothing outside the
/// pattern.
fn same(s: &shade_interface::sprs::CsMat<f64>, d: &[f64], n: usize, tol: f64) {
    for (&v, (i, j)) in s.iter() {
        let w = d[i * n + j];
        assert!(
            (v - w).abs() <= tol * (1.0 + w.abs()),
            "({i}, {j}): {v} vs {w}"
        );
    }
    assert_eq!(d.iter().filter(|v| **v != 0.0).count(), s.nnz());
}

/// Long iterations: ten samples of one iteration each.
fn slow(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(1));
    group.measurement_time(Duration::from_secs(1));
}

fn jacobian_10k(c: &mut Criterion) {
    let n = 10_000;
    let (x, y0) = (point(n), vec![0.0; n]);
    let sparse = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    let mut sp = prepare_jacobian_inplace(Band, &y0, &sparse, &x, ()).unwrap();
    let k = sp.colouring().count;
    eprintln!(
        "sparse/jacobian/n{n}: {} nonzeros, {:?} colouring, {k} colours (the other orientation: {:?})",
        sp.sparsity().nnz(),
        sp.colouring().orientation,
        sp.colouring().other
    );
    let mut group = c.benchmark_group(format!("sparse/jacobian/n{n}"));
    slow(&mut group);
    let mut js = sp.jacobian(&x, ()).unwrap();
    group.bench_function(format!("sparse-{k}-colours"), |b| {
        b.iter(|| sp.jacobian_into(black_box(&x), (), &mut js).unwrap())
    });
    group.bench_function("sparse-prepare", |b| {
        b.iter(|| prepare_jacobian_inplace(Band, &y0, &sparse, black_box(&x), ()).unwrap())
    });
    {
        let mut dense = prepare_jacobian_inplace(Band, &y0, &AutoShade::FORWARD, &x, ()).unwrap();
        let mut jd = vec![0.0; n * n];
        dense.jacobian_into(&x, (), &mut jd).unwrap();
        same(&js, &jd, n, 1e-12);
        group.bench_function("baseline", |b| {
            b.iter(|| dense.jacobian_into(black_box(&x), (), &mut jd).unwrap())
        });
    }
    group.finish();
}

fn hessian_10k(c: &mut Criterion) {
    let n = 10_000;
    let x = point(n);
    let fwd_rev = SecondOrder {
        outer: AutoShade::FORWARD,
        inner: AutoShade::REVERSE,
    };
    let sparse = AutoSparse { inner: fwd_rev };
    let mut sp = prepare_hessian(Chained, &sparse, &x, ()).unwrap();
    let k = sp.colouring().count;
    eprintln!(
        "sparse/hessian/n{n}: {} nonzeros, star colouring, {k} colours",
        sp.sparsity().nnz()
    );
    let mut group = c.benchmark_group(format!("sparse/hessian/n{n}"));
    slow(&mut group);
    let mut hs = sp.hessian(&x, ()).unwrap();
    group.bench_function(format!("sparse-{k}-colours"), |b| {
        b.iter(|| sp.hessian_into(black_box(&x), (), &mut hs).unwrap())
    });
    group.bench_function("sparse-prepare", |b| {
        b.iter(|| prepare_hessian(Chained, &sparse, black_box(&x), ()).unwrap())
    });
    {
        let mut dense = prepare_hessian(Chained, &fwd_rev, &x, ()).unwrap();
        let mut hd = vec![0.0; n * n];
        dense.hessian_into(&x, (), &mut hd).unwrap();
        same(&hs, &hd, n, 1e-9);
        group.bench_function("baseline", |b| {
            b.iter(|| dense.hessian_into(black_box(&x), (), &mut hd).unwrap())
        });
    }
    group.finish();
}

fn jacobian_1m(c: &mut Criterion) {
    let n = 1_000_000;
    let (x, y0) = (point(n), vec![0.0; n]);
    let sparse = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    let mut sp = prepare_jacobian_inplace(Band, &y0, &sparse, &x, ()).unwrap();
    let k = sp.colouring().count;
    eprintln!(
        "sparse/jacobian/n{n}: {} nonzeros, {:?} colouring, {k} colours; a dense Jacobian would be {} TB",
        sp.sparsity().nnz(),
        sp.colouring().orientation,
        (n as f64).powi(2) * 8.0 / 1e12
    );
    let mut group = c.benchmark_group(format!("sparse/jacobian/n{n}"));
    slow(&mut group);
    let mut js = sp.jacobian(&x, ()).unwrap();
    group.bench_function(format!("sparse-{k}-colours"), |b| {
        b.iter(|| sp.jacobian_into(black_box(&x), (), &mut js).unwrap())
    });
    let mut y = vec![0.0; n];
    group.bench_function("floor-eval", |b| {
        b.iter(|| {
            band::<f64>(&mut y, black_box(&x));
            black_box(&y);
        })
    });
    let mut push = prepare_pushforward_inplace(Band, &y0, &AutoShade::FORWARD, &x, ()).unwrap();
    let mut units = vec![0.0; 8 * n];
    for l in 0..8 {
        units[l * n + l] = 1.0;
    }
    let mut outs = vec![0.0; 8 * n];
    group.bench_function("dense-8-columns", |b| {
        b.iter(|| {
            push.value_and_pushforward_batch_into(black_box(&x), &units, (), &mut y, &mut outs)
                .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, jacobian_10k, hessian_10k, jacobian_1m);
criterion_main!(benches);
