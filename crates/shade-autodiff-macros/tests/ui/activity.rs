use shade_autodiff::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: &[f64]) -> f64 {
    x[0]
}

fn main() {}
