//! GradBench `llsq`: the least-squares residual `½ Σᵢ (sign(tᵢ) - Σⱼ xⱼ tᵢʲ)²` of a
//! degree `m - 1` polynomial fitted to `sign(t)` at `n` points `tᵢ = -1 + 2i / (n - 1)`,
//! and its gradient with respect to the `m` coefficients, by reverse mode.

// Index loops are the form the compile-time engine differentiates.
#![allow(clippy::needless_range_loop)]

use shade_autodiff::autodiff_reverse;
use shade_autodiff::scalar::{Real, shade_fn};

/// The sample point `tᵢ`.
fn point(i: usize, n: usize) -> f64 {
    -1.0 + i as f64 * 2.0 / (n as f64 - 1.0)
}

/// `sign(t)`, 0 at 0.
fn sign(t: f64) -> f64 {
    if t > 0.0 {
        1.0
    } else if t < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// The residual. The compile-time form.
#[autodiff_reverse(d_llsq, Duplicated, Const, Active)]
pub fn llsq(x: &[f64], n: usize) -> f64 {
    let mut sum = 0.0;
    for i in 0..n {
        let t = point(i, n);
        let mut mul = 1.0;
        let mut fit = 0.0;
        for j in 0..x.len() {
            fit += x[j] * mul;
            mul *= t;
        }
        let r = sign(t) - fit;
        sum += r * r;
    }
    sum * 0.5
}

/// [`llsq`] for any [`Real`]: the tape's form (one dot product per sample point).
pub fn llsq_tape<S: Real>(x: &[S], n: &usize) -> S {
    let n = *n;
    let mut powers = vec![S::zero(); x.len()];
    let mut sum = S::zero();
    for i in 0..n {
        let t = point(i, n);
        let mut mul = 1.0;
        for p in powers.iter_mut() {
            *p = S::cst(mul);
            mul *= t;
        }
        let r = -S::dot(x, &powers) + sign(t);
        sum += r * r;
    }
    sum * 0.5
}

shade_fn!(pub(crate) LlsqTape = llsq_tape(&[S], &usize));

#[cfg(test)]
mod tests {
    use super::super::support::assert_close;
    use super::*;
    use shade_autodiff::Const;
    use shade_autodiff::scalar::Tape;

    #[test]
    fn the_two_forms_agree() {
        let x: Vec<f64> = (0..7).map(|i| 0.3 - 0.1 * i as f64).collect();
        let n = 33;
        let mut g = vec![0.0; x.len()];
        let y = d_llsq(&x, &mut g, n, 1.0);
        assert_close("value", &[y], &[llsq_tape(&x, &n)], 1e-12);
        let mut want = vec![0.0; x.len()];
        Tape::new()
            .gradient_into(&LlsqTape, &x, (Const(&n),), &mut want)
            .unwrap();
        assert_close("gradient", &g, &want, 1e-10);
    }

    #[test]
    fn objective_counts_the_sign_residuals() {
        // x = 0: residuals are sign(t) at t = -1, 0, 1: ½ (1 + 0 + 1).
        assert_eq!(llsq(&[0.0, 0.0], 3), 1.0);
        assert_eq!(llsq_tape(&[0.0, 0.0], &3), 1.0);
    }
}
