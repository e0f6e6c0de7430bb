use shade_autodiff::autodiff_reverse;

#[derive(Clone, Copy)]
struct Weight {
    w: f64,
}

fn weight(i: usize) -> Weight {
    Weight { w: 1.0 + i as f64 }
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..x.len() {
        let k = weight(i);
        acc = acc * x[i] * k.w;
    }
    acc
}

fn main() {}
