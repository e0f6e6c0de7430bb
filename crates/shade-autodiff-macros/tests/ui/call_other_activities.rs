use shade_autodiff::autodiff_reverse;

// The attribute covers `helper(x, c)` with `c` constant, not `c` differentiated.
#[autodiff_reverse(d_helper, Duplicated, Const, Active)]
fn helper(x: &[f64], c: f64) -> f64 {
    x[0] * c
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    helper(x, x[1])
}

fn main() {}
