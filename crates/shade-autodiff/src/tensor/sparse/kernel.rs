//! The CSR × dense row kernel behind every sparse product of the tape ([`csr_mm`]).
//!
//! Each output row is computed in column strips of a fixed width (32, then 16, then
//! one strip of the next power of two for the rest of the row): a strip's accumulator lives in registers for all the
//! nonzeros of the row and is stored once, instead of a load, an add and a store of the
//! output row per nonzero (on Cora's 16- and 7-wide rows the loop waited on the store
//! of the previous nonzero, and 7 columns ran one at a time). The accumulator starts
//! from the output row, from zeros, or from a given row (a bias), as [`Start`] says, so
//! a fresh output needs no zero-filled buffer first. Every element is still
//! `start + v₁·x₁ + v₂·x₂ + …` in the order of the row's nonzeros, with separate
//! multiplies and adds: the same bits as one element at a time, on every vector width.

use super::super::{Element, par};

/// Work (multiply-adds) below which the kernel stays on the calling thread (the
/// small-op rule, [`par::split`]).
const PAR_MIN: usize = par::PRODUCT_SPLIT_MIN;

/// How many nonzeros ahead the kernel asks for the dense row it will need.
const PREFETCH_AHEAD: usize = 32;

/// Size of the dense operand (bytes) above which the kernel prefetches its rows: below
/// it the operand stays in the (2 MiB) L2 cache and the hint only costs instructions.
const PREFETCH_MIN_BYTES: usize = 1 << 20;

/// The widest column strip (elements): two 512-bit registers of `f32`, four of `f64`.
const STRIP: usize = 32;

/// What each output element starts from before the row's products are added.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Start<'s, T> {
    /// The output's own value (`out += A · x`).
    Out,
    /// Zero (`out = A · x`; the output's previous contents are never read).
    Zero,
    /// Element `j` of this row (`out = b + A · x`, `b` of the rows' length).
    Row(&'s [T]),
}

/// Hints the processor to bring `s` into cache (a no-op off x86-64).
///
/// The dense rows read by a sparse product are scattered at random over a matrix
/// larger than the cache; without the hint each nonzero waits for memory in turn.
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch<T>(s: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = std::mem::size_of_val(s);
        let base = s.as_ptr().cast::<i8>();
        let mut off = 0;
        while off < bytes {
            // SAFETY: `off < size_of_val(s)`, so `base + off` stays inside `s`; a
            // prefetch is only a hint: it never faults and never changes memory.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    base.add(off),
                );
            }
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = s;
}

/// The values of a CSR matrix's nonzeros as the row kernel reads them: one row's run
/// `lo..hi` at a time, so that a stored slice is read without a bounds check per nonzero.
pub(crate) trait Values<T>: Sync {
    /// The values of nonzeros `lo..hi`, in order.
    fn run(&self, lo: usize, hi: usize) -> impl Iterator<Item = T>;
}

impl<T: Copy + Sync> Values<T> for &[T] {
    #[inline(always)]
    fn run(&self, lo: usize, hi: usize) -> impl Iterator<Item = T> {
        self[lo..hi].iter().copied()
    }
}

/// Values stored in another order: nonzero `q` has `vals[perm[q]]` (a transpose's
/// nonzeros over the original matrix's values).
pub(crate) struct Permuted<'a, T, P> {
    /// The values, in the original order.
    pub(crate) vals: &'a [T],
    /// For each nonzero, the index of its value in `vals` (`u32` or `usize`).
    pub(crate) perm: &'a [P],
}

impl<T: Copy + Sync, P: sprs::SpIndex> Values<T> for Permuted<'_, T, P> {
    #[inline(always)]
    fn run(&self, lo: usize, hi: usize) -> impl Iterator<Item = T> {
        self.perm[lo..hi]
            .iter()
            .map(|&q| self.vals[q.index_unchecked()])
    }
}

