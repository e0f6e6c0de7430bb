//! `softmax` and `log_softmax` over one axis, computed stably (max subtracted).
//!
//! Rules per lane, with `y` the output: softmax `dx += y ⊙ (g - Σ g y)`,
//! `ẏ = y ⊙ (ẋ - Σ y ẋ)`; log-softmax `dx += g - eʸ Σ g`, `ẏ = ẋ - Σ eʸ ẋ`.

use super::tape::{Bwd, Op, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayView1, ArrayViewD, ArrayViewMut1, Axis, Zip};

/// Backward record of a softmax.
#[derive(Debug)]
pub(crate) struct Rec {
    a: usize,
    axis: usize,
    log: bool,
}

/// Writes the (log-)softmax of `x` into `y`.
fn lane_forward<T: Element>(x: ArrayView1<'_, T>, mut y: ArrayViewMut1<'_, T>, log: bool) {
    let m = x.iter().copied().fold(T::neg_infinity(), T::max);
    let m = if m.is_finite() { m } else { T::zero() };
    let s: T = x.iter().map(|&v| (v - m).exp()).sum();
    if log {
        let l = m + s.ln();
        Zip::from(&mut y).and(&x).for_each(|y, &x| *y = x - l);
    } else {
        Zip::from(&mut y)
            .and(&x)
            .for_each(|y, &x| *y = (x - m).exp() / s);
    }
}

/// `out = J · v` (forward) for one lane; reverse is the same with `J` transposed, and
/// the Jacobian of softmax is symmetric, so one routine serves both for softmax.
fn lane_apply<T: Element>(
    y: ArrayView1<'_, T>,
    v: ArrayView1<'_, T>,
    mut out: ArrayViewMut1<'_, T>,
    log: bool,
    reverse: bool,
) {
    if !log {
        let s: T = y.iter().zip(v.iter()).map(|(&y, &v)| y * v).sum();
        Zip::from(&mut out)
            .and(&y)
            .and(&v)
            .for_each(|o, &y, &v| *o += y * (v - s));
    } else if reverse {
        let s: T = v.iter().copied().sum();
        Zip::from(&mut out)
            .and(&y)
            .and(&v)
            .for_each(|o, &y, &v| *o = *o + v - y.exp() * s);
    } else {
        let s: T = y.iter().zip(v.iter()).map(|(&y, &v)| y.exp() * v).sum();
        Zip::from(&mut out)
            .and(&v)
            .for_each(|o, &v| *o = *o + v - s);
    }
}

impl Rec {
    pub(crate) fn backward<T: Element>(
        &self,
        me: usize,
        g: ArrayViewD<'_, T>,
        bw: &mut Bwd<'_, '_, T>,
    ) {
        let y = bw.vals[me].view();
        let shape = bw.vals[self.a].view();
        if let Some(mut ga) = bw.gs.acc(self.a, shape.shape()) {
            let ax = Axis(self.axis);
            Zip::from(ga.lanes_mut(ax))
                .and(y.lanes(ax))
                .and(g.lanes(ax))
                .for_each(|o, y, g| lane_apply(y, g, o, self.log, true));
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    fn softmax_impl(&mut self, a: Var, axis: usize, log: bool) -> AdResult<Var> {
        let ia = self.index(a)?;
        let x = self.vals[ia].view();
        if axis >= x.ndim() {
            return Err(AdError::AxisOutOfRange {
                op: if log { "log_softmax" } else { "softmax" },
                axis,
                ndim: x.ndim(),
            });
        }
        let ax = Axis(axis);
        let mut out = self.pool.zeros(x.shape());
        Zip::from(out.lanes_mut(ax))
            .and(x.lanes(ax))
            .for_each(|y, x| lane_forward(x, y, log));
        let tracked = self.tracked[ia];
        let mut tan = Tan::None;
        if self.forward()
            && let Some(ta) = self.tans[ia].view()
        {
            let mut t = self.pool.zeros(x.shape());
            Zip::from(t.lanes_mut(ax))
                .and(out.lanes(ax))
                .and(ta.lanes(ax))
                .for_each(|o, y, v| lane_apply(y, v, o, log, false));
            tan = Tan::Own(t);
        }
        Ok(self.push(out, tracked, Op::Softmax(Rec { a: ia, axis, log }), tan))
    }

    /// `exp(a) / Σ exp(a)` along `axis`.
    pub fn softmax(&mut self, a: Var, axis: usize) -> AdResult<Var> {
        self.softmax_impl(a, axis, false)
    }

    /// `a - logsumexp(a)` along `axis`.
    pub fn log_softmax(&mut self, a: Var, axis: usize) -> AdResult<Var> {
        self.softmax_impl(a, axis, true)
    }
}
