//! Broadcasting arithmetic: `add sub mul div` with NumPy's rules (trailing axes
//! aligned; an axis of size 1, or a missing leading axis, stretches).
//!
//! The reverse rule sums the incoming adjoint over the stretched axes of each operand,
//! in one pass without temporaries.

use super::tape::{Bwd, Op, Pool, Sink, Tan};
use super::{Element, Tape, Var, par, simd};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayD, ArrayViewD, Dimension, IxDyn, Zip, aview0};
use smallvec::SmallVec;

/// Which arithmetic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bin {
    Add,
    Sub,
    Mul,
    Div,
}

impl Bin {
    fn name(self) -> &'static str {
        match self {
            Bin::Add => "add",
            Bin::Sub => "sub",
            Bin::Mul => "mul",
            Bin::Div => "div",
        }
    }

    #[inline]
    fn f<T: Element>(self, x: T, y: T) -> T {
        match self {
            Bin::Add => x + y,
            Bin::Sub => x - y,
            Bin::Mul => x * y,
            Bin::Div => x / y,
        }
    }

    /// `(∂f/∂x, ∂f/∂y)`.
    #[inline]
    fn d<T: Element>(self, x: T, y: T) -> (T, T) {
        match self {
            Bin::Add => (T::one(), T::one()),
            Bin::Sub => (T::one(), -T::one()),
            Bin::Mul => (y, x),
            Bin::Div => (T::one() / y, -x / (y * y)),
        }
    }
}

/// The broadcast shape of `a` and `b`, or [`AdError::ShapeMismatch`].
pub(crate) fn broadcast_shape(op: &'static str, a: &[usize], b: &[usize]) -> AdResult<IxDyn> {
    let n = a.len().max(b.len());
    let mut out = IxDyn::zeros(n);
    for k in 0..n {
        let da = if k + a.len() >= n {
            a[k + a.len() - n]
        } else {
            1
        };
        let db = if k + b.len() >= n {
            b[k + b.len() - n]
        } else {
            1
        };
        out[k] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(AdError::ShapeMismatch {
                op,
                left: a.to_vec(),
                right: b.to_vec(),
            });
        };
    }
    Ok(out)
}

/// `d += s`, or `d += sign · s`: the choice made once, outside the loop.
#[inline(always)]
fn acc_signed<T: Element>(d: &mut [T], s: &[T], sign: T) {
    if sign == T::one() {
        d.iter_mut().zip(s).for_each(|(d, &c)| *d += c);
    } else {
        d.iter_mut().zip(s).for_each(|(d, &c)| *d += sign * c);
    }
}

/// Adds `src` (standard layout, shape `out_shape`) into the standard-layout adjoint of
/// node `j` (shape `dst_shape`), summing over the broadcast axes.
pub(crate) fn acc_reduced<T: Element>(
    sink: &mut Sink<'_, '_, T>,
    j: usize,
    dst_shape: &[usize],
    out_shape: &[usize],
    src: &[T],
    sign: T,
) {
    let Some(mut dst) = sink.acc(j, dst_shape) else {
        return;
    };
    let d = dst.as_slice_mut().expect("adjoints are in standard layout");
    let dn = d.len();
    let trailing = dst_shape
        .iter()
        .skip_while(|&&k| k == 1)
        .copied()
        .collect::<SmallVec<[usize; 6]>>();
    let acc = |d: &mut [T], s: &[T]| acc_signed(d, s, sign);
    if dst_shape == out_shape || (dn == src.len()) {
        acc(d, src);
        return;
    }
    if dn > 0 && out_shape.ends_with(&trailing) {
        // A bias-like operand: the output is rows of `d`'s shape (each column summed in
        // row order; compiled with AVX-512F or AVX2 where the processor has them, the same bits).
        super::simd::wide(|| {
            for row in src.chunks_exact(dn) {
                acc_signed(d, row, sign);
            }
        });
        return;
    }
    let n = out_shape.len();
    let pad = n - dst_shape.len();
    // Strides of `dst` in the padded shape, 0 along stretched axes.
    let mut st: SmallVec<[usize; 6]> = SmallVec::from_elem(0, n);
    let mut s = 1;
    for k in (0..n).rev() {
        let dk = if k >= pad { dst_shape[k - pad] } else { 1 };
        st[k] = if dk == 1 { 0 } else { s };
        s *= dk;
    }
    let mut idx: SmallVec<[usize; 6]> = SmallVec::from_elem(0, n);
    let mut off = 0;
    for &c in src {
        d[off] += sign * c;
        for k in (0..n).rev() {
            idx[k] += 1;
            off += st[k];
            if idx[k] < out_shape[k] {
                break;
            }
            off -= st[k] * out_shape[k];
            idx[k] = 0;
        }
    }
}

