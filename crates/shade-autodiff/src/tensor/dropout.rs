//! Dropout with an explicit random number generator and inverted scaling, and the one
//! mask generator of shade ([`keep_mask`]).
//!
//! In training each element is kept with probability `1 - p` and scaled by
//! `1 / (1 - p)`, so the expectation is unchanged; the mask is kept for the reverse
//! rule (`dx += g ⊙ mask`) and the forward rule (`ẏ = ẋ ⊙ mask`). At evaluation
//! (`training = false`) dropout is the identity and returns its input handle.
//!
//! The mask comes from a counter-based generator (SplitMix64) seeded by one draw from
//! the caller's RNG: two 32-bit draws per 64 bits, an element dropped when its draw is
//! below `p · 2³²`. One draw per call keeps the caller's stream independent of the
//! array's size, and the generator costs about a nanosecond per two elements.

use super::tape::{Bwd, Op, Pool, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::ArrayViewD;

/// One step of SplitMix64 (Steele, Lea and Flood, 2014).
#[inline]
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Calls `keep` for `n` elements in order with whether each is kept: one draw from
/// `rng` seeds the stream, an element is dropped when its 32-bit draw is below
/// `p · 2³²` (so `p <= 0` keeps all, `p >= 1` drops all).
fn draw<R: rand::Rng + ?Sized>(n: usize, p: f64, rng: &mut R, mut keep: impl FnMut(bool)) {
    let cut = (p.clamp(0.0, 1.0) * 4_294_967_296.0) as u64;
    let mut state = rng.next_u64();
    for _ in 0..n / 2 {
        let r = splitmix(&mut state);
        keep((r >> 32) >= cut);
        keep((r & 0xffff_ffff) >= cut);
    }
    if n % 2 == 1 {
        keep((splitmix(&mut state) >> 32) >= cut);
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
    let mut m = Vec::with_capacity(n);
    draw(n, p, rng, |k| m.push(k));
    m
}

/// Backward record of dropout.
#[derive(Debug)]
pub(crate) struct Rec<T> {
    a: usize,
    /// `0` or `1 / (1 - p)` per element, in the input's logical order.
    mask: Vec<T>,
}

impl<T: Element> Rec<T> {
    pub(crate) fn inputs(&self) -> smallvec::SmallVec<[usize; 4]> {
        smallvec::smallvec![self.a]
    }

    pub(crate) fn release(self, pool: &mut Pool<T>) {
        pool.give_vec(self.mask);
    }

    pub(crate) fn backward(&self, _me: usize, g: ArrayViewD<'_, T>, bw: &mut Bwd<'_, '_, T>) {
        let x = bw.vals[self.a].view();
        if let Some(mut ga) = bw.gs.acc(self.a, x.shape()) {
            let d = ga.as_slice_mut().expect("adjoints are in standard layout");
            match g.as_slice() {
                Some(g) => d
                    .iter_mut()
                    .zip(g.iter().zip(&self.mask))
                    .for_each(|(d, (&g, &m))| *d += g * m),
                None => d
                    .iter_mut()
                    .zip(g.iter().zip(&self.mask))
                    .for_each(|(d, (&g, &m))| *d += g * m),
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
        if !(0.0..=1.0).contains(&p) {
            return Err(AdError::InvalidArgument {
                op: "dropout",
                what: format!("the drop probability must lie in [0, 1], got {p}"),
            });
        }
        if !training || p == 0.0 {
            return Ok(x);
        }
        let v = self.vals[ia].view();
        let keep = if p < 1.0 {
            T::cst(1.0 / (1.0 - p))
        } else {
            T::zero()
        };
        let mut mask = self.pool.vec(v.len());
        draw(v.len(), p, rng, |k| {
            mask.push(if k { keep } else { T::zero() })
        });
        let out = self.pool.map_with(&v, &mask, |x, m| x * m);
        let tracked = self.tracked[ia];
        let mut tan = Tan::None;
        if self.forward()
            && let Some(ta) = self.tans[ia].view()
        {
            let t = self.pool.map_with(&ta, &mask, |t, m| t * m);
            tan = Tan::Own(t);
        }
        Ok(self.push(out, tracked, Op::Dropout(Rec { a: ia, mask }), tan))
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
