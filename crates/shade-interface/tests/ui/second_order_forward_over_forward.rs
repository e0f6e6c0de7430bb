// Forward over forward through `SecondOrder`: not a native combination (the core's
// Hessians are forward over reverse); a compile error with our own message.
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::{AutoShade, SecondOrder, hvp};

fn f<S: Real>(x: &[S]) -> S {
    x[0] * x[0] * x[1]
}

fn main() {
    let b = SecondOrder { outer: AutoShade::FORWARD, inner: AutoShade::FORWARD };
    let _ = hvp(shade_fn!(f(&[S])), &b, &[1.0, 2.0], &[1.0, 0.0], ());
}
