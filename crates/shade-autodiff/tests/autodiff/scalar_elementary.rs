//! Every elementary function of `Real`: the reverse gradient, the forward tangents and
//! central finite differences agree, within a tolerance chosen per function, on a domain
//! where the function is smooth.

use proptest::prelude::*;
use shade_autodiff::scalar::{Real, ScalarFn, Slice, Tangent, autodiff, gradient, shade_fn};
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
        prop_assert!(
            close(g[i], d, 1e-12),
            "reverse {} vs forward {} at {:?}",
            g[i],
            d,
            x
        );
        let h = 1e-5 * x[i].abs().max(1.0);
        let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
        xp[i] += h;
        xm[i] -= h;
        let fd = (f.call::<f64>((&xp[..],)) - f.call::<f64>((&xm[..],))) / (2.0 * h);
        prop_assert!(
            close(g[i], fd, tol),
            "reverse {} vs differences {} at {:?}",
            g[i],
            fd,
            x
        );
    }
    Ok(())
}

macro_rules! unary {
    ($($name:ident: |$a:ident| $body:expr, $dom:expr, $tol:expr;)*) => {$(
        proptest! {
            #[test]
            fn $name(x in $dom) {
                fn f<S: Real>(x: &[S]) -> S {
                    let $a = x[0];
                    $body
                }
                check(shade_fn!(f(&[S])), &[x], $tol)?;
            }
        }
    )*};
}

macro_rules! binary {
    ($($name:ident: |$a:ident, $b:ident| $body:expr, $da:expr, $db:expr, $tol:expr;)*) => {$(
        proptest! {
            #[test]
            fn $name(x in $da, y in $db) {
                fn f<S: Real>(x: &[S]) -> S {
                    let ($a, $b) = (x[0], x[1]);
                    $body
                }
                check(shade_fn!(f(&[S])), &[x, y], $tol)?;
            }
        }
    )*};
}

unary! {
    neg: |a| -a, -5.0..5.0, 1e-7;
    add_const: |a| a + 2.5, -5.0..5.0, 1e-7;
    sub_const: |a| a - 2.5, -5.0..5.0, 1e-7;
    mul_const: |a| a * 2.5, -5.0..5.0, 1e-7;
    div_const: |a| a / 2.5, -5.0..5.0, 1e-7;
    cst_left: |a| S::cst(3.0) - a * a, -5.0..5.0, 1e-7;
    powi_3: |a| a.powi(3), -3.0..3.0, 1e-7;
    powi_neg2: |a| a.powi(-2), 0.3..3.0, 1e-6;
    powi_0: |a| a.powi(0) + a, -3.0..3.0, 1e-7;
    sqrt: |a| a.sqrt(), 0.1..5.0, 1e-6;
    cbrt_pos: |a| a.cbrt(), 0.1..5.0, 1e-6;
    cbrt_neg: |a| a.cbrt(), -5.0..-0.1, 1e-6;
    exp: |a| a.exp(), -3.0..3.0, 1e-7;
    exp2: |a| a.exp2(), -3.0..3.0, 1e-7;
    exp_m1: |a| a.exp_m1(), -3.0..3.0, 1e-7;
    ln: |a| a.ln(), 0.1..5.0, 1e-6;
    ln_1p: |a| a.ln_1p(), -0.8..5.0, 1e-6;
    log2: |a| a.log2(), 0.1..5.0, 1e-6;
    log10: |a| a.log10(), 0.1..5.0, 1e-6;
    recip: |a| a.recip(), 0.2..5.0, 1e-6;
    sin: |a| a.sin(), -3.0..3.0, 1e-7;
    cos: |a| a.cos(), -3.0..3.0, 1e-7;
    sin_cos: |a| { let (s, c) = a.sin_cos(); s * 2.0 + c }, -3.0..3.0, 1e-7;
    tan: |a| a.tan(), -1.2..1.2, 1e-6;
    asin: |a| a.asin(), -0.9..0.9, 1e-6;
    acos: |a| a.acos(), -0.9..0.9, 1e-6;
    atan: |a| a.atan(), -5.0..5.0, 1e-7;
    sinh: |a| a.sinh(), -3.0..3.0, 1e-7;
    cosh: |a| a.cosh(), -3.0..3.0, 1e-7;
    tanh: |a| a.tanh(), -3.0..3.0, 1e-7;
    asinh: |a| a.asinh(), -5.0..5.0, 1e-7;
    acosh: |a| a.acosh(), 1.1..5.0, 1e-6;
    atanh: |a| a.atanh(), -0.9..0.9, 1e-6;
    abs_neg: |a| a.abs(), -3.0..-0.1, 1e-7;
    abs_pos: |a| a.abs(), 0.1..3.0, 1e-7;
    to_degrees: |a| a.to_degrees(), -3.0..3.0, 1e-7;
    to_radians: |a| a.to_radians(), -100.0..100.0, 1e-7;
    fract: |a| a.fract(), 1.1..1.9, 1e-7;
    floor: |a| a.floor() + a, 1.1..1.9, 1e-7;
    ceil: |a| a.ceil() * a, 1.1..1.9, 1e-7;
    round: |a| a.round() * a, 1.1..1.4, 1e-7;
    trunc: |a| a.trunc() * a, 1.1..1.9, 1e-7;
    signum: |a| a.signum() * a, -3.0..-0.1, 1e-7;
    // The value is a Chebyshev fit (relative error 1.2e-7): the derivative is exact, so
    // differences of the fit are compared loosely.
    erf: |a| a.erf(), -3.0..3.0, 2e-5;
    sum_of: |a| S::sum_of(&[a, a * a, S::cst(2.0)]), -3.0..3.0, 1e-7;
}

