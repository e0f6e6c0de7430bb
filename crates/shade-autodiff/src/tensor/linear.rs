//! The affine map of a dense layer, `x · wᵀ + b`, as one operation: the weight in its
//! stored `[out, in]` layout read through its strides (no transposed copy, forward or
//! backward), the bias written into the result's rows before the product accumulates
//! onto them (no second `[N, out]` buffer, no separate pass).
//!
//! Rules: `dx += G · w`, `dw += Gᵀ · x`, `db += Σ_rows G`; forward
//! `ẏ = ẋ · wᵀ + x · ẇᵀ + ḃ`.

use super::broadcast::acc_reduced;
use super::matmul::{general_mat_mul, m2, m2m};
use super::tape::{Bwd, Op, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayD, ArrayViewD};
use smallvec::SmallVec;

/// Backward record of [`Tape::linear`].
#[derive(Debug)]
pub(crate) struct Rec {
    x: usize,
    w: usize,
    b: Option<usize>,
}

/// Writes the bias `b` (`out` values) into every row of `y` (`[n, out]`, standard).
fn fill_rows<T: Element>(y: &mut ArrayD<T>, b: &ArrayViewD<'_, T>, add: bool) {
    let b = b.as_standard_layout();
    let bs = b.as_slice().expect("standard layout");
    let ys = y.as_slice_mut().expect("standard layout");
    put_rows(ys, bs, add);
}

/// Writes (or adds, when `add`) `bs` into every row of the row-major `ys` (rows of
/// `bs.len()` values).
pub(super) fn put_rows<T: Element>(ys: &mut [T], bs: &[T], add: bool) {
    if bs.is_empty() {
        return;
    }
    for row in ys.chunks_exact_mut(bs.len()) {
        if add {
            row.iter_mut().zip(bs).for_each(|(y, &b)| *y += b);
        } else {
            row.copy_from_slice(bs);
        }
    }
}

impl Rec {
    pub(crate) fn inputs(&self) -> SmallVec<[usize; 4]> {
        let mut v = smallvec::smallvec![self.x, self.w];
        v.extend(self.b);
        v
    }

    /// `w` for `dx = G·w` when `x` is tracked, `x` for `dw = Gᵀ·x` when `w` is; the
    /// bias's rule reads only `G`.
    pub(crate) fn value_reads(&self, tracked: &[bool]) -> SmallVec<[usize; 4]> {
        let mut v = SmallVec::new();
        if tracked[self.x] {
            v.push(self.w);
        }
        if tracked[self.w] {
            v.push(self.x);
        }
        v
    }

