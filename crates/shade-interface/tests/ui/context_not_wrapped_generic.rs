// A context passed bare to a generic backend: one error, our message.
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::{AutoFiniteDiff, hessian};

fn f<S: Real>(x: &[S], w: &[f64]) -> S {
    x[0] * x[0] * w[0]
}

fn main() {
    let w = [2.0];
    let _ = hessian(shade_fn!(f(&[S], &[f64])), &AutoFiniteDiff::CENTRAL, &[1.0], (&w[..],));
}
