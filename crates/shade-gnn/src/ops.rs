//! Dropout's fast mask: inverted dropout whose mask comes from a counter-based
//! generator (SplitMix64) seeded by one draw from the caller's RNG, four 16-bit draws
//! per 64 bits, and the same generator as a plain keep mask (APPNP's edge dropout).
//! Rules: `dX += G ⊙ M`, `Ẏ = Ẋ ⊙ M`.

use crate::ctx::Float;
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn};
use rand::Rng;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, TensorRule, Var};
use shade_autodiff::{AdError, AdResult};

struct MaskMul<T> {
    mask: Vec<T>,
}

impl<T: Float> TensorRule<T> for MaskMul<T> {
    fn name(&self) -> &'static str {
        "dropout"
    }

    fn forward(&self, x: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>> {
        let xs = x[0].as_standard_layout();
        let v: Vec<T> = xs
            .as_slice()
            .expect("standard layout")
            .iter()
            .zip(&self.mask)
            .map(|(&a, &m)| a * m)
            .collect();
        Ok(ArrayD::from_shape_vec(IxDyn(x[0].shape()), v).expect("same length"))
    }

    fn vjp(
        &self,
        _x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        g: ArrayViewD<'_, T>,
        _input: usize,
        mut dx: ArrayViewMutD<'_, T>,
    ) {
        let gs = g.as_standard_layout();
        let g = gs.as_slice().expect("standard layout");
        match dx.as_slice_mut() {
            Some(d) => d
                .iter_mut()
                .zip(g.iter().zip(&self.mask))
                .for_each(|(d, (&g, &m))| *d += g * m),
            None => dx
                .iter_mut()
                .zip(g.iter().zip(&self.mask))
                .for_each(|(d, (&g, &m))| *d += g * m),
        }
    }

    fn jvp(
        &self,
        _x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        t: &[Option<ArrayViewD<'_, T>>],
        mut ty: ArrayViewMutD<'_, T>,
    ) {
        if let Some(t) = &t[0] {
            ty.iter_mut()
                .zip(t.iter().zip(&self.mask))
                .for_each(|(o, (&a, &m))| *o = a * m);
        }
    }
}

#[inline]
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Inverted dropout: in training every element is zeroed with probability `p`
/// (resolution 2⁻¹⁶) and the rest scaled by `1 / (1 - p)`; the identity otherwise.
///
/// Errors with [`AdError::InvalidArgument`] unless `0 <= p < 1`.
pub(crate) fn dropout<T: Float>(
    t: &mut Tape<'_, T>,
    x: Var,
    p: f64,
    rng: &mut StdRng,
    training: bool,
) -> AdResult<Var> {
    if !(0.0..1.0).contains(&p) {
        return Err(AdError::InvalidArgument {
            op: "dropout",
            what: format!("the drop probability must lie in [0, 1), got {p}"),
        });
    }
    if !training || p == 0.0 {
        return Ok(x);
    }
    let n = t.shape(x)?.iter().product::<usize>();
    let threshold = (p * 65536.0).round() as u64;
    let keep = T::cst(1.0 / (1.0 - p));
    let mut state = rng.next_u64();
    let mut mask = vec![T::zero(); n];
    let vals = [T::zero(), keep];
    for chunk in mask.chunks_mut(4) {
        let r = splitmix(&mut state);
        for (k, m) in chunk.iter_mut().enumerate() {
            let d = (r >> (16 * k)) & 0xffff;
            *m = vals[usize::from(d >= threshold)];
        }
    }
    t.custom(MaskMul { mask }, &[x])
}

/// A keep mask of `n` entries for a drop probability `p` in `[0, 1)`, from the same
/// counter-based generator as [`dropout`] (one draw from `rng`, then SplitMix64, four
/// 16-bit draws per 64 bits): entry `i` is kept (`true`) unless its draw falls below
/// `p` (resolution 2⁻¹⁶). For masks applied to something other than a tape value,
/// e.g. the edge values of a propagation matrix.
///
/// The caller validates `p`; outside `[0, 1)` the mask keeps nothing (`p >= 1`) or
/// everything (`p <= 0`, NaN).
pub(crate) fn keep_mask(n: usize, p: f64, rng: &mut StdRng) -> Vec<bool> {
    let threshold = (p.clamp(0.0, 1.0) * 65536.0).round() as u64;
    let mut state = rng.next_u64();
    let mut mask = vec![false; n];
    for chunk in mask.chunks_mut(4) {
        let r = splitmix(&mut state);
        for (k, m) in chunk.iter_mut().enumerate() {
            *m = ((r >> (16 * k)) & 0xffff) >= threshold;
        }
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use shade_autodiff::Const;
    use shade_autodiff::tensor::{self, TapeBuffers};

    #[test]
    fn dropout_keeps_the_expected_fraction_and_is_seeded() {
        let x = ndarray::Array2::<f64>::ones((100, 100));
        let run = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            tensor::value(
                &mut TapeBuffers::new(),
                |t, (x,)| dropout(t, x, 0.3, &mut rng, true),
                (Const(&x),),
            )
            .unwrap()
        };
        let y = run(1);
        let kept = y.iter().filter(|&&v| v != 0.0).count() as f64 / 1e4;
        assert!((kept - 0.7).abs() < 0.02, "{kept}");
        assert!(y.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.7).abs() < 1e-12));
        assert_eq!(y, run(1));
        assert_ne!(y, run(2));
        let e = tensor::value(
            &mut TapeBuffers::new(),
            |t, (x,)| dropout(t, x, 1.0, &mut StdRng::seed_from_u64(0), true),
            (Const(&x),),
        )
        .unwrap_err();
        assert_eq!(e.code(), "SHADE-E0114");
    }

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
        // Two draws from one stream differ (a fresh mask per call).
        let mut rng = StdRng::seed_from_u64(5);
        assert_ne!(keep_mask(64, 0.5, &mut rng), keep_mask(64, 0.5, &mut rng));
    }
}
