//! A warm compiled derivative allocates nothing: the binary's counting allocator
//! (`shade_test_support::alloc`, per thread, so the other tests do not disturb it)
//! sees no allocation during warm calls of a reverse derivative whose forward sweep
//! saves values, records branches and trip counts, and uses local `Vec`s.

use shade_autodiff::autodiff_reverse;
use shade_test_support::alloc::allocations as count;

/// Saves (`s` in the loop), branches, a `while` trip count and a local `Vec`.
#[autodiff_reverse(d_busy, Duplicated, Active)]
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
