// The prepared form of an unsupported second-order combination: one error, ours.
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::{AutoShade, SecondOrder, prepare_hvp};

fn f<S: Real>(x: &[S]) -> S {
    x[0] * x[0] * x[1]
}

fn main() {
    let b = SecondOrder { outer: AutoShade::REVERSE, inner: AutoShade::FORWARD };
    let _ = prepare_hvp(shade_fn!(f(&[S])), &b, &[1.0, 2.0], ());
}
