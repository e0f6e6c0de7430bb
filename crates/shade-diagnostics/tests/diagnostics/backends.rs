//! gradcheck through shade-interface's backends: the backend whose rule is wrong is
//! the one that fails, against finite differences or against another backend.

use shade_autodiff::scalar::{Real, ScalarRule, shade_fn};
use shade_diagnostics::GradcheckOptions;
use shade_diagnostics::backends::{
    check_backend, check_backend_tensor, gradcheck_against, gradcheck_backend,
    gradgradcheck_backend,
};
use shade_interface::{AutoFiniteDiff, AutoNumDual, AutoShade, AutoSparse, Constant, Operator};

/// `x ↦ x³` whose reverse rule forgets the factor 3 (the forward rule is right).
struct Cube;

impl ScalarRule<1> for Cube {
    fn primal<S: Real>(&self, [x]: [S; 1]) -> S {
        x * x * x
    }
    fn forward<S: Real>(&self, [x]: [S; 1], _y: S, [dx]: [S; 1]) -> S {
        dx * x * x * 3.0
    }
    fn reverse<S: Real>(&self, [x]: [S; 1], _y: S, dy: S) -> [S; 1] {
        [dy * x * x]
    }
}

fn f<S: Real>(x: &[S], w: &[f64]) -> S {
    S::custom(&Cube, [x[0]]) * w[0] + x[1].sin() * w[1]
}

#[test]
fn the_backend_with_the_wrong_rule_fails() {
    let f = shade_fn!(f(&[S], &[f64]));
    let (x, w) = ([1.5, 0.3], [2.0, 1.0]);
    let o = GradcheckOptions::f64();
    let rev = gradcheck_backend(f, &AutoShade::REVERSE, &x, (Constant(&w[..]),), &o).unwrap();
    assert!(!rev.passed());
    assert_eq!(rev.worst[0].index, vec![0]);
    assert!((rev.worst[0].analytic - 2.0 * 2.25).abs() < 1e-12);
    assert!((rev.worst[0].numeric - 2.0 * 3.0 * 2.25).abs() < 1e-6);
    let d = rev.to_diagnostic().unwrap();
    assert_eq!(
        d.message,
        "gradient check failed: 1 of 2 checked entries differ from `AutoFiniteDiff(central)`"
    );
    // Forward mode uses the forward rule, which is right; so does num-dual.
    let fwd = gradcheck_backend(f, &AutoShade::FORWARD, &x, (Constant(&w[..]),), &o).unwrap();
    assert!(fwd.passed(), "{:?}", fwd.to_diagnostic());
    let nd = gradcheck_against(
        f,
        &AutoNumDual,
        &AutoShade::FORWARD,
        &x,
        (Constant(&w[..]),),
        &o,
    )
    .unwrap();
    assert!(nd.passed());
    assert_eq!(nd.reference, "`AutoShade(forward)`");
}

fn smooth<S: Real>(x: &[S]) -> S {
    x[0].exp() * x[1] + (x[0] * x[1]).sin()
}

#[test]
fn hessians_of_every_second_order_path_agree_with_differences() {
    let f = shade_fn!(smooth(&[S]));
    let x = [0.2, -0.8];
    let o = GradcheckOptions::f64();
    for r in [
        gradgradcheck_backend(f, &AutoShade::REVERSE, &x, (), &o).unwrap(),
        gradgradcheck_backend(f, &AutoShade::FORWARD, &x, (), &o).unwrap(),
        gradgradcheck_backend(f, &AutoNumDual, &x, (), &o).unwrap(),
    ] {
        assert!(r.passed(), "{:?}", r.to_diagnostic());
        assert_eq!((r.checked, r.total), (4, 4));
    }
}

#[test]
fn backend_capabilities_are_checked_before_differentiating() {
    assert!(check_backend(&AutoShade::REVERSE, Operator::Hessian).is_clean());
    assert!(check_backend(&AutoFiniteDiff::CENTRAL, Operator::Hvp).is_clean());
    let sparse = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    assert!(check_backend(&sparse, Operator::Jacobian).is_clean());
    let f = check_backend(&sparse, Operator::Hvp);
    assert_eq!(f.codes(), ["SHADE-E0202"]);
    assert!(f.errors[0].notes[0].contains("`AutoShade(reverse)`"));
    assert!(check_backend_tensor(&AutoShade::REVERSE).is_clean());
    assert_eq!(check_backend_tensor(&AutoNumDual).codes(), ["SHADE-E0202"]);
}
