use shade_autodiff::scalar::{Real, autodiff, shade_fn};
use shade_autodiff::{Active, Const, Duplicated, Reverse};

fn scaled<S: Real>(x: &[S], w: &[f64]) -> S {
    x[0] * w[0]
}

fn main() {
    let x = [3.0];
    let mut dx = [0.0];
    // The weights as `f32`: a `&[f64]` parameter takes `f64` constants.
    let w = [2.0f32];
    let _ = autodiff(Reverse, shade_fn!(scaled(&[S], &[f64])), Active(1.0), (Duplicated(&x, &mut dx), Const(&w)));
}
