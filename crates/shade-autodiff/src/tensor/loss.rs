//! Losses, each a mean (0-d result): `cross_entropy` and `nll` with integer labels over
//! a selection of rows ([`Rows`]), `mse`, `bce_with_logits`.
//!
//! `cross_entropy(logits, labels, rows)` is the mean over the selected rows of
//! `-log_softmax(logits)[i, labels[i]]` (PyTorch's `cross_entropy` on
//! `logits[rows]`); a row listed twice counts twice. Reverse rule: `(softmax - onehot) /
//! n` per selected row. `bce_with_logits` uses the stable form
//! `max(x, 0) - x t + ln(1 + e^-|x|)`.

use super::elementwise::exp_in_place;
use super::index::Rows;
use super::par;
use super::tape::{Bwd, Op, Pool, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayView2, ArrayViewD, Ix2, Zip};
use rayon::prelude::*;

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
    /// `cross_entropy`: the log-sum-exp of each selected row, in the order of the
    /// selection, kept from the forward pass for the reverse rule (one value per
    /// row; empty for the other losses).
    lse: Vec<T>,
}

/// Rows of the logits per task of the row-wise cross-entropy kernels: from the split
/// threshold (2^20 logits) on, at least 16 tasks for 256 classes or fewer, enough to
/// balance two to four threads.
const ROWS: usize = 256;

/// `buf[j] = e^{x[j] - shift}` for one row, with the vectorised `exp`.
#[inline]
fn shifted_exp<T: Element>(x: &[T], shift: T, buf: &mut [T]) {
    buf.iter_mut().zip(x).for_each(|(b, &v)| *b = v - shift);
    exp_in_place(buf);
}

/// The log-sum-exp of a row (its maximum subtracted first; a row of `-inf` or with a
/// non-finite maximum is shifted by zero, so that it gives `-inf`, `inf` or NaN as
/// its arithmetic does). `buf` is scratch of the row's length.
fn lse_row<T: Element>(x: &[T], buf: &mut [T]) -> T {
    let m = x.iter().copied().fold(T::neg_infinity(), T::max);
    let m = if m.is_finite() { m } else { T::zero() };
    shifted_exp(x, m, buf);
    m + buf.iter().copied().sum::<T>().ln()
}

/// The log-sum-exp of every selected row of `x` (`[n, c]`, standard layout) into
/// `out` (one value per selected row, in the selection's order): over rayon's threads
/// from [`par::SPLIT_MIN`] values, in tasks of [`ROWS`] rows (each value computed alone,
/// so the bits do not depend on the thread count). `scratch` holds `c` values per task
/// ([`scratch_len`]).
fn selected_lse<T: Element>(
    x: &[T],
    c: usize,
    sel: &Selected<'_>,
    out: &mut [T],
    scratch: &mut [T],
) {
    let task = |k0: usize, os: &mut [T], buf: &mut [T]| {
        for (k, o) in os.iter_mut().enumerate() {
            let i = sel.row(k0 + k);
            *o = lse_row(&x[i * c..(i + 1) * c], buf);
        }
    };
    if par::split(out.len() * c, par::SPLIT_MIN) {
        out.par_chunks_mut(ROWS)
            .zip(scratch.par_chunks_mut(c))
            .enumerate()
            .for_each(|(t, (os, buf))| task(t * ROWS, os, buf));
    } else {
        task(0, out, &mut scratch[..c]);
    }
}

/// The reverse rule of `cross_entropy` over some of its rows: `g += s·softmax(x)`, then
/// `-s` at each selected row's label, `g` written (as `0 + v`) instead of added to when
/// `write`.
struct CeBack<'r, 'l, T> {
    xs: &'r [T],
    c: usize,
    sel: &'r Selected<'l>,
    lse: &'r [T],
    labels: &'r [usize],
    s: T,
    write: bool,
}

