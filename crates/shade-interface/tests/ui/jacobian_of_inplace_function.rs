// An in-place function handed to the one-argument `jacobian`: our message names the
// `*_inplace` operator and its output buffer.
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::{AutoShade, jacobian};

fn polar<S: Real>(y: &mut [S], x: &[S]) {
    y[0] = x[0] * x[1].cos();
    y[1] = x[0] * x[1].sin();
}

fn main() {
    let _ = jacobian(shade_fn!(polar(&mut [S], &[S])), &AutoShade::FORWARD, &[2.0, 0.0], ());
}
