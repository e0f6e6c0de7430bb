use shade_autodiff::compiled::Generated;
use shade_autodiff::autodiff_reverse;
#[autodiff_reverse(d_rosenbrock, Duplicated, Active)]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        acc += a * a + 100.0 * b * b;
    }
    acc
}
fn main() {
    println!("{}", <d_rosenbrock as Generated>::INFO.expansion);
    println!("{}", <shade_benches::gradbench::gmm::d_gmm_point as Generated>::INFO.expansion);
}
