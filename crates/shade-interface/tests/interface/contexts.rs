//! DifferentiationInterface's contexts: a writable `Cache` (`&mut [S]` scratch) and
//! `ConstantOrCache` through every backend and every operator that takes them, against
//! the same function written without scratch; the report says how each one was passed.

use core::cell::Cell;
use proptest::prelude::*;
use shade_interface::*;
use shade_test_support::close;

/// `Σ sin(xᵢ wᵢ) + (Σ xᵢ)²`, through a scratch buffer the function fills and reads.
fn with_scratch<S: Real>(x: &[S], scratch: &mut [S], w: &[f64]) -> S {
    for (s, (&xi, &wi)) in scratch.iter_mut().zip(x.iter().zip(w)) {
        *s = xi * wi;
    }
    let t: S = x.iter().copied().sum();
    scratch.iter().map(|s| s.sin()).sum::<S>() + t * t
}

/// The same without scratch.
fn plain<S: Real>(x: &[S], w: &[f64]) -> S {
    let t: S = x.iter().copied().sum();
    x.iter().zip(w).map(|(&xi, &wi)| (xi * wi).sin()).sum::<S>() + t * t
}

/// Constants and a cache in one value (a call counter the function updates).
struct Work {
    w: Vec<f64>,
    calls: Cell<usize>,
}

fn with_work<S: Real>(x: &[S], k: &Work) -> S {
    k.calls.set(k.calls.get() + 1);
    plain(x, &k.w)
}

fn check(got: &[f64], want: &[f64], tol: f64) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len());
    for (a, b) in got.iter().zip(want) {
        prop_assert!(close(*a, *b, tol), "{} vs {}", a, b);
    }
    Ok(())
}

proptest! {
    #![proptest_config(shade_test_support::strategies::cases(32))]

    #[test]
    fn a_writable_cache_gives_the_derivatives_of_the_plain_function(
        xw in (1usize..6).prop_flat_map(|n| (
            prop::collection::vec(-1.5f64..1.5, n..=n),
            prop::collection::vec(-1.0f64..1.0, n..=n),
        ))
    ) {
        let (x, w) = xw;
        let n = x.len();
        let (f, p) = (shade_fn!(with_scratch(&[S], &mut [S], &[f64])), shade_fn!(plain(&[S], &[f64])));
        let mut buf = vec![0.0; n];
        let g = gradient(p, &AutoShade::REVERSE, &x, (Constant(&w[..]),)).unwrap();
        let h = hessian(p, &AutoShade::REVERSE, &x, (Constant(&w[..]),)).unwrap();
        check(&gradient(f, &AutoShade::REVERSE, &x, (Cache(&mut buf[..]), Constant(&w[..]))).unwrap(), &g, 1e-12)?;
        check(&gradient(f, &AutoShade::FORWARD, &x, (Cache(&mut buf[..]), Constant(&w[..]))).unwrap(), &g, 1e-12)?;
        check(&gradient(f, &AutoNumDual, &x, (Cache(&mut buf[..]), Constant(&w[..]))).unwrap(), &g, 1e-12)?;
        check(&gradient(f, &AutoFiniteDiff::CENTRAL, &x, (Cache(&mut buf[..]), Constant(&w[..]))).unwrap(), &g, 1e-6)?;
        let fwd_rev = SecondOrder { outer: AutoShade::FORWARD, inner: AutoShade::REVERSE };
        check(&hessian(f, &fwd_rev, &x, (Cache(&mut buf[..]), Constant(&w[..]))).unwrap(), &h, 1e-12)?;
        check(&hessian(f, &AutoSparse { inner: fwd_rev }, &x, (Cache(&mut buf[..]), Constant(&w[..]))).unwrap().to_row_major(), &h, 1e-12)?;
        let v: Vec<f64> = (0..n).map(|i| 1.0 - 0.3 * i as f64).collect();
        let hv: Vec<f64> = (0..n).map(|i| (0..n).map(|j| h[i * n + j] * v[j]).sum()).collect();
        check(&hvp(f, &AutoShade::REVERSE, &x, &v, (Cache(&mut buf[..]), Constant(&w[..]))).unwrap(), &hv, 1e-12)?;
        // The buffer is the scratch's initial contents, never written.
        prop_assert!(buf.iter().all(|&b| b == 0.0));

        let k = Work { w: w.clone(), calls: Cell::new(0) };
        let q = shade_fn!(with_work(&[S], &Work));
        check(&gradient(q, &AutoShade::REVERSE, &x, (ConstantOrCache(&k),)).unwrap(), &g, 1e-12)?;
        check(&gradient(q, &AutoFiniteDiff::CENTRAL, &x, (ConstantOrCache(&k),)).unwrap(), &g, 1e-6)?;
        prop_assert!(k.calls.get() >= 2 + 2 * n);
    }
}

#[test]
fn reports_say_how_each_context_was_passed() {
    let f = shade_fn!(with_scratch(&[S], &mut [S], &[f64]));
    let (x, w, mut buf) = ([0.5, -0.25], [1.0, 2.0], [0.0; 2]);
    let prep = prepare_gradient(
        f,
        &AutoShade::REVERSE,
        &x,
        (Cache(&mut buf[..]), Constant(&w[..])),
    )
    .unwrap();
    assert_eq!(
        prep.explain().contexts,
        [
            ContextPassing::CacheAsDuplicated { scratch_bytes: 16 },
            ContextPassing::ConstantAsConst
        ]
    );
    let k = Work {
        w: w.to_vec(),
        calls: Cell::new(0),
    };
    let q = shade_fn!(with_work(&[S], &Work));
    let prep = prepare_gradient(q, &AutoFiniteDiff::CENTRAL, &x, (ConstantOrCache(&k),)).unwrap();
    assert_eq!(
        prep.explain().contexts,
        [ContextPassing::ConstantOrCacheUntouched]
    );
    // A cache of another length is a coded error at the call.
    let mut prep = prepare_gradient(
        f,
        &AutoShade::REVERSE,
        &x,
        (Cache(&mut buf[..]), Constant(&w[..])),
    )
    .unwrap();
    let mut short = [0.0; 1];
    let e = prep
        .gradient(&x, (Cache(&mut short[..]), Constant(&w[..])))
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0201", "{e}");
}
