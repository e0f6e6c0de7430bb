//! A prepared (warm) tape records and sweeps without touching the heap: a counting
//! global allocator sees no allocation during warm gradient, Hessian-vector product,
//! reverse Jacobian and entry-point calls.

use shade_autodiff::scalar::{Dual, Real, Tape, autodiff_with, shade_fn};
use shade_autodiff::{Active, Const, Duplicated, Reverse};
use shade_test_support::alloc::allocations as count;

fn rosenbrock<S: Real>(x: &[S], c: &[f64]) -> S {
    let mut acc = S::zero();
    for w in x.windows(2) {
        let a = -w[0] + c[0];
        let b = w[1] - w[0] * w[0];
        acc += a * a + b * b * c[1];
    }
    acc + S::dot(x, x) * 1e-3 + S::sum_of(x).sin()
}

fn fields<S: Real>(y: &mut [S], x: &[S]) {
    for (i, yi) in y.iter_mut().enumerate() {
        *yi = x[i].exp() * x[(i + 1) % x.len()];
    }
}

// The binary's allocator counts per thread (`shade_test_support::alloc`): other tests
// running beside this one do not disturb the counts.
#[test]
fn warm_calls_do_not_allocate() {
    let f = shade_fn!(rosenbrock(&[S], &[f64]));
    let c = [1.0, 100.0];
    let x: Vec<f64> = (0..500).map(|i| 0.1 * f64::from(i % 7)).collect();
    let v: Vec<f64> = (0..500).map(|i| f64::from(i % 3) - 1.0).collect();
    let mut g = vec![0.0; x.len()];
    let mut tape = Tape::new();
    // Cold: buffers grow.
    let cold = count(|| tape.gradient_into(&f, &x, (Const(&c),), &mut g).unwrap());
    assert!(cold > 0, "the first call must allocate its buffers");
    // Warm a couple of times (the arena settles on its largest chunk).
    for _ in 0..2 {
        tape.gradient_into(&f, &x, (Const(&c),), &mut g).unwrap();
    }
    let first = g.clone();
    let warm = count(|| {
        for _ in 0..5 {
            tape.gradient_into(&f, &x, (Const(&c),), &mut g).unwrap();
        }
    });
    assert_eq!(warm, 0, "a warm gradient allocated {warm} times");
    assert_eq!(g, first);

    // The entry point with Duplicated + Const through a kept tape.
    let mut dx = vec![0.0; x.len()];
    autodiff_with(
        &mut tape,
        Reverse,
        &f,
        Active(1.0),
        (Duplicated(&x[..], &mut dx[..]), Const(&c)),
    )
    .unwrap();
    let warm = count(|| {
        autodiff_with(
            &mut tape,
            Reverse,
            &f,
            Active(1.0),
            (Duplicated(&x[..], &mut dx[..]), Const(&c)),
        )
        .unwrap();
    });
    assert_eq!(warm, 0, "a warm autodiff call allocated {warm} times");
    assert!(
        dx.iter()
            .zip(&first)
            .all(|(a, b)| (a - 2.0 * b).abs() <= 1e-12 * (1.0 + b.abs()))
    );

    // Forward-over-reverse Hessian-vector product.
    let mut htape = Tape::<Dual<f64>>::new();
    let mut hv = vec![0.0; x.len()];
    for _ in 0..3 {
        htape.hvp_into(&f, &x, &v, (Const(&c),), &mut hv).unwrap();
    }
    let warm = count(|| {
        htape.hvp_into(&f, &x, &v, (Const(&c),), &mut hv).unwrap();
    });
    assert_eq!(warm, 0, "a warm hvp allocated {warm} times");

    // Reverse Jacobian of an in-place function.
    let k = shade_fn!(fields(&mut [S], &[S]));
    let xs = &x[..20];
    let (mut y, mut jac) = (vec![0.0; 20], vec![0.0; 400]);
    for _ in 0..3 {
        tape.jacobian_reverse_into(&k, xs, (), &mut y, &mut jac)
            .unwrap();
        tape.jacobian_forward_into(&k, xs, (), &mut y, &mut jac)
            .unwrap();
    }
    let warm = count(|| {
        tape.jacobian_reverse_into(&k, xs, (), &mut y, &mut jac)
            .unwrap();
        tape.jacobian_forward_into(&k, xs, (), &mut y, &mut jac)
            .unwrap();
    });
    assert_eq!(warm, 0, "warm Jacobians allocated {warm} times");
}
