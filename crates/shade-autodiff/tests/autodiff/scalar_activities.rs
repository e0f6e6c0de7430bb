//! The entry point's activities and modes, custom rules, nesting, and coded errors.

use shade_autodiff::scalar::{
    BatchTangent, Dual, Real, ScalarRule, Tangent, Tape, autodiff, autodiff_with, derivative,
    gradient, hessian, jacobian_forward, jacobian_forward_inplace, jacobian_reverse,
    jacobian_reverse_inplace, pullback, second_derivative, shade_fn, value_and_gradient,
};
use shade_autodiff::{
    Active, BatchDuplicated, Const, Duplicated, DuplicatedNoNeed, Forward, ForwardWithPrimal,
    Reverse, ReverseWithPrimal,
};

struct Params {
    scale: f64,
    offsets: Vec<f64>,
}

/// Several differentiable arguments of each kind, and a constant struct.
fn mixed<S: Real>(x: &[S], a: S, y: &[S], p: &Params) -> S {
    (x[0] * y[1]).sin() * a * p.scale + y[0] * y[0] * (x[1] - p.offsets[0]) + a.exp()
}

shade_fn!(Mixed = mixed(&[S], S, &[S], &Params));

fn params() -> Params {
    Params {
        scale: 1.5,
        offsets: vec![0.25],
    }
}

#[test]
fn reverse_mixes_active_duplicated_and_const() {
    let p = params();
    let (x, y, a) = ([0.3, 0.7], [1.1, -0.4], 0.9);
    let (mut dx, mut dy) = ([0.0; 2], [0.0; 2]);
    let (((), da, (), ()), value) = autodiff(
        ReverseWithPrimal,
        Mixed,
        Active(1.0),
        (
            Duplicated(&x, &mut dx),
            Active(a),
            Duplicated(&y, &mut dy),
            Const(&p),
        ),
    )
    .unwrap();
    let s = x[0] * y[1];
    assert_eq!(value, mixed(&x, a, &y, &p));
    let close = |u: f64, v: f64| (u - v).abs() < 1e-14;
    assert!(close(da, s.sin() * p.scale + a.exp()));
    assert!(close(dx[0], s.cos() * y[1] * a * p.scale));
    assert!(close(dx[1], y[0] * y[0]));
    assert!(close(dy[0], 2.0 * y[0] * (x[1] - 0.25)));
    assert!(close(dy[1], s.cos() * x[0] * a * p.scale));

    // Forward mode with the same function: tangent along (dx, dy) = (e0, 0).
    let (mut tx, mut ty) = ([1.0, 0.0], [0.0; 2]);
    let (t, v) = autodiff(
        ForwardWithPrimal,
        Mixed,
        Tangent,
        (
            Duplicated(&x, &mut tx),
            Const(a),
            Duplicated(&y, &mut ty),
            Const(&p),
        ),
    )
    .unwrap();
    assert_eq!(v, value);
    assert!(close(t, dx[0]));

    // Batched forward: both components of x at once.
    let (mut t0, mut t1) = ([1.0, 0.0], [0.0, 1.0]);
    let ts = autodiff(
        Forward,
        Mixed,
        BatchTangent::<2>,
        (
            BatchDuplicated(&x, [&mut t0, &mut t1]),
            Const(a),
            Const(&y),
            Const(&p),
        ),
    )
    .unwrap();
    assert!(close(ts[0], dx[0]) && close(ts[1], dx[1]));

    // DuplicatedNoNeed behaves as Duplicated for the shadow.
    let mut dn = [0.0; 2];
    autodiff(
        Reverse,
        Mixed,
        Active(1.0),
        (
            DuplicatedNoNeed(&x, &mut dn),
            Const(a),
            Const(&y),
            Const(&p),
        ),
    )
    .unwrap();
    assert_eq!(dn, dx);
}

