//! Shape operations: `transpose reshape concat narrow stack`.
//!
//! Each copies the selected elements into a fresh buffer; the reverse rule adds the
//! adjoint back through the same view (a transposed, reshaped or sliced window of the
//! input's adjoint), and the forward rule applies the operation to the tangent.

use super::tape::Pool;
use super::tape::{Bwd, Op, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Axis, Dimension, Ix2, IxDyn, Slice};
use smallvec::SmallVec;

/// Side of the square tiles of the blocked 2-D transpose (elements).
const BLOCK: usize = 32;

/// `dst[j * r + i] (=|+=) src[i * c + j]` for a row-major `r × c` `src`, in
/// `BLOCK × BLOCK` tiles so that both sides stay in cache.
fn transpose_block<T: Element>(src: &[T], r: usize, c: usize, dst: &mut [T], acc: bool) {
    debug_assert!(src.len() == r * c && dst.len() == r * c);
    for i0 in (0..r).step_by(BLOCK) {
        let i1 = (i0 + BLOCK).min(r);
        for j0 in (0..c).step_by(BLOCK) {
            let j1 = (j0 + BLOCK).min(c);
            for i in i0..i1 {
                let row = &src[i * c + j0..i * c + j1];
                if acc {
                    for (j, &v) in (j0..j1).zip(row) {
                        dst[j * r + i] += v;
                    }
                } else {
                    for (j, &v) in (j0..j1).zip(row) {
                        dst[j * r + i] = v;
                    }
                }
            }
        }
    }
}

/// `dst (=|+=) xᵀ` for a 2-D `x` and a standard-layout `dst` of the transposed shape,
/// through contiguous slices when `x` or `xᵀ` is contiguous; `false` when neither is
/// (the caller then takes the generic path).
pub(crate) fn transpose2_into<T: Element>(x: &ArrayViewD<'_, T>, dst: &mut [T], acc: bool) -> bool {
    let Ok(x2) = x.view().into_dimensionality::<Ix2>() else {
        return false;
    };
    let (r, c) = x2.dim();
    if dst.len() != r * c {
        return false;
    }
    if let Some(src) = x2.as_slice() {
        transpose_block(src, r, c, dst, acc);
        return true;
    }
    // `x` is column-major: its transpose is a plain copy.
    if let Some(src) = x2.t().as_slice() {
        if acc {
            dst.iter_mut().zip(src).for_each(|(d, &s)| *d += s);
        } else {
            dst.copy_from_slice(src);
        }
        return true;
    }
    false
}

/// The transpose of `x` (all axes reversed) as a new standard-layout array.
fn transposed<T: Element>(pool: &mut Pool<T>, x: &ArrayViewD<'_, T>) -> ArrayD<T> {
    if x.ndim() == 2 {
        // Every element is written when the fast path applies.
        let mut out = pool.overwritten(&[x.shape()[1], x.shape()[0]]);
        if transpose2_into(x, out.as_slice_mut().expect("standard layout"), false) {
            return out;
        }
        pool.give(out);
    }
    let xt = x.t();
    pool.collect(xt.shape(), xt.iter().copied())
}

/// `gj += gᵀ`, through the 2-D fast path when it applies.
fn add_transposed<T: Element>(gj: &mut ArrayViewMutD<'_, T>, g: &ArrayViewD<'_, T>) {
    if g.ndim() == 2
        && let Some(d) = gj.as_slice_mut()
        && transpose2_into(g, d, true)
    {
        return;
    }
    *gj += &g.t();
}

/// What the shape operation did.
#[derive(Debug)]
pub(crate) enum Kind {
    Transpose,
    Reshape,
    /// Inputs placed one after another along `axis`.
    Concat {
        axis: usize,
    },
    /// Inputs placed at successive indices of a new `axis`.
    Stack {
        axis: usize,
    },
    /// Elements `start..start + len` along `axis`.
    Narrow {
        axis: usize,
        start: usize,
    },
}

/// Backward record of a shape operation.
#[derive(Debug)]
pub(crate) struct Rec {
    inputs: SmallVec<[usize; 4]>,
    kind: Kind,
}

