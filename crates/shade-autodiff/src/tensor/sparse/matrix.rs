//! [`SparseMatrix`]: the constant CSR matrix of the sparse products, with `u32` column
//! indices, and the structures cached from it (its transpose, with and without the map
//! back to its nonzeros; a dense copy of a small, dense one).

use super::kernel::{Start, csr_mm};
use super::{PAR_MIN, dense};
use crate::error::{AdError, AdResult};
use crate::tensor::{Element, par};
use ndarray::{ArrayView2, ArrayViewMut2};
use rayon::prelude::*;
use sprs::{CsMat, CsMatI, SpIndex};
use std::sync::OnceLock;

/// A constant sparse matrix (CSR) for the sparse × dense products.
///
/// The structure and values are constants of the program; the transpose needed by the
/// reverse rules is built once, lazily, and kept. Column indices are `u32` (row offsets
/// `usize`), in the matrix and in every structure cached from it: a matrix has at most
/// `u32::MAX` rows and columns ([`SparseMatrix::try_new`] a `usize`-indexed `CsMat`
/// checks it; [`SparseMatrix::new`] takes the `u32` form, which holds it by type).
#[derive(Debug)]
pub struct SparseMatrix<T> {
    mat: CsMatI<T, u32, usize>,
    /// `Aᵀ` for `spmm`'s reverse rule; `None` when `A = Aᵀ`.
    t_mul: OnceLock<Option<TransposedCsr<T>>>,
    /// `Aᵀ`'s structure with the map to `A`'s nonzeros, for `spmm_values`.
    t: OnceLock<Transposed>,
    /// A dense copy of a small matrix with many nonzeros (see `sparse/dense.rs`; boxed,
    /// so that the matrix stays small where it is held by value).
    dense: OnceLock<Option<Box<ndarray::Array2<T>>>>,
}

/// CSR of the transpose with its values.
#[derive(Debug)]
struct TransposedCsr<T> {
    indptr: Vec<usize>,
    indices: Vec<u32>,
    data: Vec<T>,
}

/// CSR structure of the transpose plus the map back to the original nonzeros.
#[derive(Debug)]
pub(super) struct Transposed {
    /// `Aᵀ`'s row offsets.
    pub(super) indptr: Vec<usize>,
    /// `Aᵀ`'s column indices (`A`'s rows).
    pub(super) indices: Vec<u32>,
    /// Original position of each transposed nonzero.
    pub(super) perm: Perm,
    /// Row of each original nonzero.
    pub(super) row_of: Vec<u32>,
}

/// Positions of nonzeros: `u32` for a matrix of at most `u32::MAX` nonzeros (half the
/// bytes), `usize` beyond.
#[derive(Debug)]
pub(super) enum Perm {
    /// At most `u32::MAX` nonzeros.
    Narrow(Vec<u32>),
    /// More.
    Wide(Vec<usize>),
}

impl Perm {
    /// The values `vals` (in `A`'s order) in the transposed order.
    fn gather<T: Copy>(&self, vals: &[T]) -> Vec<T> {
        match self {
            Perm::Narrow(p) => p.iter().map(|&q| vals[q as usize]).collect(),
            Perm::Wide(p) => p.iter().map(|&q| vals[q]).collect(),
        }
    }
}

/// The largest number of rows or columns of a [`SparseMatrix`]: its column indices, and
/// the row indices of its cached transposes, are `u32`.
pub const SPARSE_MAX_DIM: usize = u32::MAX as usize;

impl<T: Element> SparseMatrix<T> {
    /// Wraps a sprs matrix with `u32` column indices and `usize` row offsets, the form
    /// the kernels read, without a copy (a CSC matrix is converted to CSR once, an
    /// offset index pointer from slicing is rebased once). A `usize`-indexed matrix
    /// (sprs's `CsMat<T>`) goes through [`SparseMatrix::try_new`].
    ///
    /// # Panics
    ///
    /// With more than [`SPARSE_MAX_DIM`] rows (the cached transposes index rows with `u32`;
    /// such a matrix's index pointer alone takes 32 GiB): [`SparseMatrix::try_new`]
    /// returns the error instead.
    ///
    /// ```
    /// use shade_autodiff::tensor::SparseMatrix;
    ///
    /// let a = SparseMatrix::<f64>::new(sprs::CsMatI::eye(3));
    /// assert_eq!((a.rows(), a.cols(), a.nnz()), (3, 3, 3));
    /// ```
    pub fn new(mat: CsMatI<T, u32, usize>) -> Self {
        if let Err(e) = check_dims("SparseMatrix::new", mat.rows(), 0) {
            panic!("{e}");
        }
        let mat = if mat.is_csr() { mat } else { mat.to_csr() };
        let base = mat.indptr().raw_storage().first().copied().unwrap_or(0);
        let mat = if base != 0 { narrow(&mat) } else { mat };
        Self::wrap(mat)
    }

