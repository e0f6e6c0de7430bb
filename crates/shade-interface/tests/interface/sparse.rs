//! AutoSparse: detected patterns, colourings and compressed Jacobians against dense
//! ones; the harness's Jacobian checks at random points.

use proptest::prelude::*;
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::testing::{Config, check_jacobian, standard};
use shade_interface::*;

/// A tridiagonal Jacobian: `yᵢ = x_{i-1} x_i + sin(x_{i+1}) · p₀`.
fn band<S: Real>(y: &mut [S], x: &[S], p: &[f64]) {
    let n = x.len();
    for i in 0..n {
        let mut v = x[i] * x[i];
        if i > 0 {
            v = x[i - 1] * x[i];
        }
        if i + 1 < n {
            v += x[i + 1].sin() * p[0];
        }
        y[i] = v;
    }
}

#[test]
fn banded_jacobian_needs_three_colours() {
    let f = shade_fn!(band(&mut [S], &[S], &[f64]));
    let n = 40;
    let x: Vec<f64> = (0..n).map(|i| 0.1 * i as f64 - 1.0).collect();
    let p = [1.5];
    let sparse = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    let mut prep = prepare_jacobian_inplace(f, n, &sparse, &x, (Constant(&p[..]),)).unwrap();
    let r = prep.explain();
    assert_eq!(r.calls, 3, "{r}");
    assert!(
        r.detail
            .starts_with(&format!("sparse: {} nonzeros", 3 * n - 2)),
        "{r}"
    );
    let xs: Vec<f64> = x.iter().map(|v| v * 0.7 + 0.2).collect();
    let j = prep.jacobian(&xs, (Constant(&p[..]),)).unwrap();
    let (_, dense) =
        value_and_jacobian_inplace(f, n, &AutoShade::REVERSE, &xs, (Constant(&p[..]),)).unwrap();
    assert_eq!(j, dense);
    assert_eq!(j.iter().filter(|v| **v != 0.0).count(), 3 * n - 2);
}

/// Outputs that depend on the parameters only: no colour, yet the value is computed.
fn from_params<S: Real>(y: &mut [S], x: &[S], p: &[f64]) {
    let _ = x;
    y[0] = S::cst(p[0]).sin();
    y[1] = S::cst(p[0] * p[0]);
}

#[test]
fn a_jacobian_with_no_nonzero_still_computes_the_value() {
    let f = shade_fn!(from_params(&mut [S], &[S], &[f64]));
    let p = [0.5];
    let sparse = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    let mut prep =
        prepare_jacobian_inplace(f, 2, &sparse, &[1.0, 2.0, 3.0], (Constant(&p[..]),)).unwrap();
    let (y, j) = prep
        .value_and_jacobian(&[-1.0, 0.0, 4.0], (Constant(&p[..]),))
        .unwrap();
    assert_eq!(y, [0.5f64.sin(), 0.25]);
    assert_eq!(j, [0.0; 6]);
}

proptest! {
    #[test]
    fn sparse_jacobians_pass_the_harness(x in prop::collection::vec(-1.5f64..1.5, 1..=6)) {
        let (fwd, rev) = (AutoSparse { inner: AutoShade::FORWARD }, AutoSparse { inner: AutoShade::REVERSE });
        for r in [
            check_jacobian(&fwd, &standard::vector_vector(&x).form(), &Config::exact()),
            check_jacobian(&fwd, &standard::matrix_matrix(&x).form(), &Config::exact()),
            check_jacobian(&rev, &standard::vector_vector(&x).form(), &Config::exact()),
            check_jacobian(&rev, &standard::matrix_matrix(&x).form(), &Config::exact()),
        ] {
            prop_assert!(r.is_ok(), "{}", r.unwrap_err());
        }
        let fd = AutoSparse { inner: AutoFiniteDiff::CENTRAL };
        let r = check_jacobian(&fd, &standard::vector_vector(&x).form(), &Config::finite_differences())
            .and_then(|_| check_jacobian(&fd, &standard::matrix_matrix(&x).form(), &Config::finite_differences()));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// The markers moved to the vocabulary (`backend.rs`); their former module paths still
/// name the same types.
#[test]
fn markers_keep_their_former_module_paths() {
    let b: sparse::AutoSparse<AutoShade<shade_autodiff::Forward>> = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    assert_eq!(b.name(), "AutoSparse(AutoShade(forward))");
    let d: numdual::AutoNumDual = AutoNumDual;
    assert_eq!(d.name(), "AutoNumDual");
}
