// Forward mode over a finite-difference gradient: the core's forward mode cannot see
// through differences; a compile error with our own message naming the pairs that work.
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::{AutoFiniteDiff, AutoShade, SecondOrder, hessian};

fn f<S: Real>(x: &[S]) -> S {
    x[0] * x[0] * x[1]
}

fn main() {
    let b = SecondOrder { outer: AutoShade::FORWARD, inner: AutoFiniteDiff::CENTRAL };
    let _ = hessian(shade_fn!(f(&[S])), &b, &[1.0, 2.0], ());
}
