// A `Cache` for a constant parameter of another type: one error, our message.
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::{AutoShade, Cache, prepare_gradient};

fn f<S: Real>(x: &[S], w: S) -> S {
    x[0] * w
}

fn main() {
    let buf = [2.0];
    let _ = prepare_gradient(shade_fn!(f(&[S], S)), &AutoShade::FORWARD, &[1.0], (Cache(&buf[..]),));
}
