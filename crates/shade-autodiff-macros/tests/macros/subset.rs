//! Every row of the differentiable subset: the generated derivatives (reverse and
//! forward) against the tape and central differences, on random inputs, including
//! loops with data-dependent trip counts and branches.

use crate::check::check;
use crate::docs::Softplus;
use crate::{row, twin};
use proptest::prelude::*;
use shade_autodiff::scalar::Real;
use shade_autodiff::{autodiff_forward, autodiff_reverse};

/// The float type of the plain versions (the twins are generic over `S: Real`).
type S = f64;

twin! {
    /// Arithmetic and every elementary function (inputs in (0.2, 0.8)).
    #[autodiff_reverse(d_elementary, Duplicated, Active)]
    #[autodiff_forward(t_elementary, Dual, Dual)]
    fn elementary / elementary_g(x) {
        let a = x[0];
        let b = x[1];
        let c = x[2];
        let mut y = a * b - c / a + -b;
        y += a.exp() + b.exp2() + c.exp_m1() + a.ln() + b.ln_1p() + c.log2() + a.log10();
        y += a.sqrt() + b.cbrt() + c.sin() + a.cos() + b.tan();
        y += a.asin() + b.acos() + c.atan() + a.sinh() + b.cosh() + c.tanh();
        y += a.asinh() + (b + 1.5).acosh() + c.atanh() + (a - 0.5).abs() + b.recip();
        y += a.powi(3) + b.powf(S::cst(2.5)) + a.powf(b) + c.atan2(a) + a.hypot(b);
        y += a.max(b) + S::min(b, c) + a.log(b + 2.0) + a.mul_add(b, c) + Real::erf(c);
        y += a.to_degrees() * 0.01 + b.to_radians() + c.floor() + a * S::cst(2.0);
        y
    }
}

twin! {
    /// `let`, reassignment, compound assignment and shadowing.
    #[autodiff_reverse(d_bindings, Duplicated, Active)]
    #[autodiff_forward(t_bindings, Dual, Dual)]
    fn bindings / bindings_g(x) {
        let mut s = x[0] * x[1];
        s += x[2];
        s -= x[0] * 0.5;
        s *= x[1];
        s /= x[2] + 3.0;
        let t = s * s;
        let t = t + s.sin();
        let mut u = t;
        u = u * x[0] + t;
        u
    }
}

twin! {
    /// Slices, local arrays and `Vec`s: reads, writes, `+=` with computed indices.
    #[autodiff_reverse(d_arrays, Duplicated, Active)]
    #[autodiff_forward(t_arrays, Dual, Dual)]
    fn arrays / arrays_g(x) {
        let n = x.len();
        let mut v = vec![S::cst(0.0); 2 * n];
        let mut m = [S::cst(0.0); 3];
        for i in 0..n {
            v[2 * i] = x[i] * x[i];
            v[2 * i + 1] += x[(i + 1) % n] * 3.0;
            m[i % 3] += v[2 * i] * x[i];
        }
        v[0] = v[0] * v[1];
        let mut acc = m[0] + m[1] * m[2];
        for k in 0..2 * n {
            acc += v[k] * v[(k + 3) % (2 * n)];
        }
        acc
    }
}

twin! {
    /// `for` over ranges: reversed, inclusive, nested with a bound on the outer index.
    #[autodiff_reverse(d_ranges, Duplicated, Active)]
    #[autodiff_forward(t_ranges, Dual, Dual)]
    fn ranges / ranges_g(x) {
        let n = x.len();
        let mut acc = S::cst(0.0);
        for i in (0..n).rev() {
            acc = acc * 0.5 + x[i];
        }
        for i in 0..n {
            for j in 0..=i {
                acc += x[i] * x[j] * 0.1;
            }
        }
        acc
    }
}

