//! Dropout with an explicit random number generator and inverted scaling, and the one
//! mask generator of shade ([`keep_mask`]).
//!
//! In training each element is kept with probability `1 - p` and scaled by
//! `1 / (1 - p)`, so the expectation is unchanged; the mask is kept, one bit an
//! element, for the reverse rule (`dx += g ⊙ mask`) and the forward rule
//! (`ẏ = ẋ ⊙ mask`). At evaluation
//! (`training = false`) dropout is the identity and returns its input handle.
//!
//! The mask comes from a counter-based generator (SplitMix64) seeded by one draw from
//! the caller's RNG: two 32-bit draws per 64 bits, an element dropped when its draw is
//! below `p · 2³²`. One draw per call keeps the caller's stream independent of the
//! array's size, and the generator costs about a nanosecond per two elements.

use super::tape::{Bwd, Op, Pool, Tan};
use super::{Element, Tape, Var};
use super::{par, simd};
use crate::error::{AdError, AdResult};
use ndarray::ArrayViewD;

/// SplitMix64's increment (Steele, Lea and Flood, 2014).
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function of state `z` (Steele, Lea and Flood, 2014).
#[inline(always)]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The 32-bit draw below which an element is dropped: `p · 2³²` (`p` clamped to
/// `[0, 1]`, NaN keeping everything).
fn cut(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 4_294_967_296.0) as u64
}

/// The factor of a kept element, `1 / (1 - p)` (`0` for `p = 1`, which keeps none);
/// [`AdError::InvalidArgument`] for `op` unless `0 <= p <= 1`.
fn keep_factor<T: Element>(op: &'static str, p: f64) -> AdResult<T> {
    if !(0.0..=1.0).contains(&p) {
        return Err(AdError::InvalidArgument {
            op,
            what: format!("the drop probability must lie in [0, 1], got {p}"),
        });
    }
    Ok(if p < 1.0 {
        T::cst(1.0 / (1.0 - p))
    } else {
        T::zero()
    })
}

/// The mask of [`draw`] for `n` elements as bits into `words` (`n.div_ceil(WORD)` of
/// them, [`bits_at`]), one draw from `rng`, over rayon's threads from
/// [`par::SPLIT_MIN`] elements.
fn draw_bits<R: rand::Rng + ?Sized>(p: f64, rng: &mut R, n: usize, words: &mut [usize]) {
    let (cut, seed, level) = (cut(p), rng.next_u64(), Level::detect());
    par::pieces(words, 1, n, par::SPLIT_MIN, |w, words| {
        bits_at(level, seed, cut, w, words)
    });
}

/// Writes `keep` or `drop` to every element of `out`, in order: one draw from `rng`
/// seeds the stream, an element is dropped when its 32-bit draw is below `p · 2³²`
/// (so `p <= 0` keeps all, `p >= 1` drops all).
///
/// The stream is SplitMix64's: the `i`-th 64-bit value is `mix(seed + (i + 1) · γ)`,
/// its high half for element `2i` and its low half for element `2i + 1`. Each value is
/// computed from its index (no state carried from one to the next), so the loop
/// vectorises; it is compiled for AVX-512 (eight 64-bit multiplies an instruction)
/// when the processor has it. Integer operations only: the same mask on every path.
///
/// From [`par::SPLIT_MIN`] elements each thread draws a piece of its own: the
/// piece from element `2j` on is the stream seeded at `seed + j · γ`, the same values.
fn draw<E: Copy + Send + Sync, R: rand::Rng + ?Sized>(
    p: f64,
    rng: &mut R,
    out: &mut [E],
    keep: E,
    drop: E,
) {
    let (cut, seed, level) = (cut(p), rng.next_u64(), Level::detect());
    let n = out.len();
    par::pieces(out, 2, n, par::SPLIT_MIN, |o, piece| {
        let at = seed.wrapping_add((o as u64 / 2).wrapping_mul(GAMMA));
        draw_at(level, at, cut, piece, keep, drop);
    });
}

/// The instruction set [`draw`]'s loop is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// The baseline.
    Base,
    /// AVX-512F with AVX-512DQ (64-bit lane multiplies).
    Avx512,
}

impl Level {
    /// The widest level this processor runs.
    fn detect() -> Level {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
        {
            return Level::Avx512;
        }
        Level::Base
    }
}

