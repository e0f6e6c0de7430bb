//! The transpose of a row-major block in tiles held in registers ([`transpose_short`]):
//! a short-and-wide weight and its gradient (`Tape::spmm_t`), and the panels of a
//! weight read through its transpose (`matmul/skinny/panels.rs`).

use super::{Element, simd};

/// How [`transpose_short`] writes an element.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Put {
    /// `d = v`.
    Copy,
    /// `d = 0 + v`: a fresh adjoint, the bits of adding into zeros (`-0` becomes `+0`).
    Fresh,
    /// `d += v`.
    Add,
}

/// `dst (=|+=) srcᵀ` for a row-major `r × c` `src` and a `c × r` `dst`, in tiles of
/// [`TILE`] × [`TILE`]: a tile's rows of `src` read as whole rows (one load each), its
/// columns written as whole rows of `dst` (a weight of 16 × 1433 or 64 × 1433 and the
/// gradient's way back). The edges past the last whole tile one element at a time.
/// Against one element at a time along the longer side: 6.7 → 5.3 % of Cora's GAT step
/// on one thread (`perf`, children of `transpose_short`); what is left is mostly the
/// reverse sweep's add into a weight gradient that is not in cache. The copy is
/// exact, so it is the bits of any other transpose.
pub(crate) fn transpose_short<T: Element>(src: &[T], r: usize, c: usize, dst: &mut [T], put: Put) {
    debug_assert!(src.len() == r * c && dst.len() == r * c);
    if r == 0 || c == 0 {
        return;
    }
    simd::wide(
        #[inline(always)]
        || match put {
            Put::Copy => tiles(src, r, c, dst, |d, v| *d = v),
            Put::Fresh => tiles(src, r, c, dst, |d, v| *d = T::zero() + v),
            Put::Add => tiles(src, r, c, dst, |d, v| *d += v),
        },
    );
}

/// The side of a tile of [`transpose_short`].
const TILE: usize = 8;

/// [`transpose_short`] with the store `put(d, v)`.
#[inline(always)]
fn tiles<T: Element>(src: &[T], r: usize, c: usize, dst: &mut [T], put: impl Fn(&mut T, T)) {
    let (rt, ct) = (r - r % TILE, c - c % TILE);
    for i0 in (0..rt).step_by(TILE) {
        for j0 in (0..ct).step_by(TILE) {
            let t: [[T; TILE]; TILE] = std::array::from_fn(|a| {
                let at = (i0 + a) * c + j0;
                src[at..at + TILE].try_into().expect("a tile row")
            });
            // Transposed in registers, then stored row by row.
            let tt: [[T; TILE]; TILE] = std::array::from_fn(|b| std::array::from_fn(|a| t[a][b]));
            for (b, row) in tt.iter().enumerate() {
                let at = (j0 + b) * r + i0;
                let d: &mut [T; TILE] = (&mut dst[at..at + TILE]).try_into().expect("a tile row");
                for (d, &v) in d.iter_mut().zip(row) {
                    put(d, v);
                }
            }
        }
    }
    // The columns past the last whole tile, then the rows past it.
    for i in 0..rt {
        for j in ct..c {
            put(&mut dst[j * r + i], src[i * c + j]);
        }
    }
    for i in rt..r {
        for j in 0..c {
            put(&mut dst[j * r + i], src[i * c + j]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transpose of short-and-wide and tall-and-narrow matrices (whole tiles, edges
    /// of rows and of columns, no whole tile) is the definition's, copied, added, and written fresh (`-0` becoming `+0`).
    #[test]
    fn transpose_short_is_the_transpose() {
        for (r, c) in [
            (1, 1),
            (3, 17),
            (16, 5),
            (7, 7),
            (0, 4),
            (8, 8),
            (16, 35),
            (64, 24),
            (70, 9),
            (17, 70),
        ] {
            let src: Vec<f32> = (0..r * c).map(|i| i as f32 - 5.0).collect();
            let want: Vec<f32> = (0..r * c).map(|q| src[(q % r) * c + q / r]).collect();
            let mut dst = vec![f32::NAN; r * c];
            transpose_short(&src, r, c, &mut dst, Put::Copy);
            assert_eq!(dst, want, "{r} x {c}");
            let mut acc = vec![1.0f32; r * c];
            transpose_short(&src, r, c, &mut acc, Put::Add);
            assert_eq!(acc, want.iter().map(|v| v + 1.0).collect::<Vec<_>>());
        }
        let mut d = [f32::NAN; 2];
        transpose_short(&[-0.0, 2.0], 1, 2, &mut d, Put::Fresh);
        assert_eq!(d.map(f32::to_bits), [0.0f32.to_bits(), 2.0f32.to_bits()]);
    }
}
