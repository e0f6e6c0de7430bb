//! The checkers: one per operator, every variant run twice.

use super::{
    Config, GradScenario, HarnessError, ScalarInplaceScenario, ScalarScenario, Tolerance, VecForms,
};
use crate::backend::Backend;
use crate::context::Contexts;
use crate::error::InterfaceError;
use crate::form::{OneArg, TwoArg};
use crate::matrix::DerivativeMatrix;
use crate::ops::*;
use core::borrow::{Borrow, BorrowMut};

/// Output buffers are pre-filled with this, so a variant that accumulates instead of
/// overwriting, or forgets an entry, fails.
const GARBAGE: f64 = 7.25e3;

struct H<'a> {
    scenario: &'a str,
    backend: String,
    operator: &'static str,
}

impl H<'_> {
    fn new<'a, B: Backend>(scenario: &'a str, b: &B, operator: &'static str) -> H<'a> {
        H {
            scenario,
            backend: b.name(),
            operator,
        }
    }
    fn fail(&self, variant: &str, what: String) -> HarnessError {
        HarnessError {
            scenario: self.scenario.into(),
            backend: self.backend.clone(),
            operator: self.operator,
            variant: variant.into(),
            what,
        }
    }
    fn ie(&self, variant: &str) -> impl Fn(InterfaceError) -> HarnessError + '_ {
        let v = variant.to_string();
        move |e| self.fail(&v, format!("error[{}]: {e}", e.code()))
    }
    /// Compares `got` with `want`, naming the worst entry.
    fn cmp(
        &self,
        variant: &str,
        tol: &Tolerance,
        got: &[f64],
        want: &[f64],
    ) -> Result<usize, HarnessError> {
        if got.len() != want.len() {
            return Err(self.fail(
                variant,
                format!("length {} instead of {}", got.len(), want.len()),
            ));
        }
        let worst = got
            .iter()
            .zip(want)
            .enumerate()
            .filter(|(_, (a, b))| !tol.close(**a, **b))
            .max_by(|x, y| {
                let dx = (x.1.0 - x.1.1).abs();
                let dy = (y.1.0 - y.1.1).abs();
                dx.partial_cmp(&dy).unwrap_or(core::cmp::Ordering::Equal)
            });
        match worst {
            None => Ok(1),
            Some((i, (a, b))) => Err(self.fail(
                variant,
                format!(
                    "entry {i}: got {a:e}, reference {b:e} (rtol {:e}, atol {:e})",
                    tol.rtol, tol.atol
                ),
            )),
        }
    }
    /// Compares a Jacobian or Hessian (dense or sparse) with a row-major `want`.
    fn cmp_matrix<M: ?Sized + DerivativeMatrix>(
        &self,
        variant: &str,
        tol: &Tolerance,
        got: &M,
        want: &[f64],
    ) -> Result<usize, HarnessError> {
        self.cmp(variant, tol, &got.to_row_major(), want)
    }
    fn untouched(
        &self,
        variant: &str,
        name: &str,
        before: &[f64],
        after: &[f64],
    ) -> Result<usize, HarnessError> {
        if before == after {
            Ok(1)
        } else {
            Err(self.fail(variant, format!("input `{name}` was modified")))
        }
    }
    /// A call with a wrong input length must fail with `SHADE-E0201`.
    fn shape_error<T>(&self, r: Result<T, InterfaceError>) -> Result<usize, HarnessError> {
        match r {
            Err(e) if e.code() == "SHADE-E0201" => Ok(1),
            Err(e) => Err(self.fail(
                "shape check",
                format!("expected SHADE-E0201, got {}", e.code()),
            )),
            Ok(_) => Err(self.fail("shape check", "a wrong input length was accepted".into())),
        }
    }
}

/// Runs `round` twice, as every check does (a prepared object must give the same
/// results when reused), with `v` naming a variant with its round (`v("plain")` is
/// `"plain, round 1"`); the rounds' numbers of checks added up.
fn twice(
    mut round: impl FnMut(&dyn Fn(&str) -> String) -> Result<usize, HarnessError>,
) -> Result<usize, HarnessError> {
    let mut n = 0;
    for r in ["1", "2"] {
        n += round(&|s: &str| format!("{s}, round {r}"))?;
    }
    Ok(n)
}

