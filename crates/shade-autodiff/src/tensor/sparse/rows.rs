//! Dense-row helpers of the sparse products: the column sums of an adjoint (a bias's
//! reverse rule, [`col_sums`]).

use super::super::Element;

/// `d[j] += Σ_rows g[row, j]` for a row-major `g` with rows of `f = d.len()`: each
/// column summed over the rows in order (the bits of one add per row and column), in
/// strips of 16, 4 and 1 columns whose sums stay in registers over a block of rows
/// (a load, an add and a store of `d` per row waited on the previous row's store: 3 %
/// of a Cora step), block by block so that a wide `g` is read from memory once.
pub(super) fn col_sums<T: Element>(g: &[T], f: usize, d: &mut [T]) {
    /// Rows per block: 64 KiB of `f32` at 64 columns, in L2 for every strip.
    const BLOCK_ROWS: usize = 256;
    if f == 0 {
        return;
    }
    debug_assert_eq!(d.len(), f);
    for block in g.chunks(BLOCK_ROWS * f) {
        let mut j = 0;
        while j + 16 <= f {
            strip_sum::<T, 16>(block, f, j, d);
            j += 16;
        }
        while j + 4 <= f {
            strip_sum::<T, 4>(block, f, j, d);
            j += 4;
        }
        while j < f {
            strip_sum::<T, 1>(block, f, j, d);
            j += 1;
        }
    }
}

/// Columns `j..j + W` of [`col_sums`] over the whole rows of `block`.
#[inline(always)]
fn strip_sum<T: Element, const W: usize>(block: &[T], f: usize, j: usize, d: &mut [T]) {
    let out: &mut [T; W] = (&mut d[j..j + W]).try_into().expect("a strip of W columns");
    let mut acc = *out;
    for row in block.chunks_exact(f) {
        let r: &[T; W] = row[j..j + W].try_into().expect("a strip of W columns");
        for (a, &v) in acc.iter_mut().zip(r) {
            *a += v;
        }
    }
    *out = acc;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The strip column sums equal one add per row and column in row order, bit for
    /// bit, for every width from 1 to 70 and row counts around the block size.
    #[test]
    fn column_sums_equal_the_row_order_sum_bit_for_bit() {
        for f in 1..=70 {
            for rows in [0, 1, 3, 255, 256, 257, 600] {
                let g: Vec<f32> = (0..rows * f)
                    .map(|i| ((i * 37) % 101) as f32 / 13.0 - 3.7)
                    .collect();
                let start: Vec<f32> = (0..f).map(|j| j as f32 * 0.25 - 1.0).collect();
                let mut want = start.clone();
                for row in g.chunks_exact(f) {
                    want.iter_mut().zip(row).for_each(|(d, &v)| *d += v);
                }
                let mut got = start.clone();
                col_sums(&g, f, &mut got);
                assert_eq!(
                    got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "f = {f}, rows = {rows}"
                );
            }
        }
    }
}