#[test]
fn shadow_length_mismatch_is_a_coded_error() {
    let p = params();
    let (x, y) = ([0.3, 0.7], [1.1, -0.4]);
    let (mut dx, mut dy) = ([0.0; 2], [0.0; 3]);
    let err = autodiff(
        Reverse,
        Mixed,
        Active(1.0),
        (
            Duplicated(&x, &mut dx),
            Active(1.0),
            Duplicated(&y[..], &mut dy[..]),
            Const(&p),
        ),
    )
    .unwrap_err();
    assert_eq!(err.code(), "SHADE-E0101");
    assert_eq!(
        err.to_string(),
        "shadow of argument 2 has length 3, but its primal has length 2"
    );
    // Nothing was accumulated.
    assert_eq!(dx, [0.0; 2]);

    let mut t = [0.0; 1];
    let err = autodiff(
        Forward,
        Mixed,
        Tangent,
        (
            Duplicated(&x[..], &mut t[..]),
            Const(1.0),
            Const(&y),
            Const(&p),
        ),
    )
    .unwrap_err();
    assert_eq!(err.code(), "SHADE-E0101");

    fn f<S: Real>(x: &[S]) -> S {
        x[0]
    }
    let mut g = [0.0; 3];
    let err = Tape::new()
        .gradient_into(&shade_fn!(f(&[S])), &[1.0, 2.0], (), &mut g)
        .unwrap_err();
    assert_eq!(err.code(), "SHADE-E0101");
    let mut h = [0.0; 3];
    let err = Tape::<Dual<f64>>::new()
        .hessian_into(&shade_fn!(f(&[S])), &[1.0, 2.0], (), &mut h)
        .unwrap_err();
    assert_eq!(err.code(), "SHADE-E0121");
}

/// `ln(1 + eˣ)` with hand-written rules that deliberately differ from the true
/// derivative by a factor 2, so the test sees which rule ran.
struct MarkedSoftplus;
impl ScalarRule<1> for MarkedSoftplus {
    fn primal<S: Real>(&self, [x]: [S; 1]) -> S {
        x.exp().ln_1p()
    }
    fn forward<S: Real>(&self, [x]: [S; 1], _: S, [dx]: [S; 1]) -> S {
        dx / ((-x).exp() + 1.0) * 2.0
    }
    fn reverse<S: Real>(&self, [x]: [S; 1], _: S, dy: S) -> [S; 1] {
        [dy / ((-x).exp() + 1.0) * 2.0]
    }
}

/// `x·y` with rules for both inputs.
struct Product;
impl ScalarRule<2> for Product {
    fn primal<S: Real>(&self, [x, y]: [S; 2]) -> S {
        x * y
    }
    fn forward<S: Real>(&self, [x, y]: [S; 2], _: S, [dx, dy]: [S; 2]) -> S {
        dx * y + x * dy
    }
    fn reverse<S: Real>(&self, [x, y]: [S; 2], _: S, g: S) -> [S; 2] {
        [g * y, g * x]
    }
}

#[test]
fn custom_rules_are_used_in_every_mode() {
    fn f<S: Real>(x: S) -> S {
        S::custom(&MarkedSoftplus, [x])
    }
    fn g<S: Real>(x: &[S]) -> S {
        S::custom(&MarkedSoftplus, [x[0]]) + S::custom(&Product, [x[0], x[1]])
    }
    let x = 0.3f64;
    let sigma = 1.0 / (1.0 + (-x).exp());
    let d = derivative(shade_fn!(f(S)), x, ()).unwrap();
    assert!((d - 2.0 * sigma).abs() < 1e-15);
    let gr = gradient(shade_fn!(g(&[S])), &[x, 2.0], ()).unwrap();
    assert!((gr[0] - (2.0 * sigma + 2.0)).abs() < 1e-15);
    assert!((gr[1] - x).abs() < 1e-15);
    // Nested: the rules are generic, so forward-over-forward differentiates the rule:
    // d/dx 2σ(x) = 2σ(1-σ).
    let d2 = second_derivative(shade_fn!(f(S)), x, ()).unwrap();
    assert!((d2 - 2.0 * sigma * (1.0 - sigma)).abs() < 1e-14);
    // Forward-over-reverse through the rules: ∂²/∂x0∂x1 of x0·x1 is 1.
    let h = hessian(shade_fn!(g(&[S])), &[x, 2.0], ()).unwrap();
    assert!((h[1] - 1.0).abs() < 1e-15 && (h[2] - 1.0).abs() < 1e-15);
    assert!((h[0] - 2.0 * sigma * (1.0 - sigma)).abs() < 1e-14);
}

