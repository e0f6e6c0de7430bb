use shade_autodiff::scalar::{Real, gradient};

fn sum<S: Real>(x: &[S]) -> S {
    S::sum_of(x)
}

fn main() {
    let _ = gradient(sum::<f64>, &[1.0, 2.0], ());
}
