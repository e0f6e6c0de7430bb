//! The [`Real`] number trait that user code is written against, its `f64` instance, and
//! the [`ScalarRule`] trait for user-supplied derivative rules.

use core::fmt::Debug;
use core::iter::Sum;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Sub, SubAssign};
use num_traits::{Float, FloatConst};

/// A real number that the engine can differentiate through.
///
/// Write numeric code once against `S: Real`; instantiated with `f64` it is the plain
/// function (every method below is `#[inline]` and compiles to the `f64` operation), with
/// [`Dual`](crate::scalar::Dual)/[`DualVec`](crate::scalar::DualVec) it computes
/// tangents, with [`Var`](crate::scalar::Var) it records a tape for reverse mode, and
/// nestings give second derivatives.
///
/// Beyond num-traits' [`Float`] (every elementary function, comparisons on values),
/// `Real` mixes with `f64` constants on the right: `x * 2.0`, `x + c`, `x / c`. Constants
/// on the left go through [`Real::cst`]: `S::cst(2.0) * x`.
///
/// `f32` is not an instance: Rust forbids implementing `Add<f64>` for `f32`.
///
/// ```
/// use shade_autodiff::scalar::Real;
///
/// fn softplus<S: Real>(x: S) -> S {
///     (x.exp() + 1.0).ln()
/// }
/// assert!((softplus(0.0_f64) - 2.0_f64.ln()).abs() < 1e-15);
/// ```
pub trait Real:
    Float
    + FloatConst
    + Debug
    + Default
    + Sum
    + Add<f64, Output = Self>
    + Sub<f64, Output = Self>
    + Mul<f64, Output = Self>
    + Div<f64, Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
{
    /// The constant `c` (no derivative).
    fn cst(c: f64) -> Self;

    /// The primal value as `f64`, through every level of nesting.
    ///
    /// A plain number carries no derivative. Reading a recorded reverse-mode
    /// [`Var`](crate::scalar::Var) (at any level of nesting) while it records is
    /// therefore refused: the derivative of that recording fails with
    /// [`AdError::TrackedValueRead`](crate::AdError::TrackedValueRead), naming this
    /// call, because a number computed from the value and fed back would cut the
    /// gradient silently. Compute with `Real` operations instead; to read on purpose,
    /// [`detach`](Real::detach) first (`x.detach().value()`). Comparisons (`x > 0.0`)
    /// are not reads: a branch keeps the derivative of the branch taken.
    ///
    /// ```
    /// use shade_autodiff::scalar::{gradient, shade_fn, Real};
    ///
    /// // A step size taken from the value: a constant by request.
    /// fn damped<S: Real>(x: &[S]) -> S {
    ///     let c = 1.0 / (1.0 + x[0].detach().value().abs());
    ///     x[0] * x[0] * c
    /// }
    /// assert_eq!(gradient(shade_fn!(damped(&[S])), &[1.0], ())?, vec![1.0]);
    ///
    /// // The same number read without `detach`: refused, not a silently cut gradient.
    /// fn cut<S: Real>(x: &[S]) -> S {
    ///     let c = 1.0 / (1.0 + x[0].value().abs());
    ///     x[0] * x[0] * c
    /// }
    /// let e = gradient(shade_fn!(cut(&[S])), &[1.0], ()).unwrap_err();
    /// assert_eq!(e.code(), "SHADE-E0115");
    /// # Ok::<(), shade_autodiff::AdError>(())
    /// ```
    #[track_caller]
    fn value(&self) -> f64;

    /// This number cut from the derivative: the same value as a constant, with no
    /// derivative (PyTorch's `x.detach()`, JAX's `jax.lax.stop_gradient`), at every
    /// level of nesting. Its [`value`](Real::value) may be read while recording.
    fn detach(self) -> Self;

    /// The error function `erf(x) = 2/√π ∫₀ˣ e^{-t²} dt`.
    ///
    /// The `f64` value has a relative error below `1.2e-7` (a Chebyshev fit of `erfc`);
    /// the derivative `2/√π e^{-x²}` is exact.
    fn erf(self) -> Self;

    /// `Σ a[i] * b[i]` over the common length of `a` and `b`.
    ///
    /// Reverse mode records one tape entry for the whole sum instead of two per term;
    /// prefer it to a hand-written loop in hot code.
    #[inline]
    fn dot(a: &[Self], b: &[Self]) -> Self {
        let mut acc = Self::zero();
        for (x, y) in a.iter().zip(b) {
            acc += *x * *y;
        }
        acc
    }

    /// `Σ a[i]`; reverse mode records one tape entry for the whole sum.
    #[inline]
    fn sum_of(a: &[Self]) -> Self {
        let mut acc = Self::zero();
        for x in a {
            acc += *x;
        }
        acc
    }

    /// `Σ a[i]²`; reverse mode records one tape entry (no partials stored).
    #[inline]
    fn sum_sq(a: &[Self]) -> Self {
        Self::dot(a, a)
    }

    /// `ln Σ exp(a[i])`, computed stably (shifted by the largest entry); `-∞` for an
    /// empty slice. Reverse mode records one tape entry whose partials are the softmax.
    ///
    /// ```
    /// use shade_autodiff::scalar::Real;
    ///
    /// let y = f64::logsumexp(&[1000.0, 1000.0]);
    /// assert!((y - (1000.0 + 2f64.ln())).abs() < 1e-12);
    /// ```
    #[inline]
    fn logsumexp(a: &[Self]) -> Self {
        let mx = a
            .iter()
            .copied()
            .fold(Self::neg_infinity(), |m, x| if x > m { x } else { m });
        if !mx.is_finite() {
            return mx;
        }
        let mut s = Self::zero();
        for &x in a {
            s += (x - mx).exp();
        }
        s.ln() + mx
    }

    /// Applies a function with user-supplied derivative rules to `x`.
    ///
    /// Forward modes call [`ScalarRule::forward`], reverse mode calls
    /// [`ScalarRule::reverse`]; the engine never looks inside [`ScalarRule::primal`].
    fn custom<R: ScalarRule<N>, const N: usize>(rule: &R, x: [Self; N]) -> Self;
}