#[test]
fn second_derivatives_by_both_nestings() {
    fn f<S: Real>(x: S) -> S {
        x.sin() * x.exp()
    }
    fn fv<S: Real>(x: &[S]) -> S {
        f(x[0])
    }
    let x = 0.7f64;
    let want = 2.0 * x.cos() * x.exp();
    let d2 = second_derivative(shade_fn!(f(S)), x, ()).unwrap();
    let h = hessian(shade_fn!(fv(&[S])), &[x], ()).unwrap();
    assert!((d2 - want).abs() < 1e-13);
    assert!((h[0] - want).abs() < 1e-13);
}

#[test]
fn prepared_tape_reuses_and_matches_fresh_calls() {
    let p = params();
    let mut tape = Tape::new();
    let x = [0.3, 0.7];
    let y = [1.1, -0.4];
    for _ in 0..3 {
        let mut dx = [0.0; 2];
        let (_, da, _, _) = autodiff_with(
            &mut tape,
            Reverse,
            &Mixed,
            Active(1.0),
            (Duplicated(&x, &mut dx), Active(0.9), Const(&y), Const(&p)),
        )
        .unwrap();
        let mut dx2 = [0.0; 2];
        let (_, da2, _, _) = autodiff(
            Reverse,
            Mixed,
            Active(1.0),
            (Duplicated(&x, &mut dx2), Active(0.9), Const(&y), Const(&p)),
        )
        .unwrap();
        assert_eq!((dx, da), (dx2, da2));
    }
}

#[test]
fn constants_only_give_zero_derivatives() {
    fn f<S: Real>(x: &[S], c: &[f64]) -> S {
        S::cst(c[0]) * 2.0 + x[0] * 0.0
    }
    let (v, g) = value_and_gradient(shade_fn!(f(&[S], &[f64])), &[1.0], (Const(&[3.0]),)).unwrap();
    assert_eq!((v, g), (6.0, vec![0.0]));
    fn k<S: Real>(y: &mut [S], _x: &[S]) {
        y[0] = S::cst(1.0);
    }
    let mut y = [0.0];
    let j =
        jacobian_forward_inplace(shade_fn!(k(&mut [S], &[S])), &mut y, &[1.0, 2.0], ()).unwrap();
    assert_eq!((y, j), ([1.0], vec![0.0, 0.0]));
    fn kv<S: Real>(_x: &[S]) -> Vec<S> {
        vec![S::cst(1.0)]
    }
    let (y, j) = jacobian_forward(shade_fn!(kv(&[S]) -> Vec<S>), &[1.0, 2.0], ()).unwrap();
    assert_eq!((y, j), (vec![1.0], vec![0.0, 0.0]));
}

/// `Σ sin(xᵢ wᵢ)` through a scratch buffer the function writes (a `&mut [S]`
/// parameter after `x`): the derivative flows through what it wrote.
fn through_scratch<S: Real>(x: &[S], scratch: &mut [S], w: &[f64]) -> S {
    for (s, (&xi, &wi)) in scratch.iter_mut().zip(x.iter().zip(w)) {
        *s = xi * wi;
    }
    scratch.iter().map(|s| s.sin()).sum()
}

