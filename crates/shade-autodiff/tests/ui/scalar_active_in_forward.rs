use shade_autodiff::scalar::{Real, Tangent, autodiff, shade_fn};
use shade_autodiff::{Active, Forward};

fn square<S: Real>(x: S) -> S {
    x * x
}

fn main() {
    let _ = autodiff(Forward, shade_fn!(square(S)), Tangent, (Active(3.0),));
}
