//! AutoSparse: detected patterns, colourings (column, row, star) and compressed
//! Jacobians and Hessians as `CsMat`, against dense results and central differences;
//! the harness's checks at random points; coded errors.

use proptest::prelude::*;
use shade_interface::sprs::CsMat;
use shade_interface::testing::{Config, check_hessian, check_jacobian, standard};
use shade_interface::*;
use shade_test_support::close;

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

/// Asserts that a sparse matrix equals a dense row-major one (`tol`), entries outside
/// the pattern being zero.
fn assert_matches(s: &CsMat<f64>, dense: &[f64], tol: f64) {
    let d = s.to_row_major();
    assert_eq!(d.len(), dense.len());
    for (k, (a, b)) in d.iter().zip(dense).enumerate() {
        assert!(close(*a, *b, tol), "entry {k}: {a} vs {b}");
    }
}

#[test]
fn banded_jacobian_needs_three_colours_and_one_batched_pushforward() {
    let f = shade_fn!(band(&mut [S], &[S], &[f64]));
    let n = 40;
    let x: Vec<f64> = (0..n).map(|i| 0.1 * i as f64 - 1.0).collect();
    let p = [1.5];
    let sparse = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    let mut prep =
        prepare_jacobian_inplace(f, &vec![0.0; n], &sparse, &x, (Constant(&p[..]),)).unwrap();
    let c = prep.colouring();
    assert_eq!(
        (c.orientation, c.count, c.other),
        (Orientation::Columns, 3, Some(3))
    );
    assert_eq!(prep.sparsity().nnz(), 3 * n - 2);
    let r = prep.explain();
    assert_eq!((r.calls, r.batch), (1, 3), "{r}");
    assert!(
        r.detail.starts_with(&format!(
            "sparse: {} nonzeros (local pattern at the preparation point), column colouring: 3 colours",
            3 * n - 2
        )),
        "{r}"
    );
    let xs: Vec<f64> = x.iter().map(|v| v * 0.7 + 0.2).collect();
    let j: CsMat<f64> = prep.jacobian(&xs, (Constant(&p[..]),)).unwrap();
    let mut y = vec![0.0; n];
    let dense =
        value_and_jacobian_inplace(f, &mut y, &AutoShade::REVERSE, &xs, (Constant(&p[..]),))
            .unwrap();
    assert_eq!(j.to_row_major(), dense);
    assert_eq!(j.nnz(), 3 * n - 2);
    // The `_into` variant writes into a matrix of the prepared pattern.
    let mut buf = prep.sparsity().clone();
    prep.jacobian_into(&xs, (Constant(&p[..]),), &mut buf)
        .unwrap();
    assert_eq!(buf, j);
}

/// One dense output (`y₀ = Σ xᵢ²`) and a diagonal: the columns need `n` colours, the
/// rows two.
fn arrow<S: Real>(y: &mut [S], x: &[S]) {
    y[0] = x.iter().map(|&v| v * v).sum();
    for i in 1..x.len() {
        y[i] = x[i].exp() * x[i - 1];
    }
}

