//! `Σ sin(wᵢ xᵢ) xᵢ` (the interface bench's loss) as a plain `fn` with its compile-time
//! reverse and forward derivatives (`d_sin_loss`, `t_sin_loss`), shared by the
//! `compiled` bench and the profiling example.

use shade_autodiff::{autodiff_forward, autodiff_reverse};

/// `Σ sin(wᵢ xᵢ) xᵢ`. Out of line (`#[inline(never)]`, which its derivatives take on):
/// the direct call and the interface then run the one compiled copy of each derivative,
/// so their ratio is what the interface adds. Inlined, each caller gets its own copy of
/// the loop, and the copies' register allocation differs by about one instruction per
/// two elements (callgrind), which shows as ±2 % at n = 10⁵ whichever way it falls.
#[inline(never)]
#[autodiff_reverse(d_sin_loss, Duplicated, Const, Active)]
#[autodiff_forward(t_sin_loss, Dual, Const, Dual)]
pub fn sin_loss(x: &[f64], w: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..x.len() {
        acc += (x[i] * w[i]).sin() * x[i];
    }
    acc
}
