// A context passed bare (not as `Constant(..)`): one error, our message.
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::{AutoShade, gradient};

fn f<S: Real>(x: &[S], w: &[f64]) -> S {
    x[0] * w[0]
}

fn main() {
    let w = [2.0];
    let _ = gradient(shade_fn!(f(&[S], &[f64])), &AutoShade::REVERSE, &[1.0], (&w[..],));
}