    /// The matrix around a CSR `mat` whose index pointer starts at 0.
    fn wrap(mat: CsMatI<T, u32, usize>) -> Self {
        SparseMatrix {
            mat,
            t_mul: OnceLock::new(),
            t: OnceLock::new(),
            dense: OnceLock::new(),
        }
    }

    /// Wraps a sprs matrix of any index types (sprs's `CsMat<T>` has `usize` ones),
    /// its indices converted to `u32` once (a copy; [`SparseMatrix::new`] moves a matrix
    /// that has them already); a CSC matrix is converted to CSR once.
    ///
    /// Errors with [`AdError::InvalidArgument`] when the matrix has more than
    /// [`SPARSE_MAX_DIM`] rows or columns.
    ///
    /// ```
    /// use shade_autodiff::tensor::SparseMatrix;
    ///
    /// let a = SparseMatrix::try_new(sprs::CsMat::<f32>::eye(2))?;
    /// assert_eq!(a.nnz(), 2);
    /// let wide = sprs::CsMat::<f32>::new((1, 1 << 33), vec![0, 1], vec![7], vec![1.0]);
    /// assert!(SparseMatrix::try_new(wide).is_err());
    /// # Ok::<(), shade_autodiff::AdError>(())
    /// ```
    pub fn try_new<I: SpIndex, Iptr: SpIndex>(mat: CsMatI<T, I, Iptr>) -> AdResult<Self> {
        check_dims("SparseMatrix::try_new", mat.rows(), mat.cols())?;
        let mat = if mat.is_csr() { mat } else { mat.to_csr() };
        Ok(Self::wrap(narrow(&mat)))
    }

    /// Builds a CSR matrix from its arrays, checking the structure.
    ///
    /// Errors with [`AdError::InvalidArgument`] naming the structural problem (indptr
    /// length or monotonicity, column index out of range, unsorted columns, more than
    /// [`SPARSE_MAX_DIM`] rows or columns, ...).
    pub fn try_from_csr(
        shape: (usize, usize),
        indptr: Vec<usize>,
        indices: Vec<usize>,
        data: Vec<T>,
    ) -> AdResult<Self> {
        CsMat::try_new(shape, indptr, indices, data)
            .map_err(|(_, _, _, e)| AdError::InvalidArgument {
                op: "SparseMatrix::try_from_csr",
                what: format!("invalid CSR structure for shape {shape:?}: {e}"),
            })
            .and_then(Self::try_new)
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.mat.rows()
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.mat.cols()
    }

    /// Number of stored nonzeros.
    pub fn nnz(&self) -> usize {
        self.mat.nnz()
    }

    /// The wrapped CSR matrix (`u32` column indices, `usize` row offsets starting at 0).
    pub fn csr(&self) -> &CsMatI<T, u32, usize> {
        &self.mat
    }

    /// `out += A · x`, the kernel behind [`Tape::spmm`](crate::tensor::Tape::spmm),
    /// outside any tape.
    ///
    /// `x` is `[cols, f]`, `out` is `[rows, f]`, both in standard layout; otherwise the
    /// error is [`AdError::ShapeMismatch`].
    pub fn mul_dense_into(&self, x: ArrayView2<'_, T>, out: ArrayViewMut2<'_, T>) -> AdResult<()> {
        self.product_into("SparseMatrix::mul_dense_into", false, x, out)
    }

    /// `out += Aᵀ · x` through the cached transpose: the kernel of `spmm`'s reverse rule.
    ///
    /// `x` is `[rows, f]`, `out` is `[cols, f]`, both in standard layout; otherwise the
    /// error is [`AdError::ShapeMismatch`].
    pub fn transpose_mul_dense_into(
        &self,
        x: ArrayView2<'_, T>,
        out: ArrayViewMut2<'_, T>,
    ) -> AdResult<()> {
        self.product_into("SparseMatrix::transpose_mul_dense_into", true, x, out)
    }

