//! Indexing for graphs: `index_select` (gather rows), `scatter_add`, `scatter_mean`,
//! `scatter_max` (segment reductions into rows), `segment_softmax` (softmax over the
//! entries that share a segment, e.g. the edges into one node).
//!
//! A value is seen as rows: axis 0 is indexed, the trailing axes form one row.
//! Empty segments (isolated nodes) produce 0 and pass no gradient; the adjoint of
//! `scatter_max` goes to the arg-max of each segment and column (the first one on
//! ties). Indices are `u32` or `usize` ([`IndexType`]), taken as they are; they are
//! checked once at the entry, and each kernel is compiled once per index type (the
//! record's [`Indices`] is matched once per call, never inside a loop).

pub(crate) mod indices;

use super::tape::{Bwd, Op, Pool, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use indices::{Indices, with_indices};
use ndarray::{ArrayD, ArrayViewD, Dimension, IxDyn};

pub use indices::IndexType;
pub(crate) use indices::{check_count, check_indices};

/// A selection of rows for the losses: all of them, a mask, or a list of indices
/// (a row listed twice counts twice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows<'a> {
    /// Every row.
    All,
    /// Rows whose entry is `true`; the mask has one entry per row.
    Mask(&'a [bool]),
    /// The listed rows.
    Index(&'a [usize]),
}

impl Rows<'_> {
    /// Checks the selection against `n` rows; returns how many rows it selects.
    pub(crate) fn validate(&self, op: &'static str, n: usize) -> AdResult<usize> {
        match self {
            Rows::All => Ok(n),
            Rows::Mask(m) => {
                if m.len() != n {
                    return Err(AdError::ShapeMismatch {
                        op,
                        left: vec![n],
                        right: vec![m.len()],
                    });
                }
                Ok(m.iter().filter(|&&b| b).count())
            }
            Rows::Index(ix) => {
                check_indices(op, ix, n)?;
                Ok(ix.len())
            }
        }
    }

    /// Calls `f` for every selected row of a value with `n` rows (validated).
    pub(crate) fn for_each(&self, n: usize, mut f: impl FnMut(usize)) {
        match self {
            Rows::All => (0..n).for_each(f),
            Rows::Mask(m) => m
                .iter()
                .enumerate()
                .filter(|(_, b)| **b)
                .for_each(|(i, _)| f(i)),
            Rows::Index(ix) => ix.iter().for_each(|&i| f(i)),
        }
    }
}

/// Which indexing operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Select,
    ScatterAdd,
    ScatterMean,
    ScatterMax,
    SegmentSoftmax,
}

/// Backward record of an indexing operation.
#[derive(Debug)]
pub(crate) struct Rec<'a, T> {
    kind: Kind,
    a: usize,
    idx: Indices<'a>,
    /// `1 / count` per segment (`scatter_mean`).
    inv: Vec<T>,
    /// Arg-max entry per segment and column, `usize::MAX` when empty (`scatter_max`).
    arg: Vec<usize>,
}

/// Elements per row of a value whose axis 0 holds the rows.
fn row_len(shape: &[usize]) -> usize {
    shape.iter().skip(1).product()
}

fn flat<'s, T: Element>(v: &'s ndarray::CowArray<'_, T, IxDyn>) -> &'s [T] {
    v.as_slice().expect("standard layout")
}

/// `out[idx[e]] += src[e]` (rows of length `f`), with `w[idx[e]]` as weight if given.
fn scatter_rows<T: Element, I: IndexType>(
    src: &[T],
    idx: &[I],
    f: usize,
    out: &mut [T],
    w: Option<&[T]>,
) {
    for (e, &k) in idx.iter().enumerate() {
        let k = k.ix();
        let c = w.map_or(T::one(), |w| w[k]);
        let o = &mut out[k * f..(k + 1) * f];
        for (o, &s) in o.iter_mut().zip(&src[e * f..(e + 1) * f]) {
            *o += c * s;
        }
    }
}

/// `out[e] += src[idx[e]]` (rows of length `f`), with `w[idx[e]]` as weight if given.
fn gather_rows<T: Element, I: IndexType>(
    src: &[T],
    idx: &[I],
    f: usize,
    out: &mut [T],
    w: Option<&[T]>,
) {
    for (e, &k) in idx.iter().enumerate() {
        let k = k.ix();
        let c = w.map_or(T::one(), |w| w[k]);
        let o = &mut out[e * f..(e + 1) * f];
        for (o, &s) in o.iter_mut().zip(&src[k * f..(k + 1) * f]) {
            *o += c * s;
        }
    }
}