#[test]
fn a_dense_row_is_coloured_by_rows_when_pullbacks_are_native() {
    let f = shade_fn!(arrow(&mut [S], &[S]));
    let n = 30;
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.3).sin()).collect();
    let mut y = vec![0.0; n];
    let dense = value_and_jacobian_inplace(f, &mut y, &AutoShade::FORWARD, &x, ()).unwrap();
    {
        let inner = AutoShade::REVERSE;
        let mut prep = prepare_jacobian_inplace(f, &y, &AutoSparse { inner }, &x, ()).unwrap();
        let c = prep.colouring().clone();
        assert_eq!(
            (c.orientation, c.count, c.other),
            (Orientation::Rows, 3, Some(n))
        );
        assert!(
            prep.explain()
                .detail
                .contains("row colouring: 3 colours (column colouring: 30)")
        );
        assert_matches(&prep.jacobian(&x, ()).unwrap(), &dense, 1e-13);
    }
    let mut prep = prepare_jacobian_inplace(
        f,
        &y,
        &AutoSparse {
            inner: AutoShade::FORWARD,
        },
        &x,
        (),
    )
    .unwrap();
    assert_eq!(prep.colouring().orientation, Orientation::Rows);
    assert_matches(&prep.jacobian(&x, ()).unwrap(), &dense, 1e-13);
    // Finite differences have no native pullback: columns, whatever their number.
    let fd = AutoSparse {
        inner: AutoFiniteDiff::CENTRAL,
    };
    let mut prep = prepare_jacobian_inplace(f, &y, &fd, &x, ()).unwrap();
    assert_eq!(
        (prep.colouring().orientation, prep.colouring().count),
        (Orientation::Columns, n)
    );
    assert_matches(&prep.jacobian(&x, ()).unwrap(), &dense, 1e-6);
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
        prepare_jacobian_inplace(f, &[0.0; 2], &sparse, &[1.0, 2.0, 3.0], (Constant(&p[..]),))
            .unwrap();
    let (y, j) = prep
        .value_and_jacobian(&[-1.0, 0.0, 4.0], (Constant(&p[..]),))
        .unwrap();
    assert_eq!(y, [0.5f64.sin(), 0.25]);
    assert_eq!((j.shape(), j.nnz()), ((2, 3), 0));
    assert_eq!(prep.colouring().count, 0);
}

/// A sum of local terms (the chained Rosenbrock function): a tridiagonal Hessian.
fn chained<S: Real>(x: &[S], p: &[f64]) -> S {
    let mut acc = S::zero();
    for w in x.windows(2) {
        acc += (w[1] - w[0] * w[0]).powi(2) * p[0] + (-w[0] + 1.0).powi(2);
    }
    acc
}

#[test]
fn a_sum_of_local_terms_has_a_star_coloured_tridiagonal_hessian() {
    let f = shade_fn!(chained(&[S], &[f64]));
    let n = 25;
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).cos()).collect();
    let p = [100.0];
    let fwd_rev = SecondOrder {
        outer: AutoShade::FORWARD,
        inner: AutoShade::REVERSE,
    };
    let dense = hessian(f, &fwd_rev, &x, (Constant(&p[..]),)).unwrap();
    let sparse = AutoSparse { inner: fwd_rev };
    let mut prep = prepare_hessian(f, &sparse, &x, (Constant(&p[..]),)).unwrap();
    let c = prep.colouring();
    assert_eq!((c.orientation, c.count), (Orientation::Star, 3));
    assert_eq!(prep.sparsity().nnz(), 3 * n - 2);
    let r = prep.explain();
    assert!(
        r.detail
            .contains("star colouring: 3 colours: 1 batched Hessian-vector products"),
        "{r}"
    );
    let h: CsMat<f64> = prep.hessian(&x, (Constant(&p[..]),)).unwrap();
    assert_matches(&h, &dense, 1e-12);
    let (y, g, h2) = prep
        .value_gradient_and_hessian(&x, (Constant(&p[..]),))
        .unwrap();
    assert_eq!(h2, h);
    assert!(close(y, chained(&x, &p), 1e-12));
    let g_ref = gradient(f, &AutoShade::REVERSE, &x, (Constant(&p[..]),)).unwrap();
    assert!(g.iter().zip(&g_ref).all(|(a, b)| close(*a, *b, 1e-12)));
    // AutoShade's own Hessian-vector products, and differences of gradients.
    let h3 = hessian(
        f,
        &AutoSparse {
            inner: AutoShade::REVERSE,
        },
        &x,
        (Constant(&p[..]),),
    )
    .unwrap();
    assert_eq!(h3, h);
    let fd = AutoSparse {
        inner: SecondOrder {
            outer: AutoFiniteDiff::CENTRAL,
            inner: AutoShade::REVERSE,
        },
    };
    assert_matches(
        &hessian(f, &fd, &x, (Constant(&p[..]),)).unwrap(),
        &dense,
        1e-5,
    );
}

