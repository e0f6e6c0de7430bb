//! The fused n-ary helpers of `Real` (`sum_sq`, `logsumexp`, and `dot` with one
//! constant side), and values shifted by
//! constants (which share their operand's record): values match plain `f64`
//! references, and the reverse gradient = forward tangents = central differences, with
//! operands recorded contiguously, gathered, shifted, or mixed with constants. Each
//! helper records one tape entry.

use proptest::prelude::*;
use shade_autodiff::scalar::{Real, ScalarFn, Slice, Tangent, Tape, autodiff, gradient, shade_fn};
use shade_autodiff::{Duplicated, Forward};
use shade_test_support::close;

/// Reverse gradient = forward tangents (to rounding) = central differences (to `tol`).
fn check<F: ScalarFn<Kinds = (Slice,)> + Copy>(
    f: F,
    x: &[f64],
    tol: f64,
) -> Result<(), TestCaseError> {
    let g = gradient(f, x, ()).unwrap();
    for i in 0..x.len() {
        let mut t = vec![0.0; x.len()];
        t[i] = 1.0;
        let d = autodiff(Forward, f, Tangent, (Duplicated(x, &mut t[..]),)).unwrap();
        prop_assert!(close(g[i], d, 1e-11), "reverse {} vs forward {d}", g[i]);
        let h = 1e-6;
        let (mut p, mut m) = (x.to_vec(), x.to_vec());
        p[i] += h;
        m[i] -= h;
        let fd = (f.call((&p[..],)) - f.call((&m[..],))) / (2.0 * h);
        prop_assert!(close(g[i], fd, tol), "reverse {} vs differences {fd}", g[i]);
    }
    Ok(())
}

/// `Σ x²` over the contiguous inputs, over a gathered mix with a constant, and weighted.
fn sum_sq<S: Real>(x: &[S]) -> S {
    let gathered = [x[2], S::cst(1.5), x[0] * x[1], x[2]];
    S::sum_sq(x) + S::sum_sq(&gathered) * 0.5
}

/// `logsumexp` of inputs, a gathered mix with a constant, and a shifted copy.
fn lse<S: Real>(x: &[S]) -> S {
    let mixed = [x[1] * 2.0, S::cst(0.3), x[0], x[3].sin()];
    S::logsumexp(x) * S::logsumexp(&mixed) + S::logsumexp(&[x[0] + 500.0, x[1] + 500.0])
}

/// Shifted values (`x ± c` shares `x`'s record) through every kind that reads operand
/// values: products, `dot`, `sum_sq`, and mixed with plain ones.
fn shifted<S: Real>(x: &[S]) -> S {
    let a = x[0] + 1.5;
    let b = x[1] - 0.5;
    let c = S::cst(2.0) - x[2];
    let p = a * b + (a * x[1]) * (b + 0.25);
    let d = S::dot(&[a, x[1], b], &[b, a, x[2] + 3.0]) + S::dot(&[a, b], &[x[2], x[0]]);
    let q = S::sum_sq(&[a, b, c]) + S::sum_sq(&[x[0], b]);
    p + d * 0.5 + q + (a + 1.0).sin()
}

/// `dot` with one side constant (a linear combination) and both orders.
fn dot_const<S: Real>(x: &[S]) -> S {
    let c = [S::cst(2.0), S::cst(-1.0), S::cst(0.5)];
    S::dot(&x[..3], &c) * S::dot(&c, &[x[3], x[1] * x[2], S::cst(1.0)])
}

proptest! {
    #[test]
    fn sum_sq_gradient(x in prop::collection::vec(-3.0..3.0f64, 3..6)) {
        check(shade_fn!(sum_sq(&[S])), &x, 1e-6)?;
        let want: f64 = x.iter().map(|v| v * v).sum::<f64>()
            + 0.5 * (2.0 * x[2] * x[2] + 2.25 + (x[0] * x[1]).powi(2));
        prop_assert!(close(sum_sq(&x), want, 1e-13));
    }

    #[test]
    fn logsumexp_gradient(x in prop::collection::vec(-3.0..3.0f64, 4..7)) {
        check(shade_fn!(lse(&[S])), &x, 1e-6)?;
        let naive = x.iter().map(|v| v.exp()).sum::<f64>().ln();
        prop_assert!(close(f64::logsumexp(&x), naive, 1e-13));
    }

    #[test]
    fn shifted_operands_gradient(x in prop::collection::vec(-2.0..2.0f64, 3)) {
        check(shade_fn!(shifted(&[S])), &x, 1e-6)?;
    }

    #[test]
    fn dot_with_constant_side_gradient(x in prop::collection::vec(-3.0..3.0f64, 4)) {
        check(shade_fn!(dot_const(&[S])), &x, 1e-6)?;
    }
}