/// `out = start + A · x` for a CSR `A` given by (`ip`, `ind`, `val`) and a dense
/// row-major `x` with rows of length `f`; rows of `out` are split over threads.
///
/// With [`Start::Zero`] or [`Start::Row`] the previous contents of `out` are not read
/// (a recycled buffer needs no zeroing). `Start::Row` must hold `f` values.
pub(crate) fn csr_mm<T, V>(
    ip: &[usize],
    ind: &[u32],
    val: V,
    x: &[T],
    f: usize,
    start: Start<'_, T>,
    out: &mut [T],
) where
    T: Element,
    V: Values<T>,
{
    let rows = ip.len().saturating_sub(1);
    if f == 0 || rows == 0 {
        return;
    }
    if let Start::Row(b) = start {
        assert_eq!(b.len(), f, "a start row holds one value per column");
    }
    // The hint pays only when the dense rows do not fit in cache; below that it is
    // an extra load, bounds check and instruction per nonzero.
    let far = std::mem::size_of_val(x) > PREFETCH_MIN_BYTES;
    let wide = Wide::detect();
    let k = Rows::new((ip, ind, &val), x, f, start);
    let body = |r0: usize, chunk: &mut [T]| {
        if far {
            csr_rows_at::<T, V, true>(wide, &k, r0, chunk);
        } else {
            csr_rows_at::<T, V, false>(wide, &k, r0, chunk);
        }
    };
    let work = (ip[rows] - ip[0] + rows) * f;
    if !par::split(work, PAR_MIN) {
        body(0, out);
    } else {
        // Blocks of about a sixteenth of a thread's share, and never of only a few µs.
        let threads = rayon::current_num_threads();
        let leaf = (work / (threads * 16)).max(PAR_MIN / 64);
        split_rows(ip, f, leaf, 0, out, &body);
    }
}

/// Runs `body` on the rows `r0..` held by `out` (whole rows of `f`), halved by work
/// (nonzeros plus rows, so that a block of a few heavy rows costs as much as one of
/// many light ones) with `rayon::join`, down to blocks of about `leaf` multiply-adds.
fn split_rows<T, B>(ip: &[usize], f: usize, leaf: usize, r0: usize, out: &mut [T], body: &B)
where
    T: Send,
    B: Fn(usize, &mut [T]) + Sync,
{
    let n = out.len() / f;
    let r1 = r0 + n;
    let work = (ip[r1] - ip[r0] + n) * f;
    if n < 2 || work < 2 * leaf {
        body(r0, out);
        return;
    }
    // The first row at which the work before it reaches half (`ip[r] + r` grows with `r`).
    let half = (ip[r0] + r0 + ip[r1] + r1) / 2;
    let (mut lo, mut hi) = (r0, r1);
    while lo < hi {
        let m = (lo + hi) / 2;
        if ip[m] + m < half {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    let mid = lo.clamp(r0 + 1, r1 - 1);
    let (a, b) = out.split_at_mut((mid - r0) * f);
    rayon::join(
        || split_rows(ip, f, leaf, r0, a, body),
        || split_rows(ip, f, leaf, mid, b, body),
    );
}

/// The operands of one [`csr_mm`] call, as the row kernel reads them.
struct Rows<'k, T, V> {
    ip: &'k [usize],
    ind: &'k [u32],
    val: &'k V,
    x: &'k [T],
    f: usize,
    start: Start<'k, T>,
    /// `x`'s number of rows (`x.len() / f`), divided once per product, not once per row.
    xrows: usize,
}

impl<'k, T, V> Rows<'k, T, V> {
    /// The operands of `start + A · x`, `A` given by (`ip`, `ind`, `val`), `x` with rows
    /// of length `f > 0`.
    fn new(
        (ip, ind, val): (&'k [usize], &'k [u32], &'k V),
        x: &'k [T],
        f: usize,
        start: Start<'k, T>,
    ) -> Self {
        Rows {
            ip,
            ind,
            val,
            x,
            f,
            start,
            xrows: x.len() / f,
        }
    }
}

/// The vector width [`csr_rows`] is compiled for, detected at run time: the same
/// separate multiplies and adds on every width (no fused multiply-add), so results are
/// the same bits on every processor; wider vectors only take fewer instructions per
/// nonzero (a 32-wide strip of `f32` is two instructions of each kind instead of eight).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Wide {
    /// The baseline (SSE2 on x86-64).
    Base,
    /// AVX2: 256-bit vectors.
    Avx2,
    /// AVX-512F: 512-bit vectors.
    Avx512,
}

impl Wide {
    /// The widest level this processor runs.
    pub(crate) fn detect() -> Wide {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Wide::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") {
                return Wide::Avx2;
            }
        }
        Wide::Base
    }
}

