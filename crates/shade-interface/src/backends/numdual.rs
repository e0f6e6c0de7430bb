//! The third-party backend [`AutoNumDual`] (feature `num-dual`): num-dual's `Dual64`
//! for first derivatives (one direction per evaluation) and `HyperDual64` for second
//! derivatives (one `uᵀ H v` per evaluation).
//!
//! The orphan rule forbids implementing shade's [`Real`] for num-dual's types, so the
//! transparent newtype [`NumDual<D>`] does it: every arithmetic operation and
//! elementary function is num-dual's own; only `erf` and custom rules
//! ([`Real::custom`]), which num-dual lacks, go through the isomorphic shade number type
//! (`Dual64` ≅ `Dual<f64>`, `HyperDual64` ≅ `Dual<Dual<f64>>`).

use super::generic::GenericBackend;
use crate::form::{ScalarForm, VecForm};
use bumpalo::Bump;
use core::cmp::Ordering;
use core::num::FpCategory;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, Sub, SubAssign};
use num_dual::{Dual64, DualNum, DualStruct, HyperDual64};
use num_traits::{Float, FloatConst, Num, NumCast, One, ToPrimitive, Zero};
use shade_autodiff::scalar::{Dual, Real, ScalarRule};

/// The marker, also at its former path `shade_interface::numdual::AutoNumDual`.
pub use crate::backend::AutoNumDual;

mod sealed {
    pub trait Sealed {}
    impl Sealed for num_dual::Dual64 {}
    impl Sealed for num_dual::HyperDual64 {}
}

/// A num-dual number type usable through [`NumDual`]: `Dual64` or `HyperDual64`.
pub trait NumDualNumber:
    sealed::Sealed + DualNum<Primitive = f64> + Copy + DualStruct<Real = f64>
{
    /// The isomorphic shade number type.
    type Shade: Real;
    /// To the shade type.
    fn to_shade(self) -> Self::Shade;
    /// From the shade type.
    fn from_shade(s: Self::Shade) -> Self;
    /// Whether every derivative part is zero.
    fn is_constant(&self) -> bool;
}

impl NumDualNumber for Dual64 {
    type Shade = Dual<f64>;
    #[inline]
    fn to_shade(self) -> Dual<f64> {
        Dual::new(self.re, self.eps)
    }
    #[inline]
    fn from_shade(s: Dual<f64>) -> Self {
        Dual64::new(s.v, s.d[0])
    }
    #[inline]
    fn is_constant(&self) -> bool {
        self.eps == 0.0
    }
}

impl NumDualNumber for HyperDual64 {
    type Shade = Dual<Dual<f64>>;
    #[inline]
    fn to_shade(self) -> Dual<Dual<f64>> {
        Dual::new(
            Dual::new(self.re, self.eps1),
            Dual::new(self.eps2, self.eps1eps2),
        )
    }
    #[inline]
    fn from_shade(s: Dual<Dual<f64>>) -> Self {
        HyperDual64::new(s.v.v, s.v.d[0], s.d[0].v, s.d[0].d[0])
    }
    #[inline]
    fn is_constant(&self) -> bool {
        self.eps1 == 0.0 && self.eps2 == 0.0 && self.eps1eps2 == 0.0
    }
}

/// A num-dual number seen as a shade [`Real`].
#[derive(Clone, Copy, Debug)]
pub struct NumDual<D>(pub D);

impl<D: NumDualNumber> NumDual<D> {
    #[inline]
    fn re(&self) -> f64 {
        DualStruct::re(&self.0)
    }
    #[inline]
    fn c(v: f64) -> Self {
        NumDual(D::from(v))
    }
}

impl<D: NumDualNumber> Default for NumDual<D> {
    fn default() -> Self {
        Self::c(0.0)
    }
}

impl<D: NumDualNumber> PartialEq for NumDual<D> {
    fn eq(&self, o: &Self) -> bool {
        self.re() == o.re()
    }
}

impl<D: NumDualNumber> PartialOrd for NumDual<D> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        self.re().partial_cmp(&o.re())
    }
}