#[test]
fn a_matrix_of_another_pattern_is_a_coded_error() {
    let f = shade_fn!(band(&mut [S], &[S], &[f64]));
    let (x, p) = (vec![0.5; 6], [1.0]);
    let sparse = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    let mut prep =
        prepare_jacobian_inplace(f, &[0.0; 6], &sparse, &x, (Constant(&p[..]),)).unwrap();
    let mut other = CsMat::<f64>::eye(6);
    let e = prep
        .jacobian_into(&x, (Constant(&p[..]),), &mut other)
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0205", "{e}");
    assert!(e.to_string().contains("16 nonzeros"), "{e}");
}

#[test]
fn an_output_buffer_of_another_length_is_refused_at_preparation() {
    let f = shade_fn!(band(&mut [S], &[S], &[f64]));
    let (x, p) = (vec![0.5; 4], [1.0]);
    let long = [0.0; 5];
    for e in [
        prepare_jacobian_inplace(
            f,
            &long,
            &AutoSparse {
                inner: AutoShade::FORWARD,
            },
            &x,
            (Constant(&p[..]),),
        )
        .map(drop)
        .unwrap_err(),
        prepare_jacobian_inplace(f, &long, &AutoShade::REVERSE, &x, (Constant(&p[..]),))
            .map(drop)
            .unwrap_err(),
        value_and_pushforward_inplace(
            f,
            &mut [0.0; 5],
            &AutoFiniteDiff::CENTRAL,
            &x,
            &[1.0; 4],
            (Constant(&p[..]),),
        )
        .map(drop)
        .unwrap_err(),
    ] {
        assert_eq!(e.code(), "SHADE-E0130", "{e}");
        assert!(e.help().contains("(4)"), "{}", e.help());
    }
    let e = prepare_jacobian_inplace(f, &[0.0; 3], &AutoShade::FORWARD, &x, (Constant(&p[..]),))
        .map(drop)
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0131", "{e}");
}

/// [`band`] returning its outputs: the one-argument form, whose row count is inferred.
fn band_out<S: Real>(x: &[S], p: &[f64]) -> Vec<S> {
    let mut y = vec![S::zero(); x.len()];
    band(&mut y, x, p);
    y
}

#[test]
fn a_vector_valued_one_argument_function_is_compressed_too() {
    let (f, g) = (
        shade_fn!(band_out(&[S], &[f64]) -> Vec<S>),
        shade_fn!(band(&mut [S], &[S], &[f64])),
    );
    let n = 30;
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.4).sin()).collect();
    let p = [0.7];
    let sparse = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    let mut prep = prepare_jacobian(f, &sparse, &x, (Constant(&p[..]),)).unwrap();
    assert_eq!(prep.sparsity().shape(), (n, n));
    assert_eq!(prep.colouring().count, 3);
    let j: CsMat<f64> = prep.jacobian(&x, (Constant(&p[..]),)).unwrap();
    let mut y = vec![0.0; n];
    let want = value_and_jacobian_inplace(g, &mut y, &sparse, &x, (Constant(&p[..]),)).unwrap();
    assert_eq!(j, want);
    let (y1, dense) = value_and_jacobian(f, &AutoShade::REVERSE, &x, (Constant(&p[..]),)).unwrap();
    assert_eq!(y1, y);
    assert_eq!(j.to_row_major(), dense);
}

/// A random sparse function: output `i` is `Σₖ sin(x[a]) · x[b] + x[c]²` over the
/// index triples of `terms[i]`.
#[derive(Debug, Clone)]
struct Terms(Vec<Vec<(usize, usize, usize)>>);

fn random_terms<S: Real>(y: &mut [S], x: &[S], t: &Terms) {
    for (yi, terms) in y.iter_mut().zip(&t.0) {
        let mut v = S::zero();
        for &(a, b, c) in terms {
            v += x[a].sin() * x[b] + x[c] * x[c];
        }
        *yi = v;
    }
}