#[test]
fn a_scratch_parameter_may_be_written_in_every_mode() {
    let f = shade_fn!(through_scratch(&[S], &mut [S], &[f64]));
    let (x, w, buf) = ([0.3, -1.1, 2.0], [1.5, 0.5, -0.25], [9.0; 3]);
    let want: Vec<f64> = x
        .iter()
        .zip(&w)
        .map(|(a, b): (&f64, &f64)| b * (a * b).cos())
        .collect();
    // Constant scratch: a copy in the number type; the buffer itself is not written.
    let g = gradient(f, &x, (Const(&buf), Const(&w))).unwrap();
    assert!(g.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-14));
    assert_eq!(buf, [9.0; 3]);
    // Duplicated scratch: its initial contents are overwritten, so their derivative is 0.
    let (mut dx, mut ds) = ([0.0; 3], [0.0; 3]);
    autodiff(
        Reverse,
        f,
        Active(1.0),
        (
            Duplicated(&x, &mut dx),
            Duplicated(&buf, &mut ds),
            Const(&w),
        ),
    )
    .unwrap();
    assert!(dx.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-14));
    assert_eq!(ds, [0.0; 3]);
    let mut t = [1.0, 0.0, 0.0];
    let mut ts = [0.0; 3];
    let d = autodiff(
        Forward,
        f,
        Tangent,
        (Duplicated(&x, &mut t), Duplicated(&buf, &mut ts), Const(&w)),
    )
    .unwrap();
    assert!((d - want[0]).abs() < 1e-14);
}

/// Writes two outputs, whatever `y`'s length.
fn two_outputs<S: Real>(y: &mut [S], x: &[S]) {
    y[0] = x[0] * x[1];
    y[1] = x[1].sin();
}

#[test]
fn a_wrong_output_buffer_is_a_coded_error_not_a_zero_row_or_a_panic() {
    let f = shade_fn!(two_outputs(&mut [S], &[S]));
    let e = jacobian_forward_inplace(f, &mut [0.0; 3], &[1.0, 2.0], ()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0130", "{e}");
    assert!(e.help().contains("(2)"), "{}", e.help());
    let e = jacobian_reverse_inplace(f, &mut [0.0; 1], &[1.0, 2.0], ()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0131", "{e}");
    let mut y = [0.0; 2];
    let j = jacobian_forward_inplace(f, &mut y, &[1.0, 2.0], ()).unwrap();
    assert_eq!(y, [2.0, 2f64.sin()]);
    assert_eq!(j, [2.0, 1.0, 0.0, 2f64.cos()]);
}

/// The same two outputs, returned.
fn two_returned<S: Real>(x: &[S]) -> Vec<S> {
    vec![x[0] * x[1], x[1].sin()]
}

/// As many outputs as the constant says.
fn k_outputs<S: Real>(x: &[S], k: &usize) -> Vec<S> {
    (0..*k).map(|i| x[0] * (i as f64 + 1.0)).collect()
}

#[test]
fn the_output_length_is_inferred_from_what_the_function_returns() {
    let f = shade_fn!(two_returned(&[S]) -> Vec<S>);
    let (y, j) = jacobian_forward(f, &[1.0, 2.0], ()).unwrap();
    assert_eq!(y, [2.0, 2f64.sin()]);
    assert_eq!(j, [2.0, 1.0, 0.0, 2f64.cos()]);
    assert_eq!(jacobian_reverse(f, &[1.0, 2.0], ()).unwrap().1, j);
    // Whatever the length, without being told: 1, 9 (more than a chunk), 20 rows.
    let g = shade_fn!(k_outputs(&[S], &usize) -> Vec<S>);
    for k in [1usize, 9, 20] {
        let (y, j) = jacobian_forward(g, &[3.0], (Const(&k),)).unwrap();
        assert_eq!(y.len(), k);
        assert_eq!(j, (1..=k).map(|i| i as f64).collect::<Vec<_>>());
    }
    // A pullback's cotangent of another length is refused.
    let e = pullback(f, &[1.0, 2.0], &[1.0; 3], ()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0121", "{e}");
}
