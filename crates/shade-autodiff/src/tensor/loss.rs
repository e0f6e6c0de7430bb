//! Losses, each a mean (0-d result): `cross_entropy` and `nll` with integer labels over
//! a selection of rows ([`Rows`]), `mse`, `bce_with_logits`.
//!
//! `cross_entropy(logits, labels, rows)` is the mean over the selected rows of
//! `-log_softmax(logits)[i, labels[i]]` (PyTorch's `cross_entropy` on
//! `logits[rows]`); a row listed twice counts twice. Reverse rule: `(softmax - onehot) /
//! n` per selected row. `bce_with_logits` uses the stable form
//! `max(x, 0) - x t + ln(1 + e^-|x|)`.

use super::index::Rows;
use super::tape::{Bwd, Op, Pool, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayView2, ArrayViewD, Ix2, Zip};

/// Which loss.
#[derive(Debug)]
pub(crate) enum Kind<'a> {
    CrossEntropy { labels: &'a [usize], rows: Rows<'a> },
    Nll { labels: &'a [usize], rows: Rows<'a> },
    Mse,
    Bce,
}

/// Backward record of a loss.
#[derive(Debug)]
pub(crate) struct Rec<'a, T> {
    a: usize,
    b: usize,
    kind: Kind<'a>,
    n: usize,
    _t: std::marker::PhantomData<T>,
}

fn lse<T: Element>(row: ndarray::ArrayView1<'_, T>) -> T {
    let m = row.iter().copied().fold(T::neg_infinity(), T::max);
    let m = if m.is_finite() { m } else { T::zero() };
    m + row.iter().map(|&v| (v - m).exp()).sum::<T>().ln()
}

fn m2<'s, T>(a: &'s ArrayViewD<'_, T>) -> ArrayView2<'s, T> {
    a.view()
        .into_dimensionality::<Ix2>()
        .expect("rank checked at record time")
}

#[inline]
fn bce<T: Element>(x: T, t: T) -> T {
    x.max(T::zero()) - x * t + (-x.abs()).exp().ln_1p()
}

#[inline]
fn sigmoid<T: Element>(x: T) -> T {
    if x >= T::zero() {
        T::one() / (T::one() + (-x).exp())
    } else {
        let e = x.exp();
        e / (T::one() + e)
    }
}

