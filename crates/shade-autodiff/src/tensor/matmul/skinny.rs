//! Products with a narrow right-hand side, read in place: `C = β·C + α·A·B` for `A`
//! `[m, k]` with contiguous rows and `B` `[k, n]` small (`n ≤` [`N_MAX`]), and the
//! reverse sweep's `C = β·C + α·Aᵀ·G` for the same `A` and `G` `[m, n]`. These are the
//! shapes of a graph network (`X·W`, `Xᵀ·G` with `m` the node count, `n` a layer's
//! width): `matrixmultiply` copies `A` (e.g. Cora's 15.5 MB of features) into its packing
//! buffer on every call, here `A` streams once through registers and only `B` (at most a
//! few hundred kB) is laid out in panels of 64 bytes.
//!
//! Threads: `A·B` splits the rows of `A` and `C` (each output element is summed by one
//! thread in one order, so the bits do not depend on the thread count); `Aᵀ·G` sums the
//! rows of `A` in [`parts`] parts, a number fixed by `m` alone, each into its own
//! partial result, and adds the partials in order: again the same bits on any number of
//! threads. A wide `Aᵀ·G` with a wide `G` (Cora's `[1433, 64]` weight gradient) splits
//! instead by blocks of columns of `A` ([`tn_blocks`]), each block owning its rows of
//! `C`: no partial results, the same bits on any number of threads. The order differs from `matrixmultiply`'s (and fused multiply-adds round
//! once), so results agree with it to f32/f64 rounding only.
//!
//! On x86-64 the same loops are compiled for AVX-512F or for AVX2 and FMA when the
//! processor has them (detected at run time): fused multiply-adds over 512- or 256-bit
//! vectors, panels of two vectors. The tests run whichever this machine has, and the
//! plain (separate multiply and add) kernel directly.

use crate::tensor::Element;
use ndarray::{ArrayView2, ArrayViewMut2, Axis};

mod panels;
use panels::{pack_panels, store_panels, store_row};

/// The widest right-hand side taken here (wider ones go to `matrixmultiply`).
pub(super) const N_MAX: usize = 128;

/// The most elements of `B` (or of one partial result of `Aᵀ·G`) taken here, padded to
/// whole panels: 512 kB of `f32` (Cora's `[1433, 64]` weight of an 8-head GAT layer), so
/// a panel (a quarter of it at most) stays in the L2 cache.
const B_MAX: usize = 1 << 17;

/// Rows of `A` per register tile (the tiles below are written out for 4).
const MR: usize = 4;

/// Rows of `A` per part of `Aᵀ·G`: [`parts`] makes at most [`MAX_PARTS`] parts of at
/// least this many rows.
const PART_ROWS: usize = 512;

/// The most parts of `Aᵀ·G`: enough to balance 2–4 threads, and fine enough that a
/// thread slowed by another process leaves parts to the others.
const MAX_PARTS: usize = 16;

/// The fewest rows of `A` (the inner dimension) taken by [`takes_tn`].
const TN_MIN_ROWS: usize = 16;

/// How many parts `Aᵀ·G` over `m` rows is summed in: depends on `m` only; an even
/// number from 2, so that 2 threads take equal shares (Cora's 2708 rows in 4 parts:
/// as 5 parts they ran as 3 against 2, a 1.67× bound on the split; as 10, the
/// partial results to zero and add cost more than the balance gained).
pub(super) fn parts(m: usize) -> usize {
    let p = (m / PART_ROWS).clamp(1, MAX_PARTS);
    if p >= 2 { p & !1 } else { 1 }
}

/// Whether `A·B` (`A` `[m, k]`, `B` `[k, n]`, `C` `[m, n]`) runs here: `A` and `C`
/// with contiguous rows, `B` narrow and small.
pub(super) fn takes_nn<T>(
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    c: &ArrayViewMut2<'_, T>,
) -> bool {
    let (k, n) = b.dim();
    n <= N_MAX
        && k * n.next_multiple_of(32) <= B_MAX
        && unit_rows(a.strides(), a.dim())
        && unit_rows(c.strides(), c.dim())
}

/// Whether `aᵀ·G` (`at` the `[k, m]` transposed view of an `A` `[m, k]` with contiguous
/// rows, `G` `[m, n]` with contiguous rows, `C` `[k, n]` of any layout) runs here.
pub(super) fn takes_tn<T>(
    at: &ArrayView2<'_, T>,
    g: &ArrayView2<'_, T>,
    c: &ArrayViewMut2<'_, T>,
) -> bool {
    let (k, m) = at.dim();
    let n = g.ncols();
    let a = at.t();
    n <= N_MAX
        && k * n.next_multiple_of(32) <= B_MAX
        && m >= TN_MIN_ROWS
        && g.nrows() == m
        && c.dim() == (k, n)
        && unit_rows(a.strides(), a.dim())
        && unit_rows(g.strides(), g.dim())
}

