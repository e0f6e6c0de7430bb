//! Batched directional derivatives: several tangents (or cotangents, or Hessian
//! directions) per evaluation of the function, the prepared forms a colouring needs
//! (one batched call per group of colours).
//!
//! - [`Tape::pushforward_batch_into`]: `N` tangents per evaluation, with
//!   [`DualVec<f64, N>`] (chunked forward mode).
//! - [`Tape::pullback_batch_into`]: one recording, one reverse sweep per cotangent.
//! - Both also for vector-valued functions (`*_vec_into`).
//! - [`Tape::hvp_batch_into`] on a `Tape<DualVec<f64, N>>`: forward over reverse with
//!   `N` directions, one recording and one sweep per `N` Hessian-vector products.
//!
//! Tangents are stacked one after the other (`k × n` for `k` tangents of length `n`).
//!
//! ```
//! use shade_autodiff::scalar::{DualVec, Real, Tape, shade_fn};
//!
//! fn f<S: Real>(x: &[S]) -> S { x[0] * x[0] * x[1] }
//! // ∇²f = [[2 x1, 2 x0], [2 x0, 0]] at (1, 3): both columns in one sweep.
//! let mut tape = Tape::<DualVec<f64, 2>>::new();
//! let mut h = [0.0; 4];
//! let y = tape.hvp_batch_into(&shade_fn!(f(&[S])), &[1.0, 3.0], &[1.0, 0.0, 0.0, 1.0], (), &mut h)?;
//! assert_eq!((y, h), (3.0, [6.0, 2.0, 2.0, 0.0]));
//! # Ok::<(), shade_autodiff::AdError>(())
//! ```

use super::args::ConstArgs;
use super::dual::DualVec;
use super::func::{InPlaceFn, Join, Kinds, ScalarFn, Slice, VectorFn};
use super::jacobian::{InPlace, Outputs, Returned};
use super::tape::{Tape, Var};
use crate::error::{AdError, AdResult};

type Tail<F> = <<F as ScalarFn>::Kinds as Kinds>::Tail;
type InTail<F> = <<F as InPlaceFn>::Kinds as Kinds>::Tail;
type VecTail<F> = <<F as VectorFn>::Kinds as Kinds>::Tail;
type OutTail<O> = <<O as Outputs>::Kinds as Kinds>::Tail;

/// How many stacked vectors of length `len` `found` values hold, checking the results'
/// buffer (`out_len` each).
fn stacked(
    op: &'static str,
    len: usize,
    found: usize,
    out_len: usize,
    out: usize,
) -> AdResult<usize> {
    let k = found.checked_div(len).unwrap_or(0);
    if (len == 0 && found != 0) || (len != 0 && !found.is_multiple_of(len)) {
        return Err(AdError::BufferLength {
            op,
            expected: k.max(1) * len,
            found,
        });
    }
    if out != k * out_len {
        return Err(AdError::BufferLength {
            op,
            expected: k * out_len,
            found: out,
        });
    }
    Ok(k)
}

impl Tape<f64> {
    fn pushforward_batch_with<const N: usize, O, C>(
        &mut self,
        f: &O,
        x: &[f64],
        dxs: &[f64],
        consts: C,
        y: &mut [f64],
        dys: &mut [f64],
    ) -> AdResult<()>
    where
        O: Outputs,
        O::Kinds: Join<Slice>,
        C: ConstArgs<OutTail<O>>,
    {
        let (n, m) = (x.len(), y.len());
        let k = stacked("pushforward_batch", n, dxs.len(), m, dys.len())?;
        let mut c0 = 0;
        // At least one evaluation, for the value.
        loop {
            let w = N.min(k - c0.min(k));
            self.bump.reset();
            let bump = &self.bump;
            let xs = bump.alloc_slice_fill_iter((0..n).map(|i| {
                DualVec::<f64, N>::with_tangents(
                    x[i],
                    core::array::from_fn(|l| if l < w { dxs[(c0 + l) * n + i] } else { 0.0 }),
                )
            }));
            let ys = f.outputs(bump, m, O::Kinds::join(xs, consts.args(bump)))?;
            for (r, yr) in ys.iter().enumerate() {
                y[r] = yr.v;
                for l in 0..w {
                    dys[(c0 + l) * m + r] = yr.d[l];
                }
            }
            c0 += N;
            if c0 >= k {
                return Ok(());
            }
        }
    }

