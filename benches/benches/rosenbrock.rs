//! Rosenbrock's function and its reverse-mode gradient for n = 10 … 10⁶: the cost of a
//! warm gradient grows linearly in n (criterion reports time per element through the
//! throughput setting), and stays a constant multiple of the `f64` `baseline`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shade_autodiff::scalar::{Real, Tape, shade_fn};
use std::hint::black_box;

/// `Σ (1 - xᵢ)² + 100 (xᵢ₊₁ - xᵢ²)²`.
fn rosenbrock<S: Real>(x: &[S]) -> S {
    let mut acc = S::zero();
    for w in x.windows(2) {
        let a = -w[0] + 1.0;
        let b = w[1] - w[0] * w[0];
        acc += a * a + b * b * 100.0;
    }
    acc
}

shade_fn!(Rosenbrock = rosenbrock(&[S]));

fn bench(c: &mut Criterion) {
    for &n in &[10usize, 1_000, 100_000, 1_000_000] {
        let x: Vec<f64> = (0..n).map(|i| 0.5 + 0.001 * (i % 100) as f64).collect();
        let mut group = c.benchmark_group(format!("rosenbrock/n{n}"));
        group.throughput(Throughput::Elements(n as u64));
        if n >= 100_000 {
            group.sample_size(10);
        }
        group.bench_function("baseline", |b| b.iter(|| rosenbrock(black_box(&x[..]))));
        let mut tape = Tape::new();
        let mut g = vec![0.0; n];
        tape.gradient_into(&Rosenbrock, &x, (), &mut g).unwrap();
        group.bench_function("gradient", |b| {
            b.iter(|| {
                tape.gradient_into(&Rosenbrock, black_box(&x), (), &mut g)
                    .unwrap();
                black_box(&g);
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
