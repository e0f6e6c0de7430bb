// Reverse over reverse: the core nests forward over reverse only, so this combination
// does not implement `hessian`; a compile error with our own message naming the
// backends that can.
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::{AutoShade, SecondOrder, hessian};

fn f<S: Real>(x: &[S]) -> S {
    x[0] * x[0] * x[1]
}

fn main() {
    let b = SecondOrder { outer: AutoShade::REVERSE, inner: AutoShade::REVERSE };
    let _ = hessian(shade_fn!(f(&[S])), &b, &[1.0, 2.0], ());
}
