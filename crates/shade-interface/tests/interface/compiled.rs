//! Generated derivatives through the interface (`Compiled(d_f {})` with `AutoShade`):
//! each operator's result equals the direct call of the generated function (the same
//! code runs: equal to the bit for the reverse derivative's gradient and pullback),
//! the forward derivative's results equal the reverse one's, the report names the
//! generated function, shapes are checked, and prepared calls allocate nothing.

use proptest::prelude::*;
use shade_autodiff::compiled::zero;
use shade_autodiff::{autodiff_forward, autodiff_reverse};
use shade_interface::*;
use shade_test_support::alloc::allocations;

/// `Σ sin(wᵢ xᵢ) xᵢ + k · x₀²`: a slice and a scalar constant.
#[autodiff_reverse(d_loss, Duplicated, Const, Const, Active)]
#[autodiff_forward(t_loss, Dual, Const, Const, Dual)]
fn loss(x: &[f64], w: &[f64], k: f64) -> f64 {
    let mut acc = k * x[0] * x[0];
    for i in 0..x.len() {
        acc += (x[i] * w[i]).sin() * x[i];
    }
    acc
}

/// No constants: `Σ xᵢ³ − xᵢ xᵢ₊₁`.
#[autodiff_reverse(d_chain, Duplicated, Active)]
fn chain(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..x.len() {
        acc += x[i] * x[i] * x[i];
        if i + 1 < x.len() {
            acc -= x[i] * x[i + 1];
        }
    }
    acc
}

/// The direct call: `(f(x), ∇f(x))`.
fn direct(x: &[f64], w: &[f64], k: f64) -> (f64, Vec<f64>) {
    let mut g = vec![0.0; x.len()];
    zero(&mut g);
    let y = d_loss(x, &mut g, w, k, 1.0);
    (y, g)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * 1f64.max(a.abs()).max(b.abs())
}

fn inputs() -> impl Strategy<Value = (Vec<f64>, Vec<f64>, f64, Vec<f64>, f64)> {
    (1usize..9).prop_flat_map(|n| {
        (
            prop::collection::vec(-2.0..2.0f64, n),
            prop::collection::vec(-1.5..1.5f64, n),
            -1.0..1.0f64,
            prop::collection::vec(-1.0..1.0f64, 2 * n),
            -2.0..2.0f64,
        )
    })
}

proptest! {
    #![proptest_config(shade_test_support::strategies::cases(64))]

    #[test]
    fn every_operator_equals_the_direct_call((x, w, k, dxs, dy) in inputs()) {
        let n = x.len();
        let ctx = (Constant(&w[..]), Constant(k));
        let (y, g) = direct(&x, &w, k);
        prop_assert!(close(y, loss(&x, &w, k)));
        let dots: Vec<f64> = dxs
            .chunks(n)
            .map(|dx| g.iter().zip(dx).map(|(a, b)| a * b).sum())
            .collect();
        let rev = Compiled(d_loss {});
        let fwd = Compiled(t_loss {});
        for backend_is_forward in [false, true] {
            // The reverse derivative: the same code, the same bits.
            let (gy, gg) = if backend_is_forward {
                value_and_gradient(rev, &AutoShade::FORWARD, &x, ctx)?
            } else {
                value_and_gradient(rev, &AutoShade::REVERSE, &x, ctx)?
            };
            prop_assert_eq!((gy, &gg), (y, &g));
        }
        prop_assert_eq!(jacobian(rev, &AutoShade::REVERSE, &x, ctx)?, g.clone());
        let pb = pullback(rev, &AutoShade::REVERSE, &x, &[dy], ctx)?;
        let mut want = vec![0.0; n];
        d_loss(&x, &mut want, &w, k, dy);
        prop_assert_eq!(&pb, &want);
        let pf = pushforward(rev, &AutoShade::REVERSE, &x, &dxs[..n], ctx)?;
        prop_assert_eq!(pf[0], dots[0]);
        // Batched: one gradient for both tangents and both cotangents.
        let mut p = prepare_pushforward(rev, &AutoShade::REVERSE, &x, ctx)?;
        prop_assert_eq!(p.pushforward_batch(&x, &dxs, ctx)?, dots.clone());
        let mut q = prepare_pullback(rev, &AutoShade::REVERSE, &x, ctx)?;
        let pbs = q.pullback_batch(&x, &[dy, 1.0], ctx)?;
        let twice: Vec<f64> = g.iter().map(|v| v * dy).chain(g.iter().copied()).collect();
        prop_assert_eq!(pbs, twice);

        // The forward derivative: n calls for a gradient, one per tangent.
        let (fy, fg) = value_and_gradient(fwd, &AutoShade::FORWARD, &x, ctx)?;
        prop_assert!(close(fy, y), "{} vs {}", fy, y);
        for i in 0..n {
            prop_assert!(close(fg[i], g[i]), "{}: {} vs {}", i, fg[i], g[i]);
        }
        let (ty, t) = t_loss(&x, &dxs[..n], &w, k);
        let pf = pushforward(fwd, &AutoShade::FORWARD, &x, &dxs[..n], ctx)?;
        prop_assert_eq!(pf[0], t);
        prop_assert!(close(ty, y));
        let mut p = prepare_pushforward(fwd, &AutoShade::FORWARD, &x, ctx)?;
        let batch = p.pushforward_batch(&x, &dxs, ctx)?;
        for (a, b) in batch.iter().zip(&dots) {
            prop_assert!(close(*a, *b), "{} vs {}", a, b);
        }
        let pb = pullback(fwd, &AutoShade::FORWARD, &x, &[dy], ctx)?;
        for i in 0..n {
            prop_assert!(close(pb[i], g[i] * dy));
        }
    }

    #[test]
    fn the_gradient_matches_central_differences((x, w, k, _d, _y) in inputs()) {
        let ctx = (Constant(&w[..]), Constant(k));
        let g = gradient(Compiled(d_loss {}), &AutoShade::REVERSE, &x, ctx)?;
        let fd = gradient(
            shade_fn!(loss_g(&[S], &[f64], S)),
            &AutoFiniteDiff::CENTRAL,
            &x,
            ctx,
        )?;
        for (a, b) in g.iter().zip(&fd) {
            prop_assert!((a - b).abs() <= 1e-6 * 1f64.max(a.abs()), "{} vs {}", a, b);
        }
    }
}

