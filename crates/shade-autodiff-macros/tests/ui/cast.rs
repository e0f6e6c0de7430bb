use shade_autodiff::autodiff_forward;

#[autodiff_forward(df, Dual, Dual)]
fn f(x: &[f32]) -> f32 {
    let y = x[0] * 2.0;
    (y as f64).sqrt() as f32
}

fn main() {}
