//! Two tensor operations with hand-written rules (through the core's custom-rule
//! mechanism) that the layers use on their hot path:
//!
//! - [`transpose2`]: the transpose of a 2-D value in one cache-blocked pass (the
//!   weights are stored in PyTorch's `[out, in]` layout and multiplied as `X · Wᵀ`).
//! - [`dropout`]: inverted dropout whose mask comes from a fast counter-based
//!   generator (SplitMix64) seeded by one draw from the caller's RNG; four 16-bit
//!   draws per 64 bits.
//!
//! Rules: transpose `dX += Gᵀ`, `Ẏ = Ẋᵀ`; dropout `dX += G ⊙ M`, `Ẏ = Ẋ ⊙ M`.

use crate::ctx::Float;
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn};
use rand::Rng;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, TensorRule, Var};
use shade_autodiff::{AdError, AdResult};

const BLOCK: usize = 32;

/// `dst[j * r + i] (op)= src[i * c + j]` for an `r × c` row-major `src`, blocked.
fn transpose_into<T: Float>(src: &[T], r: usize, c: usize, dst: &mut [T], acc: bool) {
    for i0 in (0..r).step_by(BLOCK) {
        for j0 in (0..c).step_by(BLOCK) {
            for i in i0..(i0 + BLOCK).min(r) {
                let row = &src[i * c..(i + 1) * c];
                for j in j0..(j0 + BLOCK).min(c) {
                    if acc {
                        dst[j * r + i] += row[j];
                    } else {
                        dst[j * r + i] = row[j];
                    }
                }
            }
        }
    }
}

struct Transpose2;

impl<T: Float> TensorRule<T> for Transpose2 {
    fn name(&self) -> &'static str {
        "transpose2"
    }

    fn forward(&self, x: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>> {
        let x = &x[0];
        if x.ndim() != 2 {
            return Err(AdError::RankMismatch {
                op: "transpose2",
                expected: 2,
                shape: x.shape().to_vec(),
            });
        }
        let (r, c) = (x.shape()[0], x.shape()[1]);
        let xs = x.as_standard_layout();
        let src = xs.as_slice().expect("standard layout");
        let mut out = vec![T::zero(); r * c];
        transpose_into(src, r, c, &mut out, false);
        Ok(ArrayD::from_shape_vec(IxDyn(&[c, r]), out).expect("c * r values"))
    }

    fn vjp(
        &self,
        _x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        g: ArrayViewD<'_, T>,
        _input: usize,
        mut dx: ArrayViewMutD<'_, T>,
    ) {
        // g is [c, r]; dx is [r, c].
        let (c, r) = (g.shape()[0], g.shape()[1]);
        let gs = g.as_standard_layout();
        let src = gs.as_slice().expect("standard layout");
        match dx.as_slice_mut() {
            Some(d) => transpose_into(src, c, r, d, true),
            None => dx.zip_mut_with(&gs.t(), |d, &v| *d += v),
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
            ty.assign(&t.t());
        }
    }
}

/// The transpose of a 2-D value.
pub(crate) fn transpose2<T: Float>(t: &mut Tape<'_, T>, x: Var) -> AdResult<Var> {
    t.custom(Transpose2, &[x])
}

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

struct AddBias;