/// `out[e] = src[idx[e]]` (rows of length `f`), every element of `out` written.
///
/// Rows of the usual narrow widths (a score per head: 1, 2, 4, 8, 16) are copied as
/// fixed-size arrays (a few moves each) instead of a `memcpy` call per row.
fn copy_rows<T: Element, I: IndexType>(src: &[T], idx: &[I], f: usize, out: &mut [T]) {
    match f {
        0 => {}
        1 => out.iter_mut().zip(idx).for_each(|(o, &k)| *o = src[k.ix()]),
        2 => copy_fixed::<T, I, 2>(src, idx, out),
        4 => copy_fixed::<T, I, 4>(src, idx, out),
        8 => copy_fixed::<T, I, 8>(src, idx, out),
        16 => copy_fixed::<T, I, 16>(src, idx, out),
        _ => {
            for (o, &k) in out.chunks_exact_mut(f).zip(idx) {
                let k = k.ix();
                o.copy_from_slice(&src[k * f..(k + 1) * f]);
            }
        }
    }
}

/// [`copy_rows`] for rows of `F` elements.
#[inline(always)]
fn copy_fixed<T: Element, I: IndexType, const F: usize>(src: &[T], idx: &[I], out: &mut [T]) {
    for (o, &k) in out.chunks_exact_mut(F).zip(idx) {
        let k = k.ix();
        let s: &[T; F] = src[k * F..(k + 1) * F]
            .try_into()
            .expect("a row of F elements");
        let o: &mut [T; F] = o.try_into().expect("a row of F elements");
        *o = *s;
    }
}

/// Per-segment softmax of `x` (rows of length `f`): `y = exp(x - max) / Σ exp(x - max)`.
///
/// Row by row over slices (no index arithmetic per element), the shifted scores
/// exponentiated in one vectorised pass ([`Element`]'s `exp_v`, within 1 ulp of libm's),
/// the same divisions as the definition.
fn seg_softmax<T: Element, I: IndexType>(
    x: &[T],
    idx: &[I],
    f: usize,
    y: &mut [T],
    m: &mut [T],
    s: &mut [T],
) {
    if f == 0 {
        return;
    }
    m.fill(T::neg_infinity());
    s.fill(T::zero());
    for (xr, &k) in x.chunks_exact(f).zip(idx) {
        let k = k.ix();
        let mr = &mut m[k * f..(k + 1) * f];
        mr.iter_mut().zip(xr).for_each(|(m, &x)| *m = m.max(x));
    }
    for ((yr, xr), &k) in y.chunks_exact_mut(f).zip(x.chunks_exact(f)).zip(idx) {
        let k = k.ix();
        let mr = &m[k * f..(k + 1) * f];
        for ((y, &x), &m) in yr.iter_mut().zip(xr).zip(mr) {
            *y = x - m;
        }
    }
    super::elementwise::exp_in_place(y);
    for (yr, &k) in y.chunks_exact(f).zip(idx) {
        let k = k.ix();
        let sr = &mut s[k * f..(k + 1) * f];
        sr.iter_mut().zip(yr).for_each(|(s, &y)| *s += y);
    }
    for (yr, &k) in y.chunks_exact_mut(f).zip(idx) {
        let k = k.ix();
        let sr = &s[k * f..(k + 1) * f];
        yr.iter_mut().zip(sr).for_each(|(y, &s)| *y = *y / s);
    }
}

/// `out[e] += y[e] (v[e] - Σ_{e' in seg} y[e'] v[e'])`: the softmax Jacobian (symmetric).
fn seg_softmax_apply<T: Element, I: IndexType>(
    y: &[T],
    v: &[T],
    idx: &[I],
    f: usize,
    out: &mut [T],
    s: &mut [T],
) {
    if f == 0 {
        return;
    }
    s.fill(T::zero());
    for ((yr, vr), &k) in y.chunks_exact(f).zip(v.chunks_exact(f)).zip(idx) {
        let k = k.ix();
        let sr = &mut s[k * f..(k + 1) * f];
        for ((s, &y), &v) in sr.iter_mut().zip(yr).zip(vr) {
            *s += y * v;
        }
    }
    let rows = out.chunks_exact_mut(f).zip(y.chunks_exact(f));
    for (((or, yr), vr), &k) in rows.zip(v.chunks_exact(f)).zip(idx) {
        let k = k.ix();
        let sr = &s[k * f..(k + 1) * f];
        for (((o, &y), &v), &s) in or.iter_mut().zip(yr).zip(vr).zip(sr) {
            *o += y * (v - s);
        }
    }
}

