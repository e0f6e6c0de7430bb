//! Finite differences ([`AutoFiniteDiff`]) on the `f64` instantiation: the generic
//! reference backend; `fd/tensor.rs` differences tensor programs.

mod tensor;

use super::generic::GenericBackend;
use crate::backend::{AutoFiniteDiff, FdKind};
use crate::form::{ScalarForm, VecForm};
use bumpalo::Bump;

/// Buffers of [`AutoFiniteDiff`].
#[derive(Debug, Default)]
pub struct FdWork {
    bump: Bump,
    xp: Vec<f64>,
    yp: Vec<f64>,
    ym: Vec<f64>,
}

fn inf_norm(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |a, b| a.max(b.abs()))
}

impl FdWork {
    /// `out = f(x + t d)`.
    fn eval_at<V: VecForm<C>, C>(
        &mut self,
        f: &V,
        ctx: &C,
        x: &[f64],
        t: f64,
        d: &[f64],
        which: bool,
    ) {
        self.xp.clear();
        self.xp.extend(x.iter().zip(d).map(|(a, b)| a + t * b));
        self.bump.reset();
        let out = if which { &mut self.yp } else { &mut self.ym };
        out.resize(f.outputs(), 0.0);
        f.eval::<f64>(&self.xp, ctx, &self.bump, out);
    }

    /// `f(x + a u + b v)` for one output.
    #[allow(clippy::too_many_arguments)]
    fn eval2<V: VecForm<C>, C>(
        &mut self,
        f: &V,
        ctx: &C,
        x: &[f64],
        a: f64,
        u: &[f64],
        b: f64,
        v: &[f64],
    ) -> f64 {
        self.xp.clear();
        self.xp.extend(
            x.iter()
                .zip(u)
                .zip(v)
                .map(|((xi, ui), vi)| xi + a * ui + b * vi),
        );
        self.bump.reset();
        let mut y = [0.0];
        f.eval::<f64>(&self.xp, ctx, &self.bump, &mut y);
        y[0]
    }

    fn scalar<V: ScalarForm<C>, C>(&mut self, f: &V, ctx: &C, x: f64, which: bool) {
        self.bump.reset();
        let out = if which { &mut self.yp } else { &mut self.ym };
        out.resize(f.outputs(), 0.0);
        f.eval::<f64>(x, ctx, &self.bump, out);
    }
}

impl AutoFiniteDiff {
    fn step1(&self, scale: f64) -> f64 {
        self.first_rel_step() * scale.max(1.0) + self.abs_step
    }
    fn step2(&self, scale: f64) -> f64 {
        self.second_rel_step() * scale.max(1.0) + self.abs_step
    }

    /// The first-order difference with step `h` into `dy`, given `y0 = f(x)`:
    /// `(f(x + h) - y0) / h` (forward) or `(f(x + h) - f(x - h)) / 2h` (central), where
    /// `eval(w, s, plus)` writes `f(x + s)` into `w.yp` (`plus`) or `w.ym`. The
    /// directional (`jvp`) and the scalar (`scalar_jvp`) derivatives differ only in it.
    fn difference(
        &self,
        w: &mut FdWork,
        h: f64,
        y0: &[f64],
        dy: &mut [f64],
        mut eval: impl FnMut(&mut FdWork, f64, bool),
    ) {
        match self.kind {
            FdKind::Forward => {
                eval(w, h, true);
                for ((d, p), y) in dy.iter_mut().zip(&w.yp).zip(y0) {
                    *d = (p - y) / h;
                }
            }
            FdKind::Central => {
                eval(w, h, true);
                eval(w, -h, false);
                for ((d, p), m) in dy.iter_mut().zip(&w.yp).zip(&w.ym) {
                    *d = (p - m) / (2.0 * h);
                }
            }
        }
    }
}

impl GenericBackend for AutoFiniteDiff {
    type Work = FdWork;

    fn describe(&self) -> String {
        let kind = match self.kind {
            FdKind::Forward => "forward",
            FdKind::Central => "central",
        };
        format!(
            "{kind} differences of the f64 instantiation (relative step {:.1e}, second order {:.1e}, absolute {:.1e})",
            self.first_rel_step(),
            self.second_rel_step(),
            self.abs_step
        )
    }
    fn evals_per_jvp(&self) -> usize {
        match self.kind {
            FdKind::Forward => 1,
            FdKind::Central => 2,
        }
    }
    fn evals_per_second(&self) -> usize {
        4
    }
    fn work_bytes(&self, w: &FdWork) -> usize {
        8 * (w.xp.capacity() + w.yp.capacity() + w.ym.capacity()) + w.bump.allocated_bytes()
    }

    fn value<V: VecForm<C>, C>(&self, w: &mut FdWork, f: &V, ctx: &C, x: &[f64], y: &mut [f64]) {
        w.bump.reset();
        f.eval::<f64>(x, ctx, &w.bump, y);
    }

    fn jvp<V: VecForm<C>, C>(
        &self,
        w: &mut FdWork,
        f: &V,
        ctx: &C,
        x: &[f64],
        y0: &[f64],
        dx: &[f64],
        dy: &mut [f64],
    ) {
        let dn = inf_norm(dx);
        if dn == 0.0 {
            dy.fill(0.0);
            return;
        }
        let h = self.step1(inf_norm(x)) / dn;
        self.difference(w, h, y0, dy, |w, s, plus| w.eval_at(f, ctx, x, s, dx, plus));
    }

    fn scalar_jvp<V: ScalarForm<C>, C>(
        &self,
        w: &mut FdWork,
        f: &V,
        ctx: &C,
        x: f64,
        y: &mut [f64],
        dy: &mut [f64],
    ) {
        w.bump.reset();
        f.eval::<f64>(x, ctx, &w.bump, y);
        let h = self.step1(x.abs());
        self.difference(w, h, y, dy, |w, s, plus| w.scalar(f, ctx, x + s, plus));
    }

    fn second<V: VecForm<C>, C>(
        &self,
        w: &mut FdWork,
        f: &V,
        ctx: &C,
        x: &[f64],
        u: &[f64],
        v: &[f64],
    ) -> f64 {
        let (nu, nv) = (inf_norm(u), inf_norm(v));
        if nu == 0.0 || nv == 0.0 {
            return 0.0;
        }
        let h = self.step2(inf_norm(x));
        let (a, b) = (h / nu, h / nv);
        let pp = w.eval2(f, ctx, x, a, u, b, v);
        let pm = w.eval2(f, ctx, x, a, u, -b, v);
        let mp = w.eval2(f, ctx, x, -a, u, b, v);
        let mm = w.eval2(f, ctx, x, -a, u, -b, v);
        (pp - pm - mp + mm) / (4.0 * a * b)
    }

    fn scalar_second<V: ScalarForm<C>, C>(
        &self,
        w: &mut FdWork,
        f: &V,
        ctx: &C,
        x: f64,
    ) -> (f64, f64, f64) {
        let h = self.step2(x.abs());
        let mut y = [0.0];
        w.bump.reset();
        f.eval::<f64>(x, ctx, &w.bump, &mut y);
        w.scalar(f, ctx, x + h, true);
        w.scalar(f, ctx, x - h, false);
        let (p, m) = (w.yp[0], w.ym[0]);
        let d2 = (p - 2.0 * y[0] + m) / (h * h);
        // The first derivative with its own (smaller) step.
        let h1 = self.step1(x.abs());
        w.scalar(f, ctx, x + h1, true);
        w.scalar(f, ctx, x - h1, false);
        let d1 = (w.yp[0] - w.ym[0]) / (2.0 * h1);
        (y[0], d1, d2)
    }
}