macro_rules! binops {
    ($($tr:ident $m:ident $atr:ident $am:ident),*) => {$(
        impl<D: NumDualNumber> $tr for NumDual<D> {
            type Output = Self;
            #[inline]
            fn $m(self, o: Self) -> Self { NumDual($tr::$m(self.0, o.0)) }
        }
        impl<D: NumDualNumber> $tr<f64> for NumDual<D> {
            type Output = Self;
            #[inline]
            fn $m(self, o: f64) -> Self { NumDual($tr::$m(self.0, o)) }
        }
        impl<D: NumDualNumber> $atr for NumDual<D> {
            #[inline]
            fn $am(&mut self, o: Self) { self.0 = $tr::$m(self.0, o.0); }
        }
    )*};
}
binops!(Add add AddAssign add_assign, Sub sub SubAssign sub_assign, Mul mul MulAssign mul_assign, Div div DivAssign div_assign);

impl<D: NumDualNumber> Rem for NumDual<D> {
    type Output = Self;
    #[inline]
    fn rem(self, o: Self) -> Self {
        NumDual(self.0 % o.0)
    }
}

impl<D: NumDualNumber> Neg for NumDual<D> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        NumDual(-self.0)
    }
}

impl<D: NumDualNumber> core::iter::Sum for NumDual<D> {
    fn sum<I: Iterator<Item = Self>>(it: I) -> Self {
        it.fold(Self::c(0.0), |a, b| a + b)
    }
}

impl<D: NumDualNumber> Zero for NumDual<D> {
    fn zero() -> Self {
        Self::c(0.0)
    }
    fn is_zero(&self) -> bool {
        self.re() == 0.0 && self.0.is_constant()
    }
}

impl<D: NumDualNumber> One for NumDual<D> {
    fn one() -> Self {
        Self::c(1.0)
    }
}

impl<D: NumDualNumber> Num for NumDual<D> {
    type FromStrRadixErr = <f64 as Num>::FromStrRadixErr;
    fn from_str_radix(s: &str, radix: u32) -> Result<Self, Self::FromStrRadixErr> {
        f64::from_str_radix(s, radix).map(Self::c)
    }
}

impl<D: NumDualNumber> ToPrimitive for NumDual<D> {
    fn to_i64(&self) -> Option<i64> {
        self.re().to_i64()
    }
    fn to_u64(&self) -> Option<u64> {
        self.re().to_u64()
    }
    fn to_f64(&self) -> Option<f64> {
        Some(self.re())
    }
}

impl<D: NumDualNumber> NumCast for NumDual<D> {
    fn from<T: ToPrimitive>(n: T) -> Option<Self> {
        n.to_f64().map(Self::c)
    }
}

macro_rules! consts {
    ($($name:ident),*) => {
        impl<D: NumDualNumber> FloatConst for NumDual<D> {
            $(
                #[inline]
                fn $name() -> Self { Self::c(<f64 as FloatConst>::$name()) }
            )*
        }
    };
}
consts!(
    E,
    FRAC_1_PI,
    FRAC_1_SQRT_2,
    FRAC_2_PI,
    FRAC_2_SQRT_PI,
    FRAC_PI_2,
    FRAC_PI_3,
    FRAC_PI_4,
    FRAC_PI_6,
    FRAC_PI_8,
    LN_10,
    LN_2,
    LOG10_E,
    LOG2_E,
    PI,
    SQRT_2
);

macro_rules! unary {
    ($($name:ident),*) => {$(
        #[inline]
        fn $name(self) -> Self { NumDual(DualNum::$name(&self.0)) }
    )*};
}

macro_rules! constant_of_re {
    ($($name:ident),*) => {$(
        #[inline]
        fn $name(self) -> Self { Self::c(self.re().$name()) }
    )*};
}

macro_rules! re_pred {
    ($($name:ident),*) => {$(
        #[inline]
        fn $name(self) -> bool { self.re().$name() }
    )*};
}

/// `Float`'s constants: `f64`'s, as constants (zero derivative parts).
macro_rules! float_consts {
    ($($name:ident),*) => {$(
        fn $name() -> Self { Self::c(<f64 as Float>::$name()) }
    )*};
}

