//! Matrix products: `matmul` of 2-D operands, and batched over a leading axis
//! (`[B, m, k] · [B, k, n]` or `[B, m, k] · [k, n]`); `group_dot`, the product with a
//! block-diagonal matrix given by its blocks (per-head scores of attention layers).
//!
//! Rules: `dA += G · Bᵀ`, `dB += Aᵀ · G` (summed over the batch when `B` is shared);
//! forward `Ċ = Ȧ · B + A · Ḃ`. Products run over views (transposed operands as strides,
//! never materialised), accumulating straight into the adjoints: those with a narrow
//! right operand (`X·W`, `Xᵀ·G`, `G·Wᵀ` of a graph layer) in the kernels of
//! `matmul/skinny.rs`, the others on ndarray's `general_mat_mul`. `group_dot` (`s[n, g] = Σ_c x[n, gC + c]
//! a[gC + c]`) runs over contiguous slices: `dx[n, gC + c] += G[n, g] a[gC + c]`,
//! `da[gC + c] += Σ_n G[n, g] x[n, gC + c]`, `ṡ = ẋ · a + x · ȧ` per group.

use super::tape::{Bwd, Op, Tan};
use super::{Element, Tape, Var, par};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayView2, ArrayViewD, ArrayViewMut2, ArrayViewMutD, Axis, Ix2};

mod skinny;

/// Products up to this many multiply-adds run in a plain loop: ndarray's
/// `matrixmultiply` path allocates a packing buffer per call, which would break the
/// allocation-free warm call for small programs and costs more than the product.
const SMALL: usize = 1 << 14;

/// Products from this many multiply-adds are split over rayon's threads (below it the
/// hand-off costs more than the second core gains: the small-op rule, [`par::split`]).
const PAR_MIN: usize = par::PRODUCT_SPLIT_MIN;

/// Parts of the inner dimension of a `k ≫ m` product (enough for 4 threads).
const K_PARTS: usize = 4;

/// `c = beta · c + alpha · a · b` on `threads` threads, for a product of at least
/// [`PAR_MIN`] multiply-adds: by rows of `a` and `c` when `a` has 64 rows or more (and not
/// far fewer than columns), else by
/// the inner dimension (`Aᵀ · G` of a reverse sweep: `k` is the node count) into
/// [`K_PARTS`] parts, whatever the thread count, each summing into a partial result
/// that is added to `c` in order at the end: the result does not depend on `threads`.
fn par_mat_mul<T: Element>(
    threads: usize,
    alpha: T,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    let (m, k) = a.dim();
    let n = b.ncols();
    if m >= 64 && k <= 4 * m {
        let rows = m.div_ceil(threads);
        rayon::scope(|s| {
            for (ai, mut ci) in a
                .axis_chunks_iter(Axis(0), rows)
                .zip(c.axis_chunks_iter_mut(Axis(0), rows))
            {
                s.spawn(move |_| ndarray::linalg::general_mat_mul(alpha, &ai, b, beta, &mut ci));
            }
        });
        return;
    }
    let inner = k.div_ceil(K_PARTS).max(1);
    let mut partial: Vec<ndarray::Array2<T>> = (1..k.div_ceil(inner))
        .map(|_| ndarray::Array2::zeros((m, n)))
        .collect();
    rayon::scope(|s| {
        let mut chunks = a
            .axis_chunks_iter(Axis(1), inner)
            .zip(b.axis_chunks_iter(Axis(0), inner));
        if let Some((a0, b0)) = chunks.next() {
            let c0 = &mut *c;
            s.spawn(move |_| ndarray::linalg::general_mat_mul(alpha, &a0, &b0, beta, c0));
        }
        for ((ai, bi), pi) in chunks.zip(partial.iter_mut()) {
            s.spawn(move |_| {
                ndarray::linalg::general_mat_mul(alpha, &ai, &bi, T::zero(), &mut pi.view_mut())
            });
        }
    });
    for p in &partial {
        *c += p;
    }
}

