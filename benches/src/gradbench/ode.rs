//! GradBench `ode`: `y(2)` of `y₀' = x₀`, `yᵢ' = xᵢ · yᵢ₋₁`, `y(0) = 0`, by `s` steps of
//! the classical Runge–Kutta method (`primal`), and the gradient of the last component
//! with respect to `x` (`gradient`), by reverse mode through the steps.

// Index loops are the form the compile-time engine differentiates.
#![allow(clippy::needless_range_loop)]

use shade_autodiff::autodiff_reverse;
use shade_autodiff::scalar::{Real, shade_fn};

/// The right-hand side `z = f(x, y)`. The compile-time form.
#[autodiff_reverse(d_rhs, Duplicated, Duplicated, Duplicated)]
pub fn rhs(x: &[f64], y: &[f64], z: &mut [f64]) {
    z[0] = x[0];
    for i in 1..x.len() {
        z[i] = x[i] * y[i - 1];
    }
}

/// Integrates from 0 to 2 in `s` steps, writing `y(2)` into `y` (`y.len() = x.len()`).
/// The compile-time form: its reverse derivative with the shadow of `y` set to the last
/// unit vector is the eval's gradient.
#[autodiff_reverse(d_ode, Duplicated, Const, Duplicated)]
pub fn ode(x: &[f64], s: usize, y: &mut [f64]) {
    let n = x.len();
    let h = 2.0 / s as f64;
    let mut k1 = vec![0.0; n];
    let mut k2 = vec![0.0; n];
    let mut k3 = vec![0.0; n];
    let mut k4 = vec![0.0; n];
    let mut tmp = vec![0.0; n];
    for i in 0..n {
        y[i] = 0.0;
    }
    for _step in 0..s {
        rhs(x, y, &mut k1);
        for i in 0..n {
            tmp[i] = y[i] + k1[i] * (h / 2.0);
        }
        rhs(x, &tmp, &mut k2);
        for i in 0..n {
            tmp[i] = y[i] + k2[i] * (h / 2.0);
        }
        rhs(x, &tmp, &mut k3);
        for i in 0..n {
            tmp[i] = y[i] + k3[i] * h;
        }
        rhs(x, &tmp, &mut k4);
        for i in 0..n {
            y[i] += k1[i] * (h / 6.0) + k2[i] * (h / 3.0) + k3[i] * (h / 3.0) + k4[i] * (h / 6.0);
        }
    }
}

fn rhs_tape<S: Real>(x: &[S], y: &[S], z: &mut [S]) {
    z[0] = x[0];
    for i in 1..x.len() {
        z[i] = x[i] * y[i - 1];
    }
}

/// [`ode`] for any [`Real`]: the tape's form (each step's weighted sum of the four
/// stages is one dot product).
pub fn ode_tape<S: Real>(y: &mut [S], x: &[S], s: usize) {
    let n = x.len();
    let h = 2.0 / s as f64;
    let mut k = [
        vec![S::zero(); n],
        vec![S::zero(); n],
        vec![S::zero(); n],
        vec![S::zero(); n],
    ];
    let mut tmp = vec![S::zero(); n];
    y.fill(S::zero());
    let weights = [
        S::cst(h / 6.0),
        S::cst(h / 3.0),
        S::cst(h / 3.0),
        S::cst(h / 6.0),
    ];
    for _ in 0..s {
        rhs_tape(x, y, &mut k[0]);
        for i in 0..n {
            tmp[i] = y[i] + k[0][i] * (h / 2.0);
        }
        rhs_tape(x, &tmp, &mut k[1]);
        for i in 0..n {
            tmp[i] = y[i] + k[1][i] * (h / 2.0);
        }
        rhs_tape(x, &tmp, &mut k[2]);
        for i in 0..n {
            tmp[i] = y[i] + k[2][i] * h;
        }
        rhs_tape(x, &tmp, &mut k[3]);
        for i in 0..n {
            y[i] += S::dot(&[k[0][i], k[1][i], k[2][i], k[3][i]], &weights);
        }
    }
}

/// The last component of [`ode_tape`]'s result: the function the tape differentiates.
pub fn ode_last_tape<S: Real>(x: &[S], s: &usize) -> S {
    let mut y = vec![S::zero(); x.len()];
    ode_tape(&mut y, x, *s);
    y[x.len() - 1]
}

shade_fn!(pub(crate) OdeLastTape = ode_last_tape(&[S], &usize));

/// The gradient of `y_{n-1}(2)` by the compile-time engine, into `dx`; `y` and `dy` are
/// scratch buffers of `x`'s length.
pub fn ode_gradient(x: &[f64], s: usize, y: &mut [f64], dy: &mut [f64], dx: &mut [f64]) {
    dx.fill(0.0);
    dy.fill(0.0);
    if let Some(last) = dy.last_mut() {
        *last = 1.0;
    }
    d_ode(x, dx, s, y, dy);
}

#[cfg(test)]
mod tests {
    use super::super::support::assert_close;
    use super::*;
    use shade_autodiff::Const;
    use shade_autodiff::scalar::Tape;

    #[test]
    fn the_two_forms_agree() {
        let x: Vec<f64> = (0..6).map(|i| 0.5 + 0.1 * i as f64).collect();
        for s in [1, 3] {
            let n = x.len();
            let (mut y, mut yt) = (vec![0.0; n], vec![0.0; n]);
            ode(&x, s, &mut y);
            ode_tape(&mut yt, &x, s);
            assert_close("values", &y, &yt, 1e-13);
            let (mut dy, mut g) = (vec![0.0; n], vec![0.0; n]);
            ode_gradient(&x, s, &mut y, &mut dy, &mut g);
            let mut want = vec![0.0; n];
            Tape::new()
                .gradient_into(&OdeLastTape, &x, (Const(&s),), &mut want)
                .unwrap();
            assert_close("gradient", &g, &want, 1e-10);
        }
    }

    #[test]
    fn a_few_steps_give_the_exact_solution() {
        // y0 = x0 t, y1 = x1 x0 t² / 2: at t = 2, y1 = 2 x0 x1 (RK4 is exact here).
        let (mut y, mut yt) = ([0.0; 2], [0.0; 2]);
        ode(&[0.7, 0.3], 4, &mut y);
        ode_tape(&mut yt, &[0.7, 0.3], 4);
        for y in [y, yt] {
            assert!((y[0] - 1.4).abs() < 1e-14 && (y[1] - 2.0 * 0.7 * 0.3).abs() < 1e-14);
        }
    }
}
