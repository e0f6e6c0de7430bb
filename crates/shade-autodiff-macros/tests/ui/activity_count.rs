use shade_autodiff::autodiff_reverse;

#[autodiff_reverse(d_dot, Duplicated, Active)]
fn dot(x: &[f64], y: &[f64]) -> f64 {
    x[0] * y[0]
}

fn main() {}
