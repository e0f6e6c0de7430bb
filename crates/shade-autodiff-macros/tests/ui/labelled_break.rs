use shade_autodiff::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    'outer: for i in 0..x.len() {
        for j in 0..x.len() {
            if acc > 1.0 {
                break 'outer;
            }
            acc += x[i] * x[j];
        }
    }
    acc
}

fn main() {}
