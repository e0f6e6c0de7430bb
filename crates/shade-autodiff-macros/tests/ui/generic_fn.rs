use shade_autodiff::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f<T: Into<f64> + Copy>(x: &[T]) -> f64 {
    x[0].into()
}

fn main() {}
