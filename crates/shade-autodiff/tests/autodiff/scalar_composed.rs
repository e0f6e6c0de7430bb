//! Random expression trees, evaluated generically: reverse = forward = finite
//! differences, forward-over-reverse Hessian-vector products = differences of gradients,
//! chunked-forward Jacobians = reverse Jacobians, and `Duplicated` shadows accumulate.

use proptest::prelude::*;
use shade_autodiff::scalar::{
    Real, ScalarFn, Tangent, autodiff, gradient, hessian, hvp, jacobian_forward,
    jacobian_forward_inplace, jacobian_reverse, jacobian_reverse_inplace, pullback,
    pullback_inplace, pushforward, pushforward_inplace, shade_fn,
};
use shade_autodiff::{Active, Const, Duplicated, Forward, Reverse};
use shade_test_support::close;

/// Number of variables the expressions read (more than one forward chunk).
const NV: usize = 11;

#[derive(Clone, Debug)]
enum Expr {
    X(usize),
    C(f64),
    Add(Box<Expr>, Box<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    Mul(Box<Expr>, Box<Expr>),
    /// `a / (1 + b²)`: smooth everywhere.
    Div(Box<Expr>, Box<Expr>),
    Sin(Box<Expr>),
    Tanh(Box<Expr>),
    /// `exp(sin a)`: bounded.
    ExpSin(Box<Expr>),
    /// `ln(1 + a²)`.
    LnSq(Box<Expr>),
    /// `sqrt(1 + a²)`.
    SqrtSq(Box<Expr>),
    Powi(Box<Expr>, i32),
}

fn eval<S: Real>(e: &Expr, x: &[S]) -> S {
    use Expr::*;
    match e {
        X(i) => x[*i],
        C(c) => S::cst(*c),
        Add(a, b) => eval(a, x) + eval(b, x),
        Sub(a, b) => eval(a, x) - eval(b, x),
        Mul(a, b) => eval(a, x) * eval(b, x),
        Div(a, b) => {
            let b = eval(b, x);
            eval(a, x) / (b * b + 1.0)
        }
        Sin(a) => eval(a, x).sin(),
        Tanh(a) => eval(a, x).tanh(),
        ExpSin(a) => eval(a, x).sin().exp(),
        LnSq(a) => {
            let a = eval(a, x);
            (a * a).ln_1p()
        }
        SqrtSq(a) => {
            let a = eval(a, x);
            (a * a + 1.0).sqrt()
        }
        Powi(a, n) => eval(a, x).powi(*n),
    }
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![(0..NV).prop_map(Expr::X), (-2.0..2.0f64).prop_map(Expr::C),];
    leaf.prop_recursive(5, 48, 2, |inner| {
        let b = || inner.clone().prop_map(Box::new);
        prop_oneof![
            (b(), b()).prop_map(|(a, c)| Expr::Add(a, c)),
            (b(), b()).prop_map(|(a, c)| Expr::Sub(a, c)),
            (b(), b()).prop_map(|(a, c)| Expr::Mul(a, c)),
            (b(), b()).prop_map(|(a, c)| Expr::Div(a, c)),
            b().prop_map(Expr::Sin),
            b().prop_map(Expr::Tanh),
            b().prop_map(Expr::ExpSin),
            b().prop_map(Expr::LnSq),
            b().prop_map(Expr::SqrtSq),
            (b(), 2..4i32).prop_map(|(a, n)| Expr::Powi(a, n)),
        ]
    })
}

fn point() -> impl Strategy<Value = Vec<f64>> {
    proptest::collection::vec(-1.5..1.5f64, NV)
}

fn objective<S: Real>(x: &[S], e: &Expr) -> S {
    eval(e, x)
}

fn outputs<S: Real>(y: &mut [S], x: &[S], es: &Vec<Expr>) {
    for (yi, e) in y.iter_mut().zip(es) {
        *yi = eval(e, x);
    }
}

/// The same outputs returned: the Jacobian's row count is the function's own.
#[allow(
    clippy::ptr_arg,
    reason = "the context is `Const(&es)` with `es: Vec<Expr>`, as for `outputs`"
)]
fn returned<S: Real>(x: &[S], es: &Vec<Expr>) -> Vec<S> {
    es.iter().map(|e| eval(e, x)).collect()
}

