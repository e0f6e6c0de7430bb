//! Arrays whose data start on a 64-byte cache line: the one home of the alignment that
//! the tape's buffer pool gives its arrays and that the crates above give their
//! parameters and gradients ([`zeros_on_line`], [`on_line`]).
//!
//! A row of 16 `f32` (or 8 `f64`) read by a kernel then lies in one line, not two: the
//! sparse kernels read one dense row per nonzero, and a 64-byte load across two lines
//! costs two. Cora's `Xᵀ·G` (49 216 nonzeros × 16 columns) took 45 µs with its dense
//! operand on a line against 70 µs 16 bytes off it (a C model of the kernel, hot in
//! cache); the Cora GCN step went from 492 to 462 µs on one thread with the pool's
//! arrays on a line (`small_profile cora-step`, same bits).

use ndarray::{ArrayD, IxDyn};

/// The cache line (bytes) on which the arrays start.
pub(crate) const LINE: usize = 64;

/// Elements of room before an array's data that let it start on a line.
pub(crate) fn pad<T>() -> usize {
    (LINE / std::mem::size_of::<T>().max(1)).saturating_sub(1)
}

/// The offset (elements) from `v`'s start (a vector's buffer, also when empty) at
/// which it reaches a line, if within [`pad`] (else 0: a type whose size does not
/// divide the line).
pub(crate) fn line_offset<T>(v: &[T]) -> usize {
    let off = v.as_ptr().align_offset(LINE);
    if off <= pad::<T>() { off } else { 0 }
}

/// `v` from element `off` as an array of `shape` (`v.len() == off + shape's product`):
/// the array owns all of `v` and starts at `off` (its `into_raw_vec_and_offset` gives
/// both back).
pub(crate) fn wrap_from<T>(shape: &[usize], v: Vec<T>, off: usize) -> ArrayD<T> {
    let n = v.len() - off;
    ndarray::Array1::from_vec(v)
        .slice_move(ndarray::s![off..off + n])
        .into_shape_with_order(IxDyn(shape))
        .expect("a buffer of the shape's length")
}

/// Whether `a`'s data start on a 64-byte line (or it is empty).
pub fn is_on_line<T>(a: &ArrayD<T>) -> bool {
    a.is_empty() || a.as_ptr().cast::<u8>().align_offset(LINE) == 0
}

/// An array of zeros of `shape`, in standard layout, its data on a 64-byte line.
///
/// ```
/// use shade_autodiff::tensor::{is_on_line, zeros_on_line};
/// let z = zeros_on_line::<f32>(&[3, 16]);
/// assert!(is_on_line(&z) && z.iter().all(|&v| v == 0.0) && z.shape() == [3, 16]);
/// ```
pub fn zeros_on_line<T: Clone + num_traits::Zero>(shape: &[usize]) -> ArrayD<T> {
    let n: usize = shape.iter().product();
    let mut v = Vec::with_capacity(n + pad::<T>());
    let off = line_offset(&v);
    v.resize(off + n, T::zero());
    wrap_from(shape, v, off)
}

/// `a` in standard layout with its data on a 64-byte line: `a` itself when it already
/// is, else a copy (same values, same shape).
///
/// ```
/// use shade_autodiff::ndarray::{ArrayD, IxDyn};
/// use shade_autodiff::tensor::{is_on_line, on_line};
/// let a = ArrayD::from_shape_fn(IxDyn(&[5, 7]), |i| (i[0] * 7 + i[1]) as f64);
/// let b = on_line(a.clone());
/// assert!(is_on_line(&b) && b == a);
/// ```
pub fn on_line<T: Clone>(a: ArrayD<T>) -> ArrayD<T> {
    if a.is_standard_layout() && is_on_line(&a) {
        return a;
    }
    let Some(first) = a.iter().next().cloned() else {
        return a.as_standard_layout().into_owned();
    };
    let mut v = Vec::with_capacity(a.len() + pad::<T>());
    let off = line_offset(&v);
    v.resize(off, first);
    v.extend(a.iter().cloned());
    wrap_from(a.shape(), v, off)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape (empty ones included), standard and transposed layouts in: the
    /// values and shape kept, standard layout out, the data on a line.
    #[test]
    fn arrays_on_a_line_keep_their_values() {
        for shape in [&[0usize][..], &[1], &[7], &[3, 16], &[2, 0, 4], &[5, 3, 2]] {
            let z = zeros_on_line::<f32>(shape);
            assert!(is_on_line(&z) && z.shape() == shape && z.iter().all(|&v| v == 0.0));
            let a = ArrayD::from_shape_fn(IxDyn(shape), |i| {
                ndarray::Dimension::slice(&i)
                    .iter()
                    .fold(0.5, |s, &k| s * 3.0 + k as f64)
            });
            for input in [a.clone(), a.clone().reversed_axes()] {
                let b = on_line(input.clone());
                assert!(is_on_line(&b) && b.is_standard_layout(), "{shape:?}");
                assert_eq!(b, input, "{shape:?}");
            }
        }
    }

    /// An array already on a line is returned as it is (no copy).
    #[test]
    fn an_array_on_a_line_is_not_copied() {
        let z = zeros_on_line::<f64>(&[4, 8]);
        let p = z.as_ptr();
        assert_eq!(on_line(z).as_ptr(), p);
    }
}
