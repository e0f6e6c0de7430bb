//! Every prepared object explains itself: which path ran, how contexts reached the
//! engine, batch size, tape or buffer sizes. And the interface's coded errors.

use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::*;

fn loss<S: Real>(x: &[S], w: &[f64], cache: &[S]) -> S {
    let mut acc = cache[0];
    for (i, &xi) in x.iter().enumerate() {
        acc += (xi * w[i % w.len()]).sin();
    }
    acc * S::dot(x, x)
}

fn field<S: Real>(y: &mut [S], x: &[S]) {
    y[0] = x[0] * x[1];
    y[1] = x[0].exp();
}

const W: [f64; 2] = [0.5, 2.0];
const CACHE: [f64; 5] = [1.0, 2.0, 3.0, 4.0, 5.0];

/// `loss`'s contexts: the weights as a constant, the cache as scratch.
fn ctx() -> (Constant<&'static [f64]>, Cache<&'static [f64]>) {
    (Constant(&W[..]), Cache(&CACHE[..]))
}

#[test]
fn autoshade_reverse_reports_the_native_tape_and_context_activities() {
    let f = shade_fn!(loss(&[S], &[f64], &[S]));
    let x = [0.1, 0.2, 0.3];
    let p = prepare_gradient(f, &AutoShade::REVERSE, &x, ctx()).unwrap();
    let r = p.explain();
    assert_eq!(r.path, PathKind::Native);
    assert_eq!(r.backend, "AutoShade(reverse)");
    assert_eq!(
        r.contexts,
        [
            ContextPassing::ConstantAsConst,
            ContextPassing::CacheAsDuplicated { scratch_bytes: 40 }
        ]
    );
    assert_eq!((r.batch, r.calls), (1, 1));
    // 3 inputs + 5 cache entries as leaves, plus the operations: a real recording.
    assert!(r.tape_records.unwrap() > 8, "{r}");
    assert!(r.reserved_bytes > 0);
    let text = r.to_string();
    assert!(
        text.contains("path: native (shade-autodiff reverse tape"),
        "{text}"
    );
    assert!(
        text.contains("contexts: [Constant -> Const, Cache -> Duplicated(scratch, 40 bytes)]"),
        "{text}"
    );
    assert!(
        text.contains("tape: ") && text.contains("KiB reserved"),
        "{text}"
    );
}

#[test]
fn autoshade_forward_reports_chunks() {
    let f = shade_fn!(loss(&[S], &[f64], &[S]));
    let x = [0.1; 20];
    let p = prepare_gradient(f, &AutoShade::FORWARD, &x, ctx()).unwrap();
    let r = p.explain();
    assert_eq!(r.path, PathKind::Native);
    assert_eq!((r.batch, r.calls), (8, 3 + 1));
    assert_eq!(
        r.contexts,
        [
            ContextPassing::ConstantAsConst,
            ContextPassing::CacheAsConst
        ]
    );
    assert!(r.detail.contains("BatchTangent::<8>"), "{r}");
}

#[test]
fn generic_backends_say_so() {
    let f = shade_fn!(loss(&[S], &[f64], &[S]));
    let x = [0.1, 0.2];
    let ctx = ctx();
    let fd = prepare_gradient(f, &AutoFiniteDiff::CENTRAL, &x, ctx).unwrap();
    let r = fd.explain();
    assert_eq!(r.path, PathKind::Generic);
    assert_eq!(r.calls, 1 + 2 * 2);
    assert_eq!(
        r.contexts,
        [
            ContextPassing::ConstantConverted,
            ContextPassing::CacheConverted
        ]
    );
    assert!(
        r.to_string()
            .contains("generic fallback: central differences"),
        "{r}"
    );
    let nd = prepare_hessian(f, &AutoNumDual, &x, ctx).unwrap();
    assert_eq!(nd.explain().path, PathKind::Generic);
    assert!(nd.explain().detail.contains("HyperDual64"));
    let so = SecondOrder {
        outer: AutoFiniteDiff::CENTRAL,
        inner: AutoShade::REVERSE,
    };
    let p = prepare_hvp(f, &so, &x, ctx).unwrap();
    assert_eq!(p.explain().path, PathKind::Generic);
    assert!(
        p.explain()
            .detail
            .contains("gradients of AutoShade(reverse)"),
        "{}",
        p.explain()
    );
    let so = SecondOrder {
        outer: AutoShade::FORWARD,
        inner: AutoShade::REVERSE,
    };
    let p = prepare_hvp(f, &so, &x, ctx).unwrap();
    assert_eq!(p.explain().path, PathKind::Native);
    assert!(p.explain().detail.contains("forward over reverse"));
}

