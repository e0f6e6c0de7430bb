//! How a Jacobian or a Hessian is stored: dense row-major (`[f64]`, owned as a
//! `Vec<f64>`) by every backend but [`AutoSparse`](crate::AutoSparse), whose results are
//! sprs matrices ([`CsMat<f64>`](sprs::CsMat), CSR, the detected pattern).
//!
//! The operator traits name the storage as an associated type
//! ([`JacobianBackend::Jacobian`](crate::JacobianBackend::Jacobian),
//! [`HessianBackend::Hessian`](crate::HessianBackend::Hessian)), so
//! `prep.jacobian(x, ctx)` returns a `Vec<f64>` for a dense backend and a `CsMat<f64>`
//! for a sparse one, with the same code.

use crate::error::InterfaceResult;
use crate::prep::Meta;
use core::borrow::BorrowMut;
use sprs::CsMat;

/// A storage of Jacobians or Hessians: `[f64]` (dense, row-major) or `CsMat<f64>`.
pub trait DerivativeMatrix {
    /// The owned form the plain variants return (`Vec<f64>`, `CsMat<f64>`).
    type Owned: BorrowMut<Self> + Clone + core::fmt::Debug;
    /// A dense row-major copy (`rows × columns`), e.g. to compare with a dense result.
    fn to_row_major(&self) -> Vec<f64>;
    /// The stored values (every entry of a dense matrix, the nonzeros of a sparse one).
    fn values_mut(&mut self) -> &mut [f64];
}

impl DerivativeMatrix for [f64] {
    type Owned = Vec<f64>;
    fn to_row_major(&self) -> Vec<f64> {
        self.to_vec()
    }
    fn values_mut(&mut self) -> &mut [f64] {
        self
    }
}

impl DerivativeMatrix for CsMat<f64> {
    type Owned = CsMat<f64>;
    fn values_mut(&mut self) -> &mut [f64] {
        self.data_mut()
    }
    fn to_row_major(&self) -> Vec<f64> {
        let (rows, cols) = self.shape();
        let mut d = vec![0.0; rows * cols];
        // `iter` yields (row, column) whatever the storage.
        for (&v, (i, j)) in self.iter() {
            d[i * cols + j] = v;
        }
        d
    }
}

/// A zero dense matrix of `rows × cols`.
pub(crate) fn dense(rows: usize, cols: usize) -> Vec<f64> {
    vec![0.0; rows * cols]
}

/// Checks a dense result buffer of `rows × cols` (argument `what`).
pub(crate) fn check_dense(
    meta: &Meta,
    what: &'static str,
    (rows, cols): (usize, usize),
    buf: &[f64],
) -> InterfaceResult<()> {
    meta.arg(what, rows * cols, buf.len())
}

/// The items of a `JacobianBackend` or `HessianBackend` impl whose result is dense: the
/// associated type `$Ty = [f64]`, `$new` (a zero `rows × n` buffer) and `$check` (its
/// length), the operator named `$what` in errors and the buffer parameter `$buf`.
/// Written once for both: the two impls differ only in these names and in the rows
/// (`m` for a Jacobian, `n` for a Hessian).
macro_rules! dense_matrix {
    ($Ty:ident, $new:ident, $check:ident, $what:literal, $rows:ident, $buf:ident) => {
        type $Ty = [f64];
        fn $new(&self, _: &Self::State, meta: &$crate::prep::Meta) -> Vec<f64> {
            $crate::matrix::dense(meta.$rows, meta.n)
        }
        fn $check(
            &self,
            _: &Self::State,
            meta: &$crate::prep::Meta,
            $buf: &[f64],
        ) -> $crate::error::InterfaceResult<()> {
            $crate::matrix::check_dense(meta, $what, (meta.$rows, meta.n), $buf)
        }
    };
}

/// The items of a `JacobianBackend` impl whose Jacobians are dense (`m × n`).
macro_rules! dense_jacobian {
    () => {
        $crate::matrix::dense_matrix!(Jacobian, new_jacobian, check_jacobian, "jacobian", m, jac);
    };
}

/// The items of a `HessianBackend` impl whose Hessians are dense (`n × n`).
macro_rules! dense_hessian {
    () => {
        $crate::matrix::dense_matrix!(Hessian, new_hessian, check_hessian, "hessian", n, h);
    };
}

pub(crate) use {dense_hessian, dense_jacobian, dense_matrix};
