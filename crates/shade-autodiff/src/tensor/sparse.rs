//! Sparse × dense products with constant structure: `spmm` (`A · X`), `spmm_bias`
//! (`A · X + b`, the bias added to each row as the rows are written: one result buffer
//! instead of two), `dense_spmm` (`X · A`) and `spmm_values` (`A(v) · X` with tracked
//! nonzero values `v`, i.e. differentiable edge weights).
//!
//! [`SparseMatrix`] wraps a CSR `sprs::CsMatI<T, u32, usize>` (`u32` column indices,
//! `usize` row offsets: 8 bytes a nonzero in `f32` instead of 12, so a product reads a
//! third fewer bytes of structure) and caches, on first need, the CSR of its
//! transpose (with the permutation from transposed to original nonzeros, `u32` too), so the
//! reverse rule of `A · X`, `dX += Aᵀ · G`, runs the same row-parallel kernel without
//! rebuilding anything. The kernel splits rows into blocks over rayon's threads and
//! runs a tight loop over contiguous dense rows; inputs are validated once at the
//! entry.
//!
//! Rules: `spmm`: `dX += Aᵀ G`, `Ẏ = A Ẋ`; `spmm_bias`: as `spmm`, and `db += Σ_rows G`,
//! `Ẏ += ḃ`; `dense_spmm`: `dX += G Aᵀ`, `Ẏ = Ẋ A`;
//! `spmm_values`: `dv[p] += ⟨G[row p], X[col p]⟩`, `dX += A(v)ᵀ G`,
//! `Ẏ = A(v̇) X + A(v) Ẋ`.

use super::tape::{Bwd, Op, Pool, Tan};
use super::{Element, Tape, Var, par};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayD, ArrayViewD, CowArray, Dimension, IxDyn};
use rayon::prelude::*;

mod dense;
mod kernel;
mod matrix;
mod rows;
use super::transpose::{Put, transpose_short};
use kernel::{Permuted, Start, csr_mm};
use matrix::Perm;
pub use matrix::{SPARSE_MAX_DIM, SparseMatrix};
use rows::col_sums;

/// Work (multiply-adds) below which kernels stay on the calling thread (the small-op
/// rule, [`par::split`]).
const PAR_MIN: usize = par::PRODUCT_SPLIT_MIN;

/// `out += x · A` for a dense row-major `x` (`m × k`) and CSR `A` (`k × n`).
fn dense_csr<T: Element>(x: &[T], k: usize, a: &SparseMatrix<T>, out: &mut [T]) {
    let n = a.cols();
    let (ip, ind, data) = a.parts();
    if n == 0 || k == 0 {
        return;
    }
    let body = |(xr, orow): (&[T], &mut [T])| {
        for (kk, &xv) in xr.iter().enumerate() {
            if xv != T::zero() {
                for p in ip[kk]..ip[kk + 1] {
                    orow[ind[p] as usize] += xv * data[p];
                }
            }
        }
    };
    let m = x.len() / k;
    if !par::split(m * a.nnz(), PAR_MIN) {
        x.chunks_exact(k)
            .zip(out.chunks_exact_mut(n))
            .for_each(body);
    } else {
        x.par_chunks_exact(k)
            .zip(out.par_chunks_exact_mut(n))
            .for_each(body);
    }
}

/// `out += g · Aᵀ` for a dense row-major `g` (`m × n`) and CSR `A` (`k × n`).
fn dense_csr_t<T: Element>(g: &[T], a: &SparseMatrix<T>, out: &mut [T]) {
    let (k, n) = (a.rows(), a.cols());
    let (ip, ind, data) = a.parts();
    if n == 0 || k == 0 {
        return;
    }
    let body = |(gr, orow): (&[T], &mut [T])| {
        for (kk, o) in orow.iter_mut().enumerate() {
            let mut s = T::zero();
            for p in ip[kk]..ip[kk + 1] {
                s += gr[ind[p] as usize] * data[p];
            }
            *o += s;
        }
    };
    let m = g.len() / n;
    if !par::split(m * a.nnz(), PAR_MIN) {
        g.chunks_exact(n)
            .zip(out.chunks_exact_mut(k))
            .for_each(body);
    } else {
        g.par_chunks_exact(n)
            .zip(out.par_chunks_exact_mut(k))
            .for_each(body);
    }
}

