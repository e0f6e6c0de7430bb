//! The dense path of a small sparse matrix with many nonzeros: a dense copy of `A`,
//! built once on first need, and its products through the dense kernels
//! (`general_mat_mul`: fused multiply-adds over register tiles) instead of the CSR row
//! kernel, whose gathers cost more per multiply-add than a dense product's streams
//! once a good share of the entries are stored.
//!
//! Chosen by shape and fill alone ([`takes`]), so a matrix always takes the same path:
//! the results do not depend on the thread count, and differ from the CSR kernel's only
//! in rounding (another order of the same sums, fused). An operand that holds NaN or an
//! infinity takes the CSR kernel ([`all_finite`]): the copy's zeros would make NaN of
//! it (`0 · inf`) where `A` stores nothing and the sparse product has no term.
//!
//! Measured (`Tape::spmm` forward and reverse against `Tape::matmul` of the dense copy,
//! one thread, f32, random fill with the diagonal): the dense product is as fast at
//! 45 % fill for 100 × 100 and 300 × 300 (`f` = 16 or 50: 1.04–1.09 at 100, 0.85–0.89
//! at 300) and at 30 % for 1000 × 1000 (0.81–1.05); at 60 % it takes 0.45–0.88 of the
//! CSR time; at 20 %, 1.5–2.1×.

use super::SparseMatrix;
use super::kernel::Start;
use crate::tensor::Element;
use crate::tensor::linear::put_rows;
use crate::tensor::matmul::general_mat_mul;
use ndarray::{Array2, ArrayView2, ArrayViewMut2};

/// The most entries (`rows × cols`) of a dense copy: 16 MiB of `f32`.
const MAX_ENTRIES: usize = 1 << 22;

/// The least share of stored entries for the dense path (between the measured
/// break-evens, 30–45 %).
const MIN_FILL: f64 = 0.4;

/// Whether a `rows × cols` matrix with `nnz` stored entries takes the dense path.
pub(super) fn takes(rows: usize, cols: usize, nnz: usize) -> bool {
    let entries = rows.saturating_mul(cols);
    entries > 0 && entries <= MAX_ENTRIES && nnz as f64 >= MIN_FILL * entries as f64
}

/// Whether every value of a product's operand is finite (one pass over it, against the
/// product's `rows` passes): only then may the dense copy's zeros multiply it.
pub(super) fn all_finite<T: Element>(x: &[T]) -> bool {
    x.iter().all(|v| v.is_finite())
}

/// The dense copy of `a` (repeated entries summed, as the CSR kernel sums them).
pub(super) fn copy<T: Element>(a: &SparseMatrix<T>) -> Array2<T> {
    let mut d = Array2::zeros((a.rows(), a.cols()));
    let m = a.csr();
    for (r, row) in m.outer_iterator().enumerate() {
        for (c, &v) in row.iter() {
            d[[r, c]] += v;
        }
    }
    d
}