impl<T: Element> CeBack<'_, '_, T> {
    /// Tasks `t0..t1` (selected positions `t0·ROWS..t1·ROWS`) into `g`, the adjoint's
    /// rows from `row0` on, with `c` values of `scratch` per task; split in halves over
    /// rayon's threads when `split` (the selection must then be increasing, so that
    /// each half owns the rows from its first one on).
    fn rows(
        &self,
        (t0, t1): (usize, usize),
        row0: usize,
        g: &mut [T],
        scratch: &mut [T],
        split: bool,
    ) {
        let c = self.c;
        if !split || t1 - t0 <= 1 {
            let buf = &mut scratch[..c];
            let (k0, k1) = (t0 * ROWS, (t1 * ROWS).min(self.sel.len()));
            for (k, &l) in self.lse[k0..k1].iter().enumerate() {
                let i = self.sel.row(k0 + k);
                shifted_exp(&self.xs[i * c..(i + 1) * c], l, buf);
                let gr = &mut g[(i - row0) * c..(i - row0 + 1) * c];
                if self.write {
                    gr.iter_mut()
                        .zip(&*buf)
                        .for_each(|(d, &e)| *d = T::zero() + self.s * e);
                } else {
                    gr.iter_mut()
                        .zip(&*buf)
                        .for_each(|(d, &e)| *d += self.s * e);
                }
                gr[self.labels[i]] -= self.s;
            }
            return;
        }
        let tm = (t0 + t1) / 2;
        let mid = self.sel.row(tm * ROWS);
        let (ga, gb) = g.split_at_mut((mid - row0) * c);
        let (sa, sb) = scratch.split_at_mut((tm - t0) * c);
        rayon::join(
            || self.rows((t0, tm), row0, ga, sa, true),
            || self.rows((tm, t1), mid, gb, sb, true),
        );
    }
}

/// Scratch for the row-wise kernels over `count` rows of `c` values: one row per task.
fn scratch_len(count: usize, c: usize) -> usize {
    count.div_ceil(ROWS).max(1) * c
}

/// The selected rows in order: every row, or a list (a mask's rows, in a vector of
/// the pool, or the indices).
enum Selected<'r> {
    All(usize),
    Index(&'r [usize]),
    Mask(Vec<usize>),
}