    /// `out += op(A) · x`, `op(A)` being `Aᵀ` if `transposed`, after the shape check.
    fn product_into(
        &self,
        op: &'static str,
        transposed: bool,
        x: ArrayView2<'_, T>,
        mut out: ArrayViewMut2<'_, T>,
    ) -> AdResult<()> {
        let (x_rows, out_rows) = if transposed {
            (self.rows(), self.cols())
        } else {
            (self.cols(), self.rows())
        };
        let ok = x.nrows() == x_rows
            && out.nrows() == out_rows
            && out.ncols() == x.ncols()
            && x.is_standard_layout()
            && out.is_standard_layout();
        if !ok {
            return Err(AdError::ShapeMismatch {
                op,
                left: x.shape().to_vec(),
                right: out.shape().to_vec(),
            });
        }
        let f = x.ncols();
        let (xs, o) = (
            x.as_slice().unwrap_or_default(),
            out.as_slice_mut().unwrap_or_default(),
        );
        if transposed {
            self.transpose_mm(xs, f, Start::Out, o);
        } else {
            self.mm(xs, f, Start::Out, o);
        }
        Ok(())
    }

    pub(super) fn indptr(&self) -> &[usize] {
        match self.mat.proper_indptr() {
            std::borrow::Cow::Borrowed(ip) => ip,
            std::borrow::Cow::Owned(_) => unreachable!("the index pointer is rebased in `new`"),
        }
    }

    /// The CSR arrays: row offsets (from 0), column indices and values.
    pub(super) fn parts(&self) -> (&[usize], &[u32], &[T]) {
        (self.indptr(), self.mat.indices(), self.mat.data())
    }

    /// Builds the transpose now instead of at the first reverse sweep (nothing for a
    /// matrix equal to its transpose).
    pub fn prepare_transpose(&self) {
        let _ = self.transposed_mul();
    }

    /// Whether `A = Aᵀ` exactly (structure and values); checked once, with the
    /// transpose.
    pub fn is_symmetric(&self) -> bool {
        self.transposed_mul().is_none()
    }

    /// The dense copy, when this matrix takes the dense path (`sparse/dense.rs`).
    pub(super) fn dense(&self) -> Option<&ndarray::Array2<T>> {
        self.dense
            .get_or_init(|| {
                dense::takes(self.rows(), self.cols(), self.nnz())
                    .then(|| Box::new(dense::copy(self)))
            })
            .as_deref()
    }

    /// The dense copy for a product with `x`: none when `x` holds NaN or an infinity,
    /// which the copy's zeros (entries `A` does not store) would turn into NaN where
    /// the sparse product has no term (`dense::takes`).
    fn dense_for(&self, x: &[T]) -> Option<&ndarray::Array2<T>> {
        self.dense().filter(|_| dense::all_finite(x))
    }

    /// `out = start + A · x` for a row-major `x` with rows of length `f`.
    pub(super) fn mm(&self, x: &[T], f: usize, start: Start<'_, T>, out: &mut [T]) {
        match self.dense_for(x) {
            Some(d) => dense::mm(d.view(), x, f, start, out),
            None => self.csr_mm(x, f, start, out),
        }
    }

    /// [`Self::mm`] through the CSR row kernel.
    fn csr_mm(&self, x: &[T], f: usize, start: Start<'_, T>, out: &mut [T]) {
        let (ip, ind, data) = (self.indptr(), self.mat.indices(), self.mat.data());
        csr_mm(ip, ind, data, x, f, start, out);
    }

    /// `out = start + Aᵀ · x` for a row-major `x` with rows of length `f`.
    pub(super) fn transpose_mm(&self, x: &[T], f: usize, start: Start<'_, T>, out: &mut [T]) {
        if let Some(d) = self.dense_for(x) {
            dense::mm(d.t(), x, f, start, out);
            return;
        }
        match self.transposed_mul() {
            Some(t) => csr_mm(&t.indptr, &t.indices, &t.data[..], x, f, start, out),
            // `A = Aᵀ`.
            None => self.csr_mm(x, f, start, out),
        }
    }

    /// Whether every stored `(r, c, v)` has its mirror `(c, r, v)` (rows' column
    /// indices are sorted, as sprs guarantees: one binary search per nonzero).
    fn symmetric(&self) -> bool {
        if self.rows() != self.cols() {
            return false;
        }
        let (ip, ind, data) = (self.indptr(), self.mat.indices(), self.mat.data());
        let row_ok = |r: usize| {
            (ip[r]..ip[r + 1]).all(|p| {
                let c = ind[p] as usize;
                let (lo, hi) = (ip[c], ip[c + 1]);
                ind[lo..hi]
                    .binary_search(&(r as u32))
                    .is_ok_and(|q| data[lo + q] == data[p])
            })
        };
        if !par::split(self.nnz(), PAR_MIN) {
            (0..self.rows()).all(row_ok)
        } else {
            (0..self.rows())
                .into_par_iter()
                .with_min_len(4096)
                .all(row_ok)
        }
    }

