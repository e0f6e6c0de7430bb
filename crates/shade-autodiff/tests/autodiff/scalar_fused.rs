//! The fused n-ary helpers of `Real` (`sum_sq`, `logsumexp`, `lower_tri_matvec`,
//! `lower_tri_matvec_sum_sq`, and `dot` with one constant side), and values shifted by
//! constants (which share their operand's record): values match plain `f64`
//! references, and the reverse gradient = forward tangents = central differences, with
//! operands recorded contiguously, gathered, shifted, or mixed with constants. Each
//! helper records one tape entry.

use proptest::prelude::*;
use shade_autodiff::scalar::{
    Real, ScalarFn, Slice, Tangent, Tape, autodiff, gradient, jacobian_forward, jacobian_reverse,
    shade_fn,
};
use shade_autodiff::{Duplicated, Forward};
use shade_test_support::close;

/// Reverse gradient = forward tangents (to rounding) = central differences (to `tol`).
fn check<F: ScalarFn<Kinds = (Slice,)> + Copy>(
    f: F,
    x: &[f64],
    tol: f64,
) -> Result<(), TestCaseError> {
    let g = gradient(f, x, ()).unwrap();
    for i in 0..x.len() {
        let mut t = vec![0.0; x.len()];
        t[i] = 1.0;
        let d = autodiff(Forward, f, Tangent, (Duplicated(x, &mut t[..]),)).unwrap();
        prop_assert!(close(g[i], d, 1e-11), "reverse {} vs forward {d}", g[i]);
        let h = 1e-6;
        let (mut p, mut m) = (x.to_vec(), x.to_vec());
        p[i] += h;
        m[i] -= h;
        let fd = (f.call((&p[..],)) - f.call((&m[..],))) / (2.0 * h);
        prop_assert!(close(g[i], fd, tol), "reverse {} vs differences {fd}", g[i]);
    }
    Ok(())
}

/// `Σ x²` over the contiguous inputs, over a gathered mix with a constant, and weighted.
fn sum_sq<S: Real>(x: &[S]) -> S {
    let gathered = [x[2], S::cst(1.5), x[0] * x[1], x[2]];
    S::sum_sq(x) + S::sum_sq(&gathered) * 0.5
}

/// `logsumexp` of inputs, a gathered mix with a constant, and a shifted copy.
fn lse<S: Real>(x: &[S]) -> S {
    let mixed = [x[1] * 2.0, S::cst(0.3), x[0], x[3].sin()];
    S::logsumexp(x) * S::logsumexp(&mixed) + S::logsumexp(&[x[0] + 500.0, x[1] + 500.0])
}

/// `sum_sq(L x)` with `L` gathered (exp on the diagonal, as GMM's Cholesky factor) and
/// contiguous (the inputs themselves), `x` contiguous and gathered with a constant.
fn tri<S: Real>(v: &[S]) -> S {
    let n = 3;
    let l: Vec<S> = (0..n * (n + 1) / 2)
        .map(|i| if i % 3 == 2 { v[i].exp() } else { v[i] })
        .collect();
    let xc: Vec<S> = (0..n).map(|j| v[j] - 0.25 * j as f64).collect();
    let mut y = vec![S::zero(); n];
    S::lower_tri_matvec(&l, &xc, &mut y);
    let a = S::sum_sq(&y);
    let x2 = [v[5], S::cst(0.7), v[0]];
    S::lower_tri_matvec(&v[..6], &x2, &mut y);
    a + y[0] * y[1] + y[2].sin()
}

/// `‖L x‖²` with `L` gathered (exp on the diagonal) and `x = μ - c` (shifted inputs,
/// as GMM's Mahalanobis term), then contiguous `L` with a gathered `x` holding a
/// constant, then `L` with shifted entries and a constant.
fn tri_sq<S: Real>(v: &[S]) -> S {
    let l: Vec<S> = (0..6)
        .map(|i| if i % 3 == 2 { v[i].exp() } else { v[5 - i] })
        .collect();
    let xc: Vec<S> = (0..3).map(|j| v[6 + j] - 0.25 * j as f64).collect();
    let a = S::lower_tri_matvec_sum_sq(&l, &xc);
    let b = S::lower_tri_matvec_sum_sq(&v[..6], &[v[7], S::cst(0.7)]);
    let ls = [v[0] + 1.0, S::cst(-0.5), v[2] - 2.0];
    let c = S::lower_tri_matvec_sum_sq(&ls, &[v[8], v[6] * 2.0]);
    a * 0.5 + b.sin() + c
}

