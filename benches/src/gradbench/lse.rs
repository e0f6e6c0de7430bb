//! GradBench `lse`: `LSE(x) = max x + ln Σ exp(xᵢ - max x)`, written with its
//! primitive elements (a maximum, a shift, `exp`, a sum, `ln`), as the eval asks; its
//! gradient is taken through those operations (not a hand-written softmax).

// Index loops are the form the compile-time engine differentiates.
#![allow(clippy::needless_range_loop)]

use shade_autodiff::autodiff_reverse;
use shade_autodiff::scalar::{Real, shade_fn};

/// `ln Σᵢ exp(xᵢ)`, computed stably; `x` must not be empty. The compile-time form.
#[autodiff_reverse(d_lse, Duplicated, Active)]
pub fn lse(x: &[f64]) -> f64 {
    let mut m = x[0];
    for i in 1..x.len() {
        if x[i] > m {
            m = x[i];
        }
    }
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (x[i] - m).exp();
    }
    m + s.ln()
}

/// [`lse`] for any [`Real`]: the tape's form.
pub fn lse_tape<S: Real>(x: &[S]) -> S {
    let mut m = x[0];
    for &xi in &x[1..] {
        m = m.max(xi);
    }
    let mut s = S::zero();
    for &xi in x {
        s += (xi - m).exp();
    }
    s.ln() + m
}

shade_fn!(pub(crate) LseTape = lse_tape(&[S]));

#[cfg(test)]
mod tests {
    use super::super::support::assert_close;
    use super::*;
    use shade_autodiff::scalar::Tape;

    #[test]
    fn the_two_forms_agree_and_are_stable() {
        let x: Vec<f64> = (0..50)
            .map(|i| ((i * 37) % 11) as f64 * 0.3 - 1.0)
            .collect();
        let mut macro_g = vec![0.0; x.len()];
        let y = d_lse(&x, &mut macro_g, 1.0);
        assert_eq!(y, lse(&x));
        assert_close("value", &[y], &[lse_tape(&x)], 1e-14);
        let mut tape_g = vec![0.0; x.len()];
        Tape::new()
            .gradient_into(&LseTape, &x, (), &mut tape_g)
            .unwrap();
        assert_close("gradient", &macro_g, &tape_g, 1e-14);
        assert!((lse(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
        assert!((lse_tape(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
    }
}
