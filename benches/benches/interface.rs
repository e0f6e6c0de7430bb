//! The cost of the interface: a prepared `gradient` through `shade-interface` with
//! `AutoShade` versus the direct core call on the same function with one `Constant`
//! context, at n = 10, 1000, 100000 (target ratio ≤ 1.05), and versus a generic path
//! that wraps the function in a closure capturing the constant.
//!
//! Work per gradient: the loss does 4 flops per element forward and records 3 tape
//! entries per element; the sweep reads them back once. All three functions do the same
//! arithmetic; they differ only in how the function and its constant reach the tape.
//!
//! After criterion's groups, `interface/paired/*` measures what the interface adds,
//! interleaved (`measure::paired_ratio`: adjacent blocks of the direct call and of the
//! interface alternate, one ratio a round, the median reported with its quartiles): for
//! the tape (`AutoShade` against `Tape::gradient_into`) and for a generated function
//! (`Compiled(d_sin_loss {})` and `Compiled(t_sin_loss {})` against the direct call of
//! the generated `d_sin_loss` / `t_sin_loss`, with the zeroing the operator does;
//! target ≤ 1.02). Two means measured one after the other drift by ±3 % on this
//! machine; the paired median does not. Run alone:
//! `cargo bench -p shade-benches --bench interface -- interface/paired`.

use criterion::{Criterion, Throughput, criterion_group};
use shade_autodiff::Const;
use shade_autodiff::compiled::zero;
use shade_autodiff::scalar::{Real, Tape, Var, shade_fn};
use shade_benches::measure::{paired_ratio, report_paired, run_named};
use shade_benches::sin_loss::{d_sin_loss, t_sin_loss};
use shade_interface::{AutoShade, Compiled, Constant, prepare_gradient, prepare_pushforward};
use std::hint::black_box;
use std::time::Duration;

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

/// One interleaved ratio, interface ÷ direct, reported as
/// `interface/paired/<what>/n<n>`.
fn interleaved(
    what: &str,
    n: usize,
    budget: Duration,
    direct: impl FnMut(),
    interface: impl FnMut(),
) {
    let p = paired_ratio(direct, interface, budget);
    report_paired(
        &format!("interface/paired/{what}/n{n}"),
        "direct",
        "interface",
        &p,
    );
}

/// The interleaved ratios (see the module header), each followed by a check that both
/// sides gave the same numbers.
fn paired(budget: Duration) {
    for &n in &[10usize, 1_000, 100_000] {
        let x: Vec<f64> = (0..n).map(|i| 0.3 + 0.001 * (i % 97) as f64).collect();
        let w: Vec<f64> = (0..n).map(|i| 1.0 + 0.01 * (i % 13) as f64).collect();
        let t: Vec<f64> = (0..n).map(|i| (i as f64).cos()).collect();
        let (mut g1, mut g2) = (vec![0.0; n], vec![0.0; n]);
        let ctx = (Constant(&w[..]),);

        let mut tape = Tape::new();
        let mut prep = prepare_gradient(Loss, &AutoShade::REVERSE, &x, ctx).unwrap();
        interleaved(
            "tape-gradient",
            n,
            budget,
            || {
                tape.gradient_into(&Loss, black_box(&x), (Const(&w[..]),), &mut g1)
                    .unwrap();
                black_box(&g1);
            },
            || {
                prep.gradient_into(black_box(&x), ctx, &mut g2).unwrap();
                black_box(&g2);
            },
        );
        assert_eq!(g1, g2, "the tape's gradients differ");

        let mut prep =
            prepare_gradient(Compiled(d_sin_loss {}), &AutoShade::REVERSE, &x, ctx).unwrap();
        interleaved(
            "compiled-gradient",
            n,
            budget,
            || {
                zero(&mut g1);
                black_box(d_sin_loss(black_box(&x), &mut g1, &w, 1.0));
                black_box(&g1);
            },
            || {
                black_box(
                    prep.value_and_gradient_into(black_box(&x), ctx, &mut g2)
                        .unwrap(),
                );
                black_box(&g2);
            },
        );
        assert_eq!(g1, g2, "the generated gradients differ");

        let mut prep =
            prepare_pushforward(Compiled(t_sin_loss {}), &AutoShade::FORWARD, &x, ctx).unwrap();
        let (mut y, mut dy, mut d) = ([0.0], [0.0], (0.0, 0.0));
        interleaved(
            "compiled-pushforward",
            n,
            budget,
            || d = black_box(t_sin_loss(black_box(&x), &t, &w)),
            || {
                prep.value_and_pushforward_into(black_box(&x), &t, ctx, &mut y, &mut dy)
                    .unwrap();
                black_box((y, dy));
            },
        );
        assert_eq!(d, (y[0], dy[0]), "the generated pushforwards differ");
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    run_named("interface/paired", paired);
    Criterion::default().configure_from_args().final_summary();
}