/// `c = beta · c + alpha · a · b`.
pub(super) fn general_mat_mul<T: Element>(
    alpha: T,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    let (m, k) = a.dim();
    let n = b.ncols();
    if m * k * n > SMALL {
        // Every product splits from `PAR_MIN` (the narrow kernels and ndarray's).
        let work = m * k * n;
        let threads = |min| {
            if par::split(work, min) {
                rayon::current_num_threads()
            } else {
                1
            }
        };
        if skinny::takes_nn(a, b, c) {
            skinny::nn(threads(PAR_MIN), alpha, a, b, beta, c);
            return;
        }
        if skinny::takes_tn(a, b, c) {
            skinny::tn(threads(PAR_MIN), alpha, a, b, beta, c);
            return;
        }
        // `C = Gᵀ·X` (the gradient of a weight `[out, in]` in `X·Wᵀ`, e.g. a GAT's
        // `[64, 1433]` on Cora) is `Cᵀ = Xᵀ·G`, written through `C`'s transposed view.
        let mut ct = c.view_mut().reversed_axes();
        if skinny::takes_tn(&b.t(), &a.t(), &ct) {
            skinny::tn(threads(PAR_MIN), alpha, &b.t(), &a.t(), beta, &mut ct);
            return;
        }
        if par::split(work, PAR_MIN) {
            par_mat_mul(rayon::current_num_threads(), alpha, a, b, beta, c);
        } else {
            ndarray::linalg::general_mat_mul(alpha, a, b, beta, c);
        }
        return;
    }
    // The plain loops compiled for the processor's widest vectors (the same operations
    // in the same order per element: the bits do not change).
    super::simd::wide(
        #[inline(always)]
        || small_mat_mul(alpha, a, b, beta, c),
    );
}

/// Rows of `c` computed together by [`small_mat_mul`]: each row of `b` loaded once
/// serves four rows of `c` (the accumulators of four rows of up to a few hundred
/// columns stay in L1).
const ROWS: usize = 4;

/// `c = beta · c + alpha · a · b` for a product of at most [`SMALL`] multiply-adds, in
/// plain Rust without allocation, transposed operands read by their strides:
/// - `b` with contiguous rows (`A · B`, `Aᵀ · G`): `c[i, :] += a[i, p] · b[p, :]` over
///   [`ROWS`] rows of `c` at a time, a contiguous loop the compiler vectorises;
/// - `b` with contiguous columns (`G · Bᵀ`) and `a` with contiguous rows: dot products
///   of contiguous rows, in eight lanes;
/// - other strides: the same sums through ndarray's indexing.
///
/// `beta = 0` overwrites `c` (as BLAS: NaN in `c` does not survive).
#[inline(always)]
fn small_mat_mul<T: Element>(
    alpha: T,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    let (m, k) = a.dim();
    let n = b.ncols();
    if beta == T::zero() {
        c.fill(T::zero());
    } else if beta != T::one() {
        c.map_inplace(|v| *v *= beta);
    }
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // A few columns of `c` over many rows, `a` with contiguous columns (the `Gᵀ·X` of a
    // weight of a few input features, `[50, 100]·[100, 2]`): as axpys along the columns
    // of `a`, the rows of `cᵀ` (`n` wide axpys would be two elements long).
    if n < 8 && m >= 2 * n && m * n <= T_BUF && (a.strides()[0] == 1 || m == 1) {
        axpy_cols(alpha, a, b, c);
        return;
    }
    let c_rows = c.strides()[1] == 1 || n == 1;
    let b_rows = b.strides()[1] == 1 || n == 1;
    // Dot products pay only over a long enough inner dimension (`X · Wᵀ` of a 2-feature
    // input is better as axpys over gathered rows of `b`).
    let dots = k >= 16 && b.strides()[0] == 1 && a.strides()[1] == 1;
    if c_rows && (b_rows || !dots) {
        axpy_rows(alpha, a, b, c, b_rows);
        return;
    }
    if dots {
        let bt = b.t();
        for i in 0..m {
            let ar = a.row(i);
            let ar = ar.to_slice().expect("contiguous row");
            for j in 0..n {
                let br = bt.row(j);
                let s = dot(ar, br.to_slice().expect("contiguous column"));
                c[[i, j]] += alpha * s;
            }
        }
        return;
    }
    for i in 0..m {
        for j in 0..n {
            let mut s = T::zero();
            for p in 0..k {
                s += a[[i, p]] * b[[p, j]];
            }
            c[[i, j]] += alpha * s;
        }
    }
}

/// Elements of the result of [`axpy_cols`] (summed on the stack, then added to `c`).
const T_BUF: usize = 1024;

