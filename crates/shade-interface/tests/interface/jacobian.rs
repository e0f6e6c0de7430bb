//! Jacobians without an output length, as a user writes them: a one-argument function
//! returning `Vec<S>` (the length is what it returns) and a two-argument one writing
//! into the user's `y` (the length of `y`), on every backend; a length that changes
//! between calls and a buffer of the wrong length are coded errors, never a wrong row
//! count or a panic.

use proptest::prelude::*;
use shade_interface::*;
use shade_test_support::close;

/// `yᵢ = Σⱼ aᵢⱼ sin(xⱼ) + x_{i mod n}² · xⱼ₀`: `m = a.len() / n` outputs, dense.
fn mixed<S: Real>(x: &[S], a: &[f64]) -> Vec<S> {
    let n = x.len();
    (0..a.len() / n)
        .map(|i| {
            let mut v = x[i % n] * x[i % n] * x[0];
            for (j, &xj) in x.iter().enumerate() {
                v += xj.sin() * a[i * n + j];
            }
            v
        })
        .collect()
}

/// [`mixed`] in place.
fn mixed_in<S: Real>(y: &mut [S], x: &[S], a: &[f64]) {
    y.copy_from_slice(&mixed(x, a));
}

/// The Jacobian of [`mixed`], by hand.
fn mixed_jacobian(x: &[f64], a: &[f64]) -> Vec<f64> {
    let n = x.len();
    let m = a.len() / n;
    let mut j = vec![0.0; m * n];
    for i in 0..m {
        for k in 0..n {
            j[i * n + k] = a[i * n + k] * x[k].cos();
        }
        let r = i % n;
        j[i * n + r] += 2.0 * x[r] * x[0];
        j[i * n] += x[r] * x[r];
    }
    j
}

fn point_and_matrix() -> impl Strategy<Value = (Vec<f64>, Vec<f64>)> {
    (1usize..12, 1usize..20).prop_flat_map(|(n, m)| {
        (
            prop::collection::vec(-1.5f64..1.5, n..=n),
            prop::collection::vec(-2.0f64..2.0, m * n..=m * n),
        )
    })
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len());
    for (k, (a, b)) in got.iter().zip(want).enumerate() {
        prop_assert!(close(*a, *b, tol), "entry {}: {} vs {}", k, a, b);
    }
    Ok(())
}

proptest! {
    #![proptest_config(shade_test_support::strategies::cases(48))]

    /// `m` from 1 to 19 against `n` from 1 to 11: the forward Jacobian equals the
    /// reverse one, the hand-written one and central differences, in both forms and on
    /// every backend, and the row count is the function's.
    #[test]
    fn inferred_jacobians_agree_on_every_backend((x, a) in point_and_matrix()) {
        let f = shade_fn!(mixed(&[S], &[f64]) -> Vec<S>);
        let g = shade_fn!(mixed_in(&mut [S], &[S], &[f64]));
        let ctx = (Constant(&a[..]),);
        let (n, m) = (x.len(), a.len() / x.len());
        let want = mixed_jacobian(&x, &a);
        let (y, fwd) = value_and_jacobian(f, &AutoShade::FORWARD, &x, ctx).unwrap();
        prop_assert_eq!((y.len(), fwd.len()), (m, m * n));
        prop_assert_eq!(&y, &mixed(&x, &a));
        assert_close(&fwd, &want, 1e-12)?;
        assert_close(&jacobian(f, &AutoShade::REVERSE, &x, ctx).unwrap(), &fwd, 1e-12)?;
        assert_close(&jacobian(f, &AutoNumDual, &x, ctx).unwrap(), &fwd, 1e-12)?;
        assert_close(&jacobian(f, &AutoFiniteDiff::CENTRAL, &x, ctx).unwrap(), &fwd, 1e-6)?;
        let sparse = jacobian(f, &AutoSparse { inner: AutoShade::REVERSE }, &x, ctx).unwrap();
        assert_close(&sparse.to_row_major(), &fwd, 1e-12)?;
        // In place: the buffer gives the length.
        let mut yb = vec![0.0; m];
        for j in [
            value_and_jacobian_inplace(g, &mut yb, &AutoShade::FORWARD, &x, ctx).unwrap(),
            value_and_jacobian_inplace(g, &mut yb, &AutoShade::REVERSE, &x, ctx).unwrap(),
        ] {
            assert_close(&j, &fwd, 1e-12)?;
        }
        prop_assert_eq!(&yb, &y);
        // Pushforward and pullback of the one-argument form.
        let dx: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).cos()).collect();
        let dy: Vec<f64> = (0..m).map(|i| (i as f64 * 0.3).sin()).collect();
        let jdx: Vec<f64> = (0..m).map(|i| (0..n).map(|k| want[i * n + k] * dx[k]).sum()).collect();
        let jtdy: Vec<f64> = (0..n).map(|k| (0..m).map(|i| want[i * n + k] * dy[i]).sum()).collect();
        for b in [AutoShade::FORWARD.name(), AutoShade::REVERSE.name()] {
            let (p, q) = if b.contains("forward") {
                (pushforward(f, &AutoShade::FORWARD, &x, &dx, ctx), pullback(f, &AutoShade::FORWARD, &x, &dy, ctx))
            } else {
                (pushforward(f, &AutoShade::REVERSE, &x, &dx, ctx), pullback(f, &AutoShade::REVERSE, &x, &dy, ctx))
            };
            assert_close(&p.unwrap(), &jdx, 1e-12)?;
            assert_close(&q.unwrap(), &jtdy, 1e-12)?;
        }
        let (y2, p) = value_and_pushforward(f, &AutoFiniteDiff::CENTRAL, &x, &dx, ctx).unwrap();
        prop_assert_eq!(&y2, &y);
        assert_close(&p, &jdx, 1e-6)?;
        let (_, q) = value_and_pullback(f, &AutoNumDual, &x, &dy, ctx).unwrap();
        assert_close(&q, &jtdy, 1e-12)?;
    }
}