/// `loss` for any number type, for the finite differences.
fn loss_g<S: Real>(x: &[S], w: &[f64], k: S) -> S {
    let mut acc = k * x[0] * x[0];
    for i in 0..x.len() {
        acc += (x[i] * w[i]).sin() * x[i];
    }
    acc
}

#[test]
fn a_prepared_gradient_overwrites_and_checks_shapes() {
    let x = [0.5, 1.5, -0.5];
    let mut prep = prepare_gradient(Compiled(d_chain {}), &AutoShade::REVERSE, &x, ()).unwrap();
    let mut g = [7.0; 3];
    let y = prep.value_and_gradient_into(&x, (), &mut g).unwrap();
    assert_eq!(y, chain(&x));
    let mut want = [0.0; 3];
    d_chain(&x, &mut want, 1.0);
    assert_eq!(g, want);
    let e = prep.gradient_into(&[1.0, 2.0], (), &mut g).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0201", "{e}");
    let e = prep.gradient_into(&x, (), &mut [0.0; 2]).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0201", "{e}");
}

/// Asserts that the report's detail names each of `parts`.
fn assert_detail(r: &Report, parts: &[&str]) {
    for part in parts {
        assert!(r.detail.contains(part), "{part:?} not in\n{r}");
    }
}

#[test]
fn the_report_names_the_generated_function() {
    let (x, w) = ([0.5, 1.0], [1.0, 2.0]);
    let ctx = (Constant(&w[..]), Constant(0.5));
    let p = prepare_gradient(Compiled(d_loss {}), &AutoShade::REVERSE, &x, ctx).unwrap();
    let r = p.explain();
    assert_eq!(r.path, PathKind::Native);
    assert_eq!(r.calls, 1);
    assert_detail(
        r,
        &[
            "compile-time reverse derivative `d_loss`",
            "#[autodiff_reverse(d_loss, Duplicated, Const, Const, Active)]",
        ],
    );
    assert_eq!(r.tape_records, None, "{r}");
    let p = prepare_gradient(Compiled(t_loss {}), &AutoShade::REVERSE, &x, ctx).unwrap();
    let r = p.explain();
    assert_eq!(r.calls, 2);
    assert_detail(
        r,
        &[
            "compile-time forward derivative `t_loss`",
            "the backend's reverse mode does not change it",
        ],
    );
    let p = prepare_pushforward(Compiled(t_loss {}), &AutoShade::FORWARD, &x, ctx).unwrap();
    assert_detail(p.explain(), &["1 call per tangent"]);
}

#[test]
fn prepared_calls_do_not_allocate() {
    let n = 64;
    let x: Vec<f64> = (0..n).map(|i| 0.01 * i as f64).collect();
    let w = vec![0.5; n];
    let ctx = (Constant(&w[..]), Constant(1.0));
    let (mut g, mut dy, mut dx) = (vec![0.0; n], [0.0], vec![0.0; n]);
    let rev = Compiled(d_loss {});
    let fwd = Compiled(t_loss {});
    let mut pg = prepare_gradient(rev, &AutoShade::REVERSE, &x, ctx).unwrap();
    let mut pf = prepare_pushforward(rev, &AutoShade::REVERSE, &x, ctx).unwrap();
    let mut pb = prepare_pullback(rev, &AutoShade::REVERSE, &x, ctx).unwrap();
    let mut fg = prepare_gradient(fwd, &AutoShade::FORWARD, &x, ctx).unwrap();
    let mut ff = prepare_pushforward(fwd, &AutoShade::FORWARD, &x, ctx).unwrap();
    // The counter counts.
    assert!(allocations(|| drop(std::hint::black_box(vec![1u8; 3]))) > 0);
    let t = x.clone();
    let count = allocations(|| {
        pg.gradient_into(&x, ctx, &mut g).unwrap();
        pf.pushforward_into(&x, &t, ctx, &mut dy).unwrap();
        pb.pullback_into(&x, &[2.0], ctx, &mut dx).unwrap();
        fg.gradient_into(&x, ctx, &mut g).unwrap();
        ff.pushforward_into(&x, &t, ctx, &mut dy).unwrap();
    });
    assert_eq!(count, 0);
}