/// `k` deterministic, non-trivial tangents of length `n`, stacked.
pub(crate) fn tangents(n: usize, k: usize) -> Vec<f64> {
    (0..k * n)
        .map(|i| ((i % n.max(1)) as f64 * 0.73 + (i / n.max(1)) as f64 * 1.9 + 0.3).sin())
        .collect()
}

/// `J v` for `J` row-major `m × n`.
pub(crate) fn matvec(j: &[f64], m: usize, v: &[f64]) -> Vec<f64> {
    let n = v.len();
    (0..m)
        .map(|r| (0..n).map(|c| j[r * n + c] * v[c]).sum())
        .collect()
}

/// `Jᵀ w` for `J` row-major `m × n`.
pub(crate) fn tmatvec(j: &[f64], n: usize, w: &[f64]) -> Vec<f64> {
    (0..n)
        .map(|c| w.iter().enumerate().map(|(r, wr)| j[r * n + c] * wr).sum())
        .collect()
}

/// The checkers' signature, which rustc wants written on each: generic over the backend
/// `B`, the function or form `$F` and the contexts `C` (both `Copy`), taking the
/// backend `$b`, a scenario `$sc` and the tolerances `$cfg`, returning the number of
/// checks that passed. An item is `$(#[doc])* pub fn name<F>(b, sc: &Scenario, cfg)
/// where B: Bound { body }`.
macro_rules! checkers {
    ($(
        $(#[$doc:meta])*
        pub fn $name:ident<$F:ident>($b:ident, $sc:ident: &$S:ty, $cfg:ident) where B: $bound:path
        $body:block
    )*) => {$(
        $(#[$doc])*
        pub fn $name<B, $F, C>($b: &B, $sc: &$S, $cfg: &Config) -> Result<usize, HarnessError>
        where
            B: $bound,
            $F: Copy,
            C: Contexts + Copy,
        $body
    )*};
}

checkers! {
    /// Checks `gradient` in all four variants, twice, prepared at `prep_x`.
    pub fn check_gradient<F>(b, sc: &GradScenario<F, C>, cfg) where B: GradientBackend<F, C> {
        let h = H::new(&sc.name, b, "gradient");
        let (x, ctx, t) = (&sc.x[..], sc.ctx, &cfg.first);
        let (want, wy) = (&sc.reference.jacobian[..], sc.reference.y[0]);
        let x0 = x.to_vec();
        let mut p = prepare_gradient(sc.f, b, &sc.prep_x, ctx).map_err(h.ie("prepare"))?;
        let mut n = twice(|v| {
            let mut n = 0;
            n += h.cmp(
                &v("plain"),
                t,
                &p.gradient(x, ctx).map_err(h.ie(&v("plain")))?,
                want,
            )?;
            let mut buf = vec![GARBAGE; x.len()];
            p.gradient_into(x, ctx, &mut buf)
                .map_err(h.ie(&v("into")))?;
            n += h.cmp(&v("into"), t, &buf, want)?;
            let (y, g) = p
                .value_and_gradient(x, ctx)
                .map_err(h.ie(&v("value_and")))?;
            n += h.cmp(&v("value_and"), t, &[y], &[wy])? + h.cmp(&v("value_and"), t, &g, want)?;
            buf.fill(GARBAGE);
            let y = p
                .value_and_gradient_into(x, ctx, &mut buf)
                .map_err(h.ie(&v("value_and_into")))?;
            n += h.cmp(&v("value_and_into"), t, &[y], &[wy])?
                + h.cmp(&v("value_and_into"), t, &buf, want)?;
            n += h.untouched(&v("all"), "x", &x0, x)?;
            Ok(n)
        })?;
        let bad = vec![0.5; x.len() + 1];
        n += h.shape_error(p.gradient(&bad, ctx))?;
        Ok(n)
    }

    /// Checks `jacobian` (either form) in all four variants, twice.
    pub fn check_jacobian<V>(b, sc: &VecForms<'_, V, C>, cfg) where B: JacobianBackend<V, C> {
        let h = H::new(sc.name, b, "jacobian");
        let (x, ctx, t, m) = (sc.x, sc.ctx, &cfg.first, sc.m);
        let (want, wy) = (&sc.reference.jacobian[..], &sc.reference.y[..]);
        let x0 = x.to_vec();
        let mut p = prep_jacobian_any(sc.f, m, b, sc.prep_x, ctx).map_err(h.ie("prepare"))?;
        let mut n = twice(|v| {
            let mut n = 0;
            let j = p.jacobian(x, ctx).map_err(h.ie(&v("plain")))?;
            n += h.cmp_matrix(&v("plain"), t, j.borrow(), want)?;
            let mut buf = p.new_jacobian();
            buf.borrow_mut().values_mut().fill(GARBAGE);
            p.jacobian_into(x, ctx, buf.borrow_mut())
                .map_err(h.ie(&v("into")))?;
            n += h.cmp_matrix(&v("into"), t, buf.borrow(), want)?;
            let (y, j) = p
                .value_and_jacobian(x, ctx)
                .map_err(h.ie(&v("value_and")))?;
            n += h.cmp(&v("value_and"), t, &y, wy)?
                + h.cmp_matrix(&v("value_and"), t, j.borrow(), want)?;
            let mut yb = vec![GARBAGE; m];
            buf.borrow_mut().values_mut().fill(GARBAGE);
            p.value_and_jacobian_into(x, ctx, &mut yb, buf.borrow_mut())
                .map_err(h.ie(&v("value_and_into")))?;
            n += h.cmp(&v("value_and_into"), t, &yb, wy)?
                + h.cmp_matrix(&v("value_and_into"), t, buf.borrow(), want)?;
            n += h.untouched(&v("all"), "x", &x0, x)?;
            Ok(n)
        })?;
        n += h.shape_error(p.jacobian(&x[..x.len().saturating_sub(1)], ctx))?;
        Ok(n)
    }
}

/// Prepares a jacobian of either form (`m` is ignored by the one-argument form).
fn prep_jacobian_any<B, V, C>(
    f: V,
    m: usize,
    b: &B,
    x: &[f64],
    ctx: C,
) -> Result<crate::Prepared<JacobianOp, V, B, B::State>, InterfaceError>
where
    B: JacobianBackend<V, C>,
    C: Contexts,
{
    crate::ops::prep_any::jacobian(f, m, b, x, &ctx)
}

macro_rules! check_directional {
    ($name:ident, $opname:literal, $Trait:ident, $prep:ident, $plain:ident, $into:ident, $vand:ident, $vinto:ident,
     $batch:ident, $inlen:ident, $outlen:ident, $reff:ident, $doc:literal) => {
        #[doc = $doc]
        pub fn $name<B, V, C>(
            b: &B,
            sc: &VecForms<'_, V, C>,
            cfg: &Config,
        ) -> Result<usize, HarnessError>
        where
            B: $Trait<V, C>,
            V: Copy,
            C: Contexts + Copy,
        {
            let h = H::new(sc.name, b, $opname);
            let (x, ctx, t, m) = (sc.x, sc.ctx, &cfg.first, sc.m);
            let nx = x.len();
            let (inlen, outlen) = (
                if stringify!($inlen) == "n" { nx } else { m },
                if stringify!($outlen) == "n" { nx } else { m },
            );
            let wy = &sc.reference.y[..];
            let ts = tangents(inlen, 2);
            let want: Vec<f64> = ts
                .chunks_exact(inlen.max(1))
                .flat_map(|tk| $reff(&sc.reference.jacobian, m, nx, tk))
                .collect();
            let (x0, ts0) = (x.to_vec(), ts.clone());
            let mut p = crate::ops::prep_any::$prep(sc.f, m, b, sc.prep_x, &ctx)
                .map_err(h.ie("prepare"))?;
            let (t0, w0) = (&ts[..inlen], &want[..outlen]);
            let mut n = twice(|v| {
                let mut n = 0;
                n += h.cmp(
                    &v("plain"),
                    t,
                    &p.$plain(x, t0, ctx).map_err(h.ie(&v("plain")))?,
                    w0,
                )?;
                let mut buf = vec![GARBAGE; outlen];
                p.$into(x, t0, ctx, &mut buf).map_err(h.ie(&v("into")))?;
                n += h.cmp(&v("into"), t, &buf, w0)?;
                let (y, o) = p.$vand(x, t0, ctx).map_err(h.ie(&v("value_and")))?;
                n += h.cmp(&v("value_and"), t, &y, wy)? + h.cmp(&v("value_and"), t, &o, w0)?;
                let mut yb = vec![GARBAGE; m];
                buf.fill(GARBAGE);
                p.$vinto(x, t0, ctx, &mut yb, &mut buf)
                    .map_err(h.ie(&v("value_and_into")))?;
                n += h.cmp(&v("value_and_into"), t, &yb, wy)?
                    + h.cmp(&v("value_and_into"), t, &buf, w0)?;
                let o = p.$batch(x, &ts, ctx).map_err(h.ie(&v("batch")))?;
                n += h.cmp(&v("batch"), t, &o, &want)?;
                n += h.untouched(&v("all"), "x", &x0, x)?
                    + h.untouched(&v("all"), "tangent", &ts0, &ts)?;
                Ok(n)
            })?;
            let bad = vec![0.5; inlen + 1];
            n += h.shape_error(p.$plain(x, &bad, ctx))?;
            Ok(n)
        }
    };
}

fn push_ref(j: &[f64], m: usize, _n: usize, t: &[f64]) -> Vec<f64> {
    matvec(j, m, t)
}
fn pull_ref(j: &[f64], _m: usize, n: usize, t: &[f64]) -> Vec<f64> {
    tmatvec(j, n, t)
}

check_directional!(
    check_pushforward,
    "pushforward",
    PushforwardBackend,
    pushforward,
    pushforward,
    pushforward_into,
    value_and_pushforward,
    value_and_pushforward_into,
    pushforward_batch,
    n,
    m,
    push_ref,
    "Checks `pushforward` (either form) in all variants and batched, twice."
);
check_directional!(
    check_pullback,
    "pullback",
    PullbackBackend,
    pullback,
    pullback,
    pullback_into,
    value_and_pullback,
    value_and_pullback_into,
    pullback_batch,
    m,
    n,
    pull_ref,
    "Checks `pullback` (either form) in all variants and batched, twice."
);

checkers! {
    /// Checks the one-argument `derivative` and `value_and_derivative`, twice.
    pub fn check_derivative<F>(b, sc: &ScalarScenario<F, C>, cfg)
    where B: DerivativeBackend<OneArg<F>, C> {
        let h = H::new(&sc.name, b, "derivative");
        let (x, ctx, t, r) = (sc.x, sc.ctx, &cfg.first, &sc.reference);
        let mut p = prepare_derivative(sc.f, b, sc.prep_x, ctx).map_err(h.ie("prepare"))?;
        let n = twice(|v| {
            let mut n = 0;
            let d = p.derivative(x, ctx).map_err(h.ie(&v("plain")))?;
            n += h.cmp(&v("plain"), t, &[d], &r.jacobian)?;
            let (y, d) = p
                .value_and_derivative(x, ctx)
                .map_err(h.ie(&v("value_and")))?;
            n += h.cmp(&v("value_and"), t, &[y, d], &[r.y[0], r.jacobian[0]])?;
            Ok(n)
        })?;
        Ok(n)
    }

    /// Checks the two-argument `derivative` in all four variants, twice.
    pub fn check_derivative_inplace<F>(b, sc: &ScalarInplaceScenario<F, C>, cfg)
    where B: DerivativeBackend<TwoArg<F>, C> {
        let h = H::new(&sc.name, b, "derivative");
        let (x, ctx, t, r, m) = (sc.x, sc.ctx, &cfg.first, &sc.reference, sc.m);
        let mut p = prepare_derivative_inplace(sc.f, &vec![0.0; m], b, sc.prep_x, ctx)
            .map_err(h.ie("prepare"))?;
        let mut n = twice(|v| {
            let mut n = 0;
            n += h.cmp(
                &v("plain"),
                t,
                &p.derivative(x, ctx).map_err(h.ie(&v("plain")))?,
                &r.jacobian,
            )?;
            let mut buf = vec![GARBAGE; m];
            p.derivative_into(x, ctx, &mut buf)
                .map_err(h.ie(&v("into")))?;
            n += h.cmp(&v("into"), t, &buf, &r.jacobian)?;
            let (y, d) = p
                .value_and_derivative(x, ctx)
                .map_err(h.ie(&v("value_and")))?;
            n += h.cmp(&v("value_and"), t, &y, &r.y)? + h.cmp(&v("value_and"), t, &d, &r.jacobian)?;
            let mut yb = vec![GARBAGE; m];
            buf.fill(GARBAGE);
            p.value_and_derivative_into(x, ctx, &mut yb, &mut buf)
                .map_err(h.ie(&v("value_and_into")))?;
            n += h.cmp(&v("value_and_into"), t, &yb, &r.y)?
                + h.cmp(&v("value_and_into"), t, &buf, &r.jacobian)?;
            Ok(n)
        })?;
        let mut short = vec![0.0; m + 1];
        n += h.shape_error(p.derivative_into(x, ctx, &mut short))?;
        Ok(n)
    }

    /// Checks `second_derivative` and `value_derivative_and_second_derivative`, twice.
    pub fn check_second_derivative<F>(b, sc: &ScalarScenario<F, C>, cfg)
    where B: SecondDerivativeBackend<F, C> {
        let h = H::new(&sc.name, b, "second_derivative");
        let (x, ctx) = (sc.x, sc.ctx);
        let r = &sc.reference;
        let mut p = prepare_second_derivative(sc.f, b, sc.prep_x, ctx).map_err(h.ie("prepare"))?;
        let n = twice(|v| {
            let mut n = 0;
            let d2 = p.second_derivative(x, ctx).map_err(h.ie(&v("plain")))?;
            n += h.cmp(&v("plain"), &cfg.second, &[d2], &r.hessian)?;
            let (y, d1, d2) = p
                .value_derivative_and_second_derivative(x, ctx)
                .map_err(h.ie(&v("value_and")))?;
            n += h.cmp(
                &v("value_and"),
                &cfg.first,
                &[y, d1],
                &[r.y[0], r.jacobian[0]],
            )?;
            n += h.cmp(&v("value_and"), &cfg.second, &[d2], &r.hessian)?;
            Ok(n)
        })?;
        Ok(n)
    }

    /// Checks `hessian` and `value_gradient_and_hessian` (plain and `_into`), twice.
    pub fn check_hessian<F>(b, sc: &GradScenario<F, C>, cfg) where B: HessianBackend<F, C> {
        let h = H::new(&sc.name, b, "hessian");
        let (x, ctx, r) = (&sc.x[..], sc.ctx, &sc.reference);
        let nx = x.len();
        let x0 = x.to_vec();
        let mut p = prepare_hessian(sc.f, b, &sc.prep_x, ctx).map_err(h.ie("prepare"))?;
        let mut n = twice(|v| {
            let mut n = 0;
            let hh = p.hessian(x, ctx).map_err(h.ie(&v("plain")))?;
            n += h.cmp_matrix(&v("plain"), &cfg.second, hh.borrow(), &r.hessian)?;
            let mut buf = p.new_hessian();
            buf.borrow_mut().values_mut().fill(GARBAGE);
            p.hessian_into(x, ctx, buf.borrow_mut())
                .map_err(h.ie(&v("into")))?;
            n += h.cmp_matrix(&v("into"), &cfg.second, buf.borrow(), &r.hessian)?;
            let (y, g, hh) = p
                .value_gradient_and_hessian(x, ctx)
                .map_err(h.ie(&v("value_and")))?;
            n += h.cmp(&v("value_and"), &cfg.first, &[y], &r.y)?
                + h.cmp(&v("value_and"), &cfg.first, &g, &r.jacobian)?;
            n += h.cmp_matrix(&v("value_and"), &cfg.second, hh.borrow(), &r.hessian)?;
            let mut gb = vec![GARBAGE; nx];
            buf.borrow_mut().values_mut().fill(GARBAGE);
            let y = p
                .value_gradient_and_hessian_into(x, ctx, &mut gb, buf.borrow_mut())
                .map_err(h.ie(&v("value_and_into")))?;
            n += h.cmp(&v("value_and_into"), &cfg.first, &[y], &r.y)?;
            n += h.cmp(&v("value_and_into"), &cfg.first, &gb, &r.jacobian)?;
            n += h.cmp_matrix(&v("value_and_into"), &cfg.second, buf.borrow(), &r.hessian)?;
            n += h.untouched(&v("all"), "x", &x0, x)?;
            Ok(n)
        })?;
        n += h.shape_error(
            p.hessian(&[], ctx)
                .and_then(|_| p.hessian(&vec![0.0; nx + 1], ctx)),
        )?;
        Ok(n)
    }

    /// Checks `hvp`, `gradient_and_hvp` (plain and `_into`) and batched `hvp`, twice.
    pub fn check_hvp<F>(b, sc: &GradScenario<F, C>, cfg) where B: HvpBackend<F, C> {
        let h = H::new(&sc.name, b, "hvp");
        let (x, ctx, r) = (&sc.x[..], sc.ctx, &sc.reference);
        let nx = x.len();
        let vs = tangents(nx, 2);
        let want: Vec<f64> = vs
            .chunks_exact(nx.max(1))
            .flat_map(|v| matvec(&r.hessian, nx, v))
            .collect();
        let (x0, vs0) = (x.to_vec(), vs.clone());
        let (v0, w0) = (&vs[..nx], &want[..nx]);
        let mut p = prepare_hvp(sc.f, b, &sc.prep_x, ctx).map_err(h.ie("prepare"))?;
        let mut n = twice(|v| {
            let mut n = 0;
            n += h.cmp(
                &v("plain"),
                &cfg.second,
                &p.hvp(x, v0, ctx).map_err(h.ie(&v("plain")))?,
                w0,
            )?;
            let mut buf = vec![GARBAGE; nx];
            p.hvp_into(x, v0, ctx, &mut buf).map_err(h.ie(&v("into")))?;
            n += h.cmp(&v("into"), &cfg.second, &buf, w0)?;
            let (g, hv) = p
                .gradient_and_hvp(x, v0, ctx)
                .map_err(h.ie(&v("value_and")))?;
            n += h.cmp(&v("value_and"), &cfg.first, &g, &r.jacobian)?
                + h.cmp(&v("value_and"), &cfg.second, &hv, w0)?;
            let mut gb = vec![GARBAGE; nx];
            buf.fill(GARBAGE);
            let y = p
                .gradient_and_hvp_into(x, v0, ctx, &mut gb, &mut buf)
                .map_err(h.ie(&v("value_and_into")))?;
            n += h.cmp(&v("value_and_into"), &cfg.first, &[y], &r.y)?;
            n += h.cmp(&v("value_and_into"), &cfg.first, &gb, &r.jacobian)?;
            n += h.cmp(&v("value_and_into"), &cfg.second, &buf, w0)?;
            n += h.cmp(
                &v("batch"),
                &cfg.second,
                &p.hvp_batch(x, &vs, ctx).map_err(h.ie(&v("batch")))?,
                &want,
            )?;
            n += h.untouched(&v("all"), "x", &x0, x)? + h.untouched(&v("all"), "v", &vs0, &vs)?;
            Ok(n)
        })?;
        n += h.shape_error(p.hvp(x, &vec![0.0; nx + 1], ctx))?;
        Ok(n)
    }
}