/// Two outputs while `x₀ ≥ 0`, three below.
fn sign_dependent<S: Real>(x: &[S]) -> Vec<S> {
    let mut y = vec![x[0] * x[1], x[1].sin()];
    if x[0] < S::zero() {
        y.push(x[0].exp());
    }
    y
}

/// Checks that `e` is `SHADE-E0132` naming both lengths.
fn assert_changed_length(e: InterfaceError) {
    assert_eq!(e.code(), "SHADE-E0132", "{e}");
    let text = e.to_string();
    assert!(
        text.contains("returned 3 outputs") && text.contains("but 2 were expected"),
        "{text}"
    );
}

#[test]
fn a_length_that_changes_after_preparation_is_a_coded_error_on_every_backend() {
    let f = shade_fn!(sign_dependent(&[S]) -> Vec<S>);
    let (at, below) = ([0.5, 1.0], [-0.5, 1.0]);
    macro_rules! jacobians {
        ($($b:expr),*) => {$(
            let mut p = prepare_jacobian(f, &$b, &at, ()).unwrap();
            assert_eq!(p.meta().m, 2);
            assert_eq!(p.jacobian(&at, ()).unwrap().to_row_major().len(), 4);
            assert_changed_length(p.jacobian(&below, ()).map(drop).unwrap_err());
            // The prepared object still works where the length is the prepared one.
            assert!(p.jacobian(&at, ()).is_ok());
        )*};
    }
    macro_rules! directional {
        ($($b:expr),*) => {$(
            let mut q = prepare_pushforward(f, &$b, &at, ()).unwrap();
            assert_changed_length(q.pushforward(&below, &[1.0, 0.0], ()).unwrap_err());
            let mut r = prepare_pullback(f, &$b, &at, ()).unwrap();
            assert_changed_length(r.pullback(&below, &[1.0, 0.0], ()).unwrap_err());
        )*};
    }
    jacobians!(
        AutoShade::FORWARD,
        AutoShade::REVERSE,
        AutoFiniteDiff::CENTRAL,
        AutoNumDual,
        AutoSparse {
            inner: AutoShade::FORWARD
        },
        AutoSparse {
            inner: AutoFiniteDiff::CENTRAL
        }
    );
    directional!(
        AutoShade::FORWARD,
        AutoShade::REVERSE,
        AutoFiniteDiff::CENTRAL,
        AutoNumDual
    );
    // Unprepared, each call sizes its own result: three rows below zero.
    let (y, j) = value_and_jacobian(f, &AutoShade::REVERSE, &below, ()).unwrap();
    assert_eq!((y.len(), j.len()), (3, 6));
}

#[test]
fn a_cotangent_of_another_length_than_the_inferred_one_is_refused() {
    let f = shade_fn!(sign_dependent(&[S]) -> Vec<S>);
    let e = pullback(f, &AutoShade::REVERSE, &[0.5, 1.0], &[1.0; 3], ()).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0201", "{e}");
}

/// Writes two outputs, whatever the length of `y`.
fn two<S: Real>(y: &mut [S], x: &[S]) {
    y[0] = x[0] * x[1];
    y[1] = x[0].cos();
}

#[test]
fn the_output_buffer_gives_the_length_of_the_two_argument_form() {
    let f = shade_fn!(two(&mut [S], &[S]));
    let x = [0.5, 2.0];
    let mut y = [0.0; 2];
    let j = value_and_jacobian_inplace(f, &mut y, &AutoShade::FORWARD, &x, ()).unwrap();
    assert_eq!(y, [1.0, 0.5f64.cos()]);
    assert_eq!(j, [2.0, 0.5, -(0.5f64.sin()), 0.0]);
    let d =
        value_and_pushforward_inplace(f, &mut y, &AutoShade::REVERSE, &x, &[1.0, 0.0], ()).unwrap();
    assert_eq!(d, [2.0, -(0.5f64.sin())]);
    let d = value_and_pullback_inplace(f, &mut y, &AutoFiniteDiff::CENTRAL, &x, &[1.0, 0.0], ())
        .unwrap();
    assert!(close(d[0], 2.0, 1e-8) && close(d[1], 0.5, 1e-8), "{d:?}");
    // A longer buffer: the function leaves its last entry unwritten; a shorter one: it
    // indexes past it. Both are coded errors, at preparation, with every backend.
    for b in [AutoShade::FORWARD.name(), AutoFiniteDiff::CENTRAL.name()] {
        let long = if b.starts_with("AutoShade") {
            value_and_jacobian_inplace(f, &mut [0.0; 3], &AutoShade::FORWARD, &x, ()).map(drop)
        } else {
            value_and_jacobian_inplace(f, &mut [0.0; 3], &AutoFiniteDiff::CENTRAL, &x, ()).map(drop)
        };
        let e = long.unwrap_err();
        assert_eq!(e.code(), "SHADE-E0130", "{e}");
        assert!(
            e.to_string()
                .contains("called with 3 outputs but wrote only the first 2"),
            "{e}"
        );
    }
    let e = prepare_jacobian_inplace(f, &[0.0; 1], &AutoShade::REVERSE, &x, ())
        .map(drop)
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0131", "{e}");
    // The prepared object's `y` must have the prepared length.
    let mut p = prepare_jacobian_inplace(f, &y, &AutoShade::REVERSE, &x, ()).unwrap();
    let mut jac = vec![0.0; 4];
    let e = p
        .value_and_jacobian_into(&x, (), &mut [0.0; 3], &mut jac)
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0201", "{e}");
}