impl<D: NumDualNumber> Float for NumDual<D> {
    float_consts!(
        nan,
        infinity,
        neg_infinity,
        neg_zero,
        min_value,
        min_positive_value,
        max_value
    );
    re_pred!(
        is_nan,
        is_infinite,
        is_finite,
        is_normal,
        is_sign_positive,
        is_sign_negative
    );
    fn classify(self) -> FpCategory {
        self.re().classify()
    }
    constant_of_re!(floor, ceil, round, trunc, signum);
    fn fract(self) -> Self {
        self - Self::c(self.re().trunc())
    }
    fn abs(self) -> Self {
        if self.re() < 0.0 { -self } else { self }
    }
    fn mul_add(self, a: Self, b: Self) -> Self {
        self * a + b
    }
    unary!(
        recip, sqrt, exp, exp2, ln, log2, log10, cbrt, sin, cos, tan, asin, acos, atan, exp_m1,
        ln_1p, sinh, cosh, tanh, asinh, acosh, atanh
    );
    fn powi(self, n: i32) -> Self {
        NumDual(DualNum::powi(&self.0, n))
    }
    fn powf(self, n: Self) -> Self {
        if n.0.is_constant() {
            NumDual(DualNum::powf(&self.0, n.re()))
        } else {
            NumDual(DualNum::powd(&self.0, n.0))
        }
    }
    fn log(self, base: Self) -> Self {
        self.ln() / base.ln()
    }
    fn max(self, o: Self) -> Self {
        if self.re() >= o.re() || o.is_nan() {
            self
        } else {
            o
        }
    }
    fn min(self, o: Self) -> Self {
        if self.re() <= o.re() || o.is_nan() {
            self
        } else {
            o
        }
    }
    fn abs_sub(self, o: Self) -> Self {
        if self.re() > o.re() {
            self - o
        } else {
            Self::c(0.0)
        }
    }
    fn hypot(self, o: Self) -> Self {
        (self * self + o * o).sqrt()
    }
    fn atan2(self, o: Self) -> Self {
        NumDual(DualNum::atan2(&self.0, o.0))
    }
    fn sin_cos(self) -> (Self, Self) {
        let (s, c) = DualNum::sin_cos(&self.0);
        (NumDual(s), NumDual(c))
    }
    fn integer_decode(self) -> (u64, i16, i8) {
        self.re().integer_decode()
    }
}

impl<D: NumDualNumber> Real for NumDual<D> {
    #[inline]
    fn cst(c: f64) -> Self {
        Self::c(c)
    }
    #[inline]
    fn value(&self) -> f64 {
        self.re()
    }
    #[inline]
    fn detach(self) -> Self {
        Self::c(self.re())
    }
    fn erf(self) -> Self {
        NumDual(D::from_shade(self.0.to_shade().erf()))
    }
    fn custom<R: ScalarRule<N>, const N: usize>(rule: &R, x: [Self; N]) -> Self {
        NumDual(D::from_shade(<D::Shade as Real>::custom(
            rule,
            x.map(|xi| xi.0.to_shade()),
        )))
    }
}

/// Buffers of [`AutoNumDual`].
#[derive(Debug, Default)]
pub struct NumDualWork {
    bump: Bump,
    xd: Vec<NumDual<Dual64>>,
    yd: Vec<NumDual<Dual64>>,
    xh: Vec<NumDual<HyperDual64>>,
}

impl GenericBackend for AutoNumDual {
    type Work = NumDualWork;