twin! {
    /// `for` over `iter()`, `zip`, `enumerate`, `windows`, `chunks_exact`, `iter_mut`.
    #[autodiff_reverse(d_iterators, Duplicated, Active)]
    #[autodiff_forward(t_iterators, Dual, Dual)]
    fn iterators / iterators_g(x) {
        let mut acc = S::cst(0.0);
        for (i, xi) in x.iter().enumerate() {
            acc += *xi * (i as f64 + 1.0);
        }
        for (a, b) in x.iter().zip(x.iter()) {
            acc += *a * *b;
        }
        for w in x.windows(2) {
            acc += (w[1] - w[0]) * (w[1] - w[0]);
        }
        for c in x.chunks_exact(2) {
            acc += c[0] * c[1];
        }
        let mut t = [S::cst(0.0); 4];
        for (k, tk) in t.iter_mut().enumerate() {
            *tk = x[k] * acc;
        }
        for &tk in t.iter() {
            acc += tk * tk;
        }
        acc
    }
}

twin! {
    /// `while` with a data-dependent trip count: `ln(x² + 1)` computed by halving.
    #[autodiff_reverse(d_halving, Duplicated, Active)]
    #[autodiff_forward(t_halving, Dual, Dual)]
    fn halving / halving_g(x) {
        let mut r = x[0] * x[0] * 40.0 + x[1] * x[1] + 1.0;
        let mut k = 0;
        while r > S::cst(2.0) {
            r = r * 0.5;
            k += 1;
        }
        r.ln() + (k as f64) * 2f64.ln()
    }
}

twin! {
    /// `loop` with `break`: Newton's iteration for `√a`, stopped on convergence.
    #[autodiff_reverse(d_newton, Duplicated, Active)]
    #[autodiff_forward(t_newton, Dual, Dual)]
    fn newton / newton_g(x) {
        let a = x[0] * x[0] + 0.5;
        let mut y = a;
        let mut iters = 0;
        loop {
            let next = (y + a / y) * 0.5;
            iters += 1;
            if (next - y).abs() < S::cst(1e-13) || iters > 60 {
                y = next;
                break;
            }
            y = next;
        }
        y * x[1]
    }
}

twin! {
    /// `if`/`else`, `if` as a value, `match` on a value computed from the data.
    #[autodiff_reverse(d_branches, Duplicated, Active)]
    #[autodiff_forward(t_branches, Dual, Dual)]
    fn branches / branches_g(x) {
        let mut acc = S::cst(0.0);
        for i in 0..x.len() {
            let v = if x[i] > S::cst(0.0) { x[i] * x[i] } else { -x[i] * 0.5 };
            if v > S::cst(0.1) {
                acc += v.sin();
            } else {
                acc -= v * x[0];
            }
            // A branch key from the value: read detached (a constant by request).
            let k = ((x[i].detach().value() + 1.0) * 2.0) as i64;
            match k {
                0 => acc += x[i] * 3.0,
                1 | 2 => acc = acc * x[i],
                _ => {
                    acc += x[i].exp();
                }
            }
        }
        acc
    }
}

twin! {
    /// Early `return`, at the top level and from inside a loop.
    #[autodiff_reverse(d_early, Duplicated, Active)]
    #[autodiff_forward(t_early, Dual, Dual)]
    fn early / early_g(x) {
        if x[0] < S::cst(-0.5) {
            return x[1] * x[1];
        }
        let mut acc = x[0];
        for i in 1..x.len() {
            acc = acc * x[i] + 0.5;
            if acc > S::cst(1.5) {
                return acc * 2.0;
            }
        }
        acc.exp()
    }
}

twin! {
    /// A function with a custom rule.
    #[autodiff_reverse(d_custom, Duplicated, Active)]
    #[autodiff_forward(t_custom, Dual, Dual)]
    fn custom / custom_g(x) {
        S::custom(&Softplus, [x[0] * 2.0]) * x[1] + S::custom(&Softplus, [x[1]])
    }
}

/// A term of a sum, marked itself: its derivative is called.
#[autodiff_reverse(d_term, Duplicated, Const, Active)]
#[autodiff_forward(t_term, Dual, Const, Dual)]
fn term(x: &[f64], i: usize) -> f64 {
    let a = x[i] - x[(i + 1) % x.len()];
    a * a + x[i].sin()
}

/// A scalar helper with an `Active` argument.
#[autodiff_reverse(d_sq, Active, Active)]
#[autodiff_forward(t_sq, Dual, Dual)]
fn sq(v: f64) -> f64 {
    v * v * v
}

