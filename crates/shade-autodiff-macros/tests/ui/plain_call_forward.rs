use shade_autodiff::autodiff_forward;

fn scale(x: &[f64], c: f64) -> f64 {
    x[0] * c
}

#[autodiff_forward(df, 2, Dual, Dual)]
fn f(x: &[f64]) -> f64 {
    scale(x, 3.0) + x[1]
}

fn main() {}