/// A scalar function `ℝᴺ → ℝ` with its own forward and reverse rule, in the spirit of
/// EnzymeRules / ChainRules.
///
/// Apply it with [`Real::custom`]; every number type uses the rules, so the function is
/// differentiated by them in forward mode, in reverse mode and in nestings (the rules
/// are generic over `S: Real`, so they are themselves differentiable).
///
/// ```
/// use shade_autodiff::scalar::{Real, ScalarRule, derivative, shade_fn};
///
/// /// `ln(1 + eˣ)` evaluated stably, with derivative `σ(x)`.
/// struct Softplus;
/// impl ScalarRule<1> for Softplus {
///     fn primal<S: Real>(&self, [x]: [S; 1]) -> S {
///         x.max(S::zero()) + (-x.abs()).exp().ln_1p()
///     }
///     fn forward<S: Real>(&self, [x]: [S; 1], _y: S, [dx]: [S; 1]) -> S {
///         dx / ((-x).exp() + 1.0)
///     }
///     fn reverse<S: Real>(&self, [x]: [S; 1], _y: S, dy: S) -> [S; 1] {
///         [dy / ((-x).exp() + 1.0)]
///     }
/// }
/// fn f<S: Real>(x: S) -> S {
///     S::custom(&Softplus, [x * 2.0])
/// }
/// let d = derivative(shade_fn!(f(S)), 0.0, ()).unwrap();
/// assert!((d - 1.0).abs() < 1e-12); // 2 σ(0)
/// ```
pub trait ScalarRule<const N: usize> {
    /// The function's value.
    fn primal<S: Real>(&self, x: [S; N]) -> S;
    /// The tangent of the result for input tangents `dx` (a Jacobian-vector product);
    /// `y` is the primal result.
    fn forward<S: Real>(&self, x: [S; N], y: S, dx: [S; N]) -> S;
    /// The cotangents of the inputs for a result cotangent `dy` (a vector-Jacobian
    /// product); `y` is the primal result. Must be linear in `dy`.
    fn reverse<S: Real>(&self, x: [S; N], y: S, dy: S) -> [S; N];
}

/// `erfc(|x|)` by the Chebyshev fit of Numerical Recipes (relative error < 1.2e-7).
#[inline]
pub(crate) fn erf_f64(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 { 1.0 - erfc } else { erfc - 1.0 }
}

impl Real for f64 {
    #[inline(always)]
    fn cst(c: f64) -> Self {
        c
    }
    #[inline(always)]
    fn value(&self) -> f64 {
        *self
    }
    #[inline(always)]
    fn detach(self) -> Self {
        self
    }
    #[inline]
    fn erf(self) -> Self {
        erf_f64(self)
    }
    #[inline]
    fn dot(a: &[Self], b: &[Self]) -> Self {
        // Four accumulators let the compiler vectorise without reassociation licence.
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let mut acc = [0.0; 4];
        let mut ca = a.chunks_exact(4);
        let mut cb = b.chunks_exact(4);
        for (x, y) in (&mut ca).zip(&mut cb) {
            for l in 0..4 {
                acc[l] += x[l] * y[l];
            }
        }
        let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
            s += x * y;
        }
        s
    }
    #[inline]
    fn custom<R: ScalarRule<N>, const N: usize>(rule: &R, x: [Self; N]) -> Self {
        rule.primal(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_reference_values() {
        // Values from Abramowitz & Stegun, table 7.1.
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_8),
            (1.0, 0.842_700_792_9),
            (2.0, 0.995_322_265_0),
            (-1.0, -0.842_700_792_9),
        ] {
            assert!((erf_f64(x) - want).abs() < 2e-7, "erf({x})");
        }
    }

    #[test]
    fn f64_dot_handles_remainders_and_unequal_lengths() {
        let a: Vec<f64> = (0..7).map(f64::from).collect();
        let b = vec![2.0; 9];
        assert_eq!(f64::dot(&a, &b), 42.0);
        assert_eq!(f64::sum_of(&a), 21.0);
    }
}
