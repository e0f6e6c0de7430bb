//! The compile-time engine (`#[autodiff_reverse]`) against the plain `f64` primal in
//! the same run (`baseline`): Rosenbrock at n = 2 … 10⁶ (the shadow zeroed by
//! `compiled::zero`, and by `fill` for comparison), a 10-element function
//! (the prepared-gradient overhead), GradBench's GMM (d=10, k=25, n=1000) and LSTM
//! (l=4, c=4096). The interface's cost for a generated function (`Compiled` with
//! `AutoShade` against the direct call, target ≤ 1.02) is measured interleaved by the
//! `interface` bench. The large GMM (d=64, k=200, n=10⁴) takes seconds per call: its
//! ratio and memory come from `cargo bench -p shade-benches --bench gmm_large`.
//! On a busy machine, `examples/gmm_profile.rs` under `perf stat -e task-clock` gives
//! the same ratios from the process's own CPU time.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shade_autodiff::compiled::zero;
use shade_benches::gradbench::Lcg;
use shade_benches::gradbench::gmm::{GmmGradient, GmmProblem};
use shade_benches::gradbench::lstm::{d_lstm_objective, lstm_objective, lstm_problem};
use shade_benches::rosenbrock::{d_rosenbrock, rosenbrock};
use shade_benches::sin_loss::{d_sin_loss, sin_loss};
use std::hint::black_box;

fn rosenbrock_group(c: &mut Criterion) {
    for &n in &[2usize, 10, 100, 1_000, 100_000, 1_000_000] {
        let x: Vec<f64> = (0..n).map(|i| 0.5 + 0.001 * (i % 100) as f64).collect();
        let mut group = c.benchmark_group(format!("compiled/rosenbrock/n{n}"));
        group.throughput(Throughput::Elements(n as u64));
        if n >= 100_000 {
            group.sample_size(10);
        }
        let mut g = vec![0.0; n];
        group.bench_function("baseline", |b| b.iter(|| rosenbrock(black_box(&x[..]))));
        // What a user pays: the shadow zeroed (by `compiled::zero`, as the runtime
        // documents), the seed, the gradient returned in `g`.
        group.bench_function("gradient", |b| {
            b.iter(|| {
                zero(&mut g);
                black_box(d_rosenbrock(black_box(&x), &mut g, 1.0));
                black_box(&g);
            })
        });
        // The same, zeroed by `fill` (glibc's `memset`): the difference is the cost of
        // that `memset` on this machine (see `compiled::zero`).
        group.bench_function("gradient-fill", |b| {
            b.iter(|| {
                g.fill(0.0);
                black_box(d_rosenbrock(black_box(&x), &mut g, 1.0));
                black_box(&g);
            })
        });
        group.finish();
    }
    let x: Vec<f64> = (0..10).map(|i| 0.3 + 0.01 * i as f64).collect();
    let w: Vec<f64> = (0..10).map(|i| 1.0 + 0.01 * i as f64).collect();
    let mut group = c.benchmark_group("compiled/sin-loss/n10");
    let mut g = vec![0.0; 10];
    group.bench_function("baseline", |b| b.iter(|| sin_loss(black_box(&x), &w)));
    group.bench_function("gradient", |b| {
        b.iter(|| {
            zero(&mut g);
            black_box(d_sin_loss(black_box(&x), &mut g, &w, 1.0));
            black_box(&g);
        })
    });
    group.finish();
}

fn gmm_group(c: &mut Criterion) {
    let mut r = Lcg::new(1);
    let p = GmmProblem::random(10, 25, 1000, &mut || r.next_f64());
    let mut g = GmmGradient::zeros(&p);
    let mut group = c.benchmark_group("compiled/gmm/d10-k25-n1000");
    group.sample_size(20);
    group.bench_function("baseline", |b| b.iter(|| black_box(&p).objective()));
    group.bench_function("gradient", |b| {
        b.iter(|| {
            g.clear();
            black_box(black_box(&p).gradient(&mut g));
        })
    });
    group.finish();
}

fn lstm_group(c: &mut Criterion) {
    let mut r = Lcg::new(1);
    let (main, extra, state, seq) = lstm_problem(4, 4096, &mut || r.next_f64());
    let (mut dm, mut de) = (vec![0.0; main.len()], vec![0.0; extra.len()]);
    let mut group = c.benchmark_group("compiled/lstm/l4-c4096");
    group.sample_size(10);
    group.bench_function("baseline", |b| {
        b.iter(|| lstm_objective(black_box(&main), &extra, &state, &seq, 4))
    });
    group.bench_function("gradient", |b| {
        b.iter(|| {
            dm.iter_mut().for_each(|v| *v = 0.0);
            de.iter_mut().for_each(|v| *v = 0.0);
            black_box(d_lstm_objective(
                black_box(&main),
                &mut dm,
                &extra,
                &mut de,
                &state,
                &seq,
                4,
                1.0,
            ));
        })
    });
    group.finish();
}

criterion_group!(benches, rosenbrock_group, gmm_group, lstm_group);
criterion_main!(benches);