    fn describe(&self) -> String {
        "num-dual's Dual64 (one direction per evaluation) / HyperDual64 (one uᵀHv per evaluation) through the NumDual newtype".into()
    }
    fn evals_per_jvp(&self) -> usize {
        1
    }
    fn evals_per_second(&self) -> usize {
        1
    }
    fn work_bytes(&self, w: &NumDualWork) -> usize {
        16 * (w.xd.capacity() + w.yd.capacity()) + 32 * w.xh.capacity() + w.bump.allocated_bytes()
    }
    fn value<V: VecForm<C>, C>(
        &self,
        w: &mut NumDualWork,
        f: &V,
        ctx: &C,
        x: &[f64],
        y: &mut [f64],
    ) {
        w.bump.reset();
        f.eval::<f64>(x, ctx, &w.bump, y);
    }
    fn jvp<V: VecForm<C>, C>(
        &self,
        w: &mut NumDualWork,
        f: &V,
        ctx: &C,
        x: &[f64],
        _: &[f64],
        dx: &[f64],
        dy: &mut [f64],
    ) {
        w.xd.clear();
        w.xd.extend(x.iter().zip(dx).map(|(&a, &b)| NumDual(Dual64::new(a, b))));
        w.yd.clear();
        w.yd.resize(f.outputs(), NumDual::c(0.0));
        w.bump.reset();
        f.eval(&w.xd, ctx, &w.bump, &mut w.yd);
        for (d, r) in dy.iter_mut().zip(&w.yd) {
            *d = r.0.eps;
        }
    }
    fn scalar_jvp<V: ScalarForm<C>, C>(
        &self,
        w: &mut NumDualWork,
        f: &V,
        ctx: &C,
        x: f64,
        y: &mut [f64],
        dy: &mut [f64],
    ) {
        w.yd.clear();
        w.yd.resize(f.outputs(), NumDual::c(0.0));
        w.bump.reset();
        f.eval(NumDual(Dual64::new(x, 1.0)), ctx, &w.bump, &mut w.yd);
        for ((yo, d), r) in y.iter_mut().zip(dy.iter_mut()).zip(&w.yd) {
            *yo = r.0.re;
            *d = r.0.eps;
        }
    }
    fn second<V: VecForm<C>, C>(
        &self,
        w: &mut NumDualWork,
        f: &V,
        ctx: &C,
        x: &[f64],
        u: &[f64],
        v: &[f64],
    ) -> f64 {
        w.xh.clear();
        w.xh.extend(
            x.iter()
                .zip(u)
                .zip(v)
                .map(|((&a, &b), &c)| NumDual(HyperDual64::new(a, b, c, 0.0))),
        );
        w.bump.reset();
        let mut y = [NumDual::<HyperDual64>::c(0.0)];
        f.eval(&w.xh, ctx, &w.bump, &mut y);
        y[0].0.eps1eps2
    }
    fn scalar_second<V: ScalarForm<C>, C>(
        &self,
        w: &mut NumDualWork,
        f: &V,
        ctx: &C,
        x: f64,
    ) -> (f64, f64, f64) {
        w.bump.reset();
        let mut y = [NumDual::<HyperDual64>::c(0.0)];
        f.eval(
            NumDual(HyperDual64::new(x, 1.0, 1.0, 0.0)),
            ctx,
            &w.bump,
            &mut y,
        );
        (y[0].0.re, y[0].0.eps1, y[0].0.eps1eps2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_and_custom_rules_go_through_the_shade_type() {
        // erf'(x) = 2/√π e^{-x²}
        let x = NumDual(Dual64::new(0.5, 1.0));
        let e = x.erf();
        let want = 2.0 / core::f64::consts::PI.sqrt() * (-0.25f64).exp();
        assert!((e.0.eps - want).abs() < 1e-12);
        let h = NumDual(HyperDual64::new(0.5, 1.0, 1.0, 0.0)).erf();
        // erf''(x) = -2x erf'(x)
        assert!((h.0.eps1eps2 + 2.0 * 0.5 * want).abs() < 1e-12);
        assert!((h.0.eps1 - want).abs() < 1e-12);
    }

    #[test]
    fn arithmetic_matches_num_dual() {
        let x = NumDual(Dual64::new(2.0, 1.0));
        let y = (x * x + 3.0).sqrt().powf(NumDual::c(1.5)) / x;
        let z = (x.0 * x.0 + 3.0).sqrt().powf(1.5) / x.0;
        assert_eq!((y.0.re, y.0.eps), (z.re, z.eps));
        assert_eq!(x.max(NumDual::c(1.0)).0.eps, 1.0);
        assert_eq!(NumDual(Dual64::new(-2.0, 1.0)).abs().0.eps, -1.0);
    }
}