#[test]
fn fused_helpers_record_one_entry_each() {
    let tape = Tape::<f64>::new();
    let t = tape.trace();
    let x: Vec<_> = [0.5, -1.0, 2.0].iter().map(|&v| t.var(v)).collect();
    let n0 = tape.len();
    let s = Real::sum_sq(&x);
    assert_eq!(tape.len(), n0 + 1);
    assert_eq!(s.val(), 5.25);
    let m = Real::logsumexp(&x);
    assert_eq!(tape.len(), n0 + 2);
    let want = (0.5f64.exp() + (-1.0f64).exp() + 2.0f64.exp()).ln();
    assert!(close(m.val(), want, 1e-15));
}

/// Reading a recorded value as a number while recording and feeding it back as a
/// constant once gave a silently cut gradient; now the recording's derivative is
/// refused, naming the line that read it. `detach` says the cut is meant.
#[test]
fn a_value_read_while_recording_is_refused_unless_detached() {
    fn cut<S: Real>(x: &[S]) -> S {
        let scale = x[0].value(); // plain number: no derivative
        x[0] * scale
    }
    let e = gradient(shade_fn!(cut(&[S])), &[3.0], ()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0115");
    match e {
        shade_autodiff::AdError::TrackedValueRead { location, .. } => {
            assert!(location.file().ends_with("scalar_fused.rs"), "{location}");
            assert_eq!(location.line(), line!() - 8);
        }
        e => panic!("{e}"),
    }
    fn via_to_f64<S: Real>(x: &[S]) -> S {
        x[0] * x[0].to_f64().unwrap_or(0.0)
    }
    let e = gradient(shade_fn!(via_to_f64(&[S])), &[3.0], ()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0115");
    fn meant<S: Real>(x: &[S]) -> S {
        let scale = x[0].detach().value();
        x[0] * scale
    }
    // d/dx (x · stop_gradient(x)) = x.
    assert_eq!(gradient(shade_fn!(meant(&[S])), &[3.0], ()).unwrap(), [3.0]);
    // Forward over reverse (a Hessian-vector product) refuses the read too.
    let e = shade_autodiff::scalar::hvp(shade_fn!(cut(&[S])), &[3.0], &[1.0], ()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0115");
    // Reading is free outside a recording: the plain function and forward mode.
    assert_eq!(cut(&[3.0]), 9.0);
}

#[test]
fn logsumexp_edge_cases() {
    assert_eq!(f64::logsumexp(&[]), f64::NEG_INFINITY);
    assert_eq!(f64::logsumexp(&[f64::NEG_INFINITY; 2]), f64::NEG_INFINITY);
    // The gradient of a constant result is zero, not NaN.
    fn f<S: Real>(x: &[S]) -> S {
        S::logsumexp(&[x[0] * 0.0 + f64::NEG_INFINITY, S::cst(f64::NEG_INFINITY)])
    }
    let g = gradient(shade_fn!(f(&[S])), &[1.0], ()).unwrap();
    assert_eq!(g, [0.0]);
}

#[test]
fn constant_offsets_share_their_operand_record() {
    let mut tape = Tape::<f64>::new();
    let (x, y) = {
        let t = tape.trace();
        let x = t.var(2.0);
        let n0 = tape.len();
        let s = (x + 1.0) - 3.0;
        // No record: `s` is `x`'s record with its own value.
        assert_eq!(tape.len(), n0);
        // (Values read as numbers while recording are read detached.)
        assert_eq!((s.detach().val(), s.id()), (0.0, x.id()));
        // A product of shifted values stores its partials (one record).
        let y = s * (x + 0.5);
        assert_eq!(tape.len(), n0 + 1);
        assert_eq!(y.detach().val(), 0.0);
        (x.id().unwrap(), y.id().unwrap())
    };
    // y = (x - 2)(x + 0.5): y' = 2x - 1.5 = 2.5 at x = 2.
    let adj = tape.backward(y, 1.0).unwrap();
    assert_eq!(adj[x.index()], 2.5);
}