impl<'r> Selected<'r> {
    /// The selection `rows` of `n` rows; a mask's rows are listed in a vector from
    /// `idx` (to be handed back with [`Selected::give`]).
    fn new(rows: &Rows<'r>, n: usize, idx: impl FnOnce() -> Vec<usize>) -> Self {
        match rows {
            Rows::All => Selected::All(n),
            Rows::Index(ix) => Selected::Index(ix),
            Rows::Mask(_) => {
                let mut v = idx();
                rows.for_each(n, |i| v.push(i));
                Selected::Mask(v)
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Selected::All(n) => *n,
            Selected::Index(v) => v.len(),
            Selected::Mask(v) => v.len(),
        }
    }

    /// The row at position `k` of the selection.
    #[inline]
    fn row(&self, k: usize) -> usize {
        match self {
            Selected::All(_) => k,
            Selected::Index(v) => v[k],
            Selected::Mask(v) => v[k],
        }
    }

    /// Whether each row is selected at most once, in increasing order.
    fn increasing(&self) -> bool {
        match self {
            Selected::All(_) | Selected::Mask(_) => true,
            Selected::Index(v) => v.windows(2).all(|w| w[0] < w[1]),
        }
    }

    /// The selected rows in order.
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).map(|k| self.row(k))
    }

    /// Hands a mask's list back to the pool.
    fn give<T: Element>(self, pool: &mut Pool<T>) {
        if let Selected::Mask(v) = self {
            pool.give_idx(v);
        }
    }
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
    pub(crate) fn name(&self) -> &'static str {
        match self.kind {
            Kind::CrossEntropy { .. } => "cross_entropy",
            Kind::Nll { .. } => "nll",
            Kind::Mse => "mse",
            Kind::Bce => "bce_with_logits",
        }
    }

    pub(crate) fn inputs(&self) -> smallvec::SmallVec<[usize; 4]> {
        if self.a == self.b {
            smallvec::smallvec![self.a]
        } else {
            smallvec::smallvec![self.a, self.b]
        }
    }

    pub(crate) fn release(self, pool: &mut Pool<T>) {
        if self.lse.capacity() > 0 {
            pool.give_vec(self.lse);
        }
    }

    pub(crate) fn backward(&self, _me: usize, g: ArrayViewD<'_, T>, bw: &mut Bwd<'_, '_, T>) {
        let s = g.iter().copied().next().unwrap_or_else(T::zero) / T::cst(self.n as f64);
        let x = bw.vals[self.a].view();
        match &self.kind {
            Kind::Nll { labels, rows } => {
                let Some(mut ga) = bw.gs.acc(self.a, x.shape()) else {
                    return;
                };
                let mut ga2 = ga.view_mut().into_dimensionality::<Ix2>().expect("rank 2");
                rows.for_each(x.shape()[0], |i| ga2[[i, labels[i]]] -= s);
            }
            Kind::CrossEntropy { labels, rows } => {
                let (rn, c) = (x.shape()[0], x.shape()[1]);
                if !bw.gs.wants(self.a) {
                    return;
                }
                let sel = Selected::new(rows, rn, || bw.gs.pool.idx(rn));
                let mut scratch = bw.gs.pool.overwritten_vec(scratch_len(sel.len(), c));
                let xs = x.as_standard_layout();
                let xs = xs.as_slice().expect("standard layout");
                let Some((mut ga, fresh)) = bw.gs.acc_or_fresh(self.a, x.shape()) else {
                    return;
                };
                let gs = ga.as_slice_mut().expect("adjoints are standard layout");
                let all = matches!(sel, Selected::All(_));
                if fresh && !all {
                    gs.fill(T::zero());
                }
                let rule = CeBack {
                    xs,
                    c,
                    sel: &sel,
                    lse: &self.lse,
                    labels,
                    s,
                    write: fresh && all,
                };
                // Rows in tasks of `ROWS` over rayon's threads from the split threshold
                // when each row is selected once, in increasing order (every row, a mask,
                // sorted distinct indices); in order on this thread otherwise (a row
                // listed twice counts twice).
                let split = par::split(sel.len() * c, par::SPLIT_MIN) && sel.increasing();
                rule.rows((0, sel.len().div_ceil(ROWS)), 0, gs, &mut scratch, split);
                bw.gs.pool.give_vec(scratch);
                sel.give(bw.gs.pool);
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
    #[track_caller]
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

    #[track_caller]
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
        let (rn, c) = x2.dim();
        let xs = x2.as_standard_layout();
        let xs = xs.as_slice().expect("standard layout");
        let sel = Selected::new(&rows, rn, || self.pool.idx(rn));
        let mut scratch = self.pool.overwritten_vec(scratch_len(sel.len(), c));
        let mut lse = Vec::new();
        if ce {
            lse = self.pool.overwritten_vec(sel.len());
            selected_lse(xs, c, &sel, &mut lse, &mut scratch);
        }
        let mut total = T::zero();
        for (k, i) in sel.iter().enumerate() {
            let l = if ce { lse[k] } else { T::zero() };
            total = total + l - xs[i * c + labels[i]];
        }
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
            let buf = &mut scratch[..c];
            for (k, i) in sel.iter().enumerate() {
                let tr = t2.row(i);
                if ce {
                    shifted_exp(&xs[i * c..(i + 1) * c], lse[k], buf);
                    tv += buf.iter().zip(tr.iter()).map(|(&e, &t)| e * t).sum::<T>();
                }
                tv -= tr[labels[i]];
            }
            tan = Tan::Own(
                self.pool
                    .collect(&[], std::iter::once(tv / T::cst(n as f64))),
            );
        }
        self.pool.give_vec(scratch);
        sel.give(&mut self.pool);
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
            lse,
        };
        Ok(self.push(out, tracked, Op::Loss(rec), tan))
    }

    /// Mean cross-entropy of `logits` (`[N, C]`) against integer `labels` (length `N`,
    /// each `< C`) over the selected `rows`.
    ///
    /// Errors: [`AdError::RankMismatch`], [`AdError::ShapeMismatch`] (labels or mask
    /// length), [`AdError::IndexOutOfRange`] (a label or row index),
    /// [`AdError::InvalidArgument`] (empty selection).
    #[track_caller]
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
    #[track_caller]
    pub fn nll(&mut self, logp: Var, labels: &'a [usize], rows: Rows<'a>) -> AdResult<Var> {
        self.class_loss(logp, labels, rows, false)
    }

    #[track_caller]
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
            lse: Vec::new(),
        };
        Ok(self.push(out, tracked, Op::Loss(rec), tan))
    }

    /// Mean squared error `mean((a - b)²)`; shapes must be equal.
    #[track_caller]
    pub fn mse(&mut self, a: Var, b: Var) -> AdResult<Var> {
        self.pair_loss(a, b, false)
    }

    /// Mean binary cross-entropy of `logits` against `targets` (same shape, usually in
    /// `[0, 1]`), in the stable form `max(x, 0) - x t + ln(1 + e^-|x|)`.
    #[track_caller]
    pub fn bce_with_logits(&mut self, logits: Var, targets: Var) -> AdResult<Var> {
        self.pair_loss(logits, targets, true)
    }
}