/// `c += alpha · a · b` for `a` `[m, k]` with contiguous columns and `n` small:
/// `cᵀ[j, :] = Σ_p (alpha · b[p, j]) · a[:, p]` summed in a stack buffer (each
/// element over `p` in order), then added to `c`.
#[inline(always)]
fn axpy_cols<T: Element>(
    alpha: T,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    c: &mut ArrayViewMut2<'_, T>,
) {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let mut t = [T::zero(); T_BUF];
    let t = &mut t[..m * n];
    let s1 = a.strides()[1];
    /// `t[j, :] += (alpha · b[p, j]) · a[:, p]` for one `p` (`col` the column, `br` the row).
    #[inline(always)]
    fn step<T: Element>(t: &mut [T], alpha: T, col: &[T], br: impl Iterator<Item = T>) {
        for (tj, bv) in t.chunks_exact_mut(col.len()).zip(br) {
            let bv = alpha * bv;
            for (d, &av) in tj.iter_mut().zip(col) {
                *d += bv * av;
            }
        }
    }
    match (a.as_slice_memory_order(), b.as_slice()) {
        // Plain slices (a view per column of `a` and per row of `b` cost several times
        // the arithmetic at `[50, 100]·[100, 2]`); the same sums in the same order.
        (Some(am), Some(bm)) if m > 1 && s1 >= 0 => {
            let s1 = s1.unsigned_abs();
            for (p, br) in bm.chunks_exact(n).enumerate().take(k) {
                step(t, alpha, &am[p * s1..p * s1 + m], br.iter().copied());
            }
        }
        _ => {
            for (p, col) in a.axis_iter(Axis(1)).enumerate() {
                let col = col.to_slice().expect("contiguous column");
                step(t, alpha, col, b.row(p).iter().copied());
            }
        }
    }
    match c.as_slice_mut() {
        Some(cs) => {
            for (j, tj) in t.chunks_exact(m).enumerate() {
                for (cv, &v) in cs[j..].iter_mut().step_by(n).zip(tj) {
                    *cv += v;
                }
            }
        }
        None => {
            for (j, tj) in t.chunks_exact(m).enumerate() {
                for (cv, &v) in c.column_mut(j).iter_mut().zip(tj) {
                    *cv += v;
                }
            }
        }
    }
}

/// Columns of `c` per pass of [`axpy_rows`] (a gathered row of `b` on the stack).
const COLS: usize = 128;

/// Elements of `b` with strided rows that [`axpy_rows`] gathers at once per block of
/// columns (the `Wᵀ` of `X·Wᵀ` for a weight of a few features), instead of one row of
/// `b` per block of rows of `c`.
const B_BUF: usize = 1024;

/// Steps of the inner dimension whose values of `a` [`axpy_rows`] gathers at once for a
/// block of [`ROWS`] rows (read through their strides once, not one indexed element
/// per multiply-add row).
const KB: usize = 64;