impl Rec {
    pub(crate) fn name(&self) -> &'static str {
        match self.kind {
            Kind::Transpose => "transpose",
            Kind::Reshape => "reshape",
            Kind::Concat { .. } => "concat",
            Kind::Stack { .. } => "stack",
            Kind::Narrow { .. } => "narrow",
        }
    }

    pub(crate) fn inputs(&self) -> SmallVec<[usize; 4]> {
        self.inputs.clone()
    }

    pub(crate) fn backward<T: Element>(
        &self,
        _me: usize,
        g: ArrayViewD<'_, T>,
        bw: &mut Bwd<'_, '_, T>,
    ) {
        let mut off = 0;
        for (pos, &j) in self.inputs.iter().enumerate() {
            let x = bw.vals[j].view();
            let len = match self.kind {
                Kind::Concat { axis } => x.shape()[axis],
                _ => 0,
            };
            if let Some(mut gj) = bw.gs.acc(j, x.shape()) {
                match self.kind {
                    Kind::Transpose => add_transposed(&mut gj, &g),
                    Kind::Reshape => gj.iter_mut().zip(g.iter()).for_each(|(d, &s)| *d += s),
                    Kind::Concat { axis } => {
                        gj += &g.slice_axis(Axis(axis), Slice::from(off..off + len));
                    }
                    Kind::Stack { axis } => gj += &g.index_axis(Axis(axis), pos),
                    Kind::Narrow { axis, start } => {
                        let n = g.shape()[axis];
                        gj.slice_axis_mut(Axis(axis), Slice::from(start..start + n))
                            .zip_mut_with(&g, |d, &s| *d += s);
                    }
                }
            }
            off += len;
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    #[track_caller]
    fn finish_shape(
        &mut self,
        out: ndarray::ArrayD<T>,
        inputs: SmallVec<[usize; 4]>,
        kind: Kind,
        tan: Tan<'a, T>,
    ) -> Var {
        let tracked = inputs.iter().any(|&j| self.tracked[j]);
        self.push(out, tracked, Op::Shape(Rec { inputs, kind }), tan)
    }

    /// Reverses the order of the axes (the matrix transpose for 2-D values).
    #[track_caller]
    pub fn transpose(&mut self, a: Var) -> AdResult<Var> {
        let ia = self.index(a)?;
        let x = self.vals[ia].view();
        let out = transposed(&mut self.pool, &x);
        let mut tan = Tan::None;
        if self.forward()
            && let Some(ta) = self.tans[ia].view()
        {
            tan = Tan::Own(transposed(&mut self.pool, &ta));
        }
        Ok(self.finish_shape(out, SmallVec::from_slice(&[ia]), Kind::Transpose, tan))
    }

    /// The same elements (in row-major order) with a new shape of equal size.
    #[track_caller]
    pub fn reshape(&mut self, a: Var, shape: &[usize]) -> AdResult<Var> {
        let ia = self.index(a)?;
        let x = self.vals[ia].view();
        // Checked: a product past `usize` is no size at all, and ndarray takes no shape
        // whose nonzero axes hold more than `isize::MAX` elements (even an empty one).
        let size = shape.iter().try_fold(1usize, |p, &d| p.checked_mul(d));
        let nonzero = shape
            .iter()
            .filter(|&&d| d > 0)
            .try_fold(1usize, |p, &d| p.checked_mul(d));
        if nonzero.is_none_or(|p| p > isize::MAX as usize) {
            return Err(AdError::InvalidArgument {
                op: "reshape",
                what: format!(
                    "the shape {shape:?} has more than isize::MAX elements (for {:?}: pass a shape of {} elements)",
                    x.shape(),
                    x.len()
                ),
            });
        }
        if size != Some(x.len()) {
            return Err(AdError::ShapeMismatch {
                op: "reshape",
                left: x.shape().to_vec(),
                right: shape.to_vec(),
            });
        }
        let out = self.pool.collect(shape, x.iter().copied());
        let mut tan = Tan::None;
        if self.forward()
            && let Some(ta) = self.tans[ia].view()
        {
            tan = Tan::Own(self.pool.collect(shape, ta.iter().copied()));
        }
        Ok(self.finish_shape(out, SmallVec::from_slice(&[ia]), Kind::Reshape, tan))
    }

    /// Elements `start..start + len` along `axis`.
    #[track_caller]
    pub fn narrow(&mut self, a: Var, axis: usize, start: usize, len: usize) -> AdResult<Var> {
        let ia = self.index(a)?;
        let x = self.vals[ia].view();
        if axis >= x.ndim() {
            return Err(AdError::AxisOutOfRange {
                op: "narrow",
                axis,
                ndim: x.ndim(),
            });
        }
        let n = x.shape()[axis];
        if start.checked_add(len).is_none_or(|e| e > n) {
            return Err(AdError::InvalidArgument {
                op: "narrow",
                what: format!(
                    "{len} entries from {start} along axis {axis} end at {}, past its size {n} (shape {:?})",
                    start.saturating_add(len),
                    x.shape()
                ),
            });
        }
        let s = Slice::from(start..start + len);
        let xs = x.slice_axis(Axis(axis), s);
        let out = self.pool.collect(xs.shape(), xs.iter().copied());
        let mut tan = Tan::None;
        if self.forward()
            && let Some(ta) = self.tans[ia].view()
        {
            let ts = ta.slice_axis(Axis(axis), s);
            tan = Tan::Own(self.pool.collect(ts.shape(), ts.iter().copied()));
        }
        Ok(self.finish_shape(
            out,
            SmallVec::from_slice(&[ia]),
            Kind::Narrow { axis, start },
            tan,
        ))
    }

    #[track_caller]
    fn gather_inputs(&self, op: &'static str, xs: &[Var]) -> AdResult<SmallVec<[usize; 4]>> {
        if xs.is_empty() {
            return Err(AdError::InvalidArgument {
                op,
                what: "needs at least one input".into(),
            });
        }
        xs.iter().map(|&v| self.index(v)).collect()
    }

    /// Joins values along an existing `axis`; all other axes must agree.
    #[track_caller]
    pub fn concat(&mut self, xs: &[Var], axis: usize) -> AdResult<Var> {
        let ins = self.gather_inputs("concat", xs)?;
        let first = self.vals[ins[0]].view();
        if axis >= first.ndim() {
            return Err(AdError::AxisOutOfRange {
                op: "concat",
                axis,
                ndim: first.ndim(),
            });
        }
        let mut shape = IxDyn(first.shape());
        shape[axis] = 0;
        for &j in &ins {
            let s = self.vals[j].view();
            let ok = s.ndim() == first.ndim()
                && (0..s.ndim()).all(|k| k == axis || s.shape()[k] == first.shape()[k]);
            if !ok {
                return Err(AdError::ShapeMismatch {
                    op: "concat",
                    left: first.shape().to_vec(),
                    right: s.shape().to_vec(),
                });
            }
            shape[axis] += s.shape()[axis];
        }
        let mut out = self.pool.zeros(shape.slice());
        let mut off = 0;
        for &j in &ins {
            let s = self.vals[j].view();
            let n = s.shape()[axis];
            out.slice_axis_mut(Axis(axis), Slice::from(off..off + n))
                .assign(&s);
            off += n;
        }
        let tracked = ins.iter().any(|&j| self.tracked[j]);
        let mut tan = Tan::None;
        if self.forward() && tracked {
            let mut t = self.pool.zeros(shape.slice());
            let mut off = 0;
            for &j in &ins {
                let n = self.vals[j].view().shape()[axis];
                if let Some(tj) = self.tans[j].view() {
                    t.slice_axis_mut(Axis(axis), Slice::from(off..off + n))
                        .assign(&tj);
                }
                off += n;
            }
            tan = Tan::Own(t);
        }
        Ok(self.finish_shape(out, ins, Kind::Concat { axis }, tan))
    }

    /// Stacks values of one shape along a new `axis` (`0..=ndim`).
    #[track_caller]
    pub fn stack(&mut self, xs: &[Var], axis: usize) -> AdResult<Var> {
        let ins = self.gather_inputs("stack", xs)?;
        let first = self.vals[ins[0]].view();
        if axis > first.ndim() {
            return Err(AdError::AxisOutOfRange {
                op: "stack",
                axis,
                ndim: first.ndim() + 1,
            });
        }
        for &j in &ins {
            let s = self.vals[j].view();
            if s.shape() != first.shape() {
                return Err(AdError::ShapeMismatch {
                    op: "stack",
                    left: first.shape().to_vec(),
                    right: s.shape().to_vec(),
                });
            }
        }
        let mut shape = IxDyn::zeros(first.ndim() + 1);
        for k in 0..=first.ndim() {
            shape[k] = match k.cmp(&axis) {
                std::cmp::Ordering::Less => first.shape()[k],
                std::cmp::Ordering::Equal => ins.len(),
                std::cmp::Ordering::Greater => first.shape()[k - 1],
            };
        }
        let mut out = self.pool.zeros(shape.slice());
        for (i, &j) in ins.iter().enumerate() {
            out.index_axis_mut(Axis(axis), i)
                .assign(&self.vals[j].view());
        }
        let tracked = ins.iter().any(|&j| self.tracked[j]);
        let mut tan = Tan::None;
        if self.forward() && tracked {
            let mut t = self.pool.zeros(shape.slice());
            for (i, &j) in ins.iter().enumerate() {
                if let Some(tj) = self.tans[j].view() {
                    t.index_axis_mut(Axis(axis), i).assign(&tj);
                }
            }
            tan = Tan::Own(t);
        }
        Ok(self.finish_shape(out, ins, Kind::Stack { axis }, tan))
    }
}
