use shade_autodiff::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..x.len() {
        let mut t = [0.0; 2];
        t[0] = x[i] * x[i];
        acc += t[0];
    }
    acc
}

fn main() {}