    fn pullback_batch_with<O, C>(
        &mut self,
        f: &O,
        x: &[f64],
        dys: &[f64],
        consts: C,
        y: &mut [f64],
        dxs: &mut [f64],
    ) -> AdResult<()>
    where
        O: Outputs,
        O::Kinds: Join<Slice>,
        C: ConstArgs<OutTail<O>>,
    {
        let (n, m) = (x.len(), y.len());
        let k = stacked("pullback_batch", m, dys.len(), n, dxs.len())?;
        let start = self.record_outputs(f, x, consts, y)?;
        let mut seeds = core::mem::take(&mut self.seeds);
        for (dy, dx) in dys
            .chunks_exact(m.max(1))
            .zip(dxs.chunks_exact_mut(n.max(1)))
            .take(k)
        {
            seeds.clear();
            seeds.extend(
                self.out_ids
                    .iter()
                    .zip(dy)
                    .filter(|(i, s)| **i != u32::MAX && **s != 0.0)
                    .map(|(&i, &s)| (i, s)),
            );
            self.sweep(&seeds);
            if !seeds.is_empty() && self.adj.len() >= start + n {
                dx.copy_from_slice(&self.adj[start..start + n]);
            } else {
                dx.fill(0.0);
            }
        }
        self.seeds = seeds;
        Ok(())
    }

    /// Writes `y = f(x)` and `dys[k] = J(x) dxs[k]` for the `k` tangents stacked in `dxs`
    /// (`k × n`; `dys`: `k × m`, `m = y.len()`) of an in-place `f(y, x, consts...)`:
    /// one evaluation with [`DualVec<f64, N>`] per `N` tangents.
    #[allow(clippy::too_many_arguments)]
    pub fn pushforward_batch_into<const N: usize, F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        dxs: &[f64],
        consts: C,
        y: &mut [f64],
        dys: &mut [f64],
    ) -> AdResult<()>
    where
        F: InPlaceFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<InTail<F>>,
    {
        self.pushforward_batch_with::<N, _, _>(&InPlace(f), x, dxs, consts, y, dys)
    }

    /// [`pushforward_batch_into`](Self::pushforward_batch_into) for a vector-valued
    /// `f(x, consts...) -> Vec<S>`, which must return `y.len()` outputs at every
    /// evaluation ([`AdError::OutputLength`] otherwise).
    #[allow(clippy::too_many_arguments)]
    pub fn pushforward_batch_vec_into<const N: usize, F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        dxs: &[f64],
        consts: C,
        y: &mut [f64],
        dys: &mut [f64],
    ) -> AdResult<()>
    where
        F: VectorFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<VecTail<F>>,
    {
        self.pushforward_batch_with::<N, _, _>(&Returned(f), x, dxs, consts, y, dys)
    }

    /// Writes `y = f(x)` and `dxs[k] = J(x)ᵀ dys[k]` (overwriting `dxs`) for the `k`
    /// cotangents stacked in `dys` (`k × m`, `m = y.len()`; `dxs`: `k × n`) of an
    /// in-place `f(y, x, consts...)`: one recording, one sweep per cotangent.
    #[allow(clippy::too_many_arguments)]
    pub fn pullback_batch_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        dys: &[f64],
        consts: C,
        y: &mut [f64],
        dxs: &mut [f64],
    ) -> AdResult<()>
    where
        F: InPlaceFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<InTail<F>>,
    {
        self.pullback_batch_with(&InPlace(f), x, dys, consts, y, dxs)
    }

    /// [`pullback_batch_into`](Self::pullback_batch_into) for a vector-valued `f(x,
    /// consts...) -> Vec<S>` returning `y.len()` outputs.
    #[allow(clippy::too_many_arguments)]
    pub fn pullback_batch_vec_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        dys: &[f64],
        consts: C,
        y: &mut [f64],
        dxs: &mut [f64],
    ) -> AdResult<()>
    where
        F: VectorFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<VecTail<F>>,
    {
        self.pullback_batch_with(&Returned(f), x, dys, consts, y, dxs)
    }
}