#[test]
fn two_argument_forms_report_the_core_operator() {
    let g = shade_fn!(field(&mut [S], &[S]));
    let p = prepare_jacobian_inplace(g, &[0.0; 2], &AutoShade::REVERSE, &[1.0, 2.0], ()).unwrap();
    assert!(
        p.explain()
            .detail
            .contains("`Tape::jacobian_reverse_into`, 1 recording + 2 sweeps")
    );
    let p = prepare_pullback_inplace(g, &[0.0; 2], &AutoShade::FORWARD, &[1.0, 2.0], ()).unwrap();
    assert!(p.explain().detail.contains("Tape::pullback_into"));
}

#[test]
fn shapes_are_checked_on_every_call_with_coded_errors() {
    let f = shade_fn!(loss(&[S], &[f64], &[S]));
    let mut p = prepare_gradient(f, &AutoShade::REVERSE, &[0.1, 0.2], ctx()).unwrap();
    let e = p.gradient(&[0.1, 0.2, 0.3], ctx()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0201");
    assert_eq!(
        e,
        InterfaceError::ShapeMismatch {
            operator: "gradient",
            argument: "x",
            expected: vec![2],
            found: vec![3]
        }
    );
    assert_eq!(
        e.to_string(),
        "`gradient`: x has shape [3], but the operator was prepared for [2]"
    );
    // A cache of another length.
    let e = p
        .gradient(&[0.1, 0.2], (Constant(&W[..]), Cache(&CACHE[..4])))
        .unwrap_err();
    assert_eq!(
        e,
        InterfaceError::ShapeMismatch {
            operator: "gradient",
            argument: "context 1",
            expected: vec![5],
            found: vec![4]
        }
    );
    // An output buffer of the wrong length.
    let mut g = [0.0; 3];
    let e = p.gradient_into(&[0.1, 0.2], ctx(), &mut g).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0201");
    // Batched tangents that do not split.
    let mut pf = prepare_pushforward(f, &AutoShade::FORWARD, &[0.1, 0.2], ctx()).unwrap();
    let e = pf
        .pushforward_batch(&[0.1, 0.2], &[1.0, 0.0, 1.0], ctx())
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0204");
}

#[test]
fn setting_errors_come_at_preparation() {
    let f = shade_fn!(loss(&[S], &[f64], &[S]));
    let ctx = ctx();
    // Reverse over reverse does not implement `hessian` (a compile error, pinned by
    // `tests/ui/second_order_reverse_over_reverse.rs`); its table row says so.
    let rev_rev = SecondOrder {
        outer: AutoShade::REVERSE,
        inner: AutoShade::REVERSE,
    };
    assert_eq!(rev_rev.supports(Operator::Hessian), Support::No);
    let bad = AutoFiniteDiff {
        rel_step: Some(-1.0),
        ..AutoFiniteDiff::CENTRAL
    };
    let e = gradient(f, &bad, &[0.1], ctx).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0203");
    let bad = AutoFiniteDiff {
        abs_step: f64::NAN,
        ..AutoFiniteDiff::CENTRAL
    };
    assert_eq!(
        prepare_hvp(f, &bad, &[0.1], ctx).unwrap_err().code(),
        "SHADE-E0203"
    );
}

#[test]
fn custom_steps_change_the_finite_differences() {
    fn cube<S: Real>(x: S) -> S {
        x * x * x
    }
    let f = shade_fn!(cube(S));
    let coarse = AutoFiniteDiff {
        kind: FdKind::Forward,
        rel_step: Some(0.1),
        abs_step: 0.0,
    };
    // (f(1.1) - f(1)) / 0.1 = 3.31
    assert!((derivative(f, &coarse, 1.0, ()).unwrap() - 3.31).abs() < 1e-9);
    assert!((derivative(f, &AutoFiniteDiff::CENTRAL, 1.0, ()).unwrap() - 3.0).abs() < 1e-9);
    assert_eq!(
        value_and_derivative(f, &AutoShade::REVERSE, 2.0, ()).unwrap(),
        (8.0, 12.0)
    );
    assert_eq!(
        value_and_derivative(f, &AutoNumDual, 2.0, ()).unwrap(),
        (8.0, 12.0)
    );
}