/// Which product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `A · X`.
    Left,
    /// `A · Wᵀ` (`spmm_t`).
    LeftT,
    /// `X · A`.
    Right,
    /// `A(v) · X`.
    Values,
}

/// Backward record of a sparse product.
#[derive(Debug)]
pub(crate) struct Rec<'a, T> {
    kind: Kind,
    a: &'a SparseMatrix<T>,
    x: usize,
    v: usize,
    /// The bias added to every row (`spmm_bias`).
    bias: Option<usize>,
}

/// A `shape` (`[m, f]`) array from the pool whose every row is `row` (`[f]`), or zeros.
fn rows_of<T: Element>(
    pool: &mut Pool<T>,
    row: Option<ArrayViewD<'_, T>>,
    shape: &[usize],
) -> ArrayD<T> {
    match row {
        Some(b) => {
            let b = b.as_standard_layout();
            let n = shape.iter().product();
            pool.collect(shape, std_slice(&b).iter().copied().cycle().take(n))
        }
        None => pool.zeros(shape),
    }
}

fn std_slice<'s, T: Element>(c: &'s CowArray<'_, T, IxDyn>) -> &'s [T] {
    c.as_slice().expect("standard layout")
}

impl<T: Element> Rec<'_, T> {
    pub(crate) fn name(&self) -> &'static str {
        match self.kind {
            Kind::Left => "spmm",
            Kind::LeftT => "spmm_t",
            Kind::Right => "dense_spmm",
            Kind::Values => "spmm_values",
        }
    }

    pub(crate) fn inputs(&self) -> smallvec::SmallVec<[usize; 4]> {
        let mut v: smallvec::SmallVec<[usize; 4]> = if self.kind == Kind::Values {
            smallvec::smallvec![self.v, self.x]
        } else {
            smallvec::smallvec![self.x]
        };
        v.extend(self.bias);
        v
    }

    /// The values the reverse rule reads: none for a constant matrix (`X`'s shape
    /// only); with tracked values, `X` for `dv` and `v` for `dX`.
    pub(crate) fn value_reads(&self, tracked: &[bool]) -> smallvec::SmallVec<[usize; 4]> {
        let mut r = smallvec::SmallVec::new();
        if self.kind == Kind::Values {
            if tracked[self.v] {
                r.push(self.x);
            }
            if tracked[self.x] {
                r.push(self.v);
            }
        }
        r
    }

    pub(crate) fn backward(&self, _me: usize, g: ArrayViewD<'_, T>, bw: &mut Bwd<'_, '_, T>) {
        let g = g.as_standard_layout();
        let gs = std_slice(&g);
        let a = self.a;
        if self.kind == Kind::LeftT {
            // dW += (Aᵀ G)ᵀ: `Aᵀ G` (`[k, n]`) into a scratch buffer, then its transpose
            // into the adjoint (written when fresh).
            if !bw.gs.wants(self.x) {
                return;
            }
            let ws = bw.vals[self.x].view().raw_dim();
            let (n, k) = (ws[0], ws[1]);
            // (An array of the pool, not a vector: its rows start on a cache line.)
            let mut sa = bw.gs.pool.overwritten(&[k * n]);
            let s = sa.as_slice_mut().expect("standard layout");
            a.transpose_mm(gs, n, Start::Zero, s);
            if let Some((mut gw, fresh)) = bw.gs.acc_or_fresh(self.x, ws.slice()) {
                let d = gw.as_slice_mut().expect("adjoints are in standard layout");
                transpose_short(s, k, n, d, if fresh { Put::Fresh } else { Put::Add });
            }
            bw.gs.pool.give(sa);
            return;
        }
        let x = bw.vals[self.x].view();
        let f: usize = x.shape().iter().skip(1).product();
        if let Some(ib) = self.bias
            && let Some(mut gb) = bw.gs.acc(ib, &[f])
        {
            // db += the column sums of G.
            let d = gb.as_slice_mut().expect("adjoints are in standard layout");
            col_sums(gs, f, d);
        }
        if self.kind == Kind::Values && bw.gs.wants(self.v) {
            let t = a.transposed();
            let xs = x.as_standard_layout();
            let xf = std_slice(&xs);
            let vshape = bw.vals[self.v].view().raw_dim();
            if let Some(mut gv) = bw.gs.acc(self.v, vshape.slice()) {
                let d = gv.as_slice_mut().expect("adjoints are in standard layout");
                let (_, ind, _) = a.parts();
                let dot = |(p, d): (usize, &mut T)| {
                    let r = t.row_of[p] as usize;
                    let c = ind[p] as usize;
                    let s: T = gs[r * f..(r + 1) * f]
                        .iter()
                        .zip(&xf[c * f..(c + 1) * f])
                        .map(|(&a, &b)| a * b)
                        .sum();
                    *d += s;
                };
                if !par::split(a.nnz() * f, PAR_MIN) {
                    d.iter_mut().enumerate().for_each(dot);
                } else {
                    d.par_iter_mut()
                        .enumerate()
                        .with_min_len(1024)
                        .for_each(dot);
                }
            }
        }
        let Some((mut gx, fresh)) = bw.gs.acc_or_fresh(self.x, x.shape()) else {
            return;
        };
        let d = gx.as_slice_mut().expect("adjoints are in standard layout");
        // A fresh adjoint is written (the kernel starts from zeros), not added to.
        let start = if fresh { Start::Zero } else { Start::Out };
        match self.kind {
            Kind::Left | Kind::LeftT => a.transpose_mm(gs, f, start, d),
            Kind::Right => {
                if fresh {
                    d.fill(T::zero());
                }
                dense_csr_t(gs, a, d);
            }
            Kind::Values => {
                let t = a.transposed();
                let v = bw.vals[self.v].view();
                let v = v.as_standard_layout();
                let vals = std_slice(&v);
                let (ip, ind) = (&t.indptr[..], &t.indices[..]);
                match &t.perm {
                    Perm::Narrow(perm) => {
                        csr_mm(ip, ind, Permuted { vals, perm }, gs, f, start, d);
                    }
                    Perm::Wide(perm) => {
                        csr_mm(ip, ind, Permuted { vals, perm }, gs, f, start, d);
                    }
                }
            }
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    /// Sparse × dense `A · X`: `A` (`[m, k]`) is a constant, `X` is `[k]` or `[k, f]`.
    ///
    /// Errors with [`AdError::ShapeMismatch`] naming both shapes.
    #[track_caller]
    pub fn spmm(&mut self, a: &'a SparseMatrix<T>, x: Var) -> AdResult<Var> {
        self.sparse_left(Kind::Left, "spmm", a, None, x, None)
    }

    /// `A · X + b`: the sparse product with the bias `b` (`[f]`) added to each of its
    /// rows, for a constant `A` (`[m, k]`) and `X` (`[k, f]`). The value of
    /// `t.add(t.spmm(a, x)?, b)` in one buffer instead of two (a GCN layer's
    /// propagation and bias: 256 MB less per 1M × 64 layer).
    ///
    /// Errors with [`AdError::ShapeMismatch`] naming the shapes when `X` is not 2-D
    /// with `k` rows or `b` is not `[f]`.
    ///
    /// ```
    /// use ndarray::{array, Array1, Array2};
    /// use shade_autodiff::{Const, Duplicated};
    /// use shade_autodiff::tensor::{self, SparseMatrix, TapeBuffers};
    ///
    /// let a = SparseMatrix::try_from_csr((2, 2), vec![0, 1, 3], vec![1, 0, 1], vec![2.0, 1.0, 3.0])?;
    /// let (x, b) = (array![[1.0, 2.0], [3.0, 4.0]], array![10.0, 20.0]);
    /// let mut db = Array1::zeros(2);
    /// let s = tensor::gradient(&mut TapeBuffers::new(), |t, (x, b)| {
    ///     let y = t.spmm_bias(&a, x, b)?; // [[16, 28], [20, 34]]
    ///     t.sum(y)
    /// }, (Const(&x), Duplicated(&b, &mut db)))?;
    /// assert_eq!((s, db.to_vec()), (98.0, vec![2.0, 2.0]));
    /// # Ok::<(), shade_autodiff::AdError>(())
    /// ```
    #[track_caller]
    pub fn spmm_bias(&mut self, a: &'a SparseMatrix<T>, x: Var, bias: Var) -> AdResult<Var> {
        self.sparse_left(Kind::Left, "spmm_bias", a, None, x, Some(bias))
    }

    /// `A(values) · X` where the nonzero values of `A`'s structure are the tracked 1-D
    /// value `values` (one per stored nonzero, in CSR order); `A`'s own values are
    /// ignored.
    #[track_caller]
    pub fn spmm_values(&mut self, a: &'a SparseMatrix<T>, values: Var, x: Var) -> AdResult<Var> {
        self.sparse_left(Kind::Values, "spmm_values", a, Some(values), x, None)
    }

    #[track_caller]
    fn sparse_left(
        &mut self,
        kind: Kind,
        op: &'static str,
        a: &'a SparseMatrix<T>,
        values: Option<Var>,
        x: Var,
        bias: Option<Var>,
    ) -> AdResult<Var> {
        let ix = self.index(x)?;
        let iv = match values {
            Some(v) => self.index(v)?,
            None => ix,
        };
        let ib = bias.map(|b| self.index(b)).transpose()?;
        let xv = self.vals[ix].view();
        if xv.ndim() == 0 || xv.ndim() > 2 || xv.shape()[0] != a.cols() {
            return Err(AdError::ShapeMismatch {
                op,
                left: vec![a.rows(), a.cols()],
                right: xv.shape().to_vec(),
            });
        }
        if kind == Kind::Values {
            let vv = self.vals[iv].view();
            if vv.shape() != [a.nnz()] {
                return Err(AdError::ShapeMismatch {
                    op,
                    left: vec![a.nnz()],
                    right: vv.shape().to_vec(),
                });
            }
        }
        if let Some(ib) = ib {
            let bv = self.vals[ib].view();
            if xv.ndim() != 2 || bv.shape() != [xv.shape()[1]] {
                return Err(AdError::ShapeMismatch {
                    op,
                    left: xv.shape().to_vec(),
                    right: bv.shape().to_vec(),
                });
            }
        }
        let f: usize = xv.shape().iter().skip(1).product();
        let mut shape = IxDyn(xv.shape());
        shape[0] = a.rows();
        let xs = xv.as_standard_layout();
        // Every element is written: each row starts from the bias (or zeros) in the
        // kernel, so the buffer is not filled first.
        let mut out = self.pool.overwritten(shape.slice());
        let (ip, ind, _) = a.parts();
        {
            let bias = ib.map(|b| self.vals[b].view());
            let bias = bias.as_ref().map(|b| b.as_standard_layout());
            let start = match &bias {
                Some(b) => Start::Row(std_slice(b)),
                None => Start::Zero,
            };
            let o = out.as_slice_mut().expect("standard layout");
            if kind == Kind::Values {
                let vv = self.vals[iv].view();
                let vv = vv.as_standard_layout();
                let vs = std_slice(&vv);
                csr_mm(ip, ind, vs, std_slice(&xs), f, start, o);
            } else {
                a.mm(std_slice(&xs), f, start, o);
            }
        }
        let tracked = self.tracked[ix]
            || (kind == Kind::Values && self.tracked[iv])
            || ib.is_some_and(|b| self.tracked[b]);
        let mut tan = Tan::None;
        if self.forward() && tracked {
            let mut t = rows_of(
                &mut self.pool,
                ib.and_then(|b| self.tans[b].view()),
                shape.slice(),
            );
            let o = t.as_slice_mut().expect("standard layout");
            if let Some(tx) = self.tans[ix].view() {
                let tx = tx.as_standard_layout();
                if kind == Kind::Values {
                    let vv = self.vals[iv].view();
                    let vv = vv.as_standard_layout();
                    let vs = std_slice(&vv);
                    csr_mm(ip, ind, vs, std_slice(&tx), f, Start::Out, o);
                } else {
                    a.mm(std_slice(&tx), f, Start::Out, o);
                }
            }
            if kind == Kind::Values
                && let Some(tv) = self.tans[iv].view()
            {
                let tv = tv.as_standard_layout();
                let ts = std_slice(&tv);
                csr_mm(ip, ind, ts, std_slice(&xs), f, Start::Out, o);
            }
            tan = Tan::Own(t);
        }
        let rec = Rec {
            kind,
            a,
            x: ix,
            v: iv,
            bias: ib,
        };
        Ok(self.push(out, tracked, Op::Sparse(rec), tan))
    }

    /// `A · Wᵀ` for a constant `A` (`[m, k]`) and a weight `W` of PyTorch's layout
    /// (`[n, k]`): the value of `t.spmm(a, t.transpose(w)?)`, bit for bit, without the
    /// transposed weight on the tape (its node, buffer and adjoint); `Wᵀ` is written
    /// into a scratch buffer for the product and `(Aᵀ G)ᵀ` added into `dW` directly.
    ///
    /// Errors with [`AdError::ShapeMismatch`] naming both shapes when `W` is not 2-D
    /// with `k` columns.
    #[track_caller]
    pub fn spmm_t(&mut self, a: &'a SparseMatrix<T>, w: Var) -> AdResult<Var> {
        let iw = self.index(w)?;
        let wv = self.vals[iw].view();
        if wv.ndim() != 2 || wv.shape()[1] != a.cols() {
            return Err(AdError::ShapeMismatch {
                op: "spmm_t",
                left: vec![a.rows(), a.cols()],
                right: wv.shape().to_vec(),
            });
        }
        let (n, k) = (wv.shape()[0], wv.shape()[1]);
        // `Wᵀ`, the dense operand read row by row, in an array of the pool (on a line).
        let mut wta = self.pool.overwritten(&[k * n]);
        let wt = wta.as_slice_mut().expect("standard layout");
        let product = |pool: &mut Pool<T>, src: ArrayViewD<'_, T>, wt: &mut [T]| {
            let src = src.as_standard_layout();
            transpose_short(std_slice(&src), n, k, wt, Put::Copy);
            let mut out = pool.overwritten(&[a.rows(), n]);
            let o = out.as_slice_mut().expect("standard layout");
            a.mm(wt, n, Start::Zero, o);
            out
        };
        let out = product(&mut self.pool, wv, wt);
        let tracked = self.tracked[iw];
        let mut tan = Tan::None;
        if self.forward()
            && let Some(tw) = self.tans[iw].view()
        {
            tan = Tan::Own(product(&mut self.pool, tw, wt));
        }
        self.pool.give(wta);
        Ok(self.push_product(Kind::LeftT, a, iw, out, tracked, tan))
    }

    /// Records a product of `a` with the one tape operand `x` (no values, no bias).
    fn push_product(
        &mut self,
        kind: Kind,
        a: &'a SparseMatrix<T>,
        x: usize,
        out: ArrayD<T>,
        tracked: bool,
        tan: Tan<'a, T>,
    ) -> Var {
        let rec = Rec {
            kind,
            a,
            x,
            v: x,
            bias: None,
        };
        self.push(out, tracked, Op::Sparse(rec), tan)
    }

    /// Dense × sparse `X · A`: `X` is `[m, k]`, the constant `A` is `[k, n]`.
    ///
    /// Errors with [`AdError::ShapeMismatch`] naming both shapes.
    #[track_caller]
    pub fn dense_spmm(&mut self, x: Var, a: &'a SparseMatrix<T>) -> AdResult<Var> {
        let ix = self.index(x)?;
        let xv = self.vals[ix].view();
        if xv.ndim() != 2 || xv.shape()[1] != a.rows() {
            return Err(AdError::ShapeMismatch {
                op: "dense_spmm",
                left: xv.shape().to_vec(),
                right: vec![a.rows(), a.cols()],
            });
        }
        let shape = [xv.shape()[0], a.cols()];
        let xs = xv.as_standard_layout();
        let mut out = self.pool.zeros(&shape);
        dense_csr(
            std_slice(&xs),
            a.rows(),
            a,
            out.as_slice_mut().expect("standard layout"),
        );
        let tracked = self.tracked[ix];
        let mut tan = Tan::None;
        if self.forward()
            && let Some(tx) = self.tans[ix].view()
        {
            let tx = tx.as_standard_layout();
            let mut t = self.pool.zeros(&shape);
            dense_csr(
                std_slice(&tx),
                a.rows(),
                a,
                t.as_slice_mut().expect("standard layout"),
            );
            tan = Tan::Own(t);
        }
        Ok(self.push_product(Kind::Right, a, ix, out, tracked, tan))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// `spmm_t(a, w)` is `spmm(a, transpose(w))` bit for bit: its value, its gradient
    /// (reverse, with `dW` fresh and accumulated into) and its tangent (forward), on a
    /// matrix that is not its own transpose; the gradient also matches the dense
    /// `Gᵀ A` it stands for; a weight of the wrong width is a shape error.
    #[test]
    fn spmm_t_is_spmm_of_the_transpose_bit_for_bit() {
        use crate::tensor::{self, TapeBuffers};
        use crate::{Const, Duplicated};
        let entries: Vec<(usize, usize, f64)> = (0..40)
            .map(|q| ((q * 7) % 9, (q * 5 + 3) % 11, (q as f64 * 0.37).sin()))
            .collect();
        let mut tri = sprs::TriMatI::<_, u32>::new((9, 11));
        for &(r, c, v) in &entries {
            tri.add_triplet(r, c, v);
        }
        let a = SparseMatrix::new(tri.to_csr());
        let w = Array2::from_shape_fn((5, 11), |(i, j)| ((i * 11 + j) as f64 * 0.61).cos());
        let sq = Array2::from_shape_fn((9, 5), |(i, j)| (i + 2 * j) as f64 * 0.1 - 0.4);
        let run = |fused: bool, twice: bool| {
            let mut dw = Array2::zeros((5, 11));
            let v = tensor::gradient(
                &mut TapeBuffers::new(),
                |t, (w, sq)| {
                    let y = if fused {
                        t.spmm_t(&a, w)?
                    } else {
                        let wt = t.transpose(w)?;
                        t.spmm(&a, wt)?
                    };
                    let mut l = t.mul(y, sq)?;
                    if twice {
                        // A second use, so that `dW` is accumulated into.
                        let y2 = if fused {
                            t.spmm_t(&a, w)?
                        } else {
                            let wt = t.transpose(w)?;
                            t.spmm(&a, wt)?
                        };
                        l = t.add(l, y2)?;
                    }
                    t.sum(l)
                },
                (Duplicated(&w, &mut dw), Const(&sq)),
            )
            .unwrap();
            (v.to_bits(), dw.mapv(f64::to_bits))
        };
        for twice in [false, true] {
            assert_eq!(run(true, twice), run(false, twice), "twice = {twice}");
        }
        // dW = (Aᵀ · sq)ᵀ for the single use.
        let (_, dw) = run(true, false);
        let want = a.csr().to_dense().t().dot(&sq).reversed_axes();
        for (g, w) in dw.iter().zip(&want) {
            assert!((f64::from_bits(*g) - w).abs() < 1e-12);
        }
        let tw = w.mapv(|v| v * 0.5 - 0.1);
        let fwd = |fused: bool| {
            let mut tw = tw.clone();
            tensor::pushforward(
                &mut TapeBuffers::new(),
                |t, (w,)| {
                    if fused {
                        t.spmm_t(&a, w)
                    } else {
                        let wt = t.transpose(w)?;
                        t.spmm(&a, wt)
                    }
                },
                (Duplicated(&w, &mut tw),),
            )
            .unwrap()
        };
        let ((y1, t1), (y2, t2)) = (fwd(true), fwd(false));
        assert_eq!(
            (y1.mapv(f64::to_bits), t1.mapv(f64::to_bits)),
            (y2.mapv(f64::to_bits), t2.mapv(f64::to_bits))
        );
        let bad = Array2::<f64>::zeros((5, 10));
        let e = tensor::value(
            &mut TapeBuffers::new(),
            |t, (w,)| t.spmm_t(&a, w),
            (Const(&bad),),
        );
        assert!(
            matches!(e, Err(AdError::ShapeMismatch { op: "spmm_t", .. })),
            "{e:?}"
        );
    }
}