/// `f(full[i, j], row[j])` for the rows of `full` (length `row.len() > 0`), as a new
/// array of shape `shape` (of `full.len()` elements).
fn rows<T: Element>(
    pool: &mut Pool<T>,
    shape: &[usize],
    full: &[T],
    row: &[T],
    f: impl Fn(T, T) -> T + Sync,
) -> ArrayD<T> {
    let mut out = pool.overwritten(shape);
    let os = out.as_slice_mut().expect("standard layout");
    let n = os.len();
    // Every element is written; each thread of the pool on rows of its own from
    // `SPLIT_MIN` elements.
    par::pieces(os, row.len(), n, par::SPLIT_MIN, |o, os| {
        let full = &full[o..o + os.len()];
        simd::wide(
            #[inline(always)]
            || {
                for (orow, frow) in os
                    .chunks_exact_mut(row.len())
                    .zip(full.chunks_exact(row.len()))
                {
                    for ((o, &a), &b) in orow.iter_mut().zip(frow).zip(row) {
                        *o = f(a, b);
                    }
                }
            },
        );
    });
    out
}

/// `f(x[i], y[i])` for operands of the output's length, as [`rows`].
fn same<T: Element>(
    pool: &mut Pool<T>,
    shape: &[usize],
    xs: &[T],
    ys: &[T],
    f: impl Fn(T, T) -> T + Sync,
) -> ArrayD<T> {
    let mut out = pool.overwritten(shape);
    let os = out.as_slice_mut().expect("standard layout");
    let n = os.len();
    par::pieces(os, 16, n, par::SPLIT_MIN, |o, os| {
        let r = o..o + os.len();
        let (xs, ys) = (&xs[r.clone()], &ys[r]);
        simd::wide(
            #[inline(always)]
            || {
                for ((o, &a), &b) in os.iter_mut().zip(xs).zip(ys) {
                    *o = f(a, b);
                }
            },
        );
    });
    out
}

/// `kind(x, y)` through contiguous slices when both operands are in standard layout
/// and either have the output's shape or are a row repeated along the leading axes (a
/// bias); `None` otherwise (the caller takes the generic path).
fn fast_binary<T: Element>(
    pool: &mut Pool<T>,
    kind: Bin,
    x: &ArrayViewD<'_, T>,
    y: &ArrayViewD<'_, T>,
    shape: &[usize],
) -> Option<ArrayD<T>> {
    let (xs, ys) = (x.as_slice()?, y.as_slice()?);
    let n: usize = shape.iter().product();
    if xs.len() == n && ys.len() == n {
        // The operation chosen outside the loop, so that it is branch-free.
        return Some(match kind {
            Bin::Add => same(pool, shape, xs, ys, |a, b| a + b),
            Bin::Sub => same(pool, shape, xs, ys, |a, b| a - b),
            Bin::Mul => same(pool, shape, xs, ys, |a, b| a * b),
            Bin::Div => same(pool, shape, xs, ys, |a, b| a / b),
        });
    }
    // A row operand: its shape, without leading ones, ends the output's shape.
    let is_row = |s: &[usize], len: usize| {
        let lead = s.iter().take_while(|&&k| k == 1).count();
        len > 0 && shape.ends_with(&s[lead..])
    };
    // The operation is chosen outside the loops so that each loop is branch-free.
    let row_op = |pool: &mut Pool<T>, full: &[T], row: &[T], swap: bool| match (kind, swap) {
        (Bin::Add, _) => rows(pool, shape, full, row, |a, b| a + b),
        (Bin::Mul, _) => rows(pool, shape, full, row, |a, b| a * b),
        (Bin::Sub, false) => rows(pool, shape, full, row, |a, b| a - b),
        (Bin::Sub, true) => rows(pool, shape, full, row, |a, b| b - a),
        (Bin::Div, false) => rows(pool, shape, full, row, |a, b| a / b),
        (Bin::Div, true) => rows(pool, shape, full, row, |a, b| b / a),
    };
    if xs.len() == n && is_row(y.shape(), ys.len()) {
        return Some(row_op(pool, xs, ys, false));
    }
    if ys.len() == n && is_row(x.shape(), xs.len()) {
        return Some(row_op(pool, ys, xs, true));
    }
    None
}

/// Backward record of a broadcasting binary operation.
#[derive(Debug)]
pub(crate) struct Rec {
    a: usize,
    b: usize,
    kind: Bin,
}