impl<T: Float> TensorRule<T> for AddBias {
    fn name(&self) -> &'static str {
        "add_bias"
    }

    fn forward(&self, x: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>> {
        let (a, b) = (&x[0], &x[1]);
        let f = b.len();
        if a.ndim() != 2 || b.ndim() != 1 || a.shape()[1] != f {
            return Err(AdError::ShapeMismatch {
                op: "add_bias",
                left: a.shape().to_vec(),
                right: b.shape().to_vec(),
            });
        }
        let (as_, bs) = (a.as_standard_layout(), b.as_standard_layout());
        let bs = bs.as_slice().expect("standard layout");
        let mut out: Vec<T> = as_.as_slice().expect("standard layout").to_vec();
        if f > 0 {
            out.chunks_mut(f)
                .for_each(|r| r.iter_mut().zip(bs).for_each(|(o, &b)| *o += b));
        }
        Ok(ArrayD::from_shape_vec(IxDyn(a.shape()), out).expect("same shape"))
    }

    fn vjp(
        &self,
        _x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        g: ArrayViewD<'_, T>,
        input: usize,
        mut d: ArrayViewMutD<'_, T>,
    ) {
        let gs = g.as_standard_layout();
        let gs = gs.as_slice().expect("standard layout");
        let ds = d.as_slice_mut().expect("adjoints are in standard layout");
        if input == 0 {
            ds.iter_mut().zip(gs).for_each(|(d, &g)| *d += g);
        } else if !ds.is_empty() {
            gs.chunks(ds.len())
                .for_each(|r| ds.iter_mut().zip(r).for_each(|(d, &g)| *d += g));
        }
    }

    fn jvp(
        &self,
        x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        t: &[Option<ArrayViewD<'_, T>>],
        mut ty: ArrayViewMutD<'_, T>,
    ) {
        if let Some(ta) = &t[0] {
            ty += ta;
        }
        if let Some(tb) = &t[1] {
            let f = x[1].len();
            let tb = tb.as_standard_layout();
            let tb = tb.as_slice().expect("standard layout");
            if let Some(o) = ty.as_slice_mut()
                && f > 0
            {
                o.chunks_mut(f)
                    .for_each(|r| r.iter_mut().zip(tb).for_each(|(o, &b)| *o += b));
            }
        }
    }
}

/// `x + b` for `x` `[N, F]` and a bias `b` `[F]` added to every row.
pub(crate) fn add_bias<T: Float>(t: &mut Tape<'_, T>, x: Var, b: Var) -> AdResult<Var> {
    t.custom(AddBias, &[x, b])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use shade_autodiff::tensor::{self, TapeBuffers};
    use shade_autodiff::{Const, Duplicated};

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

    /// The first column of `w` (`[c]`), a bias for `add_bias`.
    fn w_row(t: &mut Tape<'_, f64>, w: Var) -> AdResult<Var> {
        let c = t.shape(w)?[0];
        let r = t.narrow(w, 1, 0, 1)?;
        t.reshape(r, &[c])
    }

    proptest! {
        /// The rules against finite differences (dropout is linear given its mask)
        /// and the transpose against ndarray's.
        #[test]
        fn rules_match_finite_differences(r in 1usize..40, c in 1usize..40, seed in 0u64..100) {
            let x = crate::testing::random_features(r, c, seed).into_dyn();
            let w = crate::testing::random_features(c, r, seed + 1).into_dyn();
            let f = |x: &ArrayD<f64>, dx: Option<&mut ArrayD<f64>>| {
                let prog = |t: &mut Tape<'_, f64>, x: Var, w: Var| -> AdResult<Var> {
                    let b = w_row(t, w)?;
                    let x = add_bias(t, x, b)?;
                    let xt = transpose2(t, x)?;
                    let d = dropout(t, xt, 0.4, &mut StdRng::seed_from_u64(seed), true)?;
                    let m = t.mul(d, w)?;
                    let m = t.mul(m, m)?;
                    t.sum(m)
                };
                let mut b = TapeBuffers::new();
                match dx {
                    Some(dx) => tensor::gradient(&mut b, |t, (x, w)| prog(t, x, w), (Duplicated(x, dx), Const(&w))),
                    None => tensor::value(&mut b, |t, (x, w)| prog(t, x, w), (Const(x), Const(&w))).map(|v| v.sum()),
                }
            };
            let mut dx = ArrayD::zeros(x.raw_dim());
            f(&x, Some(&mut dx)).unwrap();
            for j in (0..x.len()).step_by(7) {
                let (mut a, mut b) = (x.clone(), x.clone());
                a.as_slice_mut().unwrap()[j] += 1e-6;
                b.as_slice_mut().unwrap()[j] -= 1e-6;
                let fd = (f(&a, None).unwrap() - f(&b, None).unwrap()) / 2e-6;
                let g = dx.as_slice().unwrap()[j];
                prop_assert!((g - fd).abs() <= 1e-6 + 1e-6 * fd.abs(), "{j}: {g} vs {fd}");
            }
            let y = tensor::value(&mut TapeBuffers::new(), |t, (x,)| transpose2(t, x), (Const(&x),)).unwrap();
            let x2 = x.clone().into_dimensionality::<ndarray::Ix2>().unwrap();
            prop_assert_eq!(y, x2.t().to_owned().into_dyn());
        }
    }
}