/// `c += alpha · a · b` for `c` with contiguous rows, as axpys: per block of [`COLS`]
/// columns, [`ROWS`] rows of `c` at a time, `c[i, j..] += a[i, p] · b[p, j..]`, each
/// row of `b` read once per block of rows (gathered into a stack buffer when its
/// elements are not contiguous, `b_rows` false: the whole block of columns at once
/// when it fits in [`B_BUF`]). The values `alpha · a[i, p]` of a block of rows are
/// gathered [`KB`] steps at a time. Each element of `c` adds its terms in the order of
/// `p`, whatever the blocking.
#[inline(always)]
fn axpy_rows<T: Element>(
    alpha: T,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    c: &mut ArrayViewMut2<'_, T>,
    b_rows: bool,
) {
    let (m, k) = a.dim();
    let n = b.ncols();
    let mut whole = [T::zero(); B_BUF];
    if axpy_rows_flat(alpha, a, b, c, &mut whole) {
        return;
    }
    let mut buf = [T::zero(); COLS];
    let mut ab = [T::zero(); ROWS * KB];
    let mut j0 = 0;
    while j0 < n {
        let w = COLS.min(n - j0);
        let gathered = !b_rows && k * w <= B_BUF;
        if gathered {
            let blk = b.slice(ndarray::s![.., j0..j0 + w]);
            for (d, r) in whole.chunks_exact_mut(w).zip(blk.outer_iter()) {
                d.iter_mut().zip(r).for_each(|(d, &v)| *d = v);
            }
        }
        let mut i = 0;
        while i < m {
            let rows = ROWS.min(m - i);
            let mut cb = c.slice_mut(ndarray::s![i..i + rows, j0..j0 + w]);
            let mut cs: smallvec::SmallVec<[&mut [T]; ROWS]> = cb
                .outer_iter_mut()
                .map(|r| r.into_slice().expect("contiguous row"))
                .collect();
            let mut p0 = 0;
            while p0 < k {
                let kb = KB.min(k - p0);
                let blk = a.slice(ndarray::s![i..i + rows, p0..p0 + kb]);
                for (t, ar) in blk.outer_iter().enumerate() {
                    for (q, &v) in ar.iter().enumerate() {
                        ab[q * ROWS + t] = alpha * v;
                    }
                }
                for q in 0..kb {
                    let p = p0 + q;
                    let av = &ab[q * ROWS..q * ROWS + ROWS];
                    let br = if gathered {
                        &whole[p * w..p * w + w]
                    } else {
                        b_row(b, p, j0, w, b_rows, &mut buf)
                    };
                    if let [c0, c1, c2, c3] = &mut cs[..] {
                        // Plain slices of `w` (not through the vector of rows), so that
                        // the loop below is vectorised without reloads or bounds checks.
                        let (c0, c1, c2, c3) =
                            (&mut c0[..w], &mut c1[..w], &mut c2[..w], &mut c3[..w]);
                        let br = &br[..w];
                        let (a0, a1, a2, a3) = (av[0], av[1], av[2], av[3]);
                        for j in 0..w {
                            let bv = br[j];
                            c0[j] += a0 * bv;
                            c1[j] += a1 * bv;
                            c2[j] += a2 * bv;
                            c3[j] += a3 * bv;
                        }
                    } else {
                        for (cr, &a) in cs.iter_mut().zip(av) {
                            for (cv, &bv) in cr.iter_mut().zip(br) {
                                *cv += a * bv;
                            }
                        }
                    }
                }
                p0 += kb;
            }
            i += rows;
        }
        j0 += w;
    }
}

/// [`axpy_rows`] over plain slices, when `c` is in standard layout, `a` one block of
/// memory (any order) and `b` in standard layout or small enough to gather
/// ([`B_BUF`], gathered into `whole`, the caller's buffer): row by row of `c`,
/// `c[i, :] += (alpha · a[i, p]) · b[p, :]` in the order of `p` (the sums and the bits
/// of the blocked loop, without a view per block: at `[100, 2]·[2, 50]` the views cost
/// ten times the arithmetic). Returns whether it ran.
#[inline(always)]
fn axpy_rows_flat<T: Element>(
    alpha: T,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    c: &mut ArrayViewMut2<'_, T>,
    whole: &mut [T; B_BUF],
) -> bool {
    let (m, k) = a.dim();
    let n = b.ncols();
    let (s0, s1) = (a.strides()[0], a.strides()[1]);
    if s0 < 0 || s1 < 0 {
        return false;
    }
    let (Some(am), Some(cs)) = (a.as_slice_memory_order(), c.as_slice_mut()) else {
        return false;
    };
    let (s0, s1) = (s0.unsigned_abs(), s1.unsigned_abs());
    let bm: &[T] = match b.as_slice() {
        Some(bm) => bm,
        None if k * n <= B_BUF => {
            for (d, &v) in whole.iter_mut().zip(b.iter()) {
                *d = v;
            }
            &whole[..k * n]
        }
        None => return false,
    };
    for (i, cr) in cs.chunks_exact_mut(n).enumerate().take(m) {
        for (p, br) in bm.chunks_exact(n).enumerate().take(k) {
            let av = alpha * am[i * s0 + p * s1];
            for (cv, &bv) in cr.iter_mut().zip(br) {
                *cv += av * bv;
            }
        }
    }
    true
}

/// Columns `j0..j0 + w` of row `p` of `b`: a slice of `b` when its rows are contiguous
/// (`b_rows`), else gathered into `buf`.
#[inline(always)]
fn b_row<'r, T: Element>(
    b: &'r ArrayView2<'_, T>,
    p: usize,
    j0: usize,
    w: usize,
    b_rows: bool,
    buf: &'r mut [T; COLS],
) -> &'r [T] {
    let row = b.row(p);
    if b_rows {
        &row.to_slice().expect("contiguous row")[j0..j0 + w]
    } else {
        for (d, &v) in buf[..w].iter_mut().zip(row.slice(ndarray::s![j0..j0 + w])) {
            *d = v;
        }
        &buf[..w]
    }
}