impl<T: Element> Rec<'_, T> {
    pub(crate) fn name(&self) -> &'static str {
        match self.kind {
            Kind::Select => "index_select",
            Kind::ScatterAdd => "scatter_add",
            Kind::ScatterMean => "scatter_mean",
            Kind::ScatterMax => "scatter_max",
            Kind::SegmentSoftmax => "segment_softmax",
        }
    }

    pub(crate) fn inputs(&self) -> smallvec::SmallVec<[usize; 4]> {
        smallvec::smallvec![self.a]
    }

    pub(crate) fn release(self, pool: &mut Pool<T>) {
        pool.give_vec(self.inv);
        pool.give_idx(self.arg);
        if let Indices::Owned(v) = self.idx {
            pool.give_idx(v);
        }
    }

    pub(crate) fn backward(&self, me: usize, g: ArrayViewD<'_, T>, bw: &mut Bwd<'_, '_, T>) {
        with_indices!(&self.idx, |idx| self.backward_at(idx, me, g, bw));
    }

    /// [`Rec::backward`] over the record's indices, of one index type.
    fn backward_at<I: IndexType>(
        &self,
        idx: &[I],
        me: usize,
        g: ArrayViewD<'_, T>,
        bw: &mut Bwd<'_, '_, T>,
    ) {
        let x = bw.vals[self.a].view();
        let f = row_len(x.shape());
        let g = g.as_standard_layout();
        let gs = flat(&g);
        if !bw.gs.wants(self.a) {
            return;
        }
        let mut scratch = if self.kind == Kind::SegmentSoftmax {
            let n = idx.iter().map(|i| i.ix()).max().map_or(0, |m| m + 1);
            Some(bw.gs.pool.overwritten(&[n * f]))
        } else {
            None
        };
        let Some(mut ga) = bw.gs.acc(self.a, x.shape()) else {
            return;
        };
        let d = ga.as_slice_mut().expect("adjoints are in standard layout");
        match self.kind {
            Kind::Select => scatter_rows(gs, idx, f, d, None),
            Kind::ScatterAdd => gather_rows(gs, idx, f, d, None),
            Kind::ScatterMean => gather_rows(gs, idx, f, d, Some(&self.inv)),
            Kind::ScatterMax => {
                for (p, &e) in self.arg.iter().enumerate() {
                    if e != usize::MAX {
                        let j = p % f;
                        d[e * f + j] += gs[p];
                    }
                }
            }
            Kind::SegmentSoftmax => {
                let y = bw.vals[me].view();
                let y = y.as_standard_layout();
                if let Some(s) = scratch.as_mut() {
                    let sv = s.as_slice_mut().expect("standard layout");
                    seg_softmax_apply(flat(&y), gs, idx, f, d, sv);
                }
            }
        }
        if let Some(s) = scratch {
            bw.gs.pool.give(s);
        }
    }
}

/// What the forward pass of an indexing operation computes besides its kind and
/// input: the value, its tangent, and what the record keeps for the reverse rule.
struct Forward<'a, T> {
    out: ArrayD<T>,
    tan: Tan<'a, T>,
    /// `1 / count` per segment (`scatter_mean`).
    inv: Vec<T>,
    /// Arg-max entry per segment and column (`scatter_max`).
    arg: Vec<usize>,
}

impl<'a, T: Element> Tape<'a, T> {
    #[track_caller]
    fn indexed(
        &mut self,
        kind: Kind,
        op: &'static str,
        a: Var,
        indices: Indices<'a>,
        n: usize,
    ) -> AdResult<Var> {
        let ia = self.index(a)?;
        let Forward { out, tan, inv, arg } =
            with_indices!(&indices, |idx| self.indexed_at(kind, op, ia, idx, n))?;
        let tracked = self.tracked[ia];
        let rec = Rec {
            kind,
            a: ia,
            idx: indices,
            inv,
            arg,
        };
        Ok(self.push(out, tracked, Op::Index(rec), tan))
    }

