use shade_autodiff::autodiff_reverse;

fn helper(a: f64) -> f64 {
    a * a
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let y = helper(x[0]);
    y * 2.0 + x[1]
}

fn main() {}