/// Shifted values (`x ± c` shares `x`'s record) through every kind that reads operand
/// values: products, `dot`, `sum_sq`, `lower_tri_matvec`, and mixed with plain ones.
fn shifted<S: Real>(x: &[S]) -> S {
    let a = x[0] + 1.5;
    let b = x[1] - 0.5;
    let c = S::cst(2.0) - x[2];
    let p = a * b + (a * x[1]) * (b + 0.25);
    let d = S::dot(&[a, x[1], b], &[b, a, x[2] + 3.0]) + S::dot(&[a, b], &[x[2], x[0]]);
    let q = S::sum_sq(&[a, b, c]) + S::sum_sq(&[x[0], b]);
    let mut y = [S::zero(); 2];
    S::lower_tri_matvec(&[a, b, x[2] + 0.1], &[c, a], &mut y);
    p + d * 0.5 + q + y[0] * y[1] + (a + 1.0).sin()
}

/// `dot` with one side constant (a linear combination) and both orders.
fn dot_const<S: Real>(x: &[S]) -> S {
    let c = [S::cst(2.0), S::cst(-1.0), S::cst(0.5)];
    S::dot(&x[..3], &c) * S::dot(&c, &[x[3], x[1] * x[2], S::cst(1.0)])
}

proptest! {
    #[test]
    fn sum_sq_gradient(x in prop::collection::vec(-3.0..3.0f64, 3..6)) {
        check(shade_fn!(sum_sq(&[S])), &x, 1e-6)?;
        let want: f64 = x.iter().map(|v| v * v).sum::<f64>()
            + 0.5 * (2.0 * x[2] * x[2] + 2.25 + (x[0] * x[1]).powi(2));
        prop_assert!(close(sum_sq(&x), want, 1e-13));
    }

    #[test]
    fn logsumexp_gradient(x in prop::collection::vec(-3.0..3.0f64, 4..7)) {
        check(shade_fn!(lse(&[S])), &x, 1e-6)?;
        let naive = x.iter().map(|v| v.exp()).sum::<f64>().ln();
        prop_assert!(close(f64::logsumexp(&x), naive, 1e-13));
    }

    #[test]
    fn lower_tri_matvec_gradient(v in prop::collection::vec(-1.5..1.5f64, 6)) {
        check(shade_fn!(tri(&[S])), &v, 1e-6)?;
        let mut y = [0.0; 3];
        f64::lower_tri_matvec(&v, &[1.0, -2.0, 0.5], &mut y);
        let want = [v[0], v[1] - 2.0 * v[2], v[3] - 2.0 * v[4] + 0.5 * v[5]];
        for (a, b) in y.iter().zip(want) {
            prop_assert!(close(*a, b, 1e-14));
        }
    }

    #[test]
    fn lower_tri_matvec_sum_sq_gradient(v in prop::collection::vec(-1.5..1.5f64, 9)) {
        check(shade_fn!(tri_sq(&[S])), &v, 1e-6)?;
        let (l, x) = ([v[0], v[1], v[2]], [v[3], v[4]]);
        let want = (l[0] * x[0]).powi(2) + (l[1] * x[0] + l[2] * x[1]).powi(2);
        prop_assert!(close(f64::lower_tri_matvec_sum_sq(&l, &x), want, 1e-13));
    }

    #[test]
    fn shifted_operands_gradient(x in prop::collection::vec(-2.0..2.0f64, 3)) {
        check(shade_fn!(shifted(&[S])), &x, 1e-6)?;
    }

    #[test]
    fn dot_with_constant_side_gradient(x in prop::collection::vec(-3.0..3.0f64, 4)) {
        check(shade_fn!(dot_const(&[S])), &x, 1e-6)?;
    }
}

/// `y = L x` for packed `L = v[..6]`, `x = v[6..9]`: every output of the block record.
fn tri_outputs<S: Real>(y: &mut [S], v: &[S]) {
    S::lower_tri_matvec(&v[..6], &v[6..9], y);
}

#[test]
fn lower_tri_matvec_jacobian_seeds_every_output() {
    // Reverse sweeps seeded at each output (the block record sits at the first; the
    // others are placeholders) agree with forward mode and the hand-written Jacobian.
    let v: Vec<f64> = (0..9).map(|i| 0.3 * f64::from(i) - 1.0).collect();
    let f = shade_fn!(tri_outputs(&mut [S], &[S]));
    let (yr, jr) = jacobian_reverse(f, &v, 3, ()).unwrap();
    let (yf, jf) = jacobian_forward(f, &v, 3, ()).unwrap();
    assert_eq!(yr, yf);
    let (l, x) = (&v[..6], &v[6..]);
    let mut want = vec![0.0; 27];
    let mut off = 0;
    for r in 0..3 {
        for j in 0..=r {
            want[r * 9 + off + j] = x[j];
            want[r * 9 + 6 + j] = l[off + j];
        }
        off += r + 1;
    }
    assert_eq!(jr.len(), 27);
    for ((a, b), w) in jr.iter().zip(&jf).zip(&want) {
        assert!(close(*a, *w, 1e-14) && close(*b, *w, 1e-14), "{a} {b} {w}");
    }
}