binary! {
    add: |a, b| a + b, -5.0..5.0, -5.0..5.0, 1e-7;
    sub: |a, b| a - b, -5.0..5.0, -5.0..5.0, 1e-7;
    mul: |a, b| a * b, -5.0..5.0, -5.0..5.0, 1e-7;
    div: |a, b| a / b, -5.0..5.0, 0.5..5.0, 1e-6;
    rem: |a, b| a % b, 5.1..5.9, 2.1..2.4, 1e-6;
    powf: |a, b| a.powf(b), 0.5..3.0, -2.0..2.0, 1e-6;
    log: |a, b| a.log(b), 0.5..3.0, 1.5..4.0, 1e-6;
    atan2: |a, b| a.atan2(b), 0.5..2.0, -2.0..2.0, 1e-6;
    hypot: |a, b| a.hypot(b), 0.5..2.0, -2.0..-0.5, 1e-6;
    max: |a, b| a.max(b) * a, 0.0..1.0, 2.0..3.0, 1e-7;
    min: |a, b| a.min(b) * b, 0.0..1.0, 2.0..3.0, 1e-7;
    mul_add: |a, b| a.mul_add(b, a * a), -3.0..3.0, -3.0..3.0, 1e-7;
    copysign: |a, b| a.copysign(b) * b, 0.5..2.0, -2.0..-0.5, 1e-7;
    dot_gather: |a, b| S::dot(&[b, a, S::cst(2.0)], &[a, a, b]), -3.0..3.0, -3.0..3.0, 1e-7;
    dot_range: |a, b| S::dot(&[a, b], &[a, b]), -3.0..3.0, -3.0..3.0, 1e-7;
}

#[test]
fn comparisons_and_constants_use_values() {
    fn f<S: Real>(x: &[S]) -> S {
        // Branching on values is allowed and differentiates the taken branch.
        if x[0] > x[1] {
            x[0] * S::PI()
        } else {
            x[1] * S::E()
        }
    }
    let g = gradient(shade_fn!(f(&[S])), &[2.0, 1.0], ()).unwrap();
    assert_eq!(g, [core::f64::consts::PI, 0.0]);
    let g = gradient(shade_fn!(f(&[S])), &[1.0, 2.0], ()).unwrap();
    assert_eq!(g, [0.0, core::f64::consts::E]);
}