    fn transposed_mul(&self) -> Option<&TransposedCsr<T>> {
        self.t_mul
            .get_or_init(|| {
                if self.symmetric() {
                    return None;
                }
                let (indptr, indices, perm) = self.transpose_structure();
                let data = perm.gather(self.mat.data());
                Some(TransposedCsr {
                    indptr,
                    indices,
                    data,
                })
            })
            .as_ref()
    }

    /// `Aᵀ`'s index pointer and column indices, and each of its nonzeros' position in
    /// `A`, as narrow as the number of nonzeros allows ([`Perm`]).
    fn transpose_structure(&self) -> (Vec<usize>, Vec<u32>, Perm) {
        if self.nnz() <= u32::MAX as usize {
            let (ip, ind, perm) = self.transpose_with::<u32>();
            (ip, ind, Perm::Narrow(perm))
        } else {
            let (ip, ind, perm) = self.transpose_with::<usize>();
            (ip, ind, Perm::Wide(perm))
        }
    }

    /// [`Self::transpose_structure`] with positions of type `P`, which the caller has
    /// checked hold `nnz`; `A`'s rows fit `u32` ([`SparseMatrix::new`]).
    fn transpose_with<P: SpIndex>(&self) -> (Vec<usize>, Vec<u32>, Vec<P>) {
        let (rows, cols) = (self.rows(), self.cols());
        let ip = self.indptr();
        let ind = self.mat.indices();
        let nnz = ind.len();
        let mut indptr = vec![0usize; cols + 1];
        ind.iter().for_each(|&c| indptr[c as usize + 1] += 1);
        for c in 0..cols {
            indptr[c + 1] += indptr[c];
        }
        let mut next = indptr.clone();
        let mut indices = vec![0; nnz];
        let mut perm = vec![P::from_usize(0); nnz];
        for r in 0..rows {
            let (lo, hi) = (ip[r], ip[r + 1]);
            for (p, &c) in (lo..hi).zip(&ind[lo..hi]) {
                let q = next[c as usize];
                next[c as usize] += 1;
                // `r < rows <= u32::MAX` and `p < nnz`, which fits `P` (the callers'
                // choice): no truncation.
                indices[q] = r as u32;
                perm[q] = P::from_usize_unchecked(p);
            }
        }
        (indptr, indices, perm)
    }

    pub(super) fn transposed(&self) -> &Transposed {
        self.t.get_or_init(|| {
            let (indptr, indices, perm) = self.transpose_structure();
            let ip = self.indptr();
            let mut row_of = vec![0; self.nnz()];
            for r in 0..self.rows() {
                row_of[ip[r]..ip[r + 1]].fill(r as u32);
            }
            Transposed {
                indptr,
                indices,
                perm,
                row_of,
            }
        })
    }
}

/// An error when a `rows × cols` matrix does not fit [`SparseMatrix`]'s `u32` indices.
fn check_dims(op: &'static str, rows: usize, cols: usize) -> AdResult<()> {
    if rows <= SPARSE_MAX_DIM && cols <= SPARSE_MAX_DIM {
        return Ok(());
    }
    Err(AdError::InvalidArgument {
        op,
        what: format!(
            "a {rows} x {cols} matrix: a SparseMatrix has at most {SPARSE_MAX_DIM} rows and \
             columns (its indices are u32); split it into blocks of rows or columns"
        ),
    })
}

