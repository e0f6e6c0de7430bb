//! The generated API: `std::autodiff`'s signatures (checked by calling them with
//! those types), `Active` arguments, `&mut` outputs with their shadow as seed,
//! batched forward mode, and the marker type describing each derivative.

use shade_autodiff::compiled::{Generated, GeneratedMode};
use shade_autodiff::{autodiff_forward, autodiff_reverse};

#[autodiff_reverse(d_f, Duplicated, Active)]
#[allow(dead_code)] // only its derivatives are called here
fn f(x: &[f64]) -> f64 {
    x[0] * x[1]
}

/// `Active` scalars come back after the primal result.
#[autodiff_reverse(d_g, Active, Const, Active, Active)]
#[allow(dead_code)] // only its derivatives are called here
fn g(a: f64, k: usize, b: f64) -> f64 {
    a * a * b + k as f64
}

/// A `&mut` output marked `Duplicated`: its shadow is the seed, and is consumed.
#[autodiff_reverse(d_out, Duplicated, Active, Duplicated)]
#[autodiff_forward(t_out, Dual, Dual, Dual)]
#[allow(dead_code)] // only its derivatives are called here
fn out(x: &[f64], s: f64, y: &mut [f64]) {
    for i in 0..y.len() {
        y[i] = x[i] * s + y[i] * x[i];
    }
}

#[autodiff_forward(t_h, 3, Dual, Dual)]
#[autodiff_forward(t_h1, Dual, DualOnly)]
fn h(x: f64) -> f64 {
    x.sin() * x
}

#[test]
fn reverse_signatures_are_std_autodiffs() {
    let d: fn(&[f64], &mut [f64], f64) -> f64 = d_f;
    let mut dx = [0.0; 2];
    assert_eq!(d(&[2.0, 3.0], &mut dx, 2.0), 6.0);
    assert_eq!(dx, [6.0, 4.0]);
    let dg: fn(f64, usize, f64, f64) -> (f64, f64, f64) = d_g;
    assert_eq!(dg(2.0, 3, 5.0, 1.0), (23.0, 20.0, 4.0));
}

#[test]
fn duplicated_outputs_read_their_shadow_as_seed() {
    let x = [1.0, 2.0];
    let mut y = [3.0, 4.0];
    let mut dy = [1.0, 10.0];
    let mut dx = [0.0; 2];
    let ds = d_out(&x, &mut dx, 0.5, &mut y, &mut dy);
    // The primal output is as after `out`, the seed is consumed: dy = ∂y/∂y₀ · seed.
    assert_eq!(y, [1.0 * 0.5 + 3.0, 2.0 * 0.5 + 8.0]);
    assert_eq!(dy, [1.0, 2.0 * 10.0]);
    assert_eq!(dx, [1.0 * (0.5 + 3.0), 10.0 * (0.5 + 4.0)]);
    assert_eq!(ds, 1.0 + 2.0 * 10.0);
    // Forward mode: the output shadow receives the tangent.
    let mut y2 = [3.0, 4.0];
    let mut ty = [0.0, 0.0];
    t_out(&x, &[1.0, 0.0], 0.5, 0.0, &mut y2, &mut ty);
    assert_eq!(ty, [0.5 + 3.0, 0.0]);
}

#[test]
fn batched_forward_returns_the_primal_then_each_tangent() {
    let b: fn(f64, f64, f64, f64) -> [f64; 4] = t_h;
    let r = b(0.7, 1.0, 2.0, -1.0);
    let d = 0.7f64.cos() * 0.7 + 0.7f64.sin();
    assert_eq!(r[0], h(0.7));
    for (k, s) in [1.0, 2.0, -1.0].iter().enumerate() {
        assert!((r[k + 1] - d * s).abs() < 1e-15);
    }
    let only: fn(f64, f64) -> f64 = t_h1;
    assert!((only(0.7, 1.0) - d).abs() < 1e-15);
}

#[test]
fn each_derivative_describes_itself() {
    let info = <d_g as Generated>::INFO;
    assert_eq!((info.primal, info.derivative), ("g", "d_g"));
    assert_eq!(info.mode, GeneratedMode::Reverse);
    assert_eq!(info.activities, ["Active", "Const", "Active", "Active"]);
    assert!(
        info.signature
            .contains("fn d_g(a: f64, k: usize, b: f64, seed: f64) -> (f64, f64, f64)"),
        "{}",
        info.signature
    );
    assert!(info.expansion.contains("fn __shade_rev_g_ACAA"));
    let t = <t_h as Generated>::INFO;
    assert_eq!((t.mode, t.width), (GeneratedMode::Forward, 3));
}