/// `out = start + op(d) · x` for a row-major `x` with rows of length `f`, `op(d)` being
/// `d` or `dᵀ`.
pub(super) fn mm<T: Element>(
    d: ArrayView2<'_, T>,
    x: &[T],
    f: usize,
    start: Start<'_, T>,
    out: &mut [T],
) {
    let (m, k) = d.dim();
    let beta = match start {
        Start::Out => T::one(),
        // `β = 0`: the output is not read.
        Start::Zero => T::zero(),
        Start::Row(b) => {
            put_rows(out, b, false);
            T::one()
        }
    };
    let (Ok(x), Ok(mut o)) = (
        ArrayView2::from_shape((k, f), x),
        ArrayViewMut2::from_shape((m, f), out),
    ) else {
        unreachable!("the products' shapes are checked where they are recorded");
    };
    general_mat_mul(T::one(), &d, &x, beta, &mut o);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{TapeBuffers, gradient};
    use crate::{Const, Duplicated};
    use ndarray::{Array1, ArrayD, IxDyn};

    #[test]
    fn the_rule_takes_small_matrices_with_many_nonzeros() {
        assert!(takes(100, 100, 4000));
        assert!(!takes(100, 100, 3999));
        assert!(takes(1, 1, 1));
        assert!(!takes(0, 5, 0) && !takes(5, 0, 0));
        // Too large for a dense copy, however full.
        assert!(!takes(4096, 1025, 4096 * 1025));
        assert!(!takes(usize::MAX, 2, 0));
    }

    /// A `rows × cols` matrix (f64) with about `fill` of its entries stored.
    fn matrix(rows: usize, cols: usize, fill: f64) -> (SparseMatrix<f64>, Array2<f64>) {
        let mut s = 7u64;
        let mut rnd = || {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut ip, mut ind, mut val) = (vec![0], vec![], vec![]);
        let mut d = Array2::zeros((rows, cols));
        for r in 0..rows {
            for c in 0..cols {
                if rnd() < fill {
                    let v = rnd() * 2.0 - 1.0;
                    ind.push(c);
                    val.push(v);
                    d[[r, c]] = v;
                }
            }
            ip.push(ind.len());
        }
        let a = SparseMatrix::try_from_csr((rows, cols), ip, ind, val).expect("valid CSR");
        (a, d)
    }

    /// `spmm_bias`, `spmm_t` and `spmm` of a matrix on the dense path and one on the CSR
    /// path: values and gradients equal the dense definition (`A·X + b`, `dX = Aᵀ·G`,
    /// `db = Σ G`, `dW = (Aᵀ·G)ᵀ`).
    #[test]
    fn both_paths_give_the_definition() {
        for (fill, dense) in [(0.7, true), (0.1, false)] {
            let (a, d) = matrix(37, 29, fill);
            assert_eq!(a.dense().is_some(), dense, "fill {fill}");
            let x =
                ArrayD::from_shape_fn(IxDyn(&[29, 6]), |i| (i[0] * 6 + i[1]) as f64 * 0.01 - 0.8);
            let b = Array1::from_shape_fn(6, |j| j as f64 - 2.0).into_dyn();
            let wt =
                ArrayD::from_shape_fn(IxDyn(&[37, 6]), |i| ((i[0] * 5 + i[1]) % 7) as f64 - 3.0);
            let (mut dx, mut db) = (ArrayD::zeros(IxDyn(&[29, 6])), ArrayD::zeros(IxDyn(&[6])));
            let mut bufs = TapeBuffers::new();
            let loss = gradient(
                &mut bufs,
                |t, (x, b, w)| {
                    let y = t.spmm_bias(&a, x, b)?;
                    let y = t.mul(y, w)?;
                    t.sum(y)
                },
                (Duplicated(&x, &mut dx), Duplicated(&b, &mut db), Const(&wt)),
            )
            .expect("gradient");
            let x2 = x.view().into_dimensionality::<ndarray::Ix2>().expect("2-D");
            let w2 = wt
                .view()
                .into_dimensionality::<ndarray::Ix2>()
                .expect("2-D");
            let y: Array2<f64> =
                d.dot(&x2) + b.view().into_dimensionality::<ndarray::Ix1>().expect("1-D");
            assert!((loss - (&y * &w2).sum()).abs() < 1e-9, "fill {fill}: loss");
            let want_dx: Array2<f64> = d.t().dot(&w2);
            assert!(
                dx.iter().zip(&want_dx).all(|(g, w)| (g - w).abs() < 1e-9),
                "fill {fill}: dX"
            );
            let want_db: Array1<f64> = w2.sum_axis(ndarray::Axis(0));
            assert!(
                db.iter().zip(&want_db).all(|(g, w)| (g - w).abs() < 1e-9),
                "fill {fill}: db"
            );
            // `A · Wᵀ` with `W` `[6, 29]`, and its weight gradient.
            let w = x.t().as_standard_layout().into_owned();
            let mut dw = ArrayD::zeros(IxDyn(&[6, 29]));
            gradient(
                &mut bufs,
                |t, (w, g)| {
                    let y = t.spmm_t(&a, w)?;
                    let y = t.mul(y, g)?;
                    t.sum(y)
                },
                (Duplicated(&w, &mut dw), Const(&wt)),
            )
            .expect("gradient");
            let want_dw = want_dx.t();
            assert!(
                dw.iter()
                    .zip(want_dw.iter())
                    .all(|(g, w)| (g - w).abs() < 1e-9),
                "fill {fill}: dW"
            );
        }
    }
}