impl<const N: usize> Tape<DualVec<f64, N>> {
    /// Writes `hvs[k] = ∇²f(x) vs[k]` for the `k` directions stacked in `vs` (`k × n`,
    /// `hvs` likewise) of `f(x: &[S], consts...) -> S`, and returns `f(x)`: forward over
    /// reverse, one recording and one sweep per `N` directions.
    pub fn hvp_batch_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        vs: &[f64],
        consts: C,
        hvs: &mut [f64],
    ) -> AdResult<f64>
    where
        F: ScalarFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<Tail<F>>,
    {
        let n = x.len();
        let k = stacked("hvp_batch", n, vs.len(), n, hvs.len())?;
        let mut c0 = 0;
        loop {
            let w = N.min(k - c0.min(k));
            self.reset();
            let (val, out, start) = {
                let (t, bump) = (&self.trace, &self.bump);
                let xs = bump.alloc_slice_fill_iter((0..n).map(|i| {
                    t.var(DualVec::with_tangents(
                        x[i],
                        core::array::from_fn(|l| if l < w { vs[(c0 + l) * n + i] } else { 0.0 }),
                    ))
                }));
                let start = xs.first().and_then(Var::raw_index).unwrap_or(0) as usize;
                let y = f.call(F::Kinds::join(xs, consts.args(bump)));
                (y.primal().v, y.raw_index(), start)
            };
            self.check_recording()?;
            match out {
                Some(i) => {
                    self.sweep(&[(i, DualVec::constant(1.0))]);
                    for l in 0..w {
                        let hv = &mut hvs[(c0 + l) * n..(c0 + l + 1) * n];
                        for (h, a) in hv.iter_mut().zip(&self.adj[start..start + n]) {
                            *h = a.d[l];
                        }
                    }
                }
                None => hvs[c0 * n..(c0 + w) * n].fill(0.0),
            }
            c0 += N;
            if c0 >= k {
                return Ok(val);
            }
        }
    }

    /// Writes the Hessian (`n × n`, row-major) of `f(x: &[S], consts...) -> S` into `h`:
    /// [`hvp_batch_into`](Self::hvp_batch_into) of the unit vectors, `⌈n / N⌉`
    /// recordings.
    pub fn hessian_batch_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        consts: C,
        h: &mut [f64],
    ) -> AdResult<f64>
    where
        F: ScalarFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<Tail<F>>,
    {
        let n = x.len();
        if h.len() != n * n {
            return Err(AdError::BufferLength {
                op: "hessian",
                expected: n * n,
                found: h.len(),
            });
        }
        let mut e = core::mem::take(&mut self.unit);
        let mut value = Ok(0.0);
        for c0 in (0..n.max(1)).step_by(N) {
            let w = N.min(n.saturating_sub(c0));
            e.clear();
            e.resize(w * n, 0.0);
            for l in 0..w {
                e[l * n + c0 + l] = 1.0;
            }
            // The Hessian is symmetric: column j is row j.
            value = self.hvp_batch_into(f, x, &e, &consts, &mut h[c0 * n..(c0 + w) * n]);
            if value.is_err() {
                break;
            }
        }
        self.unit = e;
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::{Dual, Real, shade_fn};

    fn poly<S: Real>(y: &mut [S], x: &[S], p: &[f64]) {
        y[0] = x[0] * x[1] * p[0];
        y[1] = x[1].sin() + x[2] * x[0];
        y[2] = x[2].exp();
    }

    #[test]
    fn batched_pushforwards_and_pullbacks_match_single_ones() {
        let f = shade_fn!(poly(&mut [S], &[S], &[f64]));
        let (x, p) = ([0.3, -1.2, 0.7], [2.5]);
        let ts: Vec<f64> = (0..15).map(|i| (i as f64 * 0.37).sin()).collect();
        let mut tape = Tape::new();
        let (mut y, mut dys) = ([0.0; 3], vec![0.0; 15]);
        tape.pushforward_batch_into::<4, _, _>(
            &f,
            &x,
            &ts,
            (crate::Const(&p[..]),),
            &mut y,
            &mut dys,
        )
        .unwrap();
        let mut dxs = vec![0.0; 15];
        let mut yb = [0.0; 3];
        tape.pullback_batch_into(&f, &x, &ts, (crate::Const(&p[..]),), &mut yb, &mut dxs)
            .unwrap();
        assert_eq!(y, yb);
        for k in 0..5 {
            let (mut y1, mut dy, mut dx) = ([0.0; 3], [0.0; 3], [0.0; 3]);
            let t = &ts[3 * k..3 * k + 3];
            tape.pushforward_into(&f, &x, t, (crate::Const(&p[..]),), &mut y1, &mut dy)
                .unwrap();
            tape.pullback_into(&f, &x, t, (crate::Const(&p[..]),), &mut y1, &mut dx)
                .unwrap();
            assert_eq!(y1, y);
            for r in 0..3 {
                assert!(
                    (dys[3 * k + r] - dy[r]).abs() < 1e-14,
                    "pushforward {k} {r}"
                );
                assert!((dxs[3 * k + r] - dx[r]).abs() < 1e-14, "pullback {k} {r}");
            }
        }
        let e = tape
            .pushforward_batch_into::<4, _, _>(
                &f,
                &x,
                &ts[..14],
                (crate::Const(&p[..]),),
                &mut y,
                &mut dys,
            )
            .unwrap_err();
        assert_eq!(e.code(), "SHADE-E0121");
    }

    fn rosen<S: Real>(x: &[S]) -> S {
        x.windows(2)
            .map(|w| (w[1] - w[0] * w[0]).powi(2) * 100.0 + (-w[0] + 1.0).powi(2))
            .sum()
    }

    #[test]
    fn batched_hessians_match_the_one_direction_tape() {
        let f = shade_fn!(rosen(&[S]));
        let x: Vec<f64> = (0..11).map(|i| 0.1 * i as f64 - 0.4).collect();
        let mut want = vec![0.0; 121];
        Tape::<Dual<f64>>::new()
            .hessian_into(&f, &x, (), &mut want)
            .unwrap();
        let mut h = vec![0.0; 121];
        let y = Tape::<DualVec<f64, 4>>::new()
            .hessian_batch_into(&f, &x, (), &mut h)
            .unwrap();
        assert!((y - rosen(&x)).abs() < 1e-12);
        for (a, b) in h.iter().zip(&want) {
            assert!((a - b).abs() < 1e-12);
        }
    }
}