/// `body()` compiled for `level`, which must be [`Level::detect`]'s or lower.
#[allow(unsafe_code)]
#[inline(always)]
fn at_level<R>(level: Level, body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if level == Level::Avx512 {
        #[target_feature(enable = "avx512f,avx512dq")]
        fn run<R>(body: impl FnOnce() -> R) -> R {
            body()
        }
        debug_assert_eq!(Level::detect(), Level::Avx512);
        // SAFETY: `level` is `Level::detect`'s (or lower, then this branch is not
        // taken): this processor executes AVX-512F and AVX-512DQ instructions, the
        // only requirement of calling a function compiled with those features (`run`
        // only calls the safe closure).
        return unsafe { run(body) };
    }
    let _ = level;
    body()
}

/// [`draw_plain`] compiled for `level`, which must be [`Level::detect`]'s or lower.
fn draw_at<E: Copy>(level: Level, seed: u64, cut: u64, out: &mut [E], keep: E, drop: E) {
    at_level(
        level,
        #[inline(always)]
        || draw_plain(seed, cut, out, keep, drop),
    );
}

/// Elements a mask word holds, one bit each.
const WORD: usize = usize::BITS as usize;

/// The mask of [`draw`] as bits: bit `j` of `words[w]` is set when element
/// `(first + w) · WORD + j` is kept, the same stream (pair `i`'s high half for element
/// `2i`, its low half for `2i + 1`); bits past the last element are drawn and unused.
/// Compiled for `level`, which must be [`Level::detect`]'s or lower.
fn bits_at(level: Level, seed: u64, cut: u64, first: usize, words: &mut [usize]) {
    at_level(
        level,
        #[inline(always)]
        || {
            let pairs = (WORD / 2) as u64;
            for (w, word) in words.iter_mut().enumerate() {
                let base = (first + w) as u64 * pairs;
                let mut acc = 0usize;
                for j in 0..pairs {
                    let i = base + j;
                    let r = mix(seed.wrapping_add(i.wrapping_add(1).wrapping_mul(GAMMA)));
                    let hi = usize::from((r >> 32) >= cut);
                    let lo = usize::from((r & 0xffff_ffff) >= cut);
                    acc |= (hi << (2 * j)) | (lo << (2 * j + 1));
                }
                *word = acc;
            }
        },
    );
}

/// `keep` where element `j` of a word's block is kept, else zero.
#[inline(always)]
fn factor<T: Element>(word: usize, j: usize, keep: T) -> T {
    if (word >> j) & 1 != 0 {
        keep
    } else {
        T::zero()
    }
}

/// `f(out[i], src[i], m_i)` over contiguous slices with `m_i` the mask's factor
/// ([`factor`]), the slices starting at a word's first element; each thread of the
/// pool on whole words of its own from [`par::SPLIT_MIN`] elements, compiled for the
/// widest vectors (each element alone: the same bits on any number of threads).
fn masked<T: Element>(
    words: &[usize],
    keep: T,
    out: &mut [T],
    src: &[T],
    f: impl Fn(&mut T, T, T) + Sync,
) {
    let n = out.len();
    par::pieces(out, WORD, n, par::SPLIT_MIN, |o, out| {
        let (words, src) = (&words[o / WORD..], &src[o..o + out.len()]);
        simd::wide(
            #[inline(always)]
            || {
                for ((o, s), &w) in out.chunks_mut(WORD).zip(src.chunks(WORD)).zip(words) {
                    for (j, (o, &s)) in o.iter_mut().zip(s).enumerate() {
                        f(o, s, factor(w, j, keep));
                    }
                }
            },
        );
    });
}

#[inline(always)]
fn draw_plain<E: Copy>(seed: u64, cut: u64, out: &mut [E], keep: E, drop: E) {
    let at = |i: usize| mix(seed.wrapping_add((i as u64).wrapping_add(1).wrapping_mul(GAMMA)));
    let pick = |r: u64| if r >= cut { keep } else { drop };
    for (i, pair) in out.chunks_exact_mut(2).enumerate() {
        let r = at(i);
        pair[0] = pick(r >> 32);
        pair[1] = pick(r & 0xffff_ffff);
    }
    let n = out.len();
    if n % 2 == 1 {
        out[n - 1] = pick(at(n / 2) >> 32);
    }
}

