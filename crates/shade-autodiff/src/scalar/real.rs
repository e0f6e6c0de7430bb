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
    /// The `f64` value is accurate to about double precision (a series below 2.5, a
    /// continued fraction of `erfc` beyond), exactly odd; the derivative `2/√π e^{-x²}`
    /// is exact.
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

/// `erf(x)` to about double precision: the Maclaurin series for `|x| < 2.5`, one
/// minus the continued fraction of `erfc` beyond (`erf(±∞) = ±1`, `erf(NaN) = NaN`).
///
/// Exactly odd and continuous: an earlier Chebyshev fit of `erfc` (absolute error
/// ~1e-7) gave `erf(0) ≠ 0` and a jump at 0 of twice that, which central differences
/// across 0 saw as a derivative off by 0.3%.
#[inline]
pub(crate) fn erf_f64(x: f64) -> f64 {
    let z = x.abs();
    if z < 2.5 {
        // 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1)); the largest term at 2.5 is about 16,
        // so cancellation costs about one digit.
        let x2 = x * x;
        let (mut term, mut sum) = (x, x);
        for n in 1..64 {
            term *= -x2 / n as f64;
            let t = term / (2 * n + 1) as f64;
            sum += t;
            if t.abs() <= 1e-17 * sum.abs() {
                break;
            }
        }
        return sum * core::f64::consts::FRAC_2_SQRT_PI;
    }
    if z.is_nan() {
        return x;
    }
    if z > 6.0 {
        // erfc(6) < 2.2e-17: below half an ulp of 1.
        return x.signum();
    }
    // erfc(z) = exp(-z²) / (√π f), f = z + (1/2)/(z + (2/2)/(z + (3/2)/(z + ...))),
    // by the modified Lentz algorithm.
    let tiny = 1e-300;
    let (mut f, mut c, mut d) = (z, z, 0.0f64);
    for n in 1..300 {
        let a = n as f64 * 0.5;
        d = z + a * d;
        d = 1.0 / if d.abs() < tiny { tiny } else { d };
        c = z + a / c;
        if c.abs() < tiny {
            c = tiny;
        }
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    let erfc = (-z * z).exp() / (f * core::f64::consts::PI.sqrt());
    (1.0 - erfc).copysign(x)
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
            assert!((erf_f64(x) - want).abs() < 1e-10, "erf({x})");
        }
        // More digits (mpmath), on both sides of the switch at 2.5.
        for (x, want) in [
            (1e-8, 1.128_379_167_095_512_6e-8),
            (0.1, 0.112_462_916_018_284_89),
            (2.4, 0.999_311_486_103_354_9),
            (2.5, 0.999_593_047_982_555),
            (3.0, 0.999_977_909_503_001_4),
            (4.5, 0.999_999_999_803_383_9),
        ] {
            let e = erf_f64(x);
            assert!((e - want).abs() <= 2e-15 * want.abs(), "erf({x}) = {e:e}");
            assert_eq!(erf_f64(-x), -e, "odd at {x}");
        }
        assert_eq!(erf_f64(0.0), 0.0);
        assert_eq!(
            (erf_f64(f64::INFINITY), erf_f64(f64::NEG_INFINITY)),
            (1.0, -1.0)
        );
        assert!(erf_f64(f64::NAN).is_nan());
        // Continuous across the switch: the two formulas agree to rounding.
        let (below, above) = (erf_f64(2.5 - 1e-12), erf_f64(2.5));
        assert!((above - below).abs() < 1e-14, "{below} {above}");
    }

    #[test]
    fn f64_dot_handles_remainders_and_unequal_lengths() {
        let a: Vec<f64> = (0..7).map(f64::from).collect();
        let b = vec![2.0; 9];
        assert_eq!(f64::dot(&a, &b), 42.0);
        assert_eq!(f64::sum_of(&a), 21.0);
    }
}
