//! First checks.

use shade_autodiff::{autodiff_forward, autodiff_reverse};

#[autodiff_reverse(d_rosen, Duplicated, Active)]
#[autodiff_forward(t_rosen, Dual, Dual)]
fn rosen(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        acc += a * a + 100.0 * b * b;
    }
    acc
}

#[test]
fn rosenbrock_both_modes() {
    let x = [0.5, 1.5, -0.5];
    let mut dx = [0.0; 3];
    let y = d_rosen(&x, &mut dx, 1.0);
    assert_eq!(y, rosen(&x));
    let want = [
        -2.0 * 0.5 - 400.0 * 0.5 * (1.5 - 0.25),
        200.0 * (1.5 - 0.25) - 2.0 * (1.0 - 1.5) - 400.0 * 1.5 * (-0.5 - 2.25),
        200.0 * (-0.5 - 2.25),
    ];
    for k in 0..3 {
        assert!(
            (dx[k] - want[k]).abs() < 1e-9,
            "{k}: {} vs {}",
            dx[k],
            want[k]
        );
        let mut t = [0.0; 3];
        t[k] = 1.0;
        let (v, d) = t_rosen(&x, &t);
        assert_eq!(v, y);
        assert!((d - want[k]).abs() < 1e-9);
    }
}