#[test]
fn fused_helpers_record_one_entry_each() {
    let tape = Tape::<f64>::new();
    let t = tape.trace();
    let x: Vec<_> = [0.5, -1.0, 2.0].iter().map(|&v| t.var(v)).collect();
    let n0 = tape.len();
    let s = Real::sum_sq(&x);
    assert_eq!(tape.len(), n0 + 1);
    assert_eq!(s.val(), 5.25);
    let m = Real::logsumexp(&x);
    assert_eq!(tape.len(), n0 + 2);
    let want = (0.5f64.exp() + (-1.0f64).exp() + 2.0f64.exp()).ln();
    assert!(close(m.val(), want, 1e-15));
    let mut y = [s; 2];
    Real::lower_tri_matvec(&x, &x, &mut y);
    // One block record plus one placeholder per further output.
    assert_eq!(tape.len(), n0 + 4);
    assert_eq!([y[0].val(), y[1].val()], [0.25, -0.5 - 2.0]);
    // `x` may be shifted at no cost: one record.
    let q = Real::lower_tri_matvec_sum_sq(&x, &[x[0] - 1.0, x[1] + 2.0]);
    assert_eq!(tape.len(), n0 + 5);
    // x' = [-0.5, 1]: (L x')₀ = -0.25, (L x')₁ = 0.5 + 2 = 2.5.
    assert_eq!(q.val(), 0.0625 + 6.25);
}

#[test]
fn logsumexp_edge_cases() {
    assert_eq!(f64::logsumexp(&[]), f64::NEG_INFINITY);
    assert_eq!(f64::logsumexp(&[f64::NEG_INFINITY; 2]), f64::NEG_INFINITY);
    // The gradient of a constant result is zero, not NaN.
    fn f<S: Real>(x: &[S]) -> S {
        S::logsumexp(&[x[0] * 0.0 + f64::NEG_INFINITY, S::cst(f64::NEG_INFINITY)])
    }
    let g = gradient(shade_fn!(f(&[S])), &[1.0], ()).unwrap();
    assert_eq!(g, [0.0]);
}

/// `‖L x‖²` of order 34 (above the sweep's stack buffer for `x̄`) and of order 3, over
/// one input vector `[L packed, x]`.
fn tri_sq_order<S: Real>(v: &[S]) -> S {
    let n = if v.len() == 34 * 35 / 2 + 34 { 34 } else { 3 };
    let (l, x) = v.split_at(n * (n + 1) / 2);
    S::lower_tri_matvec_sum_sq(l, x)
}

#[test]
fn lower_tri_matvec_sum_sq_large_order_matches_hand_gradient() {
    for n in [3usize, 34] {
        let nl = n * (n + 1) / 2;
        let v: Vec<f64> = (0..nl + n).map(|i| (0.37 * i as f64).sin()).collect();
        let (l, x) = v.split_at(nl);
        let g = gradient(shade_fn!(tri_sq_order(&[S])), &v, ()).unwrap();
        // y = L x; ∂/∂L[r][j] = 2 y_r x_j, ∂/∂x_j = 2 Σ_r L[r][j] y_r.
        let mut want = vec![0.0; nl + n];
        let mut off = 0;
        for r in 0..n {
            let y: f64 = (0..=r).map(|j| l[off + j] * x[j]).sum();
            for j in 0..=r {
                want[off + j] = 2.0 * y * x[j];
                want[nl + j] += 2.0 * l[off + j] * y;
            }
            off += r + 1;
        }
        for (a, b) in g.iter().zip(&want) {
            assert!(close(*a, *b, 1e-12), "order {n}: {a} vs {b}");
        }
    }
}

#[test]
fn constant_offsets_share_their_operand_record() {
    let mut tape = Tape::<f64>::new();
    let (x, y) = {
        let t = tape.trace();
        let x = t.var(2.0);
        let n0 = tape.len();
        let s = (x + 1.0) - 3.0;
        // No record: `s` is `x`'s record with its own value.
        assert_eq!(tape.len(), n0);
        assert_eq!((s.val(), s.id()), (0.0, x.id()));
        // A product of shifted values stores its partials (one record).
        let y = s * (x + 0.5);
        assert_eq!(tape.len(), n0 + 1);
        assert_eq!(y.val(), 0.0);
        (x.id().unwrap(), y.id().unwrap())
    };
    // y = (x - 2)(x + 0.5): y' = 2x - 1.5 = 2.5 at x = 2.
    let adj = tape.backward(y, 1.0).unwrap();
    assert_eq!(adj[x.index()], 2.5);
}
