use shade_autodiff::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let y = x[0] * 2.0;
    y.clamp(0.0, 1.0)
}

fn main() {}