impl<T: Element> Rec<'_, T> {
    pub(crate) fn release(self, _pool: &mut Pool<T>) {}

    pub(crate) fn backward(&self, _me: usize, g: ArrayViewD<'_, T>, bw: &mut Bwd<'_, '_, T>) {
        let s = g.iter().copied().next().unwrap_or_else(T::zero) / T::cst(self.n as f64);
        let x = bw.vals[self.a].view();
        match &self.kind {
            Kind::CrossEntropy { labels, rows } | Kind::Nll { labels, rows } => {
                let ce = matches!(self.kind, Kind::CrossEntropy { .. });
                let Some(mut ga) = bw.gs.acc(self.a, x.shape()) else {
                    return;
                };
                let x2 = m2(&x);
                let mut ga2 = ga.view_mut().into_dimensionality::<Ix2>().expect("rank 2");
                rows.for_each(x2.nrows(), |i| {
                    let mut gr = ga2.row_mut(i);
                    if ce {
                        let xr = x2.row(i);
                        let l = lse(xr);
                        Zip::from(&mut gr)
                            .and(&xr)
                            .for_each(|d, &v| *d += s * (v - l).exp());
                    }
                    gr[labels[i]] -= s;
                });
            }
            Kind::Mse | Kind::Bce => {
                let y = bw.vals[self.b].view();
                let bce_ = matches!(self.kind, Kind::Bce);
                if let Some(mut ga) = bw.gs.acc(self.a, x.shape()) {
                    Zip::from(&mut ga).and(&x).and(&y).for_each(|d, &x, &y| {
                        let v = if bce_ {
                            sigmoid(x) - y
                        } else {
                            T::cst(2.0) * (x - y)
                        };
                        *d += s * v;
                    });
                }
                if let Some(mut gb) = bw.gs.acc(self.b, y.shape()) {
                    Zip::from(&mut gb).and(&x).and(&y).for_each(|d, &x, &y| {
                        let v = if bce_ { -x } else { T::cst(-2.0) * (x - y) };
                        *d += s * v;
                    });
                }
            }
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    fn check_labels(
        &self,
        op: &'static str,
        ia: usize,
        labels: &[usize],
        rows: &Rows<'_>,
    ) -> AdResult<usize> {
        let x = self.vals[ia].view();
        if x.ndim() != 2 {
            return Err(AdError::RankMismatch {
                op,
                expected: 2,
                shape: x.shape().to_vec(),
            });
        }
        let (n, c) = (x.shape()[0], x.shape()[1]);
        if labels.len() != n {
            return Err(AdError::ShapeMismatch {
                op,
                left: x.shape().to_vec(),
                right: vec![labels.len()],
            });
        }
        let count = rows.validate(op, n)?;
        if count == 0 {
            return Err(AdError::InvalidArgument {
                op,
                what: "the selection of rows is empty; a mean over no rows is undefined".into(),
            });
        }
        let mut bad = None;
        rows.for_each(n, |i| {
            if labels[i] >= c && bad.is_none() {
                bad = Some(i);
            }
        });
        if let Some(i) = bad {
            return Err(AdError::IndexOutOfRange {
                op,
                position: i,
                index: labels[i],
                bound: c,
            });
        }
        Ok(count)
    }

    fn class_loss(
        &mut self,
        a: Var,
        labels: &'a [usize],
        rows: Rows<'a>,
        ce: bool,
    ) -> AdResult<Var> {
        let op = if ce { "cross_entropy" } else { "nll" };
        let ia = self.index(a)?;
        let n = self.check_labels(op, ia, labels, &rows)?;
        let x = self.vals[ia].view();
        let x2 = m2(&x);
        let mut total = T::zero();
        rows.for_each(x2.nrows(), |i| {
            let xr = x2.row(i);
            let l = if ce { lse(xr) } else { T::zero() };
            total = total + l - xr[labels[i]];
        });
        let out = self
            .pool
            .collect(&[], std::iter::once(total / T::cst(n as f64)));
        let tracked = self.tracked[ia];
        let mut tan = Tan::None;
        if self.forward()
            && let Some(ta) = self.tans[ia].view()
        {
            let t2 = m2(&ta);
            let mut tv = T::zero();
            rows.for_each(x2.nrows(), |i| {
                let tr = t2.row(i);
                if ce {
                    let xr = x2.row(i);
                    let l = lse(xr);
                    tv += xr
                        .iter()
                        .zip(tr.iter())
                        .map(|(&x, &t)| (x - l).exp() * t)
                        .sum::<T>();
                }
                tv -= tr[labels[i]];
            });
            tan = Tan::Own(
                self.pool
                    .collect(&[], std::iter::once(tv / T::cst(n as f64))),
            );
        }
        let kind = if ce {
            Kind::CrossEntropy { labels, rows }
        } else {
            Kind::Nll { labels, rows }
        };
        let rec = Rec {
            a: ia,
            b: ia,
            kind,
            n,
            _t: std::marker::PhantomData,
        };
        Ok(self.push(out, tracked, Op::Loss(rec), tan))
    }

    /// Mean cross-entropy of `logits` (`[N, C]`) against integer `labels` (length `N`,
    /// each `< C`) over the selected `rows`.
    ///
    /// Errors: [`AdError::RankMismatch`], [`AdError::ShapeMismatch`] (labels or mask
    /// length), [`AdError::IndexOutOfRange`] (a label or row index),
    /// [`AdError::InvalidArgument`] (empty selection).
    pub fn cross_entropy(
        &mut self,
        logits: Var,
        labels: &'a [usize],
        rows: Rows<'a>,
    ) -> AdResult<Var> {
        self.class_loss(logits, labels, rows, true)
    }

    /// Mean negative log-likelihood `-logp[i, labels[i]]` over the selected rows of
    /// log-probabilities `logp` (`[N, C]`); errors as [`Tape::cross_entropy`].
    pub fn nll(&mut self, logp: Var, labels: &'a [usize], rows: Rows<'a>) -> AdResult<Var> {
        self.class_loss(logp, labels, rows, false)
    }

    fn pair_loss(&mut self, a: Var, b: Var, bce_: bool) -> AdResult<Var> {
        let op = if bce_ { "bce_with_logits" } else { "mse" };
        let (ia, ib) = (self.index(a)?, self.index(b)?);
        let x = self.vals[ia].view();
        let y = self.vals[ib].view();
        if x.shape() != y.shape() {
            return Err(AdError::ShapeMismatch {
                op,
                left: x.shape().to_vec(),
                right: y.shape().to_vec(),
            });
        }
        let n = x.len();
        if n == 0 {
            return Err(AdError::InvalidArgument {
                op,
                what: "a mean over an empty value is undefined".into(),
            });
        }
        let nn = T::cst(n as f64);
        let v: T = if bce_ {
            x.iter().zip(y.iter()).map(|(&x, &t)| bce(x, t)).sum()
        } else {
            x.iter()
                .zip(y.iter())
                .map(|(&x, &y)| (x - y) * (x - y))
                .sum()
        };
        let out = self.pool.collect(&[], std::iter::once(v / nn));
        let tracked = self.tracked[ia] || self.tracked[ib];
        let mut tan = Tan::None;
        if self.forward() && tracked {
            let mut tv = T::zero();
            if let Some(ta) = self.tans[ia].view() {
                Zip::from(&ta).and(&x).and(&y).for_each(|&t, &x, &y| {
                    let d = if bce_ {
                        sigmoid(x) - y
                    } else {
                        T::cst(2.0) * (x - y)
                    };
                    tv += d * t;
                });
            }
            if let Some(tb) = self.tans[ib].view() {
                Zip::from(&tb).and(&x).and(&y).for_each(|&t, &x, &y| {
                    let d = if bce_ { -x } else { T::cst(-2.0) * (x - y) };
                    tv += d * t;
                });
            }
            tan = Tan::Own(self.pool.collect(&[], std::iter::once(tv / nn)));
        }
        let kind = if bce_ { Kind::Bce } else { Kind::Mse };
        let rec = Rec {
            a: ia,
            b: ib,
            kind,
            n,
            _t: std::marker::PhantomData,
        };
        Ok(self.push(out, tracked, Op::Loss(rec), tan))
    }

    /// Mean squared error `mean((a - b)²)`; shapes must be equal.
    pub fn mse(&mut self, a: Var, b: Var) -> AdResult<Var> {
        self.pair_loss(a, b, false)
    }

    /// Mean binary cross-entropy of `logits` against `targets` (same shape, usually in
    /// `[0, 1]`), in the stable form `max(x, 0) - x t + ln(1 + e^-|x|)`.
    pub fn bce_with_logits(&mut self, logits: Var, targets: Var) -> AdResult<Var> {
        self.pair_loss(logits, targets, true)
    }
}