/// Rows of a 2-D view are contiguous (unit column stride, or a single column).
fn unit_rows(strides: &[isize], (_, cols): (usize, usize)) -> bool {
    strides[1] == 1 || cols <= 1
}

/// The instruction set the kernels are compiled for, detected at run time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Level {
    /// Portable code (SSE2 on x86-64), separate multiply and add.
    Plain,
    /// AVX2 and FMA: 256-bit fused multiply-adds.
    Fma,
    /// AVX-512F: 512-bit fused multiply-adds.
    Avx512,
}

impl Level {
    fn detect() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Level::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Level::Fma;
            }
        }
        Level::Plain
    }

    /// The elements of a panel for `n` columns: two vectors (64 bytes, 128 with
    /// AVX-512), so that a tile of 4 rows keeps 8 independent sums in flight; 64 bytes
    /// when `n` fits in them (a wider panel would multiply zeros).
    fn panel<T>(self, n: usize) -> usize {
        let size = std::mem::size_of::<T>();
        let bytes = if self == Level::Avx512 && n * size > 64 {
            128
        } else {
            64
        };
        bytes / size
    }
}

/// Row `i` of a view with contiguous rows, as a slice of its `cols` elements.
fn row<'v, T>(a: &ArrayView2<'v, T>, i: usize) -> &'v [T] {
    let r = a.index_axis_move(Axis(0), i);
    r.to_slice()
        .expect("rows are contiguous (checked by takes_*)")
}

/// `fn $name<T, const W: usize, const P: bool>(level, args…)`: runs `$body::<T, W, F,
/// E, P>(args…)` (`P` a variant of the body, e.g. with prefetches: each `P` its own
/// function)
/// compiled for `level` (`Plain`, or what [`Level::detect`] found): through a
/// `#[target_feature]` wrapper for AVX2 and FMA (`F`) or AVX-512F (`F` and `E`, 32
/// vector registers), into which the `#[inline(always)]` body is compiled.
macro_rules! at_level {
    ($(#[$m:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:ident) => {
        $(#[$m])*
        #[allow(unsafe_code)]
        fn $name<T: Element, const W: usize, const P: bool>(level: Level, $($arg: $ty),*) {
            /// The body with fused multiply-adds over 256-bit vectors.
            ///
            /// # Safety
            /// The processor must support AVX2 and FMA.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn fma<T: Element, const W: usize, const P: bool>($($arg: $ty),*) {
                $body::<T, W, true, false, P>($($arg),*);
            }
            /// The body with fused multiply-adds over 512-bit vectors.
            ///
            /// # Safety
            /// The processor must support AVX-512F.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx2,fma")]
            unsafe fn avx512<T: Element, const W: usize, const P: bool>($($arg: $ty),*) {
                $body::<T, W, true, true, P>($($arg),*);
            }
            match level {
                // SAFETY: `Level::detect` found AVX-512F, the only requirement of
                // `avx512`.
                #[cfg(target_arch = "x86_64")]
                Level::Avx512 => unsafe { avx512::<T, W, P>($($arg),*) },
                // SAFETY: `Level::detect` found AVX2 and FMA, the only requirement of
                // `fma`.
                #[cfg(target_arch = "x86_64")]
                Level::Fma => unsafe { fma::<T, W, P>($($arg),*) },
                _ => $body::<T, W, false, false, P>($($arg),*),
            }
        }
    };
}

/// `C = β·C + α·A·B` (see [`takes_nn`]) on `threads` threads.
pub(super) fn nn<T: Element>(
    threads: usize,
    alpha: T,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    nn_at(Level::detect(), threads, alpha, a, b, beta, c);
}

/// [`nn`] compiled for `level`, which must be `Plain` or what [`Level::detect`] found
/// (the kernels for the others need the instructions).
fn nn_at<T: Element>(
    level: Level,
    threads: usize,
    alpha: T,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    match level.panel::<T>(b.ncols()) {
        32 => nn_w::<T, 32>(level, threads, alpha, a, b, beta, c),
        16 => nn_w::<T, 16>(level, threads, alpha, a, b, beta, c),
        _ => nn_w::<T, 8>(level, threads, alpha, a, b, beta, c),
    }
}

#[allow(clippy::too_many_arguments)]
fn nn_w<T: Element, const W: usize>(
    level: Level,
    threads: usize,
    alpha: T,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    let m = a.nrows();
    let short = a.ncols() * std::mem::size_of::<T>() <= PREFETCH_ROW_BYTES;
    let bp = pack_panels::<T, W>(b);
    let job = |r0: usize, mut ci: ArrayViewMut2<'_, T>| {
        let ai = a.slice(ndarray::s![r0..r0 + ci.nrows(), ..]);
        if short {
            nn_rows::<T, W, true>(level, alpha, &ai, &bp, beta, &mut ci);
        } else {
            nn_rows::<T, W, false>(level, alpha, &ai, &bp, beta, &mut ci);
        }
    };
    if threads <= 1 {
        job(0, c.view_mut());
        return;
    }
    // Several chunks per thread, so that a core slowed by another process does not
    // hold the product back; rows of `C` are independent.
    let rows = m.div_ceil(4 * threads).next_multiple_of(MR);
    rayon::scope(|s| {
        for (i, ci) in c.axis_chunks_iter_mut(Axis(0), rows).enumerate() {
            let job = &job;
            s.spawn(move |_| job(i * rows, ci));
        }
    });
}