/// Whether `exact` agrees with a central difference `d(h)` of a smooth function.
///
/// Random expression trees can oscillate fast (`sin` of a ninth-degree polynomial), so
/// a fixed tolerance on one difference is flaky: its truncation error `O(h²)` can reach
/// 1e-5 relative. Richardson extrapolation from `d(h/2)` and `d(h/4)` cancels the `h²`
/// term, and `|d(h/2) - d(h/4)|` estimates what is left, so the bound adapts to the
/// function instead of being loosened for all of them. Where the differences have not
/// reached their asymptotic regime at these steps (halving `h` does not shrink the
/// change about fourfold: the function turns faster than `h` resolves), differences
/// cannot judge the derivative and the point is not counted; forward against reverse
/// mode still is.
fn agrees_with_differences(exact: f64, d: impl Fn(f64) -> f64, h: f64, tol: f64) -> bool {
    let (d1, d2, d3) = (d(h), d(h / 2.0), d(h / 4.0));
    let (e1, e2) = (d1 - d2, d2 - d3);
    let noise = 1e-9 * (1.0 + d2.abs());
    if e2.abs() > 0.5 * e1.abs() + noise {
        return true;
    }
    let extrapolated = (4.0 * d3 - d2) / 3.0;
    (exact - extrapolated).abs() <= tol * (1.0 + exact.abs()) + e2.abs()
}

