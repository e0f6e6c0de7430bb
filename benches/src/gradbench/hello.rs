//! GradBench `hello`: `square(x) = x²` and `double(x)`, its derivative `2x`, by
//! reverse mode.

use shade_autodiff::autodiff_reverse;
use shade_autodiff::scalar::{Real, shade_fn};

/// `x²`. The compile-time form.
#[autodiff_reverse(d_square, Active, Active)]
pub fn square(x: f64) -> f64 {
    x * x
}

/// [`square`] for any [`Real`] (its argument a one-element slice): the tape's form.
pub fn square_tape<S: Real>(x: &[S]) -> S {
    x[0] * x[0]
}

shade_fn!(pub(crate) SquareTape = square_tape(&[S]));

#[cfg(test)]
mod tests {
    use super::*;
    use shade_autodiff::scalar::Tape;

    #[test]
    fn the_two_forms_agree() {
        for x in [-1.5, 0.0, 3.25] {
            let (y, dx) = d_square(x, 1.0);
            let mut g = [0.0];
            Tape::new()
                .gradient_into(&SquareTape, &[x], (), &mut g)
                .unwrap();
            assert_eq!((y, dx), (square_tape(&[x]), g[0]));
            assert_eq!(dx, 2.0 * x);
        }
    }
}