impl Rec {
    pub(crate) fn name(&self) -> &'static str {
        self.kind.name()
    }

    pub(crate) fn inputs(&self) -> SmallVec<[usize; 4]> {
        smallvec::smallvec![self.a, self.b]
    }

    /// The values the reverse rule reads: none for a sum or difference (their shapes
    /// only), both operands for a product or quotient.
    pub(crate) fn value_reads(&self) -> SmallVec<[usize; 4]> {
        match self.kind {
            Bin::Add | Bin::Sub => SmallVec::new(),
            Bin::Mul | Bin::Div => self.inputs(),
        }
    }

    pub(crate) fn backward<T: Element>(
        &self,
        _me: usize,
        g: ArrayViewD<'_, T>,
        bw: &mut Bwd<'_, '_, T>,
    ) {
        let k = self.kind;
        let x = bw.vals[self.a].view();
        let y = bw.vals[self.b].view();
        let os = g.shape();
        let g = g.as_standard_layout();
        let gs = g.as_slice().expect("standard layout");
        for (first, j, shape) in [(true, self.a, x.shape()), (false, self.b, y.shape())] {
            if !bw.gs.wants(j) {
                continue;
            }
            match k {
                Bin::Add => acc_reduced(&mut bw.gs, j, shape, os, gs, T::one()),
                Bin::Sub => {
                    let sign = if first { T::one() } else { -T::one() };
                    acc_reduced(&mut bw.gs, j, shape, os, gs, sign);
                }
                Bin::Mul | Bin::Div => {
                    let mut tmp = bw.gs.pool.zeros(os);
                    Zip::from(&mut tmp)
                        .and(&g)
                        .and_broadcast(&x)
                        .and_broadcast(&y)
                        .for_each(|t, &g, &x, &y| {
                            let (dx, dy) = k.d(x, y);
                            *t = g * if first { dx } else { dy };
                        });
                    let ts = tmp.as_slice().expect("standard layout");
                    acc_reduced(&mut bw.gs, j, shape, os, ts, T::one());
                    bw.gs.pool.give(tmp);
                }
            }
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    #[track_caller]
    fn binary(&mut self, a: Var, b: Var, kind: Bin) -> AdResult<Var> {
        let (ia, ib) = (self.index(a)?, self.index(b)?);
        let x = self.vals[ia].view();
        let y = self.vals[ib].view();
        let shape = broadcast_shape(kind.name(), x.shape(), y.shape())?;
        let out = match fast_binary(&mut self.pool, kind, &x, &y, shape.slice()) {
            Some(out) => out,
            None => {
                let mut out = self.pool.zeros(shape.slice());
                Zip::from(&mut out)
                    .and_broadcast(&x)
                    .and_broadcast(&y)
                    .for_each(|o, &x, &y| *o = kind.f(x, y));
                out
            }
        };
        let tracked = self.tracked[ia] || self.tracked[ib];
        let mut tan = Tan::None;
        if self.forward() && tracked {
            let zero = T::zero();
            let z = aview0(&zero).into_dyn();
            let ta = self.tans[ia].view().unwrap_or_else(|| z.view());
            let tb = self.tans[ib].view().unwrap_or_else(|| z.view());
            // A sum or difference is linear: its tangent is the same operation on the
            // tangents, through the contiguous paths when they apply (a bias row).
            if matches!(kind, Bin::Add | Bin::Sub)
                && let Some(t) = fast_binary(&mut self.pool, kind, &ta, &tb, shape.slice())
            {
                let rec = Rec { a: ia, b: ib, kind };
                return Ok(self.push(out, tracked, Op::Binary(rec), Tan::Own(t)));
            }
            let mut t = self.pool.zeros(shape.slice());
            Zip::from(&mut t)
                .and_broadcast(&x)
                .and_broadcast(&y)
                .and_broadcast(&ta)
                .and_broadcast(&tb)
                .for_each(|t, &x, &y, &ta, &tb| {
                    let (dx, dy) = kind.d(x, y);
                    *t = dx * ta + dy * tb;
                });
            tan = Tan::Own(t);
        }
        let rec = Rec { a: ia, b: ib, kind };
        Ok(self.push(out, tracked, Op::Binary(rec), tan))
    }

    /// `a + b` with broadcasting.
    #[track_caller]
    pub fn add(&mut self, a: Var, b: Var) -> AdResult<Var> {
        self.binary(a, b, Bin::Add)
    }

    /// `a - b` with broadcasting.
    #[track_caller]
    pub fn sub(&mut self, a: Var, b: Var) -> AdResult<Var> {
        self.binary(a, b, Bin::Sub)
    }

    /// `a · b` elementwise with broadcasting.
    #[track_caller]
    pub fn mul(&mut self, a: Var, b: Var) -> AdResult<Var> {
        self.binary(a, b, Bin::Mul)
    }

    /// `a / b` elementwise with broadcasting.
    #[track_caller]
    pub fn div(&mut self, a: Var, b: Var) -> AdResult<Var> {
        self.binary(a, b, Bin::Div)
    }
}
