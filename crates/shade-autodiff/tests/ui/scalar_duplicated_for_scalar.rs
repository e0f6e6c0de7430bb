use shade_autodiff::scalar::{Real, autodiff, shade_fn};
use shade_autodiff::{Active, Duplicated, Reverse};

fn square<S: Real>(x: S) -> S {
    x * x
}

fn main() {
    let x = [3.0];
    let mut dx = [0.0];
    let _ = autodiff(Reverse, shade_fn!(square(S)), Active(1.0), (Duplicated(&x, &mut dx),));
}
