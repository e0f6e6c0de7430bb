//! Matrix products: `matmul` of 2-D operands, and batched over a leading axis
//! (`[B, m, k] · [B, k, n]` or `[B, m, k] · [k, n]`).
//!
//! Rules: `dA += G · Bᵀ`, `dB += Aᵀ · G` (summed over the batch when `B` is shared);
//! forward `Ċ = Ȧ · B + A · Ḃ`. Products run on ndarray's `general_mat_mul` over views,
//! accumulating straight into the adjoints.

use super::tape::{Bwd, Op, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayView2, ArrayViewD, ArrayViewMut2, ArrayViewMutD, Axis, Ix2};

/// Products up to this many multiply-adds run in a plain loop: ndarray's
/// `matrixmultiply` path allocates a packing buffer per call, which would break the
/// allocation-free warm call for small programs and costs more than the product.
const SMALL: usize = 1 << 14;

/// `c = beta · c + alpha · a · b`.
fn general_mat_mul<T: Element>(
    alpha: T,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    let (m, k) = a.dim();
    let n = b.ncols();
    if m * k * n > SMALL {
        ndarray::linalg::general_mat_mul(alpha, a, b, beta, c);
        return;
    }
    for i in 0..m {
        let ar = a.row(i);
        for j in 0..n {
            let s: T = ar
                .iter()
                .zip(b.column(j).iter())
                .map(|(&x, &y)| x * y)
                .sum();
            let cij = &mut c[[i, j]];
            *cij = if beta == T::zero() {
                alpha * s
            } else {
                beta * *cij + alpha * s
            };
        }
    }
}

fn m2<T>(a: ArrayViewD<'_, T>) -> ndarray::ArrayView2<'_, T> {
    a.into_dimensionality::<Ix2>()
        .expect("rank checked at record time")
}

fn m2m<T>(a: ArrayViewMutD<'_, T>) -> ndarray::ArrayViewMut2<'_, T> {
    a.into_dimensionality::<Ix2>()
        .expect("rank checked at record time")
}

/// `c = beta · c + a · b`, over a batch when `a` has three axes.
fn mm<T: Element>(a: ArrayViewD<'_, T>, b: ArrayViewD<'_, T>, beta: T, c: ArrayViewMutD<'_, T>) {
    if a.ndim() == 2 {
        general_mat_mul(T::one(), &m2(a), &m2(b), beta, &mut m2m(c));
        return;
    }
    let mut c = c;
    for (i, mut ci) in c.axis_iter_mut(Axis(0)).enumerate() {
        let ai = m2(a.index_axis(Axis(0), i));
        let bi = if b.ndim() == 3 {
            m2(b.index_axis(Axis(0), i))
        } else {
            m2(b.view())
        };
        let mut cv = ci.view_mut().into_dimensionality::<Ix2>().expect("rank 2");
        general_mat_mul(T::one(), &ai, &bi, beta, &mut cv);
    }
}

/// Backward record of a matrix product.
#[derive(Debug)]
pub(crate) struct Rec {
    a: usize,
    b: usize,
}

impl Rec {
    pub(crate) fn backward<T: Element>(
        &self,
        _me: usize,
        g: ArrayViewD<'_, T>,
        bw: &mut Bwd<'_, '_, T>,
    ) {
        let a = bw.vals[self.a].view();
        let b = bw.vals[self.b].view();
        let one = T::one();
        if let Some(mut ga) = bw.gs.acc(self.a, a.shape()) {
            // dA += G · Bᵀ
            if a.ndim() == 2 {
                general_mat_mul(
                    one,
                    &m2(g.view()),
                    &m2(b.view()).t(),
                    one,
                    &mut m2m(ga.view_mut()),
                );
            } else {
                for i in 0..a.shape()[0] {
                    let gi = m2(g.index_axis(Axis(0), i));
                    let bi = if b.ndim() == 3 {
                        m2(b.index_axis(Axis(0), i))
                    } else {
                        m2(b.view())
                    };
                    let mut gai = m2m(ga.index_axis_mut(Axis(0), i));
                    general_mat_mul(one, &gi, &bi.t(), one, &mut gai);
                }
            }
        }
        if let Some(mut gb) = bw.gs.acc(self.b, b.shape()) {
            // dB += Aᵀ · G
            if a.ndim() == 2 {
                general_mat_mul(
                    one,
                    &m2(a.view()).t(),
                    &m2(g.view()),
                    one,
                    &mut m2m(gb.view_mut()),
                );
            } else {
                for i in 0..a.shape()[0] {
                    let gi = m2(g.index_axis(Axis(0), i));
                    let ai = m2(a.index_axis(Axis(0), i));
                    let mut gbi = if b.ndim() == 3 {
                        m2m(gb.index_axis_mut(Axis(0), i))
                    } else {
                        m2m(gb.view_mut())
                    };
                    general_mat_mul(one, &ai.t(), &gi, one, &mut gbi);
                }
            }
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    /// Matrix product `a · b`.
    ///
    /// 2-D operands `[m, k] · [k, n] → [m, n]`; batched `[B, m, k] · [B, k, n]` or
    /// `[B, m, k] · [k, n] → [B, m, n]`. Errors with [`AdError::ShapeMismatch`] naming
    /// both shapes otherwise.
    pub fn matmul(&mut self, a: Var, b: Var) -> AdResult<Var> {
        let (ia, ib) = (self.index(a)?, self.index(b)?);
        let x = self.vals[ia].view();
        let y = self.vals[ib].view();
        let (xs, ys) = (x.shape(), y.shape());
        let ok = match (xs.len(), ys.len()) {
            (2, 2) => xs[1] == ys[0],
            (3, 2) => xs[2] == ys[0],
            (3, 3) => xs[0] == ys[0] && xs[2] == ys[1],
            _ => false,
        };
        if !ok {
            return Err(AdError::ShapeMismatch {
                op: "matmul",
                left: xs.to_vec(),
                right: ys.to_vec(),
            });
        }
        let n = ys[ys.len() - 1];
        let mut shape = [0usize; 3];
        let nd = xs.len();
        shape[..nd - 1].copy_from_slice(&xs[..nd - 1]);
        shape[nd - 1] = n;
        let shape = &shape[..nd];
        let mut out = self.pool.zeros(shape);
        mm(x.view(), y.view(), T::zero(), out.view_mut());
        let tracked = self.tracked[ia] || self.tracked[ib];
        let mut tan = Tan::None;
        if self.forward() && tracked {
            let mut t = self.pool.zeros(shape);
            if let Some(ta) = self.tans[ia].view() {
                mm(ta, y.view(), T::one(), t.view_mut());
            }
            if let Some(tb) = self.tans[ib].view() {
                mm(x.view(), tb, T::one(), t.view_mut());
            }
            tan = Tan::Own(t);
        }
        Ok(self.push(out, tracked, Op::Matmul(Rec { a: ia, b: ib }), tan))
    }
}