#[autodiff_reverse(d_calls, Duplicated, Active)]
#[autodiff_forward(t_calls, Dual, Dual)]
fn calls(x: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..x.len() {
        total += term(x, i);
        total += sq(x[i] * 0.5) * x[0];
    }
    total
}

fn term_g<S: Real>(x: &[S], i: usize) -> S {
    let a = x[i] - x[(i + 1) % x.len()];
    a * a + x[i].sin()
}

fn calls_g<S: Real>(x: &[S]) -> S {
    let mut total = S::zero();
    for i in 0..x.len() {
        total += term_g(x, i);
        let h = x[i] * 0.5;
        total += h * h * h * x[0];
    }
    total
}

fn vec_in(lo: f64, hi: f64, n: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(lo..hi, n)
}

proptest! {
    #![proptest_config(shade_test_support::strategies::cases(64))]

    #[test]
    fn elementary_functions(x in vec_in(0.2, 0.8, 3)) {
        prop_assume!((x[0] - 0.5).abs() > 1e-3 && (x[0] - x[1]).abs() > 1e-3 && (x[1] - x[2]).abs() > 1e-3);
        check(&row!("elementary", elementary, d_elementary, t_elementary, elementary_g), &x, 1e-5)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn bindings_and_compound_assignment(x in vec_in(-1.0, 1.0, 3)) {
        check(&row!("bindings", bindings, d_bindings, t_bindings, bindings_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn arrays_with_computed_indices(x in vec_in(-1.0, 1.0, 5)) {
        check(&row!("arrays", arrays, d_arrays, t_arrays, arrays_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn range_loops(x in vec_in(-1.0, 1.0, 6)) {
        check(&row!("ranges", ranges, d_ranges, t_ranges, ranges_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn iterator_loops(x in vec_in(-1.0, 1.0, 6)) {
        check(&row!("iterators", iterators, d_iterators, t_iterators, iterators_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn while_with_data_dependent_trip_count(x in vec_in(-3.0, 3.0, 2)) {
        check(&row!("halving", halving, d_halving, t_halving, halving_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn loop_with_break(x in vec_in(-2.0, 2.0, 2)) {
        check(&row!("newton", newton, d_newton, t_newton, newton_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn branches_on_values(x in vec_in(-1.0, 1.0, 4)) {
        // Away from the kinks, where differences straddle a branch.
        for &v in &x {
            prop_assume!(v.abs() > 1e-3 && (v * v - 0.1).abs() > 1e-3 && (-v * 0.5 - 0.1).abs() > 1e-3);
            prop_assume!((((v + 1.0) * 2.0) - ((v + 1.0) * 2.0).round()).abs() > 1e-3);
        }
        check(&row!("branches", branches, d_branches, t_branches, branches_g), &x, 1e-5)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn early_returns(x in vec_in(-1.0, 1.5, 4)) {
        check(&row!("early", early, d_early, t_early, early_g), &x, 1e-5)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn custom_rules(x in vec_in(-2.0, 2.0, 2)) {
        check(&row!("custom", custom, d_custom, t_custom, custom_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn calls_of_attributed_functions(x in vec_in(-1.0, 1.0, 5)) {
        check(&row!("calls", calls, d_calls, t_calls, calls_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
        // The helpers' own derivatives, `Active` argument included.
        let (v, d) = d_sq(0.7, 2.0);
        prop_assert!(v == sq(0.7) && (d - 2.0 * 3.0 * 0.49).abs() < 1e-12);
        let (v, t) = t_sq(0.7, 1.0);
        prop_assert!(v == sq(0.7) && (t - 3.0 * 0.49).abs() < 1e-12);
        let mut dx = vec![0.0; x.len()];
        let y = d_term(&x, &mut dx, 2, 1.0);
        let (yf, tf) = t_term(&x, &{ let mut e = vec![0.0; x.len()]; e[2] = 1.0; e }, 2);
        prop_assert!(y == term(&x, 2) && yf == y && (tf - dx[2]).abs() < 1e-12);
    }
}
