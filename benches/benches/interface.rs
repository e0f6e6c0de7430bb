//! The cost of the interface: a prepared `gradient` through `shade-interface` with
//! `AutoShade` versus the direct core call on the same function with one `Constant`
//! context, at n = 10, 1000, 100000 (target ratio ≤ 1.05), and versus a generic path
//! that wraps the function in a closure capturing the constant.
//!
//! Work per gradient: the loss does 4 flops per element forward and records 3 tape
//! entries per element; the sweep reads them back once. All three functions do the same
//! arithmetic; they differ only in how the function and its constant reach the tape.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shade_autodiff::Const;
use shade_autodiff::scalar::{Real, Tape, Var, shade_fn};
use shade_interface::{AutoShade, Constant, prepare_gradient};
use std::hint::black_box;

/// `Σ sin(wᵢ xᵢ) xᵢ`.
fn loss<S: Real>(x: &[S], w: &[f64]) -> S {
    let mut acc = S::zero();
    for (xi, wi) in x.iter().zip(w) {
        acc += (*xi * *wi).sin() * *xi;
    }
    acc
}

shade_fn!(Loss = loss(&[S], &[f64]));

/// What a generic interface without contexts does: the constant captured in a closure
/// over the reverse-mode number type, inputs recorded by hand on each call.
fn closure_gradient<F>(tape: &mut Tape<f64>, f: &F, x: &[f64], g: &mut [f64])
where
    F: for<'t> Fn(&[Var<'t, f64>]) -> Var<'t, f64>,
{
    tape.reset();
    let (ids, y) = {
        let t = tape.trace();
        let xs: Vec<Var<'_, f64>> = x.iter().map(|&v| t.var(v)).collect();
        let y = f(&xs);
        (xs.iter().map(|v| v.id()).collect::<Vec<_>>(), y.id())
    };
    match y {
        Some(y) => {
            let adj = tape.backward(y, 1.0).expect("no overflow at these sizes");
            for (gi, id) in g.iter_mut().zip(ids) {
                *gi = id.map_or(0.0, |i| adj[i.index()]);
            }
        }
        None => g.fill(0.0),
    }
}

/// Gives a closure the higher-ranked signature the generic path needs.
fn over_var<F: for<'t> Fn(&[Var<'t, f64>]) -> Var<'t, f64>>(f: F) -> F {
    f
}

fn bench(c: &mut Criterion) {
    for &n in &[10usize, 1_000, 100_000] {
        let x: Vec<f64> = (0..n).map(|i| 0.3 + 0.001 * (i % 97) as f64).collect();
        let w: Vec<f64> = (0..n).map(|i| 1.0 + 0.01 * (i % 13) as f64).collect();
        let mut group = c.benchmark_group(format!("interface/gradient/n{n}"));
        group.throughput(Throughput::Elements(n as u64));
        if n >= 100_000 {
            group.sample_size(20);
        }

        let mut tape = Tape::new();
        let mut g = vec![0.0; n];
        tape.gradient_into(&Loss, &x, (Const(&w[..]),), &mut g)
            .unwrap();
        let reference = g.clone();
        group.bench_function("baseline", |b| {
            b.iter(|| {
                tape.gradient_into(&Loss, black_box(&x), (Const(&w[..]),), &mut g)
                    .unwrap();
                black_box(&g);
            })
        });

        group.bench_function("direct-autodiff", |b| {
            b.iter(|| {
                g.fill(0.0);
                shade_autodiff::scalar::autodiff_with(
                    &mut tape,
                    shade_autodiff::ReverseWithPrimal,
                    &Loss,
                    shade_autodiff::Active(1.0),
                    (
                        shade_autodiff::Duplicated(black_box(&x[..]), &mut g[..]),
                        Const(&w[..]),
                    ),
                )
                .unwrap();
                black_box(&g);
            })
        });

        let mut prep =
            prepare_gradient(Loss, &AutoShade::REVERSE, &x, (Constant(&w[..]),)).unwrap();
        prep.gradient_into(&x, (Constant(&w[..]),), &mut g).unwrap();
        assert_eq!(g, reference);
        group.bench_function("interface-autoshade", |b| {
            b.iter(|| {
                prep.gradient_into(black_box(&x), (Constant(&w[..]),), &mut g)
                    .unwrap();
                black_box(&g);
            })
        });

        let wc = w.clone();
        let closure = over_var(move |xs| loss(xs, &wc));
        let mut ctape = Tape::new();
        closure_gradient(&mut ctape, &closure, &x, &mut g);
        assert_eq!(g, reference);
        group.bench_function("closure-generic", |b| {
            b.iter(|| {
                closure_gradient(&mut ctape, &closure, black_box(&x), &mut g);
                black_box(&g);
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