    /// The checks and the forward pass of [`Tape::indexed`] over indices of one type.
    fn indexed_at<I: IndexType>(
        &mut self,
        kind: Kind,
        op: &'static str,
        ia: usize,
        idx: &[I],
        n: usize,
    ) -> AdResult<Forward<'a, T>> {
        let x = self.vals[ia].view();
        if x.ndim() == 0 {
            return Err(AdError::RankMismatch {
                op,
                expected: 1,
                shape: vec![],
            });
        }
        let rows = x.shape()[0];
        let f = row_len(x.shape());
        let mut shape = IxDyn(x.shape());
        match kind {
            Kind::Select => {
                check_indices(op, idx, rows)?;
                shape[0] = idx.len();
            }
            _ => {
                if idx.len() != rows {
                    return Err(AdError::ShapeMismatch {
                        op,
                        left: x.shape().to_vec(),
                        right: vec![idx.len()],
                    });
                }
                check_indices(op, idx, n)?;
                check_count::<T>(op, "segments", n, f)?;
                if kind != Kind::SegmentSoftmax {
                    shape[0] = n;
                }
            }
        }
        let xs = x.as_standard_layout();
        let xf = flat(&xs);
        // A gather and the softmax write every element: no zero fill first.
        let mut out = match kind {
            Kind::Select | Kind::SegmentSoftmax => self.pool.overwritten(shape.slice()),
            _ => self.pool.zeros(shape.slice()),
        };
        let o = out.as_slice_mut().expect("standard layout");
        let mut inv = Vec::new();
        let mut arg = Vec::new();
        match kind {
            Kind::Select => copy_rows(xf, idx, f, o),
            Kind::ScatterAdd => scatter_rows(xf, idx, f, o, None),
            Kind::ScatterMean => {
                inv = self.pool.vec(n);
                inv.resize(n, T::zero());
                idx.iter().for_each(|&k| inv[k.ix()] += T::one());
                inv.iter_mut().for_each(|c| {
                    *c = if *c > T::zero() {
                        T::one() / *c
                    } else {
                        T::zero()
                    }
                });
                scatter_rows(xf, idx, f, o, Some(&inv));
            }
            Kind::ScatterMax => {
                arg = self.pool.idx(n * f);
                arg.resize(n * f, usize::MAX);
                for (e, &k) in idx.iter().enumerate() {
                    let k = k.ix();
                    for j in 0..f {
                        let p = k * f + j;
                        let v = xf[e * f + j];
                        // NaN wins, wherever it stands in the segment (as `max`).
                        if arg[p] == usize::MAX || v > o[p] || (v.is_nan() && !o[p].is_nan()) {
                            arg[p] = e;
                            o[p] = v;
                        }
                    }
                }
            }
            Kind::SegmentSoftmax => {
                let mut m = self.pool.overwritten(&[n * f]);
                let mut s = self.pool.overwritten(&[n * f]);
                seg_softmax(
                    xf,
                    idx,
                    f,
                    o,
                    m.as_slice_mut().expect("standard layout"),
                    s.as_slice_mut().expect("standard layout"),
                );
                self.pool.give(m);
                self.pool.give(s);
            }
        }
        let mut tan = Tan::None;
        if self.forward()
            && let Some(ta) = self.tans[ia].view()
        {
            let ta = ta.as_standard_layout();
            let tf = flat(&ta);
            let mut t = self.pool.zeros(shape.slice());
            let tv = t.as_slice_mut().expect("standard layout");
            match kind {
                Kind::Select => gather_rows(tf, idx, f, tv, None),
                Kind::ScatterAdd => scatter_rows(tf, idx, f, tv, None),
                Kind::ScatterMean => scatter_rows(tf, idx, f, tv, Some(&inv)),
                Kind::ScatterMax => {
                    for (p, &e) in arg.iter().enumerate() {
                        if e != usize::MAX {
                            tv[p] = tf[e * f + p % f];
                        }
                    }
                }
                Kind::SegmentSoftmax => {
                    let mut s = self.pool.overwritten(&[n * f]);
                    let sv = s.as_slice_mut().expect("standard layout");
                    let yv = out.as_slice().expect("standard layout");
                    seg_softmax_apply(yv, tf, idx, f, tv, sv);
                    self.pool.give(s);
                }
            }
            tan = Tan::Own(t);
        }
        Ok(Forward { out, tan, inv, arg })
    }

    /// Gathers rows: `out[i] = x[idx[i]]` (axis 0). Repeated indices are allowed; the
    /// adjoint of a row is the sum over its copies. The indices are `usize` or `u32`
    /// ([`IndexType`]; a graph's edge lists as they are).
    ///
    /// Errors: [`AdError::IndexOutOfRange`] for an index `>=` the rows of `x`.
    #[track_caller]
    pub fn index_select<I: IndexType>(&mut self, x: Var, idx: &'a [I]) -> AdResult<Var> {
        self.indexed(Kind::Select, "index_select", x, Indices::of(idx), 0)
    }

    /// [`Tape::index_select`] with indices the tape keeps (for an index set computed
    /// inside the program, which cannot be borrowed for the tape's lifetime, e.g. the
    /// nodes a pooling keeps). The vector returns to the tape's storage afterwards.
    #[track_caller]
    pub fn index_select_owned(&mut self, x: Var, idx: Vec<usize>) -> AdResult<Var> {
        self.indexed(Kind::Select, "index_select", x, Indices::Owned(idx), 0)
    }

    /// Sums rows into `n` segments: `out[k] = Σ_{e: idx[e] = k} src[e]`.
    /// `idx` (`usize` or `u32`) has one entry per row of `src`, each `< n`; empty
    /// segments are 0.
    ///
    /// Errors: [`AdError::ShapeMismatch`] unless `idx` has one entry per row;
    /// [`AdError::IndexOutOfRange`] for an index `>= n`; [`AdError::InvalidArgument`]
    /// when `n` rows of the result would not fit in memory. The same for the other
    /// segment operations.
    #[track_caller]
    pub fn scatter_add<I: IndexType>(&mut self, src: Var, idx: &'a [I], n: usize) -> AdResult<Var> {
        let idx = Indices::of(idx);
        self.indexed(Kind::ScatterAdd, "scatter_add", src, idx, n)
    }

    /// Averages rows into `n` segments; empty segments are 0.
    #[track_caller]
    pub fn scatter_mean<I: IndexType>(
        &mut self,
        src: Var,
        idx: &'a [I],
        n: usize,
    ) -> AdResult<Var> {
        let idx = Indices::of(idx);
        self.indexed(Kind::ScatterMean, "scatter_mean", src, idx, n)
    }

    /// Column-wise maximum of the rows in each of `n` segments; empty segments are 0.
    /// The adjoint goes to the arg-max (the first on ties); a segment holding NaN has
    /// NaN as its maximum (the first NaN takes the adjoint), as [`Tape::max`].
    #[track_caller]
    pub fn scatter_max<I: IndexType>(&mut self, src: Var, idx: &'a [I], n: usize) -> AdResult<Var> {
        let idx = Indices::of(idx);
        self.indexed(Kind::ScatterMax, "scatter_max", src, idx, n)
    }

    /// Softmax over the rows that share a segment, column by column (one column per
    /// attention head): `out[e] = exp(x[e]) / Σ_{e': idx[e'] = idx[e]} exp(x[e'])`.
    /// `idx` (e.g. each edge's destination, `usize` or `u32`) has one entry per row,
    /// each `< n`.
    #[track_caller]
    pub fn segment_softmax<I: IndexType>(
        &mut self,
        scores: Var,
        idx: &'a [I],
        n: usize,
    ) -> AdResult<Var> {
        let idx = Indices::of(idx);
        self.indexed(Kind::SegmentSoftmax, "segment_softmax", scores, idx, n)
    }
}

#[cfg(test)]
mod tests {
    /// Every row width (the fixed-size ones 1, 2, 4, 8, 16 and the others around them)
    /// copies the indexed rows, repeated and out of order, with both index types.
    #[test]
    fn copy_rows_copies_every_width() {
        for f in 0..=17usize {
            let n = 5;
            let src: Vec<f32> = (0..n * f).map(|i| i as f32 * 0.5 - 3.0).collect();
            let idx = [4usize, 0, 0, 3, 1, 4, 2];
            let want: Vec<f32> = idx
                .iter()
                .flat_map(|&k| src[k * f..(k + 1) * f].iter().copied())
                .collect();
            let mut out = vec![f32::NAN; idx.len() * f];
            super::copy_rows(&src, &idx, f, &mut out);
            assert_eq!(out, want, "f = {f}");
            let narrow: Vec<u32> = idx.iter().map(|&k| k as u32).collect();
            let mut out = vec![f32::NAN; idx.len() * f];
            super::copy_rows(&src, &narrow, f, &mut out);
            assert_eq!(out, want, "u32, f = {f}");
        }
    }
}