    pub(crate) fn backward<T: Element>(
        &self,
        _me: usize,
        g: ArrayViewD<'_, T>,
        bw: &mut Bwd<'_, '_, T>,
    ) {
        let (x, w) = (bw.vals[self.x].view(), bw.vals[self.w].view());
        let one = T::one();
        let g2 = m2(g.view());
        // A fresh `dx` (a recycled buffer, not zero-filled: at 100k nodes × 64 the
        // zeroing was 1.4 % of a step) is written by the product (`β = 0`, the output
        // not read), an existing one added to.
        if let Some((gx, fresh)) = bw.gs.acc_or_fresh(self.x, x.shape()) {
            let beta = if fresh { T::zero() } else { one };
            general_mat_mul(one, &g2, &m2(w.view()), beta, &mut m2m(gx));
        }
        if let Some(gw) = bw.gs.acc(self.w, w.shape()) {
            general_mat_mul(one, &g2.t(), &m2(x.view()), one, &mut m2m(gw));
        }
        if let Some(ib) = self.b
            && bw.gs.wants(ib)
        {
            let bshape = bw.vals[ib].view().shape().to_vec();
            let gs = g.as_standard_layout();
            let gs = gs.as_slice().expect("standard layout");
            acc_reduced(&mut bw.gs, ib, &bshape, g.shape(), gs, one);
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    /// The affine map of a dense layer, `x · wᵀ + b`, for `x` `[N, in]`, a weight `w`
    /// `[out, in]` (PyTorch's `Linear` layout) and an optional bias `b` of `out` values
    /// (`[out]` or `[1, out]`); the result is `[N, out]`.
    ///
    /// The same numbers as `matmul(x, transpose(w))` then `add(_, b)`, without the
    /// transposed copy of `w` nor the second result buffer.
    ///
    /// Errors with [`AdError::ShapeMismatch`] naming the shapes when `x` or `w` is not
    /// 2-D, their widths differ, or `b` does not hold one value per output.
    ///
    /// ```
    /// use ndarray::array;
    /// use shade_autodiff::Const;
    /// use shade_autodiff::tensor::{TapeBuffers, value};
    ///
    /// let x = array![[1.0, 2.0], [3.0, 4.0]].into_dyn();
    /// let w = array![[1.0, 0.0], [1.0, -1.0], [0.5, 0.5]].into_dyn();
    /// let b = array![10.0, 20.0, 30.0].into_dyn();
    /// let y = value(
    ///     &mut TapeBuffers::new(),
    ///     |t, (x, w, b)| t.linear(x, w, Some(b)),
    ///     (Const(&x), Const(&w), Const(&b)),
    /// )
    /// .unwrap();
    /// assert_eq!(y, array![[11.0, 19.0, 31.5], [13.0, 19.0, 33.5]].into_dyn());
    /// ```
    #[track_caller]
    pub fn linear(&mut self, x: Var, w: Var, b: Option<Var>) -> AdResult<Var> {
        let (ix, iw) = (self.index(x)?, self.index(w)?);
        let ib = b.map(|b| self.index(b)).transpose()?;
        let (xv, wv) = (self.vals[ix].view(), self.vals[iw].view());
        let (xs, ws) = (xv.shape(), wv.shape());
        if xs.len() != 2 || ws.len() != 2 || xs[1] != ws[1] {
            return Err(AdError::ShapeMismatch {
                op: "linear (x [N, in] · wᵀ with w [out, in])",
                left: xs.to_vec(),
                right: ws.to_vec(),
            });
        }
        let (n, o) = (xs[0], ws[0]);
        if let Some(ib) = ib {
            let bs = self.vals[ib].view().shape().to_vec();
            if !(bs == [o] || bs == [1, o]) {
                return Err(AdError::ShapeMismatch {
                    op: "linear (bias of `out` values, [out] or [1, out], for w [out, in])",
                    left: bs,
                    right: ws.to_vec(),
                });
            }
        }
        // Every element is written: by the bias rows, or by the product with `β = 0`
        // (which does not read its output), so the buffer is not zero-filled first.
        let mut out = self.pool.overwritten(&[n, o]);
        let beta = match ib {
            Some(ib) => {
                fill_rows(&mut out, &self.vals[ib].view(), false);
                T::one()
            }
            None => T::zero(),
        };
        {
            let mut ov = m2m(out.view_mut());
            general_mat_mul(T::one(), &m2(xv.view()), &m2(wv.view()).t(), beta, &mut ov);
        }
        let tracked = self.tracked[ix] || self.tracked[iw] || ib.is_some_and(|i| self.tracked[i]);
        let mut tan = Tan::None;
        if self.forward() && tracked {
            let mut t = self.pool.zeros(&[n, o]);
            {
                let mut tv = m2m(t.view_mut());
                if let Some(tx) = self.tans[ix].view() {
                    general_mat_mul(T::one(), &m2(tx), &m2(wv.view()).t(), T::one(), &mut tv);
                }
                if let Some(tw) = self.tans[iw].view() {
                    general_mat_mul(T::one(), &m2(xv.view()), &m2(tw).t(), T::one(), &mut tv);
                }
            }
            if let Some(tb) = ib.and_then(|i| self.tans[i].view()) {
                fill_rows(&mut t, &tb, true);
            }
            tan = Tan::Own(t);
        }
        let rec = Rec {
            x: ix,
            w: iw,
            b: ib,
        };
        Ok(self.push(out, tracked, Op::Linear(rec), tan))
    }
}
