//! The panel layout of the narrow products: `B` packed into panels of `W` columns
//! (zero-padded) for `A·B`, and results summed in that layout stored into `C`.

use crate::tensor::Element;
use crate::tensor::transpose::{Put, transpose_short};
use ndarray::{ArrayView2, ArrayViewMut2, Axis};

/// `B` in panels of `W` columns (zero-padded): panel `q` holds `B[p, qW + j]` at
/// `q·k·W + p·W + j`.
///
/// Read in `B`'s own order: by rows when they are contiguous (each row copied as
/// slices of `W`), by columns when those are (the `Wᵀ` of `X·Wᵀ`, a weight stored
/// `[out, in]`: each column written with a stride of `W`), element by element
/// otherwise. A per-element `(j / W, j % W)` walk cost the policy model's gradient
/// about 8 % of its time.
pub(super) fn pack_panels<T: Element, const W: usize>(b: &ArrayView2<'_, T>) -> Vec<T> {
    let (k, n) = b.dim();
    let np = n.div_ceil(W);
    let mut out = vec![T::zero(); np * k * W];
    if k == 0 || n == 0 {
        return out;
    }
    if b.strides()[1] == 1 || n == 1 {
        for (p, br) in b.outer_iter().enumerate() {
            let row = br.to_slice().expect("contiguous row");
            for (q, part) in row.chunks(W).enumerate() {
                let at = q * k * W + p * W;
                out[at..at + part.len()].copy_from_slice(part);
            }
        }
    } else if let Some(bt) = b.t().to_slice() {
        // `B = Wᵀ` of a weight `W` `[n, k]` in standard layout: each whole panel the
        // transpose of `W`'s `W` rows, in tiles; the last (padded) panel by columns.
        let whole = n / W;
        for (q, panel) in out.chunks_exact_mut(k * W).enumerate().take(whole) {
            transpose_short(&bt[q * W * k..(q + 1) * W * k], W, k, panel, Put::Copy);
        }
        let panel = &mut out[whole * k * W..];
        for (j, col) in bt.chunks_exact(k).enumerate().skip(whole * W) {
            let lane = panel[j % W..].iter_mut().step_by(W);
            lane.zip(col).for_each(|(d, &v)| *d = v);
        }
    } else if b.strides()[0] == 1 || k == 1 {
        for (j, col) in b.axis_iter(Axis(1)).enumerate() {
            let col = col.to_slice().expect("contiguous column");
            let panel = &mut out[(j / W) * k * W + j % W..];
            for (d, &v) in panel.iter_mut().step_by(W).zip(col) {
                *d = v;
            }
        }
    } else {
        for (p, br) in b.outer_iter().enumerate() {
            for (j, &v) in br.iter().enumerate() {
                out[(j / W) * k * W + p * W + j % W] = v;
            }
        }
    }
    out
}

/// `c = β·c + α·v` elementwise (`c` not read when `β = 0`).
#[inline(always)]
pub(super) fn store_row<T: Element>(alpha: T, v: &[T], beta: T, c: &mut [T]) {
    if beta == T::zero() {
        c.iter_mut().zip(v).for_each(|(c, &v)| *c = alpha * v);
    } else {
        c.iter_mut()
            .zip(v)
            .for_each(|(c, &v)| *c = beta * *c + alpha * v);
    }
}

/// `c = β·c + α·v` for one element (`c` not read when `β = 0`), for the strided layouts.
#[inline(always)]
fn store_one<T: Element>(alpha: T, v: T, beta: T, c: &mut T) {
    *c = if beta == T::zero() {
        alpha * v
    } else {
        beta * *c + alpha * v
    };
}

/// `C = β·C + α·V` for `V` `[k, n]` in panels of `W` columns (panel `q`, row `p` at
/// `(q·k + p)·W`), `C` of any layout.
pub(super) fn store_panels<T: Element, const W: usize>(
    alpha: T,
    v: &[T],
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    let (k, n) = c.dim();
    if c.strides()[1] != 1 && c.strides()[0] == 1 && n > 1 && k > 0 {
        // `C` with contiguous columns (the transposed view of a weight's adjoint `[out,
        // in]`): each column of `C` is one lane of a panel, read with a stride of `W`.
        for (j, mut col) in c.axis_iter_mut(Axis(1)).enumerate() {
            let col = col.as_slice_mut().expect("contiguous column");
            let lane = v[(j / W) * k * W + j % W..].iter().step_by(W);
            for (c, &v) in col.iter_mut().zip(lane) {
                store_one(alpha, v, beta, c);
            }
        }
        return;
    }
    if c.strides()[1] == 1 || n == 1 {
        // Contiguous rows: row `p` of `C` takes lane block `p` of every panel.
        for (p, mut cr) in c.outer_iter_mut().enumerate() {
            let cr = cr.as_slice_mut().expect("contiguous row");
            for (q, cq) in cr.chunks_mut(W).enumerate() {
                let at = q * k * W + p * W;
                store_row(alpha, &v[at..at + cq.len()], beta, cq);
            }
        }
        return;
    }
    // Other layouts: one element at a time.
    for (q, panel) in v.chunks_exact(k * W).enumerate() {
        let (j0, w) = (q * W, W.min(n - q * W));
        for (p, v) in panel.chunks_exact(W).enumerate() {
            let mut cr = c.slice_mut(ndarray::s![p, j0..j0 + w]);
            cr.iter_mut()
                .zip(v)
                .for_each(|(c, &v)| store_one(alpha, v, beta, c));
        }
    }
}