at_level! {
    /// One thread's rows of [`nn`], compiled for `level`; short rows of `A` prefetched
    /// ahead when `P` (a function of its own: a test in the loop slowed the kernel
    /// of long rows by a quarter).
    fn nn_rows(
        alpha: T,
        a: &ArrayView2<'_, T>,
        bp: &[T],
        beta: T,
        c: &mut ArrayViewMut2<'_, T>,
    ) => nn_rows_body
}

/// `acc + x·y`, fused (one rounding) when `F`.
#[inline(always)]
fn madd<T: Element, const F: bool>(x: T, y: T, acc: T) -> T {
    if F { x.mul_add(y, acc) } else { acc + x * y }
}

/// Rows of `A` up to this many bytes are prefetched [`PREFETCH_ROWS`] rows ahead by
/// [`nn_rows_body`]: 8 rows of 512 bytes read across by columns are 8 streams too
/// short for the hardware prefetcher (the loads of a 100k × 128 `A` waited on memory);
/// longer rows are streams it follows.
const PREFETCH_ROW_BYTES: usize = 1024;

/// How far ahead [`nn_rows_body`] prefetches short rows of `A` (two tiles of 8).
const PREFETCH_ROWS: usize = 16;

/// Prefetches the lines of `rows` of `a`.
#[inline(never)]
fn prefetch_rows<T>(a: &ArrayView2<'_, T>, rows: std::ops::Range<usize>) {
    for t in rows {
        for line in row(a, t).chunks(64 / std::mem::size_of::<T>()) {
            prefetch(line);
        }
    }
}

