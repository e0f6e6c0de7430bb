//! The fused n-ary helpers of `Real` (`sum_sq`, `logsumexp`, `lower_tri_matvec`, and
//! `dot` with one constant side): values match plain `f64` references, and the reverse
//! gradient = forward tangents = central differences, with operands recorded
//! contiguously, gathered, or mixed with constants. Each records one tape entry.

use proptest::prelude::*;
use shade_autodiff::scalar::{
    Real, ScalarFn, Slice, Tangent, Tape, autodiff, gradient, jacobian_forward, jacobian_reverse,
    shade_fn,
};
use shade_autodiff::{Duplicated, Forward};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

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