/// [`csr_rows`] compiled for `wide` (which must be [`Wide::detect`]'s or narrower).
#[allow(unsafe_code)]
#[inline(always)]
fn csr_rows_at<T, V, const PF: bool>(wide: Wide, k: &Rows<'_, T, V>, r0: usize, chunk: &mut [T])
where
    T: Element,
    V: Values<T>,
{
    match wide {
        // SAFETY: `Wide::detect` found AVX-512F, the only requirement of the function.
        #[cfg(target_arch = "x86_64")]
        Wide::Avx512 => unsafe { csr_rows_avx512::<T, V, PF>(k, r0, chunk) },
        // SAFETY: `Wide::detect` found AVX2, the only requirement of the function.
        #[cfg(target_arch = "x86_64")]
        Wide::Avx2 => unsafe { csr_rows_avx2::<T, V, PF>(k, r0, chunk) },
        _ => csr_rows::<T, V, PF>(k, r0, chunk),
    }
}

/// [`csr_rows`] over 512-bit vectors.
///
/// # Safety
/// The processor must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2")]
#[allow(unsafe_code)]
unsafe fn csr_rows_avx512<T, V, const PF: bool>(k: &Rows<'_, T, V>, r0: usize, chunk: &mut [T])
where
    T: Element,
    V: Values<T>,
{
    csr_rows::<T, V, PF>(k, r0, chunk);
}

/// [`csr_rows`] over 256-bit vectors.
///
/// # Safety
/// The processor must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
unsafe fn csr_rows_avx2<T, V, const PF: bool>(k: &Rows<'_, T, V>, r0: usize, chunk: &mut [T])
where
    T: Element,
    V: Values<T>,
{
    csr_rows::<T, V, PF>(k, r0, chunk);
}

/// Rows `r0..` of `out = start + A · x` into `chunk` (whole rows of length `f`), in
/// strips of [`STRIP`] columns, then 16, then one [`tail`] strip of 1, 2, 4, 8 or 16
/// lanes for the rest, with or without
/// the software prefetch of the dense rows ahead (issued in a row's first strip).
///
/// (Two rows in lockstep, two chains of adds instead of one, measured slower on Cora,
/// twice: 1.29–1.50 ms a step against 1.20–1.39, interleaved runs; and again after the
/// reads without bounds checks, 668 µs against 453 on one thread. Rows taken in order
/// of degree, so that the loop exits are predicted, also lost: 565 against 494 µs. On
/// the Intel machine of 2026-12, two rows in lockstep with both accumulators in registers
/// were no faster either, 482 against 479 µs: a 16-wide add waits 2 cycles, the rows
/// wait on their loads and on the mispredicted exit of each row's loop. Nor one strip of
/// 32 or 64 lanes over the whole of a row of 17 to 64 columns, one pass with up to four
/// sums instead of a pass per strip: the policy model's 50 columns, 99 → 98 µs a
/// gradient (`small_profile policy`, min of 10); 64 columns at 100k nodes, 120 → 125 ms a
/// step on one thread, 63 → 65 on two (`gcn_large`, min of 3).)
#[inline(always)]
fn csr_rows<T, V, const PF: bool>(k: &Rows<'_, T, V>, r0: usize, chunk: &mut [T])
where
    T: Element,
    V: Values<T>,
{
    // The columns in whole strips of 32 and 16; the rest, `f - body < 16`, in one strip
    // of the next power of two, chosen here once for all rows.
    let f = k.f;
    let body = f / STRIP * STRIP + if f % STRIP >= 16 { 16 } else { 0 };
    match f - body {
        0 => rows_with::<T, V, 0, PF>(k, body, r0, chunk),
        1 => rows_with::<T, V, 1, PF>(k, body, r0, chunk),
        2 => rows_with::<T, V, 2, PF>(k, body, r0, chunk),
        3..=4 => rows_with::<T, V, 4, PF>(k, body, r0, chunk),
        5..=8 => rows_with::<T, V, 8, PF>(k, body, r0, chunk),
        _ => rows_with::<T, V, 16, PF>(k, body, r0, chunk),
    }
}

/// [`csr_rows`] with the last `f - body` columns in a strip of `TW` lanes (none when
/// `TW == 0`, an exact [`strip`] for 1 and 2, else a [`tail`]).
#[inline(always)]
fn rows_with<T, V, const TW: usize, const PF: bool>(
    k: &Rows<'_, T, V>,
    body: usize,
    r0: usize,
    chunk: &mut [T],
) where
    T: Element,
    V: Values<T>,
{
    let f = k.f;
    let pad = Pad::<T, TW>::new(k, body);
    for (ri, orow) in chunk.chunks_exact_mut(f).enumerate() {
        let r = r0 + ri;
        let (lo, hi) = (k.ip[r], k.ip[r + 1]);
        let mut j = 0;
        while j + STRIP <= body {
            strip::<T, V, STRIP, PF>(k, (lo, hi, j), orow);
            j += STRIP;
        }
        if j < body {
            strip::<T, V, 16, PF>(k, (lo, hi, j), orow);
        }
        match TW {
            0 => {}
            1 | 2 => strip::<T, V, TW, PF>(k, (lo, hi, body), orow),
            _ => tail::<T, V, TW, PF>(k, &pad, (lo, hi), orow),
        }
    }
}

/// What a [`tail`] strip of `W` lanes from column `j` needs of the whole product,
/// prepared once per block of rows (a copy of a few values per row, a call to `memcpy`
/// with its spills, was a third of a 7-wide product).
struct Pad<T, const W: usize> {
    /// The first column of the strip.
    j: usize,
    /// The dense rows `c < whole` have `W` values from column `j` inside `x`: all of
    /// them when `n == W`, else all but the last (`n = f - j`; `W - n < n <= f`, the
    /// strip is at most twice as wide as its columns, so only `c = xrows - 1` lacks
    /// room).
    whole: usize,
    /// The last dense row's `n` values from column `j`, zeros in the dropped lanes; a
    /// column past `x`'s rows reads it too (the CSR's columns are checked against `x`'s
    /// rows where the matrix is built).
    last: [T; W],
    /// A [`Start::Row`]'s `n` values from column `j`, zeros in the dropped lanes.
    start: [T; W],
}

impl<T: Element, const W: usize> Pad<T, W> {
    /// The pad of a strip from column `j` to the end of the row.
    #[inline(always)]
    fn new<V>(k: &Rows<'_, T, V>, j: usize) -> Self {
        let (f, x) = (k.f, k.x);
        let n = f - j;
        let mut pad = Pad {
            j,
            whole: k.xrows.saturating_sub(usize::from(n < W)),
            last: [T::zero(); W],
            start: [T::zero(); W],
        };
        if W < 3 || n == 0 {
            return pad;
        }
        debug_assert!(W - n < n, "the dropped lanes are fewer than the kept ones");
        if let Some(c) = k.xrows.checked_sub(1) {
            pad.last[..n].copy_from_slice(&x[c * f + j..c * f + f]);
        }
        if let Start::Row(b) = k.start {
            pad.start[..n].copy_from_slice(&b[j..]);
        }
        pad
    }
}

/// The last `n = f - pad.j` columns of one output row (`n <= W`) in a strip of `W`
/// lanes: a dense row's `W` values from its column `j` are read when they lie inside
/// `x` (the lanes past `n` read the next row's first values and are dropped, never
/// stored), else the padded copy of the last row. One pass over the row's nonzeros for
/// a 7-wide row instead of three (4, 2 and 1 columns); the stored lanes have the same
/// operations as [`strip`]'s.
#[inline(always)]
fn tail<T: Element, V: Values<T>, const W: usize, const PF: bool>(
    k: &Rows<'_, T, V>,
    pad: &Pad<T, W>,
    (lo, hi): (usize, usize),
    orow: &mut [T],
) {
    let (f, x, j, whole) = (k.f, k.x, pad.j, pad.whole);
    let o = &mut orow[j..];
    debug_assert!(o.len() <= W);
    // Lane by lane with constant indices (unrolled): `acc` is only ever indexed by
    // constants, so it stays in registers (a copy of `n` values into it kept it in
    // memory, a store and a load per nonzero).
    let mut acc: [T; W] = match k.start {
        Start::Out => std::array::from_fn(|q| o.get(q).copied().unwrap_or(T::zero())),
        Start::Zero => [T::zero(); W],
        Start::Row(_) => pad.start,
    };
    for ((p, &c), v) in (lo..hi).zip(&k.ind[lo..hi]).zip(k.val.run(lo, hi)) {
        let c = c as usize;
        prefetch_ahead::<T, V, PF>(k, p, j);
        debug_assert!(c < k.xrows, "a column inside x's rows");
        // One load from either place (a pointer chosen, not an array: a choice of two
        // arrays was compiled to a lane-by-lane copy and scalar arithmetic).
        let src: *const T = if c < whole {
            x.as_ptr().wrapping_add(c * f + j)
        } else {
            pad.last.as_ptr()
        };
        // SAFETY: `c < whole` means `c * f + j + W <= x.len()` (`Pad::whole`), so `src`
        // is in `x` with `W` values after it; else `src` is `pad.last`'s `W` values.
        // Any bits are a valid `T` (a float).
        #[allow(unsafe_code)]
        let xr: [T; W] = unsafe { src.cast::<[T; W]>().read_unaligned() };
        madd(&mut acc, v, &xr);
    }
    for (o, a) in o.iter_mut().zip(acc) {
        *o = a;
    }
}

/// The prefetch of the dense row nonzero `p + PREFETCH_AHEAD` reads, when `PF` and in a
/// row's first strip (`j == 0`).
#[inline(always)]
fn prefetch_ahead<T, V, const PF: bool>(k: &Rows<'_, T, V>, p: usize, j: usize) {
    if PF
        && j == 0
        && let Some(&c) = k.ind.get(p + PREFETCH_AHEAD)
    {
        let c = c as usize;
        prefetch(&k.x[c * k.f..(c + 1) * k.f]);
    }
}

/// `acc += v · xr`, lane by lane (separate multiplies and adds).
#[inline(always)]
fn madd<T: Element, const W: usize>(acc: &mut [T; W], v: T, xr: &[T; W]) {
    for (a, &xv) in acc.iter_mut().zip(xr) {
        *a += v * xv;
    }
}

/// Columns `j..j + W` of one output row `orow` over the row's nonzeros `lo..hi`, the
/// accumulator held in registers; the dense rows read without a bounds check per
/// nonzero (a column past `x`'s rows reads its last row: the CSR's columns are checked
/// against `x`'s rows where the matrix is built).
#[inline(always)]
fn strip<T: Element, V: Values<T>, const W: usize, const PF: bool>(
    k: &Rows<'_, T, V>,
    (lo, hi, j): (usize, usize, usize),
    orow: &mut [T],
) {
    let (f, x) = (k.f, k.x);
    let o: &mut [T; W] = (&mut orow[j..j + W])
        .try_into()
        .expect("a strip of W columns");
    let mut acc: [T; W] = match k.start {
        Start::Out => *o,
        Start::Zero => [T::zero(); W],
        Start::Row(b) => b[j..j + W].try_into().expect("a strip of W columns"),
    };
    // A row with nonzeros has a dense row to read (a matrix without columns has none).
    assert!(
        j + W <= f && (lo == hi || x.len() >= f),
        "a strip inside x's rows"
    );
    let last = k.xrows.saturating_sub(1);
    for ((p, &c), v) in (lo..hi).zip(&k.ind[lo..hi]).zip(k.val.run(lo, hi)) {
        let c = c as usize;
        prefetch_ahead::<T, V, PF>(k, p, j);
        debug_assert!(c <= last, "a column inside x's rows");
        let at = c.min(last) * f + j;
        // SAFETY: there is a nonzero, so `x.len() >= f` (asserted above), and
        // `c.min(last) <= x.len() / f - 1` and `j + W <= f`, so `at + W <= x.len()`:
        // the `W` values lie inside `x`; any bits are a valid `T`.
        #[allow(unsafe_code)]
        let xr: [T; W] = unsafe { x.as_ptr().add(at).cast::<[T; W]>().read_unaligned() };
        madd(&mut acc, v, &xr);
    }
    *o = acc;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `start + A · x` one element at a time, in the order of each row's nonzeros.
    fn reference(
        ip: &[usize],
        ind: &[u32],
        data: &[f32],
        x: &[f32],
        f: usize,
        start: &[f32],
    ) -> Vec<f32> {
        let rows = ip.len() - 1;
        let mut out = start.to_vec();
        for r in 0..rows {
            for p in ip[r]..ip[r + 1] {
                for j in 0..f {
                    out[r * f + j] += data[p] * x[ind[p] as usize * f + j];
                }
            }
        }
        out
    }

    /// Every row width from 1 to 70 (each strip width and their combinations), each
    /// start, serial and split, equals the element-at-a-time definition bit for bit,
    /// rows without nonzeros included.
    #[test]
    fn strips_equal_the_definition_bit_for_bit() {
        let (rows, cols) = (23, 17);
        let mut ip = vec![0];
        let mut ind = Vec::new();
        for r in 0..rows {
            // Row 5 and row 11 are empty; the rest have 1 to 7 nonzeros.
            let n = if r == 5 || r == 11 {
                0
            } else {
                1 + (r * 3) % 7
            };
            for q in 0..n {
                ind.push(((r * 3 + q * 5) % cols) as u32);
            }
            ind[ip[r]..].sort_unstable();
            ip.push(ind.len());
        }
        let data: Vec<f32> = (0..ind.len())
            .map(|p| ((p * 37) % 11) as f32 / 7.0 - 0.6)
            .collect();
        for f in 1..=70 {
            let x: Vec<f32> = (0..cols * f)
                .map(|i| ((i * 13) % 29) as f32 / 9.0 - 1.4)
                .collect();
            let b: Vec<f32> = (0..f).map(|j| j as f32 * 0.3 - 2.0).collect();
            let prev: Vec<f32> = (0..rows * f).map(|i| (i % 5) as f32 - 2.5).collect();
            let rows_b: Vec<f32> = (0..rows).flat_map(|_| b.iter().copied()).collect();
            for (start, init) in [
                (Start::Out, prev.clone()),
                (Start::Zero, vec![0.0; rows * f]),
                (Start::Row(&b[..]), rows_b),
            ] {
                let want = reference(&ip, &ind, &data, &x, f, &init);
                for wide in [Wide::Base, Wide::Avx2, Wide::Avx512] {
                    if wide != Wide::Base && Wide::detect() == Wide::Base
                        || wide == Wide::Avx512 && Wide::detect() != Wide::Avx512
                    {
                        continue;
                    }
                    let vals = &data[..];
                    let k = Rows::new((&ip, &ind, &vals), &x, f, start);
                    let mut got = prev.clone();
                    csr_rows_at::<f32, _, false>(wide, &k, 0, &mut got);
                    assert_eq!(
                        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        "f = {f}, {start:?}, {wide:?}"
                    );
                    let mut pf = prev.clone();
                    csr_rows_at::<f32, _, true>(wide, &k, 0, &mut pf);
                    assert_eq!(pf, got, "prefetching, f = {f}");
                    // Rows 7.. alone, as a block of a split run writes them.
                    let mut part = prev[7 * f..].to_vec();
                    csr_rows_at::<f32, _, false>(wide, &k, 7, &mut part);
                    assert_eq!(part[..], got[7 * f..], "rows 7.., f = {f}");
                }
                let mut whole = prev.clone();
                csr_mm(&ip, &ind, &data[..], &x, f, start, &mut whole);
                assert_eq!(whole, want, "csr_mm, f = {f}");
            }
        }
    }

    /// A matrix without columns (no nonzeros, an empty dense operand): every row is its
    /// start, on every row width and start, with no read of the dense operand.
    #[test]
    fn a_matrix_without_columns_gives_its_starts() {
        let ip = [0usize; 4];
        for f in [1, 2, 3, 7, 16, 32, 50, 64, 70] {
            let b: Vec<f32> = (0..f).map(|j| j as f32 - 1.5).collect();
            let prev: Vec<f32> = (0..3 * f).map(|i| i as f32 * 0.25).collect();
            for (start, want) in [
                (Start::Out, prev.clone()),
                (Start::Zero, vec![0.0; 3 * f]),
                (Start::Row(&b[..]), b.repeat(3)),
            ] {
                let mut out = prev.clone();
                csr_mm(&ip, &[], &[][..], &[], f, start, &mut out);
                assert_eq!(out, want, "f = {f}, {start:?}");
            }
        }
    }

    /// A product split over two threads, rows of very different lengths balanced by
    /// work, equals the serial product bit for bit.
    #[test]
    fn split_rows_equal_the_serial_product_bit_for_bit() {
        let (rows, cols, f) = (12_000, 500, 64);
        let mut ip = vec![0];
        let mut ind = Vec::new();
        for r in 0..rows {
            // A few heavy rows among light ones and empty ones.
            let n = match r % 97 {
                0 => 300,
                q if q % 5 == 0 => 0,
                q => 1 + q % 6,
            };
            let mut row: Vec<u32> = (0..n).map(|q| ((r * 31 + q * 17) % cols) as u32).collect();
            row.sort_unstable();
            row.dedup();
            ind.extend(row);
            ip.push(ind.len());
        }
        let data: Vec<f32> = (0..ind.len())
            .map(|p| ((p * 37) % 11) as f32 / 7.0 - 0.6)
            .collect();
        let x: Vec<f32> = (0..cols * f)
            .map(|i| ((i * 13) % 29) as f32 / 9.0 - 1.4)
            .collect();
        assert!((ind.len() + rows) * f >= PAR_MIN);
        let mut serial = vec![0.0f32; rows * f];
        let vals = &data[..];
        let k = Rows::new((&ip, &ind, &vals), &x, f, Start::Zero);
        csr_rows::<f32, _, false>(&k, 0, &mut serial);
        let pool = crate::tensor::par::test_pool(2);
        let split = pool.install(|| {
            assert!(par::split((ind.len() + rows) * f, PAR_MIN));
            let mut out = vec![f32::NAN; rows * f];
            csr_mm(&ip, &ind, &data[..], &x, f, Start::Zero, &mut out);
            out
        });
        assert_eq!(
            split.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            serial.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}