/// `Σₜ cos(x[a] x[b]) + x[c]³` over random triples: a random sparse Hessian.
fn random_local<S: Real>(x: &[S], t: &Terms) -> S {
    let mut v = S::zero();
    for &(a, b, c) in t.0.iter().flatten() {
        v += (x[a] * x[b]).cos() + x[c].powi(3);
    }
    v
}

fn terms(n: usize, m: usize) -> impl Strategy<Value = Terms> {
    prop::collection::vec(prop::collection::vec((0..n, 0..n, 0..n), 0..3), m..=m).prop_map(Terms)
}

fn point_and_terms() -> impl Strategy<Value = (Vec<f64>, Terms, usize)> {
    (2usize..14, 1usize..14).prop_flat_map(|(n, m)| {
        (
            prop::collection::vec(-1.5f64..1.5, n..=n),
            terms(n, m),
            Just(m),
        )
    })
}

proptest! {
    #![proptest_config(shade_test_support::strategies::cases(48))]

    /// Random sparse Jacobians, both orientations' inner modes: the `CsMat` equals the
    /// dense reverse-mode Jacobian to rounding and central differences to 1e-6.
    #[test]
    fn random_sparse_jacobians_match_dense_and_differences((x, t, m) in point_and_terms()) {
        let f = shade_fn!(random_terms(&mut [S], &[S], &Terms));
        let ctx = (Constant(&t),);
        let mut y = vec![0.0; m];
        let dense = value_and_jacobian_inplace(f, &mut y, &AutoShade::REVERSE, &x, ctx).unwrap();
        let fd = value_and_jacobian_inplace(f, &mut y, &AutoFiniteDiff::CENTRAL, &x, ctx).unwrap();
        for s in [
            value_and_jacobian_inplace(f, &mut y, &AutoSparse { inner: AutoShade::FORWARD }, &x, ctx).unwrap(),
            value_and_jacobian_inplace(f, &mut y, &AutoSparse { inner: AutoShade::REVERSE }, &x, ctx).unwrap(),
        ] {
            let d = s.to_row_major();
            for k in 0..d.len() {
                prop_assert!(close(d[k], dense[k], 1e-12), "entry {}: {} vs {}", k, d[k], dense[k]);
                prop_assert!(close(d[k], fd[k], 1e-6), "entry {} vs differences: {} vs {}", k, d[k], fd[k]);
            }
        }
    }

    /// Random sparse Hessians: star colouring and decompression against the dense
    /// forward-over-reverse Hessian and second differences.
    #[test]
    fn random_sparse_hessians_match_dense_and_differences((x, t, _m) in point_and_terms()) {
        let f = shade_fn!(random_local(&[S], &Terms));
        let ctx = (Constant(&t),);
        let fwd_rev = SecondOrder { outer: AutoShade::FORWARD, inner: AutoShade::REVERSE };
        let dense = hessian(f, &fwd_rev, &x, ctx).unwrap();
        let fd = hessian(f, &AutoFiniteDiff::CENTRAL, &x, ctx).unwrap();
        let s = hessian(f, &AutoSparse { inner: fwd_rev }, &x, ctx).unwrap().to_row_major();
        for k in 0..s.len() {
            prop_assert!(close(s[k], dense[k], 1e-12), "entry {}: {} vs {}", k, s[k], dense[k]);
            prop_assert!(close(s[k], fd[k], 1e-4), "entry {} vs differences: {} vs {}", k, s[k], fd[k]);
        }
    }

    #[test]
    fn sparse_jacobians_and_hessians_pass_the_harness(x in prop::collection::vec(-1.5f64..1.5, 1..=6)) {
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
        let fwd_rev = AutoSparse { inner: SecondOrder { outer: AutoShade::FORWARD, inner: AutoShade::REVERSE } };
        let r = check_hessian(&fwd_rev, &standard::vector_scalar(&x), &Config::exact());
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
