//! gradcheck and gradgradcheck: correct derivatives pass, wrong ones fail with the
//! worst entries named, subsets are seeded, kinks and NaN-producing operations are
//! pointed out.

use ndarray::{Array2, ArrayD, IxDyn};
use proptest::prelude::*;
use shade_autodiff::scalar::{Real, shade_fn};
use shade_autodiff::tensor::{Tape, Var};
use shade_autodiff::{AdError, AdResult};
use shade_diagnostics::gradcheck::{
    GradcheckOptions, Order, gradcheck, gradcheck_fn, gradcheck_tensor, gradgradcheck,
};

fn rosenbrock<S: Real>(x: &[S]) -> S {
    x.windows(2)
        .map(|w| (-w[0] + 1.0).powi(2) + (w[1] - w[0] * w[0]).powi(2) * 100.0)
        .sum()
}

#[test]
fn a_correct_scalar_function_passes_first_and_second_order() {
    let f = shade_fn!(rosenbrock(&[S]));
    let x = [0.3, -0.4, 1.2, 0.7];
    let r = gradcheck_fn(f, &x, (), &GradcheckOptions::f64()).unwrap();
    assert!(r.passed(), "{:?}", r.to_diagnostic());
    assert_eq!((r.checked, r.total, r.order), (4, 4, Order::First));
    let r = gradgradcheck(f, &x, (), &GradcheckOptions::f64()).unwrap();
    assert!(r.passed(), "{:?}", r.to_diagnostic());
    assert_eq!((r.checked, r.total), (16, 16));
    assert!(r.into_result().is_ok());
}

#[test]
fn a_wrong_gradient_names_the_worst_entries() {
    // f(x) = x0² + 10 x1²; the "backend" forgets the factor 10.
    let f = |x: &[f64]| Ok::<f64, AdError>(x[0] * x[0] + 10.0 * x[1] * x[1]);
    let g = |x: &[f64]| Ok(vec![2.0 * x[0], 2.0 * x[1]]);
    let r = gradcheck(f, g, &[1.0, 0.5], &GradcheckOptions::f64()).unwrap();
    assert!(!r.passed());
    assert_eq!(r.failures, 1);
    let w = &r.worst[0];
    assert_eq!(w.index, vec![1]);
    assert_eq!(w.analytic, 1.0);
    assert!((w.numeric - 10.0).abs() < 1e-6, "{}", w.numeric);
    assert!((w.error - 9.0).abs() < 1e-6);
    let d = r.to_diagnostic().unwrap();
    assert_eq!(d.code, "SHADE-E0500");
    assert!(
        d.notes
            .iter()
            .any(|n| n.starts_with("index [1]: analytic 1.000000, numeric 10.0000"))
    );
}

#[test]
fn a_kink_is_pointed_out() {
    let f = |x: &[f64]| Ok::<f64, AdError>(x[0].max(0.0));
    let g = |x: &[f64]| Ok(vec![if x[0] > 0.0 { 1.0 } else { 0.0 }]);
    let r = gradcheck(f, g, &[0.0], &GradcheckOptions::f64()).unwrap();
    assert!(!r.passed());
    assert_eq!(r.worst[0].numeric, 0.5);
    let s = r.suspect.unwrap();
    assert!(s.contains("kink at index [0]"), "{s}");
    assert!(s.contains("1.000000 (right) and 0.000000 (left)"), "{s}");
}

fn mlp(t: &mut Tape<'_, f64>, p: &[Var]) -> AdResult<Var> {
    let x = t.constant(&Array2::from_shape_fn((3, 4), |(i, j)| {
        (i as f64 - j as f64) * 0.3
    }));
    let h = t.matmul(x, p[0])?;
    let h = t.add(h, p[1])?;
    let h = t.tanh(h)?;
    let s = t.softmax(h, 1)?;
    let l = t.ln(s)?;
    t.mean(l)
}

fn arr(shape: &[usize], f: impl Fn(usize) -> f64) -> ArrayD<f64> {
    let n = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(f).collect()).unwrap()
}

#[test]
fn a_correct_tensor_program_passes_on_all_coordinates() {
    let w = arr(&[4, 2], |i| (i as f64 * 0.37).sin());
    let b = arr(&[2], |i| 0.1 * i as f64);
    let r = gradcheck_tensor(&mlp, &[w, b], &GradcheckOptions::f64()).unwrap();
    assert!(r.passed(), "{:?}", r.to_diagnostic());
    assert_eq!((r.checked, r.total), (10, 10));
}

#[test]
fn f32_programs_pass_with_f32_tolerances() {
    let w = ArrayD::from_shape_vec(IxDyn(&[3]), vec![0.5f32, -0.25, 1.0]).unwrap();
    let prog = |t: &mut Tape<'_, f32>, p: &[Var]| {
        let s = t.sigmoid(p[0])?;
        let q = t.mul(s, p[0])?;
        t.sum(q)
    };
    let o = GradcheckOptions::for_element::<f32>();
    assert_eq!(o, GradcheckOptions::f32());
    let r = gradcheck_tensor(&prog, &[w], &o).unwrap();
    assert!(r.passed(), "{:?}", r.to_diagnostic());
}

