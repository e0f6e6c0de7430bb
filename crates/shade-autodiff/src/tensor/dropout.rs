//! Dropout with an explicit random number generator and inverted scaling.
//!
//! In training each element is kept with probability `1 - p` and scaled by
//! `1 / (1 - p)`, so the expectation is unchanged; the mask is kept for the reverse
//! rule (`dx += g ⊙ mask`) and the forward rule (`ẏ = ẋ ⊙ mask`). At evaluation
//! (`training = false`) dropout is the identity and returns its input handle.

use super::tape::{Bwd, Op, Pool, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::ArrayViewD;

/// Backward record of dropout.
#[derive(Debug)]
pub(crate) struct Rec<T> {
    a: usize,
    /// `0` or `1 / (1 - p)` per element, in the input's logical order.
    mask: Vec<T>,
}

impl<T: Element> Rec<T> {
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
    /// when `training`; returns `x` itself otherwise. `p = 1` zeroes everything.
    ///
    /// Errors with [`AdError::InvalidArgument`] unless `0 <= p <= 1`.
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
        // Two 32-bit draws per 64 random bits; drop when the draw is below p · 2³².
        let cut = (p * 4_294_967_296.0).min(u64::MAX as f64) as u64;
        let pick = |r: u64| if r < cut { T::zero() } else { keep };
        while mask.len() + 2 <= v.len() {
            let r = rng.next_u64();
            mask.push(pick(r >> 32));
            mask.push(pick(r & 0xffff_ffff));
        }
        if mask.len() < v.len() {
            mask.push(pick(rng.next_u64() >> 32));
        }
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
