//! Every backend × operator × standard scenario through the harness, at random points
//! (proptest), and the support table cross-checked against what really ran.

use proptest::prelude::*;
use shade_interface::testing::{
    Config, HarnessError, Scenario, Summary, check_hessian, check_hvp, check_jacobian, standard,
    test_differentiation,
};
use shade_interface::{
    AutoFiniteDiff, AutoNumDual, AutoShade, AutoSparse, Backend, Operator, SecondOrder, Support,
    TwoArg, support_table,
};
use std::collections::BTreeSet;

fn config() -> ProptestConfig {
    // proptest's default (256 cases, `PROPTEST_CASES` overrides): a case takes about 2 ms.
    ProptestConfig::default()
}

macro_rules! run_all {
    ($backends:expr, $x:expr, $s:expr, $cfg:expr) => {{
        let set = standard::scenarios($x, $s);
        let refs: Vec<&dyn Scenario<_>> = set.iter().map(|b| b.as_ref()).collect();
        test_differentiation($backends, &refs, $cfg)
    }};
}

/// What a run of `checks` compared results of `operators` on `b` covered.
fn summary<B: Backend>(b: &B, checks: usize, operators: [Operator; 2]) -> Summary {
    Summary {
        checks,
        covered: operators.into_iter().map(|op| (b.name(), op)).collect(),
    }
}

/// The second-order backends run `hessian` and `hvp` only.
fn second_order<B>(b: &B, x: &[f64], cfg: &Config) -> Result<Summary, HarnessError>
where
    B: Backend
        + shade_interface::HessianBackend<standard::VectorScalarCtx, (standard::K, standard::CacheK)>
        + shade_interface::HvpBackend<standard::VectorScalarCtx, (standard::K, standard::CacheK)>
        + shade_interface::HessianBackend<standard::VectorScalar, ()>
        + shade_interface::HvpBackend<standard::VectorScalar, ()>,
{
    let (a, c) = (standard::vector_scalar_ctx(x), standard::vector_scalar(x));
    let checks = check_hessian(b, &a, cfg)?
        + check_hvp(b, &a, cfg)?
        + check_hessian(b, &c, cfg)?
        + check_hvp(b, &c, cfg)?;
    Ok(summary(b, checks, [Operator::Hessian, Operator::Hvp]))
}

/// The sparse backends run two-argument `jacobian` and `hessian` only.
fn sparse<B>(b: &B, x: &[f64], cfg: &Config) -> Result<Summary, HarnessError>
where
    B: Backend
        + shade_interface::JacobianBackend<TwoArg<standard::VectorVector>, (standard::K,)>
        + shade_interface::JacobianBackend<TwoArg<standard::MatrixMatrix>, ()>
        + shade_interface::HessianBackend<standard::VectorScalarCtx, (standard::K, standard::CacheK)>
        + shade_interface::HessianBackend<standard::VectorScalar, ()>,
{
    let checks = check_jacobian(b, &standard::vector_vector(x).form(), cfg)?
        + check_jacobian(b, &standard::matrix_matrix(x).form(), cfg)?
        + check_hessian(b, &standard::vector_scalar_ctx(x), cfg)?
        + check_hessian(b, &standard::vector_scalar(x), cfg)?;
    Ok(summary(b, checks, [Operator::Jacobian, Operator::Hessian]))
}

fn everything(x: &[f64], s: f64) -> Result<Summary, HarnessError> {
    let mut all = Summary::default();
    let mut add = |r: Summary| {
        all.checks += r.checks;
        all.covered.extend(r.covered);
    };
    // Each mode is its own type: one run each.
    add(run_all!(&[AutoShade::REVERSE], x, s, &Config::exact())?);
    add(run_all!(&[AutoShade::FORWARD], x, s, &Config::exact())?);
    add(run_all!(&[AutoNumDual], x, s, &Config::exact())?);
    add(run_all!(
        &[AutoFiniteDiff::CENTRAL],
        x,
        s,
        &Config::finite_differences()
    )?);
    add(run_all!(
        &[AutoFiniteDiff::FORWARD],
        x,
        s,
        &Config::forward_differences()
    )?);
    let fwd_rev = SecondOrder {
        outer: AutoShade::FORWARD,
        inner: AutoShade::REVERSE,
    };
    add(second_order(&fwd_rev, x, &Config::exact())?);
    let fd_rev = SecondOrder {
        outer: AutoFiniteDiff::CENTRAL,
        inner: AutoShade::REVERSE,
    };
    add(second_order(&fd_rev, x, &Config::finite_differences())?);
    add(sparse(
        &AutoSparse {
            inner: AutoShade::FORWARD,
        },
        x,
        &Config::exact(),
    )?);
    add(sparse(
        &AutoSparse {
            inner: AutoFiniteDiff::CENTRAL,
        },
        x,
        &Config::finite_differences(),
    )?);
    Ok(all)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_backend_every_operator_at_random_points(
        x in prop::collection::vec(-1.5f64..1.5, 1..=6),
        s in -2.0f64..2.0,
    ) {
        let r = everything(&x, s);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

#[test]
fn support_table_matches_what_the_harness_runs() {
    let ran = everything(&[0.3, -1.1, 0.8, 1.4, -0.2], 0.9).unwrap();
    assert!(ran.checks > 1000, "{} checks", ran.checks);
    eprintln!(
        "{} checks, {} (backend, operator) pairs",
        ran.checks,
        ran.covered.len()
    );
    let claimed: BTreeSet<(String, Operator)> = support_table()
        .into_iter()
        .flat_map(|(name, row)| {
            Operator::ALL
                .into_iter()
                .zip(row.into_iter().take(Operator::ALL.len()))
                .filter(|(_, s)| *s != Support::No)
                .map(move |(op, _)| (name.clone(), op))
        })
        .collect();
    assert_eq!(claimed, ran.covered);
}

#[test]
fn harness_catches_a_wrong_reference() {
    let mut sc = standard::vector_scalar(&[0.5, 0.25]);
    sc.reference.jacobian[1] += 1e-3;
    let err = shade_interface::testing::check_gradient(&AutoShade::REVERSE, &sc, &Config::exact())
        .unwrap_err();
    assert_eq!(err.operator, "gradient");
    assert!(err.what.starts_with("entry 1:"), "{err}");
}