/// Asks for the cache line holding `x[0]` (a hint: no effect on results).
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch<T>(x: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: `_mm_prefetch` needs SSE, part of every x86-64 processor (the
        // baseline the crate is compiled for); a prefetch reads nothing into the
        // program and does not fault, whatever the address (here one of `x`'s).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(x.as_ptr().cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// The body of [`nn_rows`]: tiles of rows of `A` times the panels of `B`, short rows
/// prefetched [`PREFETCH_ROWS`] ahead when `PF`.
///
/// With `E` (AVX-512's 32 registers) and panels of one or two vectors, tiles of 8 rows:
/// 8 or 16 sums in flight where 4 rows of one vector each would leave the
/// multiply-add units waiting.
#[inline(always)]
fn nn_rows_body<T: Element, const W: usize, const F: bool, const E: bool, const PF: bool>(
    alpha: T,
    a: &ArrayView2<'_, T>,
    bp: &[T],
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    let (m, k) = a.dim();
    let n = c.ncols();
    if n == 0 {
        return;
    }
    let eight = E && W * std::mem::size_of::<T>() <= 128;
    // The rows of a tile starting at row `i`: 8, else `MR`, else 1.
    let tile = |i: usize| {
        if eight && i + 8 <= m {
            8
        } else if i + MR <= m {
            MR
        } else {
            1
        }
    };
    // Both in standard layout (the tape's products always): rows as subslices of one
    // slice each, without a view per row and per tile (those were 2.7 % of a Cora
    // step, in `slice_mut` alone).
    if let (Some(af), Some(mut rest)) = (a.as_slice(), c.as_slice_mut()) {
        let mut i = 0;
        while i < m {
            let r = tile(i);
            if PF {
                prefetch_rows(a, i + PREFETCH_ROWS..(i + PREFETCH_ROWS + r).min(m));
            }
            let ar: [&[T]; 8] =
                std::array::from_fn(|t| if t < r { &af[(i + t) * k..][..k] } else { &[] });
            let (tile_c, after) = std::mem::take(&mut rest).split_at_mut(r * n);
            rest = after;
            if n < W && beta == T::zero() && r == 8 {
                tile_one_panel::<T, W, F>(alpha, &ar, bp, tile_c);
                i += r;
                continue;
            }
            let mut cr: [&mut [T]; 8] = Default::default();
            for (d, c) in cr.iter_mut().zip(tile_c.chunks_exact_mut(n)) {
                *d = c;
            }
            tile_rows::<T, W, F>(alpha, (&ar, r), bp, beta, &mut cr);
            i += r;
        }
        return;
    }
    let mut i = 0;
    while i < m {
        let r = tile(i);
        if PF {
            // The rows [`PREFETCH_ROWS`] ahead, while this tile sums.
            prefetch_rows(a, i + PREFETCH_ROWS..(i + PREFETCH_ROWS + r).min(m));
        }
        // The tile's rows of `A` and `C`, taken once for all panels.
        let ar: [&[T]; 8] = std::array::from_fn(|t| if t < r { &row(a, i + t)[..k] } else { &[] });
        let mut tile = c.slice_mut(ndarray::s![i..i + r, ..]);
        let mut cr: [&mut [T]; 8] = Default::default();
        for (d, c) in cr.iter_mut().zip(tile.outer_iter_mut()) {
            *d = c
                .into_slice()
                .expect("rows are contiguous (checked by takes_*)");
        }
        tile_rows::<T, W, F>(alpha, (&ar, r), bp, beta, &mut cr);
        i += r;
    }
}

/// `C = α·A·B` for one tile of 8 rows when `B` is one panel wider than `C`'s `n < W`
/// columns (`tile` the tile's 8 rows of `C`, contiguous): each row but the last is
/// stored as all `W` lanes, one vector store, the lanes past `n` landing on the next
/// row's first columns, which its own store writes next (lane by lane, the 7-wide
/// rows of Cora's output layer were a quarter of its `H·Wᵀ` product).
#[inline(always)]
fn tile_one_panel<T: Element, const W: usize, const F: bool>(
    alpha: T,
    ar: &[&[T]; 8],
    bp: &[T],
    tile: &mut [T],
) {
    let k = ar[0].len();
    let n = tile.len() / 8;
    debug_assert!(n < W && bp.len() == k * W);
    let acc = tile_nn8::<T, W, F>(ar, bp, k);
    for (t, at) in acc.iter().enumerate() {
        let row = &mut tile[t * n..];
        match row.get_mut(..W) {
            Some(w) => w.iter_mut().zip(at).for_each(|(c, &v)| *c = alpha * v),
            None => row[..n]
                .iter_mut()
                .zip(at)
                .for_each(|(c, &v)| *c = alpha * v),
        }
    }
}

/// `C = β·C + α·A·B` for one tile of `r` (8, [`MR`] or 1) rows: `ar` the rows of `A`
/// (`k` values each), `cr` those of `C`, all panels of `B`.
#[inline(always)]
fn tile_rows<T: Element, const W: usize, const F: bool>(
    alpha: T,
    (ar, r): (&[&[T]; 8], usize),
    bp: &[T],
    beta: T,
    cr: &mut [&mut [T]; 8],
) {
    let k = ar[0].len();
    let n = cr[0].len();
    for (q, panel) in bp.chunks_exact(k * W).enumerate() {
        let (j0, w) = (q * W, W.min(n - q * W));
        if r == 8 {
            let acc = tile_nn8::<T, W, F>(ar, panel, k);
            for (at, c) in acc.iter().zip(cr.iter_mut()) {
                store_row(alpha, &at[..w], beta, &mut c[j0..j0 + w]);
            }
        } else if r == MR {
            let rows: [&[T]; MR] = std::array::from_fn(|t| ar[t]);
            let acc = tile_nn::<T, W, MR, F>(&rows, panel, k);
            for (at, c) in acc.iter().zip(cr.iter_mut()) {
                store_row(alpha, &at[..w], beta, &mut c[j0..j0 + w]);
            }
        } else {
            let acc = tile_nn::<T, W, 1, F>(&[ar[0]], panel, k);
            store_row(alpha, &acc[0][..w], beta, &mut cr[0][j0..j0 + w]);
        }
    }
}

/// `Σ_p rows[r][p] · panel[p]` for `R` (1 or [`MR`]) rows: `R × W` sums held in
/// registers (named accumulators: an indexed array of them would live on the stack).
#[inline(always)]
fn tile_nn<T: Element, const W: usize, const R: usize, const F: bool>(
    rows: &[&[T]; R],
    panel: &[T],
    k: usize,
) -> [[T; W]; R] {
    let z = [T::zero(); W];
    let panel = &panel[..k * W];
    if R == 1 {
        let mut c0 = z;
        for (bw, &x0) in panel.chunks_exact(W).zip(rows[0]) {
            for j in 0..W {
                c0[j] = madd::<T, F>(x0, bw[j], c0[j]);
            }
        }
        return std::array::from_fn(|_| c0);
    }
    let (mut c0, mut c1, mut c2, mut c3) = (z, z, z, z);
    let it = panel
        .chunks_exact(W)
        .zip(rows[0])
        .zip(rows[1])
        .zip(rows[2])
        .zip(rows[3]);
    for ((((bw, &x0), &x1), &x2), &x3) in it {
        for j in 0..W {
            let b = bw[j];
            c0[j] = madd::<T, F>(x0, b, c0[j]);
            c1[j] = madd::<T, F>(x1, b, c1[j]);
            c2[j] = madd::<T, F>(x2, b, c2[j]);
            c3[j] = madd::<T, F>(x3, b, c3[j]);
        }
    }
    let all = [c0, c1, c2, c3];
    std::array::from_fn(|r| all[r])
}

/// [`tile_nn`] for 8 rows.
#[inline(always)]
fn tile_nn8<T: Element, const W: usize, const F: bool>(
    rows: &[&[T]; 8],
    panel: &[T],
    k: usize,
) -> [[T; W]; 8] {
    let z = [T::zero(); W];
    let (mut c0, mut c1, mut c2, mut c3) = (z, z, z, z);
    let (mut c4, mut c5, mut c6, mut c7) = (z, z, z, z);
    let [a0, a1, a2, a3, a4, a5, a6, a7] = *rows;
    let (a0, a1, a2, a3) = (&a0[..k], &a1[..k], &a2[..k], &a3[..k]);
    let (a4, a5, a6, a7) = (&a4[..k], &a5[..k], &a6[..k], &a7[..k]);
    let it = panel[..k * W]
        .chunks_exact(W)
        .zip(a0.iter().zip(a1))
        .zip(a2.iter().zip(a3))
        .zip(a4.iter().zip(a5))
        .zip(a6.iter().zip(a7));
    for ((((bw, (&x0, &x1)), (&x2, &x3)), (&x4, &x5)), (&x6, &x7)) in it {
        for j in 0..W {
            let b = bw[j];
            c0[j] = madd::<T, F>(x0, b, c0[j]);
            c1[j] = madd::<T, F>(x1, b, c1[j]);
            c2[j] = madd::<T, F>(x2, b, c2[j]);
            c3[j] = madd::<T, F>(x3, b, c3[j]);
            c4[j] = madd::<T, F>(x4, b, c4[j]);
            c5[j] = madd::<T, F>(x5, b, c5[j]);
            c6[j] = madd::<T, F>(x6, b, c6[j]);
            c7[j] = madd::<T, F>(x7, b, c7[j]);
        }
    }
    [c0, c1, c2, c3, c4, c5, c6, c7]
}

/// `C = β·C + α·Aᵀ·G` (see [`takes_tn`]; `at` is the transposed view of `A`) on
/// `threads` threads; the same bits for every `threads`.
pub(super) fn tn<T: Element>(
    threads: usize,
    alpha: T,
    at: &ArrayView2<'_, T>,
    g: &ArrayView2<'_, T>,
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    tn_at(Level::detect(), threads, alpha, at, g, beta, c);
}

/// [`tn`] compiled for `level`, which must be `Plain` or what [`Level::detect`] found.
fn tn_at<T: Element>(
    level: Level,
    threads: usize,
    alpha: T,
    at: &ArrayView2<'_, T>,
    g: &ArrayView2<'_, T>,
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    match level.panel::<T>(g.ncols()) {
        32 => tn_w::<T, 32>(level, threads, alpha, at, g, beta, c),
        16 => tn_w::<T, 16>(level, threads, alpha, at, g, beta, c),
        _ => tn_w::<T, 8>(level, threads, alpha, at, g, beta, c),
    }
}

#[allow(clippy::too_many_arguments)]
fn tn_w<T: Element, const W: usize>(
    level: Level,
    threads: usize,
    alpha: T,
    at: &ArrayView2<'_, T>,
    g: &ArrayView2<'_, T>,
    beta: T,
    c: &mut ArrayViewMut2<'_, T>,
) {
    if takes_blocks::<T>(at.nrows(), g.ncols()) {
        tn_blocks::<T, W>((level, threads), (alpha, beta), &at.t(), g, c);
        return;
    }
    let a = at.t();
    let (m, k) = a.dim();
    let n = g.ncols();
    let np = n.div_ceil(W);
    let nparts = parts(m);
    let per = m.div_ceil(nparts);
    // Partial results in panels: part `t`, panel `q`, row `p` at `((t·np + q)·k + p)·W`.
    let len = np * k * W;
    let mut partial = vec![T::zero(); nparts * len];
    let job = |t: usize, out: &mut [T]| {
        let r0 = t * per;
        let r1 = (r0 + per).min(m);
        if r0 < r1 {
            let ai = a.slice(ndarray::s![r0..r1, ..]);
            let gi = g.slice(ndarray::s![r0..r1, ..]);
            tn_rows::<T, W, false>(level, &ai, &gi, out);
        }
    };
    if threads <= 1 {
        for (t, out) in partial.chunks_exact_mut(len).enumerate() {
            job(t, out);
        }
    } else {
        rayon::scope(|s| {
            for (t, out) in partial.chunks_exact_mut(len).enumerate() {
                let job = &job;
                s.spawn(move |_| job(t, out));
            }
        });
    }
    // The parts in order, then into `C`.
    let (first, rest) = partial.split_at_mut(len);
    for p in rest.chunks_exact(len) {
        first.iter_mut().zip(p).for_each(|(x, &y)| *x += y);
    }
    store_panels::<T, W>(alpha, first, beta, c);
}

/// Whether [`tn`] of a `[k, m]·[m, n]` product runs in [`tn_blocks`] (a choice by
/// shape alone): `A` wide enough for two blocks at least, and `G` at least two vectors
/// wide, so that each element of `A` copied into a block serves two or more
/// vector multiply-adds (Cora's `[1433, 64]` gradient of a GAT layer: 1.2–2× faster
/// than the parts of rows on one thread, measured with `perf stat -e task-clock`; at
/// `n = 16` the copy costs as much as the product, and the parts of rows are 1.6× faster).
fn takes_blocks<T>(k: usize, n: usize) -> bool {
    k >= 2 * K_BLOCK && n * std::mem::size_of::<T>() >= 128
}

/// How many rows ahead [`tn_blocks`] asks for the block of `A` it will copy.
const BLOCK_AHEAD: usize = 8;

/// Columns of `A` (rows of `C`) per block of [`tn_blocks`]: Cora's 1433 features in 6
/// blocks, 3 per thread on 2 threads.
const K_BLOCK: usize = 256;

/// [`tn`] for a wide `A` and `G` (see [`takes_blocks`]; `a` is `A` itself, `(alpha,
/// beta)` the scalars): split by blocks of [`K_BLOCK`] columns of `A`, each block the
/// rows of `C` it owns, summed over all `m` rows by one thread (no partial results to
/// add, `A` read once over all blocks); the blocks depend on `k` alone, so the bits do
/// not depend on `threads`.
fn tn_blocks<T: Element, const W: usize>(
    (level, threads): (Level, usize),
    (alpha, beta): (T, T),
    a: &ArrayView2<'_, T>,
    g: &ArrayView2<'_, T>,
    c: &mut ArrayViewMut2<'_, T>,
) {
    let (m, n) = (a.nrows(), g.ncols());
    let np = n.div_ceil(W);
    let job = |p0: usize, mut cb: ArrayViewMut2<'_, T>| {
        let kb = cb.nrows();
        let mut out = vec![T::zero(); np * kb * W];
        // The block's columns of a chunk of rows, copied together (rows of `A` read
        // in order, the prefetcher's pattern; the strided block read in place is
        // latency-bound), then summed from the L2 cache.
        let ib = chunk_rows::<T, W>(kb, m);
        let mut pk = vec![T::zero(); ib * kb];
        for i0 in (0..m).step_by(ib) {
            let i1 = (i0 + ib).min(m);
            match a.as_slice() {
                Some(flat) => {
                    let (k, line) = (a.ncols(), 64 / size_of::<T>());
                    for (d, i) in pk.chunks_exact_mut(kb).zip(i0..i1) {
                        // The block of the row `BLOCK_AHEAD` on asked for now: a row's
                        // block is a short run of lines, a row of `A` away from the last,
                        // which the hardware prefetcher does not follow in time.
                        if i + BLOCK_AHEAD < m {
                            let ahead = (i + BLOCK_AHEAD) * k + p0;
                            for q in (ahead..ahead + kb).step_by(line) {
                                prefetch(&flat[q..]);
                            }
                        }
                        d.copy_from_slice(&flat[i * k + p0..i * k + p0 + kb]);
                    }
                }
                None => {
                    for (d, i) in pk.chunks_exact_mut(kb).zip(i0..i1) {
                        d.copy_from_slice(&row(a, i)[p0..p0 + kb]);
                    }
                }
            }
            let ai = ArrayView2::from_shape((i1 - i0, kb), &pk[..(i1 - i0) * kb])
                .expect("a chunk of whole rows");
            let gi = g.slice(ndarray::s![i0..i1, ..]);
            tn_rows::<T, W, false>(level, &ai, &gi, &mut out);
        }
        store_panels::<T, W>(alpha, &out, beta, &mut cb);
    };
    if threads <= 1 {
        for (b, cb) in c.axis_chunks_iter_mut(Axis(0), K_BLOCK).enumerate() {
            job(b * K_BLOCK, cb);
        }
        return;
    }
    rayon::scope(|s| {
        for (b, cb) in c.axis_chunks_iter_mut(Axis(0), K_BLOCK).enumerate() {
            let job = &job;
            s.spawn(move |_| job(b * K_BLOCK, cb));
        }
    });
}

at_level! {
    /// One part of [`tn`]: `out += Aᵀ·G` over its rows, into panels, compiled for
    /// `level`.
    fn tn_rows(a: &ArrayView2<'_, T>, g: &ArrayView2<'_, T>, out: &mut [T]) => tn_rows_body
}

/// Bytes of `A` per chunk of rows of [`tn_rows_body`] at most (the chunk is read once
/// from memory, then from the L2 cache once per 4 or 8 columns of `A`).
const CHUNK_BYTES: usize = 1 << 18;

/// Bytes of one panel of `G`'s chunk at most: it is read once per 4 or 8 columns of
/// `A`, so it stays in the L1 cache (a chunk of 1 MiB of `A` and its 256 kB of `G` from
/// L2 made `Aᵀ·G` 1.5× slower than `A·B` at `k = 128`).
const G_CHUNK_BYTES: usize = 1 << 14;

/// Rows of `A` (`k` columns, `m` rows) per chunk of [`tn_rows_body`]: at most
/// [`CHUNK_BYTES`] of `A` and [`G_CHUNK_BYTES`] of a panel of `G`.
fn chunk_rows<T, const W: usize>(k: usize, m: usize) -> usize {
    let size = std::mem::size_of::<T>();
    (CHUNK_BYTES / (k * size).max(1))
        .min(G_CHUNK_BYTES / (W * size))
        .clamp(1, m.max(1))
}

/// `out += Aᵀ·G` over the rows of `a`: chunks of rows that fit in the L2 cache; in a
/// chunk, for each panel of `G` (copied, zero-padded) and each 4 columns `p..p+4` of
/// `A`, a `4 × W` tile summed in registers over the chunk's rows, then added to `out`.
/// (Updating `out` row by row instead lets the compiler vectorise across `p`, with
/// scalar stores: three times slower.)
#[inline(always)]
///
/// With `E` and one-vector panels, tiles of 8 columns of `A` (8 sums in flight).
fn tn_rows_body<T: Element, const W: usize, const F: bool, const E: bool, const _P: bool>(
    a: &ArrayView2<'_, T>,
    g: &ArrayView2<'_, T>,
    out: &mut [T],
) {
    let (m, k) = a.dim();
    let n = g.ncols();
    let ib = chunk_rows::<T, W>(k, m);
    let mut rows: Vec<&[T]> = Vec::with_capacity(ib);
    let mut gbuf = vec![T::zero(); ib * W];
    // Short rows: the next chunk's lines are prefetched while the first panel sums,
    // a share of them per tile (read down its columns, a chunk of short rows is as
    // many streams too short for the hardware prefetcher as it has rows).
    let line = 64 / std::mem::size_of::<T>();
    let short = k * std::mem::size_of::<T>() <= PREFETCH_ROW_BYTES;
    let per_row = k.div_ceil(line);
    for i0 in (0..m).step_by(ib) {
        let i1 = (i0 + ib).min(m);
        rows.clear();
        rows.extend((i0..i1).map(|i| &row(a, i)[..k]));
        let (n0, n1) = (i1, (i1 + ib).min(m));
        let next_lines = if short { (n1 - n0) * per_row } else { 0 };
        let per_tile = next_lines.div_ceil(k.div_ceil(MR));
        let mut sent = 0;
        for (q, panel) in out.chunks_exact_mut(k * W).enumerate() {
            let (j0, w) = (q * W, W.min(n - q * W));
            for (gw, i) in gbuf.chunks_exact_mut(W).zip(i0..i1) {
                gw[..w].copy_from_slice(&row(g, i)[j0..j0 + w]);
            }
            let gs = &gbuf[..(i1 - i0) * W];
            let mut p = 0;
            while p < k {
                let upto = (sent + per_tile).min(next_lines);
                for l in sent..upto {
                    let r = &row(a, n0 + l / per_row)[(l % per_row) * line..];
                    prefetch(r);
                }
                sent = upto;
                let eight = E && W * std::mem::size_of::<T>() <= 128;
                let r = if eight && p + 8 <= k {
                    8
                } else if p + MR <= k {
                    MR
                } else {
                    1
                };
                if r == 8 {
                    let acc = tile_tn8::<T, W, F>(&rows, gs, p);
                    for (t, at) in acc.iter().enumerate() {
                        let o = &mut panel[(p + t) * W..(p + t + 1) * W];
                        o.iter_mut().zip(at).for_each(|(o, &v)| *o += v);
                    }
                } else if r == MR {
                    let acc = tile_tn::<T, W, MR, F>(&rows, gs, p);
                    for (t, at) in acc.iter().enumerate() {
                        let o = &mut panel[(p + t) * W..(p + t + 1) * W];
                        o.iter_mut().zip(at).for_each(|(o, &v)| *o += v);
                    }
                } else {
                    let acc = tile_tn::<T, W, 1, F>(&rows, gs, p);
                    let o = &mut panel[p * W..(p + 1) * W];
                    o.iter_mut().zip(&acc[0]).for_each(|(o, &v)| *o += v);
                }
                p += r;
            }
        }
    }
}

/// `Σ_i rows[i][p + r] · gs[i]` for `r < R` (1 or [`MR`]): `R × W` sums held in
/// registers over the rows of a chunk.
#[inline(always)]
fn tile_tn<T: Element, const W: usize, const R: usize, const F: bool>(
    rows: &[&[T]],
    gs: &[T],
    p: usize,
) -> [[T; W]; R] {
    let z = [T::zero(); W];
    if R == 1 {
        let mut c0 = z;
        for (gw, ar) in gs.chunks_exact(W).zip(rows) {
            let x0 = ar[p];
            for j in 0..W {
                c0[j] = madd::<T, F>(x0, gw[j], c0[j]);
            }
        }
        return std::array::from_fn(|_| c0);
    }
    let (mut c0, mut c1, mut c2, mut c3) = (z, z, z, z);
    for (gw, ar) in gs.chunks_exact(W).zip(rows) {
        let x = &ar[p..p + 4];
        let (x0, x1, x2, x3) = (x[0], x[1], x[2], x[3]);
        for j in 0..W {
            let g = gw[j];
            c0[j] = madd::<T, F>(x0, g, c0[j]);
            c1[j] = madd::<T, F>(x1, g, c1[j]);
            c2[j] = madd::<T, F>(x2, g, c2[j]);
            c3[j] = madd::<T, F>(x3, g, c3[j]);
        }
    }
    let all = [c0, c1, c2, c3];
    std::array::from_fn(|r| all[r])
}

/// [`tile_tn`] for 8 columns of `A`.
#[inline(always)]
fn tile_tn8<T: Element, const W: usize, const F: bool>(
    rows: &[&[T]],
    gs: &[T],
    p: usize,
) -> [[T; W]; 8] {
    let z = [T::zero(); W];
    let (mut c0, mut c1, mut c2, mut c3) = (z, z, z, z);
    let (mut c4, mut c5, mut c6, mut c7) = (z, z, z, z);
    for (gw, ar) in gs.chunks_exact(W).zip(rows) {
        let x = &ar[p..p + 8];
        let (x0, x1, x2, x3) = (x[0], x[1], x[2], x[3]);
        let (x4, x5, x6, x7) = (x[4], x[5], x[6], x[7]);
        for j in 0..W {
            let g = gw[j];
            c0[j] = madd::<T, F>(x0, g, c0[j]);
            c1[j] = madd::<T, F>(x1, g, c1[j]);
            c2[j] = madd::<T, F>(x2, g, c2[j]);
            c3[j] = madd::<T, F>(x3, g, c3[j]);
            c4[j] = madd::<T, F>(x4, g, c4[j]);
            c5[j] = madd::<T, F>(x5, g, c5[j]);
            c6[j] = madd::<T, F>(x6, g, c6[j]);
            c7[j] = madd::<T, F>(x7, g, c7[j]);
        }
    }
    [c0, c1, c2, c3, c4, c5, c6, c7]
}

#[cfg(test)]
mod tests;
