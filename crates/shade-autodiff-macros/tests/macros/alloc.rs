//! A warm compiled derivative allocates nothing: the binary's counting allocator
//! (`shade_test_support::alloc`, per thread, so the other tests do not disturb it)
//! sees no allocation during warm calls of a reverse derivative whose forward sweep
//! saves values, records branches and trip counts, and uses local `Vec`s, nor during
//! warm calls of its forward derivatives (one tangent and a batch of two), whose local
//! `Vec`s and their tangents come from the same pool.

use shade_autodiff::{autodiff_forward, autodiff_reverse};
use shade_test_support::alloc::allocations as count;

/// Saves (`s` in the loop), branches, a `while` trip count and a local `Vec`.
#[autodiff_reverse(d_busy, Duplicated, Active)]
#[autodiff_forward(t_busy, Dual, Dual)]
#[autodiff_forward(t2_busy, 2, Dual, Dual)]
fn busy(x: &[f64]) -> f64 {
    let mut t = vec![0.0; x.len()];
    let mut acc = 0.0;
    for i in 0..x.len() {
        t[i] = x[i].sin() * x[(i + 1) % x.len()];
        let s = t[i] * t[i];
        if s > 0.1 {
            acc += s.sqrt();
        } else {
            acc *= x[i];
        }
    }
    let mut r = acc * acc + 4.0;
    while r > 1.0 {
        r = r * 0.5 + x[0] * 0.01;
    }
    r + t[0] * acc
}

#[test]
fn warm_reverse_derivative_allocates_nothing() {
    let x: Vec<f64> = (0..200).map(|i| 0.3 + 0.01 * i as f64).collect();
    let mut dx = vec![0.0; x.len()];
    d_busy(&x, &mut dx, 1.0); // warm-up: the workspace grows once
    let n = count(|| {
        for _ in 0..10 {
            std::hint::black_box(d_busy(&x, &mut dx, 1.0));
        }
    });
    assert_eq!(n, 0, "warm calls allocated {n} times");
    // The primal itself allocates its `Vec`: the counter does see allocations.
    assert!(
        count(|| {
            std::hint::black_box(busy(&x));
        }) > 0
    );
    assert!(shade_autodiff::compiled::workspace_footprint_bytes() > 0);
}

#[test]
fn warm_forward_derivatives_allocate_nothing() {
    let x: Vec<f64> = (0..200).map(|i| 0.3 + 0.01 * i as f64).collect();
    let e0: Vec<f64> = (0..x.len()).map(|i| f64::from(u8::from(i == 0))).collect();
    let e1: Vec<f64> = (0..x.len()).map(|i| f64::from(u8::from(i == 1))).collect();
    // Warm-up: the pool gets its buffers once.
    let (y, t0) = t_busy(&x, &e0);
    let [y2, u0, u1] = t2_busy(&x, &e0, &e1);
    let n = count(|| {
        for _ in 0..10 {
            std::hint::black_box(t_busy(&x, &e0));
            std::hint::black_box(t2_busy(&x, &e0, &e1));
        }
    });
    assert_eq!(n, 0, "warm forward calls allocated {n} times");
    // The tangents are the reverse gradient's entries (the counter saw real work).
    let mut dx = vec![0.0; x.len()];
    let yr = d_busy(&x, &mut dx, 1.0);
    assert!(y == yr && y2 == yr, "{y} {y2} {yr}");
    for (t, g) in [(t0, dx[0]), (u0, dx[0]), (u1, dx[1])] {
        assert!((t - g).abs() <= 1e-12 * g.abs().max(1.0), "{t} vs {g}");
    }
}
