use shade_autodiff::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    let mut it = x.iter();
    while let Some(v) = it.next() {
        acc += v;
    }
    acc
}

fn main() {}
