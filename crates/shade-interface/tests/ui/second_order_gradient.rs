// A second-order-only backend asked for a first-order operator: a compile error with
// our own message naming the backends that can.
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::{AutoShade, SecondOrder, gradient};

fn f<S: Real>(x: &[S]) -> S {
    x[0] * x[0]
}

fn main() {
    let b = SecondOrder { outer: AutoShade::FORWARD, inner: AutoShade::REVERSE };
    let _ = gradient(shade_fn!(f(&[S])), &b, &[1.0], ());
}