#[cfg(test)]
mod tests {
    use crate::tensor::{self, Rows, TapeBuffers};
    use crate::{Const, Duplicated};
    use ndarray::Array2;

    /// The row-wise kernels over rayon's threads (`2^20` logits and more) against the
    /// definition (`mean(lse - x[label])`, gradient `(softmax - onehot) / n` from
    /// `f64::exp`) for every kind of selection (all rows, a mask, sorted indices, which
    /// split; unsorted indices with a repeat, which run in order), and the same bits on
    /// one thread and on two.
    #[test]
    fn cross_entropy_over_threads_matches_the_definition() {
        let (n, c) = (140_000, 16);
        let x = Array2::from_shape_fn((n, c), |(i, j)| {
            (((i * 31 + j * 17) % 101) as f64 - 50.0) * 0.07
        });
        let labels: Vec<usize> = (0..n).map(|i| (i * 7) % c).collect();
        let mask: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
        let masked: Vec<usize> = (0..n).filter(|&i| mask[i]).collect();
        let sorted: Vec<usize> = (0..n).step_by(2).collect();
        let mut shuffled: Vec<usize> = (0..n).rev().step_by(2).collect();
        shuffled.push(shuffled[5]);
        let all: Vec<usize> = (0..n).collect();
        for (name, rows, list) in [
            ("all", Rows::All, &all),
            ("mask", Rows::Mask(&mask), &masked),
            ("sorted", Rows::Index(&sorted), &sorted),
            ("shuffled", Rows::Index(&shuffled), &shuffled),
        ] {
            assert!(list.len() * c >= crate::tensor::par::SPLIT_MIN);
            let m = list.len() as f64;
            let mut want_g = Array2::<f64>::zeros((n, c));
            let mut want = 0.0;
            for &i in list {
                let r = x.row(i);
                let mx = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let z: f64 = r.iter().map(|&v| (v - mx).exp()).sum();
                want += mx + z.ln() - r[labels[i]];
                for j in 0..c {
                    want_g[[i, j]] += ((r[j] - mx).exp() / z - f64::from(j == labels[i])) / m;
                }
            }
            want /= m;
            let mut runs = Vec::new();
            for threads in [1, 2] {
                let pool = crate::tensor::par::test_pool(threads);
                let mut g = Array2::<f64>::zeros((n, c));
                let l = pool.install(|| {
                    tensor::gradient(
                        &mut TapeBuffers::new(),
                        |t, (x, y)| t.cross_entropy(x, y, rows),
                        (Duplicated(&x, &mut g), Const(labels.as_slice())),
                    )
                    .expect("gradient")
                });
                // The mean of ~10⁵ terms in another association: to 1e-10.
                assert!(
                    (l - want).abs() < 1e-10,
                    "{name}, {threads} threads: {l} against {want}"
                );
                let err = (&g - &want_g).iter().fold(0.0f64, |e, v| e.max(v.abs()));
                assert!(
                    err < 1e-15,
                    "{name}, {threads} threads: gradient error {err}"
                );
                runs.push((l, g));
            }
            assert_eq!(
                runs[0], runs[1],
                "{name}: bits differ between one thread and two"
            );
        }
    }
}
