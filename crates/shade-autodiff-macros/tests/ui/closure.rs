use shade_autodiff::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum()
}

fn main() {}