/// The keep mask that dropout with probability `p` draws for `n` elements from `rng`:
/// entry `i` is `true` with probability `1 - p`. The same generator as
/// [`Tape::dropout`] (one draw from `rng` seeds it, so the caller's stream moves by one
/// value per mask), for masks applied to something that is not a tape value, such as
/// the stored values of a propagation matrix (edge dropout) or constant input
/// features. `p` outside `[0, 1]` is clamped (NaN keeps everything).
///
/// ```
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let m = shade_autodiff::tensor::keep_mask(10_000, 0.3, &mut rng);
/// let kept = m.iter().filter(|&&k| k).count();
/// assert!((6800..7200).contains(&kept));
/// ```
pub fn keep_mask<R: rand::Rng + ?Sized>(n: usize, p: f64, rng: &mut R) -> Vec<bool> {
    let mut m = vec![false; n];
    draw(p, rng, &mut m, true, false);
    m
}

/// Inverted dropout in place on values that are not on a tape (constant input features,
/// the stored values of a sparse matrix): each value is kept with probability `1 - p`
/// and scaled by `1 / (1 - p)`, or set to zero; `p = 1` zeroes everything. The mask is
/// [`keep_mask`]'s for `values.len()` elements (one draw from `rng`), drawn and applied
/// over rayon's threads from a million values, compiled for the widest vectors.
///
/// Errors with [`AdError::InvalidArgument`] unless `0 <= p <= 1` (the values are then
/// untouched and `rng` has not moved).
///
/// ```
/// use rand::SeedableRng;
/// let mut v = vec![2.0f32; 1000];
/// shade_autodiff::tensor::dropout_in_place(&mut v, 0.5, &mut rand::rngs::StdRng::seed_from_u64(1))?;
/// let m = shade_autodiff::tensor::keep_mask(1000, 0.5, &mut rand::rngs::StdRng::seed_from_u64(1));
/// assert!(v.iter().zip(&m).all(|(&v, &k)| v == if k { 4.0 } else { 0.0 }));
/// assert!(shade_autodiff::tensor::dropout_in_place(&mut v, 1.5, &mut rand::rngs::StdRng::seed_from_u64(1)).is_err());
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
pub fn dropout_in_place<T: Element, R: rand::Rng + ?Sized>(
    values: &mut [T],
    p: f64,
    rng: &mut R,
) -> AdResult<()> {
    let keep: T = keep_factor("dropout_in_place", p)?;
    let n = values.len();
    let mut mask = vec![0usize; n.div_ceil(WORD)];
    draw_bits(p, rng, n, &mut mask);
    par::pieces(values, WORD, n, par::SPLIT_MIN, |o, vals| {
        let words = &mask[o / WORD..];
        simd::wide(
            #[inline(always)]
            || {
                for (vals, &w) in vals.chunks_mut(WORD).zip(words) {
                    for (j, v) in vals.iter_mut().enumerate() {
                        *v = if (w >> j) & 1 != 0 {
                            *v * keep
                        } else {
                            T::zero()
                        };
                    }
                }
            },
        );
    });
    Ok(())
}

/// Backward record of dropout.
#[derive(Debug)]
pub(crate) struct Rec<T> {
    a: usize,
    /// The kept elements, one bit each in the input's logical order ([`bits_at`]): a
    /// 32nd of a mask of `f32` factors (256 MiB less for a `[1M, 64]` hidden layer).
    mask: Vec<usize>,
    /// The factor of a kept element, `1 / (1 - p)`.
    keep: T,
}

impl<T: Element> Rec<T> {
    pub(crate) fn inputs(&self) -> smallvec::SmallVec<[usize; 4]> {
        smallvec::smallvec![self.a]
    }

    pub(crate) fn release(self, pool: &mut Pool<T>) {
        pool.give_idx(self.mask);
    }