/// A CSR `mat` with its column indices as `u32` and its index pointer rebased to 0
/// (one copy). The caller has checked that the columns fit ([`check_dims`]).
fn narrow<T: Clone, I: SpIndex, Iptr: SpIndex>(mat: &CsMatI<T, I, Iptr>) -> CsMatI<T, u32, usize> {
    let ptr = mat.indptr();
    let raw = ptr.raw_storage();
    let base = raw.first().map_or(0, |p| p.index());
    let indptr = raw.iter().map(|p| p.index() - base).collect();
    // The index and value arrays hold exactly the nonzeros the index pointer spans
    // (from its first offset), also for a slice of rows.
    let indices = mat.indices().iter().map(|c| c.index() as u32).collect();
    let data = mat.data().to_vec();
    CsMatI::new((mat.rows(), mat.cols()), indptr, indices, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::sparse::kernel::Permuted;
    use ndarray::Array2;

    fn matrix(entries: &[(usize, usize, f64)], n: usize) -> SparseMatrix<f64> {
        let mut tri = sprs::TriMatI::<_, u32>::new((n, n));
        for &(r, c, v) in entries {
            tri.add_triplet(r, c, v);
        }
        SparseMatrix::new(tri.to_csr())
    }

    /// A symmetric matrix keeps no transpose and its `Aᵀ · X` is `A · X`; a matrix
    /// that differs from its transpose in one value or one entry is not symmetric, and
    /// its `Aᵀ · X` agrees with the dense transpose.
    #[test]
    fn symmetric_matrices_keep_no_transpose() {
        let sym = [
            (0, 0, 1.0),
            (0, 2, 0.5),
            (2, 0, 0.5),
            (1, 2, -2.0),
            (2, 1, -2.0),
        ];
        let x = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f64 - 3.0);
        let a = matrix(&sym, 3);
        assert!(a.is_symmetric());
        assert!(a.t_mul.get().is_some_and(|t| t.is_none()));
        let (mut ax, mut atx) = (Array2::zeros((3, 4)), Array2::zeros((3, 4)));
        a.mul_dense_into(x.view(), ax.view_mut()).unwrap();
        a.transpose_mul_dense_into(x.view(), atx.view_mut())
            .unwrap();
        assert_eq!(ax, atx);
        let mut value = sym;
        value[2].2 = 0.25;
        let mut entry = sym.to_vec();
        entry.pop();
        for e in [&value[..], &entry[..]] {
            let b = matrix(e, 3);
            assert!(!b.is_symmetric());
            let dense = b.csr().to_dense();
            let want = dense.t().dot(&x);
            let mut got = Array2::zeros((3, 4));
            b.transpose_mul_dense_into(x.view(), got.view_mut())
                .unwrap();
            assert_eq!(got, want);
        }
    }

    /// A 5 × 6 matrix with an empty row, a repeated column and a value of each sign.
    fn entries() -> Vec<(usize, usize, f64)> {
        vec![
            (0, 1, 0.5),
            (0, 5, -2.0),
            (1, 0, 1.25),
            (3, 2, 3.0),
            (3, 5, 0.75),
            (4, 4, -1.0),
        ]
    }

    /// `A · x` and `Aᵀ · x` against the dense matrix.
    fn products_match_dense(a: &SparseMatrix<f64>, dense: &Array2<f64>) {
        let x = Array2::from_shape_fn((6, 3), |(i, j)| (i * 3 + j) as f64 * 0.5 - 2.0);
        let mut ax = Array2::zeros((5, 3));
        a.mul_dense_into(x.view(), ax.view_mut()).unwrap();
        assert_eq!(ax, dense.dot(&x));
        let g = Array2::from_shape_fn((5, 3), |(i, j)| (i + 2 * j) as f64 - 1.5);
        let mut atg = Array2::zeros((6, 3));
        a.transpose_mul_dense_into(g.view(), atg.view_mut())
            .unwrap();
        assert_eq!(atg, dense.t().dot(&g));
        // Each product names itself when `x` has the other's row count; `out` is kept.
        let e = a.transpose_mul_dense_into(x.view(), atg.view_mut());
        assert!(
            matches!(
                e,
                Err(AdError::ShapeMismatch {
                    op: "SparseMatrix::transpose_mul_dense_into",
                    ..
                })
            ),
            "{e:?}"
        );
        let e = a.mul_dense_into(g.view(), ax.view_mut());
        assert!(
            matches!(
                e,
                Err(AdError::ShapeMismatch {
                    op: "SparseMatrix::mul_dense_into",
                    ..
                })
            ),
            "{e:?}"
        );
        assert_eq!((ax, atg), (dense.dot(&x), dense.t().dot(&g)));
    }

    /// Every sprs index type, CSC storage and an offset index pointer (a slice of rows)
    /// give the same `u32` CSR from 0, and products equal to the dense matrix's.
    #[test]
    fn every_index_type_gives_the_same_u32_csr() {
        let mut tri = sprs::TriMat::new((5, 6));
        for (r, c, v) in entries() {
            tri.add_triplet(r, c, v);
        }
        let wide: CsMat<f64> = tri.to_csr();
        let dense = wide.to_dense();
        let native = SparseMatrix::new(wide.to_other_types::<u32, f64, usize>());
        assert_eq!(native.csr().indices(), &[1, 5, 0, 2, 5, 4]);
        products_match_dense(&native, &dense);
        let small: CsMatI<f64, i32, i32> = wide.to_other_types();
        for a in [
            SparseMatrix::try_new(wide.clone()).unwrap(),
            SparseMatrix::try_new(wide.to_csc()).unwrap(),
            SparseMatrix::try_new(small).unwrap(),
            SparseMatrix::new(native.csr().to_csc()),
        ] {
            assert_eq!(a.csr(), native.csr());
            products_match_dense(&a, &dense);
        }
        // Rows 3..5 of a 6 × 6 matrix: the slice's index pointer starts at its first
        // nonzero and is rebased.
        let mut tri = sprs::TriMatI::<f64, u32>::new((6, 6));
        for (r, c, v) in entries() {
            tri.add_triplet(r, c, v);
        }
        let full: CsMatI<f64, u32, usize> = tri.to_csr();
        let rows = full.slice_outer(3..5).to_owned();
        assert_ne!(rows.indptr().raw_storage()[0], 0);
        for a in [
            SparseMatrix::new(rows.clone()),
            SparseMatrix::try_new(rows.clone()).unwrap(),
        ] {
            assert_eq!(a.indptr(), &[0, 2, 3]);
            assert_eq!(a.csr().to_dense(), rows.to_dense());
        }
    }

    /// More than `u32::MAX` columns (or rows) is a coded error naming the shape from
    /// `try_new` and `try_from_csr`, before any conversion (sprs itself refuses a
    /// `u32`-indexed matrix whose inner dimension does not fit).
    #[test]
    fn shapes_beyond_u32_are_refused() {
        let wide = CsMat::<f32>::new((1, 1 << 33), vec![0, 1], vec![7], vec![1.0]);
        let tall = CsMat::<f32>::new_csc((1 << 33, 1), vec![0, 1], vec![7], vec![1.0]);
        for e in [
            SparseMatrix::try_new(wide).unwrap_err(),
            SparseMatrix::try_new(tall).unwrap_err(),
            SparseMatrix::<f32>::try_from_csr((1, 1 << 33), vec![0, 1], vec![7], vec![1.0])
                .unwrap_err(),
        ] {
            assert_eq!(e.code(), "SHADE-E0114");
            let m = e.to_string();
            assert!(m.contains("8589934592") && m.contains("u32"), "{m}");
        }
    }

    /// The transpose's structure is the same with `u32` and `usize` positions, and the
    /// row kernel over either permutation gives the same bits (the `usize` one serves
    /// matrices of more than `u32::MAX` nonzeros).
    #[test]
    fn transposed_positions_of_both_widths_agree() {
        let mut tri = sprs::TriMatI::<f64, u32>::new((5, 6));
        for (r, c, v) in entries() {
            tri.add_triplet(r, c, v);
        }
        let a = SparseMatrix::new(tri.to_csr());
        let (ip32, ind32, p32) = a.transpose_with::<u32>();
        let (ip, ind, p) = a.transpose_with::<usize>();
        assert_eq!((&ip32, &ind32), (&ip, &ind));
        assert_eq!(p32.iter().map(|&q| q as usize).collect::<Vec<_>>(), p);
        assert!(matches!(a.transposed().perm, Perm::Narrow(_)));
        let vals: Vec<f64> = (0..a.nnz()).map(|q| q as f64 * 0.75 - 1.0).collect();
        let g: Vec<f64> = (0..5 * 2).map(|i| i as f64 * 0.3 - 1.2).collect();
        fn run<P: SpIndex>(
            ip: &[usize],
            ind: &[u32],
            vals: &[f64],
            perm: &[P],
            g: &[f64],
        ) -> Vec<f64> {
            let mut out = vec![0.0; 12];
            csr_mm(
                ip,
                ind,
                Permuted { vals, perm },
                g,
                2,
                Start::Zero,
                &mut out,
            );
            out
        }
        let x = run(&ip, &ind, &vals, &p32, &g);
        let y = run(&ip, &ind, &vals, &p, &g);
        assert_eq!(x, y);
        // Against `A(vals)ᵀ · g` densely.
        let (aip, aind, _) = a.parts();
        let mut want = vec![0.0; 12];
        for r in 0..5 {
            for q in aip[r]..aip[r + 1] {
                for j in 0..2 {
                    want[aind[q] as usize * 2 + j] += vals[q] * g[r * 2 + j];
                }
            }
        }
        assert_eq!(x, want);
    }
}