#[test]
fn large_parameters_are_checked_on_a_seeded_subset() {
    let w = arr(&[40, 10], |i| ((i * 7919) % 113) as f64 / 113.0 - 0.5);
    let prog = |t: &mut Tape<'_, f64>, p: &[Var]| {
        let s = t.tanh(p[0])?;
        t.sum(s)
    };
    let o = GradcheckOptions {
        max_coords: 25,
        ..GradcheckOptions::f64()
    };
    let r = gradcheck_tensor(&prog, std::slice::from_ref(&w), &o).unwrap();
    assert!(r.passed());
    assert_eq!((r.checked, r.total), (25, 400));
    // A planted negative entry: ln gives NaN there; the report names `ln`.
    let mut w2 = w;
    w2[[3, 3]] = -1.0;
    let prog2 = |t: &mut Tape<'_, f64>, p: &[Var]| {
        let l = t.ln(p[0])?;
        t.sum(l)
    };
    let o = GradcheckOptions {
        max_coords: 1000,
        ..GradcheckOptions::f64()
    };
    let r = gradcheck_tensor(&prog2, &[w2], &o).unwrap();
    assert!(!r.passed());
    let s = r.suspect.unwrap();
    assert!(s.starts_with("suspect: `ln` produced NaN"), "{s}");
    assert!(s.contains("tests/diagnostics/gradcheck.rs"), "{s}");
}

#[test]
fn gradgradcheck_catches_a_rule_that_is_not_twice_differentiable() {
    use shade_autodiff::scalar::ScalarRule;
    struct Square;
    impl ScalarRule<1> for Square {
        fn primal<S: Real>(&self, [x]: [S; 1]) -> S {
            x * x
        }
        fn forward<S: Real>(&self, [x]: [S; 1], _y: S, [dx]: [S; 1]) -> S {
            dx * x * 2.0
        }
        fn reverse<S: Real>(&self, [x]: [S; 1], _y: S, dy: S) -> [S; 1] {
            [dy * (2.0 * x.value())]
        }
    }
    fn f<S: Real>(x: &[S]) -> S {
        S::custom(&Square, [x[0]]) * x[1]
    }
    let f = shade_fn!(f(&[S]));
    let x = [1.5, 2.0];
    // First order is right...
    assert!(
        gradcheck_fn(f, &x, (), &GradcheckOptions::f64())
            .unwrap()
            .passed()
    );
    // ...second order is not: ∂²f/∂x0² = 2 x1 = 4 is lost.
    let r = gradgradcheck(f, &x, (), &GradcheckOptions::f64()).unwrap();
    assert!(!r.passed());
    let w = &r.worst[0];
    assert_eq!(w.index, vec![0, 0]);
    assert_eq!(w.analytic, 0.0);
    assert!((w.numeric - 4.0).abs() < 1e-5);
    assert_eq!(r.to_diagnostic().unwrap().code, "SHADE-E0501");
}

proptest! {
    // Each case runs 13 tensor programs; `PROPTEST_CASES` raises the count.
    #![proptest_config(shade_test_support::strategies::cases(32))]

    /// Built-in rules pass gradcheck at random points (away from kinks).
    #[test]
    fn builtin_rules_pass_at_random_points(ws in proptest::collection::vec(-2.0f64..2.0, 6)) {
        let w = ArrayD::from_shape_vec(IxDyn(&[2, 3]), ws).unwrap();
        let prog = |t: &mut Tape<'_, f64>, p: &[Var]| {
            let a = t.gelu(p[0])?;
            let b = t.softplus(p[0])?;
            let c = t.mul(a, b)?;
            let s = t.logsumexp(c, 1)?;
            t.sum(s)
        };
        let r = gradcheck_tensor(&prog, &[w], &GradcheckOptions::f64()).unwrap();
        prop_assert!(r.passed(), "{:?}", r.to_diagnostic());
    }
}

/// `x ↦ 2x` whose forward rule forgets the factor 2 (its reverse rule is right).
struct Double;

impl shade_autodiff::tensor::TensorRule<f64> for Double {
    fn name(&self) -> &'static str {
        "double"
    }
    fn forward(&self, x: &[ndarray::ArrayViewD<'_, f64>]) -> AdResult<ArrayD<f64>> {
        Ok(x[0].mapv(|v| 2.0 * v))
    }
    fn vjp(
        &self,
        _x: &[ndarray::ArrayViewD<'_, f64>],
        _y: ndarray::ArrayViewD<'_, f64>,
        g: ndarray::ArrayViewD<'_, f64>,
        _input: usize,
        mut dx: shade_autodiff::tensor::RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        dx.view_mut().zip_mut_with(&g, |d, &g| *d += 2.0 * g);
        Ok(())
    }
    fn jvp(
        &self,
        _x: &[ndarray::ArrayViewD<'_, f64>],
        _y: ndarray::ArrayViewD<'_, f64>,
        t: &[Option<ndarray::ArrayViewD<'_, f64>>],
        mut ty: shade_autodiff::tensor::RuleSlot<'_, f64>,
    ) -> AdResult<()> {
        match &t[0] {
            Some(t) => ty.assign(t),
            None => Ok(()),
        }
    }
}

#[test]
fn forward_mode_check_catches_a_wrong_forward_rule() {
    use shade_diagnostics::gradcheck::gradcheck_tensor_forward;
    let w = arr(&[3], |i| i as f64 - 1.0);
    let prog = |t: &mut Tape<'_, f64>, p: &[Var]| {
        let d = t.custom(Double, &[p[0]])?;
        let s = t.tanh(d)?;
        t.sum(s)
    };
    let o = GradcheckOptions::f64();
    assert!(
        gradcheck_tensor(&prog, std::slice::from_ref(&w), &o)
            .unwrap()
            .passed()
    );
    let r = gradcheck_tensor_forward(&prog, &[w], &o).unwrap();
    assert_eq!(r.failures, 3);
    // At w = 0: d/dw tanh(2w) = 2, the broken rule gives 1.
    let m = r.worst.iter().find(|m| m.index == vec![1]).unwrap();
    assert_eq!(m.analytic, 1.0);
    assert!((m.numeric - 2.0).abs() < 1e-6);
}