    pub(crate) fn backward(&self, _me: usize, g: ArrayViewD<'_, T>, bw: &mut Bwd<'_, '_, T>) {
        let x = bw.vals[self.a].view();
        if let Some((mut ga, fresh)) = bw.gs.acc_or_fresh(self.a, x.shape()) {
            let d = ga.as_slice_mut().expect("adjoints are in standard layout");
            // A fresh adjoint is written, `0 + g·m` (the bits of adding to zeros).
            let start = |d: &T| if fresh { T::zero() } else { *d };
            let (mask, keep) = (&self.mask[..], self.keep);
            match g.as_slice() {
                Some(g) => masked(mask, keep, d, g, |d, g, m| *d = start(d) + g * m),
                None => d
                    .iter_mut()
                    .zip(g.iter())
                    .enumerate()
                    .for_each(|(i, (d, &g))| {
                        *d = start(d) + g * factor(mask[i / WORD], i % WORD, keep)
                    }),
            }
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    /// Zeroes each element with probability `p` and scales the rest by `1 / (1 - p)`
    /// when `training`; returns `x` itself otherwise. `p = 1` zeroes everything. The
    /// mask is [`keep_mask`]'s (one draw from `rng` per call).
    ///
    /// Errors with [`AdError::InvalidArgument`] unless `0 <= p <= 1`.
    #[track_caller]
    pub fn dropout<R: rand::Rng + ?Sized>(
        &mut self,
        x: Var,
        p: f64,
        rng: &mut R,
        training: bool,
    ) -> AdResult<Var> {
        let ia = self.index(x)?;
        let keep: T = keep_factor("dropout", p)?;
        if !training || p == 0.0 {
            return Ok(x);
        }
        let v = self.vals[ia].view();
        let n = v.len();
        let mut mask = self.pool.idx(n.div_ceil(WORD));
        mask.resize(n.div_ceil(WORD), 0);
        draw_bits(p, rng, n, &mut mask);
        let apply = |pool: &mut Pool<T>, x: &ArrayViewD<'_, T>| match x.as_slice() {
            Some(xs) => {
                // Every element is written.
                let mut out = pool.overwritten(x.shape());
                let os = out.as_slice_mut().expect("standard layout");
                masked(&mask, keep, os, xs, |o, x, m| *o = x * m);
                out
            }
            None => pool.collect(
                x.shape(),
                x.iter()
                    .enumerate()
                    .map(|(i, &x)| x * factor(mask[i / WORD], i % WORD, keep)),
            ),
        };
        let out = apply(&mut self.pool, &v);
        let tracked = self.tracked[ia];
        let mut tan = Tan::None;
        if self.forward()
            && let Some(ta) = self.tans[ia].view()
        {
            tan = Tan::Own(apply(&mut self.pool, &ta));
        }
        let rec = Rec { a: ia, mask, keep };
        Ok(self.push(out, tracked, Op::Dropout(rec), tan))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn keep_mask_keeps_the_expected_fraction_and_is_seeded() {
        let mask = |seed, p| keep_mask(10_000, p, &mut StdRng::seed_from_u64(seed));
        let m = mask(3, 0.3);
        let kept = m.iter().filter(|&&k| k).count() as f64 / 1e4;
        assert!((kept - 0.7).abs() < 0.02, "{kept}");
        assert_eq!(m, mask(3, 0.3));
        assert_ne!(m, mask(4, 0.3));
        assert!(mask(3, 0.0).iter().all(|&k| k));
        assert!(mask(3, 1.0).iter().all(|&k| !k));
        assert!(mask(3, f64::NAN).iter().all(|&k| k));
        // An odd length draws its last element from a fresh 64-bit value.
        assert_eq!(keep_mask(7, 0.5, &mut StdRng::seed_from_u64(9)).len(), 7);
        // Two masks from one stream differ (a fresh seed per call), and each call
        // moves the stream by exactly one value.
        let mut rng = StdRng::seed_from_u64(5);
        let a = keep_mask(64, 0.5, &mut rng);
        let b = keep_mask(64, 0.5, &mut rng);
        assert_ne!(a, b);
        let mut two = StdRng::seed_from_u64(5);
        let _ = rand::Rng::next_u64(&mut two);
        assert_eq!(b, keep_mask(64, 0.5, &mut two));
    }

    /// The mask is SplitMix64's sequential stream (the state moved on by `γ` per
    /// 64-bit value, high half first), on every level this processor runs, for every
    /// length around the vector widths and odd lengths.
    #[test]
    fn every_level_draws_the_sequential_stream() {
        let mut want = Vec::new();
        for n in (0..70).chain([1000, 1001]) {
            for (seed, p) in [(3u64, 0.5), (u64::MAX, 0.2), (17, 0.0), (5, 1.0)] {
                let cut = (p * 4_294_967_296.0) as u64;
                let mut state = seed;
                want.clear();
                while want.len() < n {
                    state = state.wrapping_add(GAMMA);
                    let r = mix(state);
                    want.push((r >> 32) >= cut);
                    want.push((r & 0xffff_ffff) >= cut);
                }
                want.truncate(n);
                for level in [Level::Base, Level::detect()] {
                    let mut got = vec![false; n];
                    draw_at(level, seed, cut, &mut got, true, false);
                    assert_eq!(got, want, "n = {n}, {level:?}");
                    let mut got = vec![7.0_f32; n];
                    draw_at(level, seed, cut, &mut got, 2.0, 0.0);
                    let as_bool: Vec<bool> = got.iter().map(|&v| v == 2.0).collect();
                    assert_eq!(as_bool, want, "f32, n = {n}, {level:?}");
                }
            }
        }
    }

    /// The tape's bit mask is `keep_mask`'s for every length around the word size, in
    /// the input's logical order for a column-major input, in both element types: the
    /// value `x · m` and the adjoint `g · m` (into a fresh adjoint and added to one
    /// that holds a sum: the input used twice).
    #[test]
    fn the_bit_mask_is_keep_mask_at_every_length_and_layout() {
        use crate::{Const, Duplicated};
        use ndarray::ShapeBuilder;
        fn check<T: Element>() {
            let lens = (0..3 * WORD + 3).chain([10 * WORD - 1, 10 * WORD, 10 * WORD + 1]);
            for n in lens {
                let keep = T::cst(1.0 / (1.0 - 0.35));
                let m = keep_mask(n, 0.35, &mut StdRng::seed_from_u64(n as u64));
                let f = |i: usize| if m[i] { keep } else { T::zero() };
                let x = ndarray::Array1::from_shape_fn(n, |i| T::cst(i as f64 * 0.5 - 3.0));
                let y = super::super::value(
                    &mut super::super::TapeBuffers::new(),
                    |t, (x,)| {
                        let mut rng = StdRng::seed_from_u64(n as u64);
                        t.dropout(x, 0.35, &mut rng, true)
                    },
                    (Const(&x),),
                )
                .unwrap();
                for (i, &v) in y.iter().enumerate() {
                    assert_eq!(v, x[i] * f(i), "n = {n}, [{i}]");
                }
                let w = x.mapv(|v| v + T::cst(0.25));
                let mut g = ndarray::Array1::zeros(n);
                super::super::gradient(
                    &mut super::super::TapeBuffers::new(),
                    |t, (x, w)| {
                        let mut rng = StdRng::seed_from_u64(n as u64);
                        let d = t.dropout(x, 0.35, &mut rng, true)?;
                        let p = t.mul(d, w)?;
                        let q = t.add(p, x)?;
                        t.sum(q)
                    },
                    (Duplicated(&x, &mut g), Const(&w)),
                )
                .unwrap();
                for (i, &gi) in g.iter().enumerate() {
                    // The sum's adjoint first (`+ x`), then the dropout's `w · m`.
                    assert_eq!(gi, T::one() + w[i] * f(i), "n = {n}, [{i}]");
                }
            }
            // Column-major `[r, c]`: the mask runs over the logical (row-major) order.
            let (r, c) = (9, 2 * WORD / 3);
            let x = ndarray::Array2::from_shape_fn((r, c).f(), |(i, j)| T::cst((i * c + j) as f64));
            assert!(x.as_slice().is_none());
            let m = keep_mask(r * c, 0.5, &mut StdRng::seed_from_u64(1));
            let y = super::super::value(
                &mut super::super::TapeBuffers::new(),
                |t, (x,)| t.dropout(x, 0.5, &mut StdRng::seed_from_u64(1), true),
                (Const(&x),),
            )
            .unwrap();
            for i in 0..r {
                for j in 0..c {
                    let want = if m[i * c + j] {
                        x[[i, j]] * T::cst(2.0)
                    } else {
                        T::zero()
                    };
                    assert_eq!(y[[i, j]], want, "[{i}, {j}]");
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }

    /// The tape's mask is `keep_mask`'s for the same stream, scaled by `1 / (1 - p)`.
    #[test]
    fn tape_dropout_applies_keep_mask() {
        let x = ndarray::Array2::<f64>::ones((37, 11));
        let y = super::super::value(
            &mut super::super::TapeBuffers::new(),
            |t, (x,)| t.dropout(x, 0.4, &mut StdRng::seed_from_u64(2), true),
            (crate::Const(&x),),
        )
        .unwrap();
        let m = keep_mask(x.len(), 0.4, &mut StdRng::seed_from_u64(2));
        for (&v, k) in y.iter().zip(m) {
            assert_eq!(v, if k { 1.0 / 0.6 } else { 0.0 });
        }
    }
}