/// `Σ x[i] y[i]` in eight independent lanes (so the loop vectorises without
/// reassociating a single sum).
#[inline(always)]
fn dot<T: Element>(x: &[T], y: &[T]) -> T {
    const L: usize = 8;
    let mut acc = [T::zero(); L];
    let (xc, yc) = (x.chunks_exact(L), y.chunks_exact(L));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (xs, ys) in xc.zip(yc) {
        for l in 0..L {
            acc[l] += xs[l] * ys[l];
        }
    }
    let mut s = acc.iter().fold(T::zero(), |s, &v| s + v);
    for (&p, &q) in xr.iter().zip(yr) {
        s += p * q;
    }
    s
}

/// A 2-D view of a value whose rank was checked when the operation was recorded.
pub(super) fn m2<T>(a: ArrayViewD<'_, T>) -> ndarray::ArrayView2<'_, T> {
    a.into_dimensionality::<Ix2>()
        .expect("rank checked at record time")
}

/// [`m2`] for a mutable view.
pub(super) fn m2m<T>(a: ArrayViewMutD<'_, T>) -> ndarray::ArrayViewMut2<'_, T> {
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
    pub(crate) fn inputs(&self) -> smallvec::SmallVec<[usize; 4]> {
        smallvec::smallvec![self.a, self.b]
    }

    /// The values the reverse rule reads: `B` for `dA = G·Bᵀ` when `A` is tracked, `A`
    /// for `dB = Aᵀ·G` when `B` is (the other's shape only otherwise).
    pub(crate) fn value_reads(&self, tracked: &[bool]) -> smallvec::SmallVec<[usize; 4]> {
        let mut v = smallvec::SmallVec::new();
        if tracked[self.a] {
            v.push(self.b);
        }
        if tracked[self.b] {
            v.push(self.a);
        }
        v
    }

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
    #[track_caller]
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

/// Backward record of `group_dot`.
#[derive(Debug)]
pub(crate) struct GroupRec {
    x: usize,
    a: usize,
    groups: usize,
}

/// `s[n, g] (+)= Σ_c x[n, gC + c] a[gC + c]` for row-major `x` (`[N, G·C]`) and `a`
/// (`G·C` elements) into `s` (`[N, G]`).
fn group_dot_into<T: Element>(x: &[T], a: &[T], groups: usize, s: &mut [T]) {
    let f = a.len();
    let c = f / groups;
    if f == 0 {
        return;
    }
    for (row, out) in x.chunks_exact(f).zip(s.chunks_exact_mut(groups)) {
        for (k, o) in out.iter_mut().enumerate() {
            let r = k * c..(k + 1) * c;
            *o += row[r.clone()]
                .iter()
                .zip(&a[r])
                .map(|(&p, &q)| p * q)
                .sum::<T>();
        }
    }
}

/// [`group_dot_into`] over the rows, each thread of the pool on rows of its own from
/// [`par::SPLIT_MIN`] elements of `x` (each output from its own row: the same bits
/// on any number of threads), compiled for the widest vectors the processor has.
fn group_dot_rows<T: Element>(x: &[T], a: &[T], groups: usize, s: &mut [T]) {
    let f = a.len();
    if f == 0 {
        return;
    }
    par::pieces(s, groups, x.len(), par::SPLIT_MIN, |o, s| {
        let rows = o / groups..(o + s.len()) / groups;
        super::simd::wide(
            #[inline(always)]
            || group_dot_into(&x[rows.start * f..rows.end * f], a, groups, s),
        );
    });
}

impl GroupRec {
    pub(crate) fn inputs(&self) -> smallvec::SmallVec<[usize; 4]> {
        smallvec::smallvec![self.x, self.a]
    }

    pub(crate) fn backward<T: Element>(
        &self,
        _me: usize,
        g: ArrayViewD<'_, T>,
        bw: &mut Bwd<'_, '_, T>,
    ) {
        let (x, a) = (bw.vals[self.x].view(), bw.vals[self.a].view());
        let (xs, as_, gs) = (
            x.as_standard_layout(),
            a.as_standard_layout(),
            g.as_standard_layout(),
        );
        let (xv, av, gv) = (
            xs.as_slice().expect("standard layout"),
            as_.as_slice().expect("standard layout"),
            gs.as_slice().expect("standard layout"),
        );
        let (h, f) = (self.groups, av.len());
        let c = f / h;
        if f == 0 {
            return;
        }
        if let Some(mut dx) = bw.gs.acc(self.x, x.shape()) {
            // Each row of `dx` from its own row of `g`: split by rows.
            let d = dx.as_slice_mut().expect("adjoints are in standard layout");
            let n = d.len();
            par::pieces(d, f, n, par::SPLIT_MIN, |o, d| {
                let gv = &gv[o / f * h..(o + d.len()) / f * h];
                super::simd::wide(
                    #[inline(always)]
                    || {
                        for (dr, gr) in d.chunks_exact_mut(f).zip(gv.chunks_exact(h)) {
                            for (k, &gk) in gr.iter().enumerate() {
                                let r = k * c..(k + 1) * c;
                                dr[r.clone()]
                                    .iter_mut()
                                    .zip(&av[r])
                                    .for_each(|(d, &q)| *d += gk * q);
                            }
                        }
                    },
                );
            });
        }
        if let Some(mut da) = bw.gs.acc(self.a, a.shape()) {
            let d = da.as_slice_mut().expect("adjoints are in standard layout");
            for (xr, gr) in xv.chunks_exact(f).zip(gv.chunks_exact(h)) {
                for (k, &gk) in gr.iter().enumerate() {
                    let r = k * c..(k + 1) * c;
                    d[r.clone()]
                        .iter_mut()
                        .zip(&xr[r])
                        .for_each(|(d, &p)| *d += gk * p);
                }
            }
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    /// Per-group dot products of the rows of `x` with `a`: `s[n, g] = Σ_c x[n, g·C + c]
    /// · a[g·C + c]` for `x` `[N, G·C]` (the `groups` blocks side by side, e.g. the heads
    /// of an attention layer) and `a` holding `G·C` values in any shape (e.g.
    /// `[1, G, C]`); the result is `[N, G]`. The same as `x · blockdiag(a_0, ..,
    /// a_{G-1})` without the zeros.
    ///
    /// Errors with [`AdError::ShapeMismatch`] unless `x` is 2-D, `groups >= 1` divides
    /// `a`'s length and `a` has one value per column of `x`.
    #[track_caller]
    pub fn group_dot(&mut self, x: Var, a: Var, groups: usize) -> AdResult<Var> {
        let (ix, ia) = (self.index(x)?, self.index(a)?);
        let (xv, av) = (self.vals[ix].view(), self.vals[ia].view());
        if xv.ndim() != 2
            || xv.shape()[1] != av.len()
            || groups == 0
            || !av.len().is_multiple_of(groups)
        {
            return Err(AdError::ShapeMismatch {
                op: "group_dot (x [N, G·C], a with G·C values)",
                left: xv.shape().to_vec(),
                right: av.shape().to_vec(),
            });
        }
        let n = xv.shape()[0];
        let (xs, as_) = (xv.as_standard_layout(), av.as_standard_layout());
        let (xf, af) = (
            xs.as_slice().expect("standard layout"),
            as_.as_slice().expect("standard layout"),
        );
        let mut out = self.pool.zeros(&[n, groups]);
        let o = out.as_slice_mut().expect("standard layout");
        group_dot_rows(xf, af, groups, o);
        let tracked = self.tracked[ix] || self.tracked[ia];
        let mut tan = Tan::None;
        if self.forward() && tracked {
            let mut t = self.pool.zeros(&[n, groups]);
            let tv = t.as_slice_mut().expect("standard layout");
            if let Some(tx) = self.tans[ix].view() {
                let tx = tx.as_standard_layout();
                group_dot_into(tx.as_slice().expect("standard layout"), af, groups, tv);
            }
            if let Some(ta) = self.tans[ia].view() {
                let ta = ta.as_standard_layout();
                group_dot_into(xf, ta.as_slice().expect("standard layout"), groups, tv);
            }
            tan = Tan::Own(t);
        }
        let rec = GroupRec {
            x: ix,
            a: ia,
            groups,
        };
        Ok(self.push(out, tracked, Op::GroupDot(rec), tan))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// A product on the tape large enough for the threaded narrow-product kernels
    /// (`X·W` forward, `Xᵀ·G` and `G·Wᵀ` backward), on 2 threads, against triple loops:
    /// `f = Σ (X·W) ⊙ C`, so `∂f/∂W = Xᵀ·C` and `∂f/∂X = C·Wᵀ`.
    #[test]
    fn threaded_products_on_the_tape_match_triple_loops() {
        use crate::tensor::{TapeBuffers, gradient};
        use crate::{Const, Duplicated};
        let (m, k, n) = (5600, 40, 20);
        assert!(m * k * n >= PAR_MIN);
        let x = Array2::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f64 * 0.1 - 0.5);
        let w = Array2::from_shape_fn((k, n), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.05 - 0.3);
        let c = Array2::from_shape_fn((m, n), |(i, j)| ((i + 3 * j) % 7) as f64 - 3.0);
        let (mut dw, mut dx) = (Array2::zeros((k, n)), Array2::zeros((m, k)));
        let mut bufs = TapeBuffers::new();
        let pool = crate::tensor::par::test_pool(2);
        let f = pool
            .install(|| {
                gradient(
                    &mut bufs,
                    |t, (w, x, c)| {
                        let y = t.matmul(x, w)?;
                        let y = t.mul(y, c)?;
                        t.sum(y)
                    },
                    (Duplicated(&w, &mut dw), Duplicated(&x, &mut dx), Const(&c)),
                )
            })
            .unwrap();
        let mut want_f = 0.0;
        for i in 0..m {
            for j in 0..n {
                want_f += (0..k).map(|p| x[[i, p]] * w[[p, j]]).sum::<f64>() * c[[i, j]];
            }
        }
        assert!(
            (f - want_f).abs() <= 1e-9 * want_f.abs().max(1.0),
            "{f} vs {want_f}"
        );
        for p in 0..k {
            for j in 0..n {
                let want: f64 = (0..m).map(|i| x[[i, p]] * c[[i, j]]).sum();
                assert!(
                    (dw[[p, j]] - want).abs() < 1e-9,
                    "dW[{p}, {j}] {} vs {want}",
                    dw[[p, j]]
                );
            }
        }
        for i in 0..m {
            for p in 0..k {
                let want: f64 = (0..n).map(|j| c[[i, j]] * w[[p, j]]).sum();
                assert!(
                    (dx[[i, p]] - want).abs() < 1e-9,
                    "dX[{i}, {p}] {} vs {want}",
                    dx[[i, p]]
                );
            }
        }
    }

    /// `C = Gᵀ·X` with `C` wide (the weight gradient of `X·Wᵀ`, a weight `[out, in]`)
    /// runs as `Cᵀ = Xᵀ·G` in the narrow kernel: against triple loops, with `beta`, and
    /// the same bits on 1 and 2 threads.
    #[test]
    fn a_wide_transposed_product_matches_triple_loops() {
        let (m, k, n) = (900, 300, 9);
        assert!(m * k * n > SMALL);
        let g = Array2::from_shape_fn((m, n), |(i, j)| ((i * 7 + j * 3) % 11) as f64 * 0.1 - 0.5);
        let x = Array2::from_shape_fn((m, k), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.05 - 0.3);
        let c0 = Array2::from_shape_fn((n, k), |(i, j)| ((i + 3 * j) % 7) as f64 - 3.0);
        let mut first: Option<Array2<f64>> = None;
        for threads in [1, 2] {
            let pool = crate::tensor::par::test_pool(threads);
            let mut c = c0.clone();
            pool.install(|| general_mat_mul(2.0, &g.t(), &x.view(), 0.5, &mut c.view_mut()));
            for j in 0..n {
                for p in 0..k {
                    let want =
                        0.5 * c0[[j, p]] + 2.0 * (0..m).map(|i| g[[i, j]] * x[[i, p]]).sum::<f64>();
                    assert!(
                        (c[[j, p]] - want).abs() < 1e-9,
                        "C[{j}, {p}] {} vs {want}",
                        c[[j, p]]
                    );
                }
            }
            let first = first.get_or_insert_with(|| c.clone());
            assert_eq!(&c, first, "bits differ on {threads} threads");
        }
    }

    /// The small kernel equals ndarray's product for every layout of its operands (rows
    /// contiguous or transposed, a column slice), `alpha`/`beta` applied, row counts
    /// around the block of four.
    #[test]
    fn small_products_equal_ndarrays_in_every_layout() {
        for &(m, k, n) in &[
            (1, 1, 1),
            (3, 2, 5),
            (4, 7, 3),
            (9, 5, 13),
            (13, 17, 1),
            (2, 31, 9),
            (6, 3, 300),
            (5, 20, 140),
            (50, 100, 2),
            (9, 64, 4),
            (5, 130, 3),
        ] {
            let a = Array2::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0);
            let b = Array2::from_shape_fn((k, n), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5);
            let (at, bt) = (a.t().to_owned(), b.t().to_owned());
            // `b` as every other column of a wider array: neither layout contiguous.
            let wide = Array2::from_shape_fn((k, 2 * n), |(i, j)| {
                if j % 2 == 0 { b[[i, j / 2]] } else { f64::NAN }
            });
            let strided = wide.slice(ndarray::s![.., ..;2]);
            // `a` the same way (its memory not one block: the slice paths do not apply).
            let a_wide = Array2::from_shape_fn((m, 2 * k), |(i, j)| {
                if j % 2 == 0 { a[[i, j / 2]] } else { f64::NAN }
            });
            let a_strided = a_wide.slice(ndarray::s![.., ..;2]);
            let c0 = Array2::from_shape_fn((m, n), |(i, j)| (i + 2 * j) as f64);
            for (alpha, beta) in [(1.0, 0.0), (2.0, 0.5), (1.0, 1.0)] {
                let mut want = c0.clone();
                ndarray::linalg::general_mat_mul(alpha, &a, &b, beta, &mut want.view_mut());
                for (name, av, bv) in [
                    ("a · b", a.view(), b.view()),
                    ("aᵀᵀ · b", at.t(), b.view()),
                    ("a · bᵀᵀ", a.view(), bt.t()),
                    ("aᵀᵀ · bᵀᵀ", at.t(), bt.t()),
                    ("a · strided b", a.view(), strided.view()),
                    ("strided a · b", a_strided.view(), b.view()),
                    ("strided a · bᵀᵀ", a_strided.view(), bt.t()),
                ] {
                    let mut got = c0.clone();
                    small_mat_mul(alpha, &av, &bv, beta, &mut got.view_mut());
                    let err = (&got - &want).iter().fold(0.0f64, |e, d| e.max(d.abs()));
                    assert!(err < 1e-12, "{name} {m}×{k}×{n} α={alpha} β={beta}: {err}");
                    // `c` with contiguous columns (the transposed view of a `[n, m]`).
                    let mut ct = c0.t().to_owned();
                    small_mat_mul(alpha, &av, &bv, beta, &mut ct.view_mut().reversed_axes());
                    let err = (&ct.t() - &want).iter().fold(0.0f64, |e, d| e.max(d.abs()));
                    assert!(
                        err < 1e-12,
                        "{name} into cᵀᵀ {m}×{k}×{n} α={alpha} β={beta}: {err}"
                    );
                }
            }
        }
    }

    /// The split product equals the one-thread product, for both splits (rows, and the
    /// inner dimension of a `k ≫ m` product) and with `beta` reading `c`.
    #[test]
    fn split_products_equal_the_single_thread_product() {
        for &(m, k, n) in &[(300, 40, 30), (16, 5000, 12), (3, 700, 9), (64, 64, 64)] {
            let a = Array2::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0);
            let b = Array2::from_shape_fn((k, n), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5);
            let c0 = Array2::from_shape_fn((m, n), |(i, j)| (i + 2 * j) as f64);
            let mut want = c0.clone();
            ndarray::linalg::general_mat_mul(2.0, &a.view(), &b.view(), 0.5, &mut want.view_mut());
            let mut first: Option<Array2<f64>> = None;
            for threads in [1, 2, 3, 5] {
                let mut got = c0.clone();
                par_mat_mul(threads, 2.0, &a.view(), &b.view(), 0.5, &mut got.view_mut());
                let err = (&got - &want).iter().fold(0.0f64, |e, d| e.max(d.abs()));
                assert!(err < 1e-9, "{m}×{k}×{n} on {threads} threads: error {err}");
                // The same bits on any number of threads.
                let first = first.get_or_insert_with(|| got.clone());
                assert_eq!(&got, first, "{m}×{k}×{n} on {threads} threads");
            }
            // The transposed left operand of a reverse sweep (`Aᵀ · G`).
            let at = a.t().to_owned();
            let g = Array2::from_shape_fn((m, n), |(i, j)| (i as f64 - j as f64) * 0.25);
            let mut want = Array2::zeros((k, n));
            ndarray::linalg::general_mat_mul(1.0, &at.view(), &g.view(), 0.0, &mut want.view_mut());
            let mut got = Array2::from_elem((k, n), f64::NAN);
            par_mat_mul(2, 1.0, &a.t(), &g.view(), 0.0, &mut got.view_mut());
            assert_eq!(got, want);
        }
    }
}