proptest! {
    #[test]
    fn reverse_equals_forward_equals_differences(e in expr(), x in point()) {
        let f = shade_fn!(objective(&[S], &Expr));
        let g = gradient(f, &x, (Const(&e),)).unwrap();
        for i in 0..NV {
            let mut t = [0.0; NV];
            t[i] = 1.0;
            let d = autodiff(Forward, f, Tangent, (Duplicated(&x[..], &mut t[..]), Const(&e))).unwrap();
            prop_assert!(close(g[i], d, 1e-10), "reverse {} forward {}", g[i], d);
            let central = |h: f64| {
                let (mut xp, mut xm) = (x.clone(), x.clone());
                xp[i] += h;
                xm[i] -= h;
                (eval(&e, &xp) - eval(&e, &xm)) / (2.0 * h)
            };
            prop_assert!(
                agrees_with_differences(g[i], central, 1e-5, 1e-6),
                "reverse {} differences {} (h = 1e-5) {} (h = 5e-6)",
                g[i],
                central(1e-5),
                central(5e-6)
            );
        }
    }

    #[test]
    fn hvp_equals_differences_of_gradients(e in expr(), x in point(), v in point()) {
        let f = shade_fn!(objective(&[S], &Expr));
        let hv = hvp(f, &x, &v, (Const(&e),)).unwrap();
        let central = |h: f64| {
            let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
            let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
            let gp = gradient(f, &xp, (Const(&e),)).unwrap();
            let gm = gradient(f, &xm, (Const(&e),)).unwrap();
            gp.iter().zip(&gm).map(|(p, m)| (p - m) / (2.0 * h)).collect::<Vec<_>>()
        };
        let (d1, d2, d3) = (central(1e-4), central(5e-5), central(2.5e-5));
        let pick = |i: usize, h: f64| if h == 1e-4 { d1[i] } else if h == 5e-5 { d2[i] } else { d3[i] };
        for i in 0..NV {
            prop_assert!(
                agrees_with_differences(hv[i], |h| pick(i, h), 1e-4, 1e-5),
                "hvp {} differences {} (h = 1e-4) {} (h = 5e-5) at {}",
                hv[i],
                d1[i],
                d2[i],
                i
            );
        }
        // The Hessian's columns are Hessian-vector products with unit vectors.
        let hess = hessian(f, &x, (Const(&e),)).unwrap();
        for i in 0..NV {
            let row: f64 = (0..NV).map(|j| hess[i * NV + j] * v[j]).sum();
            prop_assert!(close(row, hv[i], 1e-9));
        }
    }

    #[test]
    fn duplicated_accumulates(e in expr(), x in point()) {
        let f = shade_fn!(objective(&[S], &Expr));
        let mut dx = vec![0.0; NV];
        autodiff(Reverse, f, Active(1.0), (Duplicated(&x[..], &mut dx[..]), Const(&e))).unwrap();
        let once = dx.clone();
        autodiff(Reverse, f, Active(1.0), (Duplicated(&x[..], &mut dx[..]), Const(&e))).unwrap();
        for (a, b) in dx.iter().zip(&once) {
            prop_assert_eq!(*a, 2.0 * b);
        }
        // The seed scales the adjoints.
        let mut d3 = [0.0; NV];
        autodiff(Reverse, f, Active(3.0), (Duplicated(&x[..], &mut d3[..]), Const(&e))).unwrap();
        for (a, b) in d3.iter().zip(&once) {
            prop_assert!(close(*a, 3.0 * b, 1e-14));
        }
    }

    /// Both forms, both modes, `m` from 1 to 14 against `n = 11` inputs (fewer, as many
    /// rows as one forward chunk and more outputs than inputs): forward Jacobian = reverse
    /// Jacobian = central differences, the row count inferred from what the function
    /// returns (one-argument form) or from `y` (in place).
    #[test]
    fn forward_and_reverse_jacobians_agree_with_differences(
        es in proptest::collection::vec(expr(), 1..15),
        x in point(),
        dx in point(),
    ) {
        let f = shade_fn!(returned(&[S], &Vec<Expr>) -> Vec<S>);
        let g = shade_fn!(outputs(&mut [S], &[S], &Vec<Expr>));
        let m = es.len();
        let (yf, jf) = jacobian_forward(f, &x, (Const(&es),)).unwrap();
        let (yr, jr) = jacobian_reverse(f, &x, (Const(&es),)).unwrap();
        prop_assert_eq!((yf.len(), jf.len()), (m, m * NV));
        prop_assert_eq!(&yf, &yr);
        let mut y = vec![0.0; m];
        let jfi = jacobian_forward_inplace(g, &mut y, &x, (Const(&es),)).unwrap();
        prop_assert_eq!(&y, &yf);
        let jri = jacobian_reverse_inplace(g, &mut y, &x, (Const(&es),)).unwrap();
        for k in 0..m * NV {
            prop_assert!(close(jf[k], jr[k], 1e-10), "forward {} reverse {}", jf[k], jr[k]);
            prop_assert_eq!(jf[k], jfi[k]);
            prop_assert_eq!(jr[k], jri[k]);
            let (r, i) = (k / NV, k % NV);
            let central = |h: f64| {
                let (mut xp, mut xm) = (x.clone(), x.clone());
                xp[i] += h;
                xm[i] -= h;
                (eval(&es[r], &xp) - eval(&es[r], &xm)) / (2.0 * h)
            };
            prop_assert!(
                agrees_with_differences(jr[k], central, 1e-5, 1e-6),
                "J[{}, {}] = {} differences {} (h = 1e-5) {} (h = 5e-6)",
                r, i, jr[k], central(1e-5), central(5e-6)
            );
        }
        // Pushforward = J dx and pullback = Jᵀ dy with the same Jacobian, in both forms.
        let (_, jdx) = pushforward(f, &x, &dx, (Const(&es),)).unwrap();
        let jdx_in = pushforward_inplace(g, &mut y, &x, &dx, (Const(&es),)).unwrap();
        for r in 0..m {
            let want: f64 = (0..NV).map(|i| jr[r * NV + i] * dx[i]).sum();
            prop_assert!(close(jdx[r], want, 1e-10));
            prop_assert!(close(jdx_in[r], want, 1e-10));
        }
        let dy: Vec<f64> = (0..m).map(|r| r as f64 - 0.5).collect();
        let (_, jtdy) = pullback(f, &x, &dy, (Const(&es),)).unwrap();
        let jtdy_in = pullback_inplace(g, &mut y, &x, &dy, (Const(&es),)).unwrap();
        for i in 0..NV {
            let want: f64 = (0..m).map(|r| jr[r * NV + i] * dy[r]).sum();
            prop_assert!(close(jtdy[i], want, 1e-10));
            prop_assert!(close(jtdy_in[i], want, 1e-10));
        }
    }
}

#[test]
fn scalar_fn_called_with_f64_is_the_primal() {
    let e = Expr::Mul(
        Box::new(Expr::X(0)),
        Box::new(Expr::Sin(Box::new(Expr::X(1)))),
    );
    let f = shade_fn!(objective(&[S], &Expr));
    let x = [2.0, 0.5];
    assert_eq!(f.call::<f64>((&x[..], &e)), 2.0 * 0.5f64.sin());
}
