//! One definition of every elementary function's derivative, shared by all number
//! types.
//!
//! A number type says how to build a result from a value and local partial derivatives
//! ([`Lift`]); the macro [`impl_number!`] then writes the operators, num-traits' traits
//! and [`Float`](num_traits::Float) for it. Forward types multiply the partials into
//! their tangents at once; the tape type records them.

use super::real::Real;

/// How a number type combines a value with local partials.
pub(crate) trait Lift: Copy {
    /// The type of the values (and partials): `f64`, or a number type when nested.
    type Base: Real;
    /// The value.
    fn base(&self) -> Self::Base;
    /// A constant: no derivative.
    fn constant(v: Self::Base) -> Self;
    /// The user reads the value as a plain number (`to_f64`): a recording type notes
    /// where (see [`Real::value`]).
    #[inline(always)]
    #[track_caller]
    fn on_read(&self) {}
    /// The result `v` of a unary operation with local derivative `d` at `self`.
    fn unary(self, v: Self::Base, d: Self::Base) -> Self;
    /// The result `v` of a binary operation with partials `da` (for `self`) and `db`
    /// (for `o`).
    fn binary(self, o: Self, v: Self::Base, da: Self::Base, db: Self::Base) -> Self;

    // The common cases below have fixed partials; the tape records them without any.

    /// `self + c` (or `self - c`) with value `v`: partial one.
    #[inline(always)]
    fn shift(self, v: Self::Base) -> Self {
        self.unary(v, <Self::Base as num_traits::One>::one())
    }
    /// `-self` with value `v`.
    #[inline(always)]
    fn negate(self, v: Self::Base) -> Self {
        self.unary(v, -<Self::Base as num_traits::One>::one())
    }
    /// `self + o` with value `v`.
    #[inline(always)]
    fn plus(self, o: Self, v: Self::Base) -> Self {
        let one = <Self::Base as num_traits::One>::one();
        self.binary(o, v, one, one)
    }
    /// `self - o` with value `v`.
    #[inline(always)]
    fn minus(self, o: Self, v: Self::Base) -> Self {
        let one = <Self::Base as num_traits::One>::one();
        self.binary(o, v, one, -one)
    }
    /// `self * o` with value `v`: partials are the other operand's value.
    #[inline(always)]
    fn times(self, o: Self, v: Self::Base) -> Self {
        self.binary(o, v, o.base(), self.base())
    }
}

/// Writes arithmetic, comparisons, num-traits' `Zero/One/Num/NumCast/ToPrimitive`,
/// `Float`, `FloatConst`, `Default` and `Sum` for a type implementing [`Lift`].
macro_rules! impl_number {
    (impl[$($g:tt)*] $ty:ty where [$($w:tt)*]) => {
        impl<$($g)*> core::ops::Add for $ty where $($w)* {
            type Output = Self;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.plus(o, self.base() + o.base())
            }
        }
        impl<$($g)*> core::ops::Sub for $ty where $($w)* {
            type Output = Self;
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.minus(o, self.base() - o.base())
            }
        }
        impl<$($g)*> core::ops::Mul for $ty where $($w)* {
            type Output = Self;
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.times(o, self.base() * o.base())
            }
        }
        impl<$($g)*> core::ops::Div for $ty where $($w)* {
            type Output = Self;
            #[inline]
            fn div(self, o: Self) -> Self {
                let (a, b) = (self.base(), o.base());
                let r = b.recip();
                let v = a / b;
                self.binary(o, v, r, -v * r)
            }
        }
        impl<$($g)*> core::ops::Rem for $ty where $($w)* {
            type Output = Self;
            #[inline]
            fn rem(self, o: Self) -> Self {
                let (a, b) = (self.base(), o.base());
                let one = <<Self as Lift>::Base as num_traits::One>::one();
                self.binary(o, a % b, one, -(a / b).trunc())
            }
        }
        impl<$($g)*> core::ops::Neg for $ty where $($w)* {
            type Output = Self;
            #[inline]
            fn neg(self) -> Self {
                self.negate(-self.base())
            }
        }
        impl<$($g)*> core::ops::Add<f64> for $ty where $($w)* {
            type Output = Self;
            #[inline]
            fn add(self, c: f64) -> Self {
                self.shift(self.base() + c)
            }
        }
        impl<$($g)*> core::ops::Sub<f64> for $ty where $($w)* {
            type Output = Self;
            #[inline]
            fn sub(self, c: f64) -> Self {
                self.shift(self.base() - c)
            }
        }
        impl<$($g)*> core::ops::Mul<f64> for $ty where $($w)* {
            type Output = Self;
            #[inline]
            fn mul(self, c: f64) -> Self {
                let c = <<Self as Lift>::Base as Real>::cst(c);
                self.unary(self.base() * c, c)
            }
        }
        impl<$($g)*> core::ops::Div<f64> for $ty where $($w)* {
            type Output = Self;
            #[inline]
            fn div(self, c: f64) -> Self {
                let r = <<Self as Lift>::Base as Real>::cst(c.recip());
                self.unary(self.base() / <<Self as Lift>::Base as Real>::cst(c), r)
            }
        }
        impl<$($g)*> core::ops::AddAssign for $ty where $($w)* {
            #[inline]
            fn add_assign(&mut self, o: Self) { *self = *self + o; }
        }
        impl<$($g)*> core::ops::SubAssign for $ty where $($w)* {
            #[inline]
            fn sub_assign(&mut self, o: Self) { *self = *self - o; }
        }
        impl<$($g)*> core::ops::MulAssign for $ty where $($w)* {
            #[inline]
            fn mul_assign(&mut self, o: Self) { *self = *self * o; }
        }
        impl<$($g)*> core::ops::DivAssign for $ty where $($w)* {
            #[inline]
            fn div_assign(&mut self, o: Self) { *self = *self / o; }
        }
        impl<$($g)*> core::ops::RemAssign for $ty where $($w)* {
            #[inline]
            fn rem_assign(&mut self, o: Self) { *self = *self % o; }
        }
        impl<$($g)*> PartialEq for $ty where $($w)* {
            /// Compares values only.
            #[inline]
            fn eq(&self, o: &Self) -> bool { self.base() == o.base() }
        }
        impl<$($g)*> PartialOrd for $ty where $($w)* {
            /// Compares values only.
            #[inline]
            fn partial_cmp(&self, o: &Self) -> Option<core::cmp::Ordering> {
                self.base().partial_cmp(&o.base())
            }
        }
        impl<$($g)*> Default for $ty where $($w)* {
            #[inline]
            fn default() -> Self { <Self as Lift>::constant(Default::default()) }
        }
        impl<$($g)*> core::iter::Sum for $ty where $($w)* {
            #[inline]
            fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
                iter.fold(<Self as num_traits::Zero>::zero(), |a, b| a + b)
            }
        }
        impl<$($g)*> num_traits::Zero for $ty where $($w)* {
            #[inline]
            fn zero() -> Self { <Self as Lift>::constant(num_traits::Zero::zero()) }
            #[inline]
            fn is_zero(&self) -> bool { self.base().is_zero() }
        }
        impl<$($g)*> num_traits::One for $ty where $($w)* {
            #[inline]
            fn one() -> Self { <Self as Lift>::constant(num_traits::One::one()) }
        }
        impl<$($g)*> num_traits::Num for $ty where $($w)* {
            type FromStrRadixErr = num_traits::ParseFloatError;
            fn from_str_radix(s: &str, radix: u32) -> Result<Self, Self::FromStrRadixErr> {
                <f64 as num_traits::Num>::from_str_radix(s, radix)
                    .map(|v| <Self as Lift>::constant(<<Self as Lift>::Base as Real>::cst(v)))
            }
        }
        impl<$($g)*> num_traits::ToPrimitive for $ty where $($w)* {
            fn to_i64(&self) -> Option<i64> { self.base().to_i64() }
            fn to_u64(&self) -> Option<u64> { self.base().to_u64() }
            #[track_caller]
            fn to_f64(&self) -> Option<f64> { Lift::on_read(self); self.base().to_f64() }
            #[track_caller]
            fn to_f32(&self) -> Option<f32> { Lift::on_read(self); self.base().to_f32() }
        }
        impl<$($g)*> num_traits::NumCast for $ty where $($w)* {
            fn from<P: num_traits::ToPrimitive>(n: P) -> Option<Self> {
                <<Self as Lift>::Base as num_traits::NumCast>::from(n).map(<Self as Lift>::constant)
            }
        }
        impl<$($g)*> num_traits::FloatConst for $ty where $($w)* {
            impl_number!(@consts E FRAC_1_PI FRAC_1_SQRT_2 FRAC_2_PI FRAC_2_SQRT_PI FRAC_PI_2
                FRAC_PI_3 FRAC_PI_4 FRAC_PI_6 FRAC_PI_8 LN_10 LN_2 LOG10_E LOG2_E PI SQRT_2
                TAU LOG10_2 LOG2_10);
        }
        impl<$($g)*> num_traits::Float for $ty where $($w)* {
            impl_number!(@constants nan infinity neg_infinity neg_zero min_value
                min_positive_value epsilon max_value);
            impl_number!(@predicates is_nan is_infinite is_finite is_normal is_subnormal
                is_sign_positive is_sign_negative);
            impl_number!(@flat floor ceil round trunc signum);
            fn classify(self) -> core::num::FpCategory { self.base().classify() }
            fn integer_decode(self) -> (u64, i16, i8) { self.base().integer_decode() }

            #[inline]
            fn fract(self) -> Self {
                let one = <<Self as Lift>::Base as num_traits::One>::one();
                self.unary(self.base().fract(), one)
            }
            #[inline]
            fn abs(self) -> Self {
                let v = self.base();
                let zero = <<Self as Lift>::Base as num_traits::Zero>::zero();
                let one = <<Self as Lift>::Base as num_traits::One>::one();
                let d = if v > zero { one } else if v < zero { -one } else { zero };
                self.unary(v.abs(), d)
            }
            #[inline]
            fn mul_add(self, a: Self, b: Self) -> Self { self * a + b }
            #[inline]
            fn recip(self) -> Self {
                let r = self.base().recip();
                self.unary(r, -r * r)
            }
            #[inline]
            fn powi(self, n: i32) -> Self {
                let v = self.base();
                if n == 0 {
                    return <Self as Lift>::constant(num_traits::One::one());
                }
                let p = v.powi(n - 1);
                self.unary(p * v, p * <<Self as Lift>::Base as Real>::cst(f64::from(n)))
            }
            #[inline]
            fn powf(self, n: Self) -> Self {
                let (a, b) = (self.base(), n.base());
                let zero = <<Self as Lift>::Base as num_traits::Zero>::zero();
                let v = a.powf(b);
                let da = if b == zero { zero } else { b * a.powf(b - <<Self as Lift>::Base as num_traits::One>::one()) };
                // ∂/∂b = aᵇ ln a, taken as 0 where ln a is undefined (a ≤ 0).
                let db = if a > zero { v * a.ln() } else { zero };
                self.binary(n, v, da, db)
            }
            #[inline]
            fn sqrt(self) -> Self {
                let y = self.base().sqrt();
                self.unary(y, (y + y).recip())
            }
            #[inline]
            fn cbrt(self) -> Self {
                let y = self.base().cbrt();
                self.unary(y, (y * y * <<Self as Lift>::Base as Real>::cst(3.0)).recip())
            }
            #[inline]
            fn exp(self) -> Self {
                let y = self.base().exp();
                self.unary(y, y)
            }
            #[inline]
            fn exp2(self) -> Self {
                let y = self.base().exp2();
                self.unary(y, y * <<Self as Lift>::Base as num_traits::FloatConst>::LN_2())
            }
            #[inline]
            fn exp_m1(self) -> Self {
                let v = self.base();
                self.unary(v.exp_m1(), v.exp())
            }
            #[inline]
            fn ln(self) -> Self {
                let v = self.base();
                self.unary(v.ln(), v.recip())
            }
            #[inline]
            fn ln_1p(self) -> Self {
                let v = self.base();
                self.unary(v.ln_1p(), (v + <<Self as Lift>::Base as num_traits::One>::one()).recip())
            }
            #[inline]
            fn log2(self) -> Self {
                let v = self.base();
                self.unary(v.log2(), (v * <<Self as Lift>::Base as num_traits::FloatConst>::LN_2()).recip())
            }
            #[inline]
            fn log10(self) -> Self {
                let v = self.base();
                self.unary(v.log10(), (v * <<Self as Lift>::Base as num_traits::FloatConst>::LN_10()).recip())
            }
            #[inline]
            fn log(self, base: Self) -> Self {
                let (a, b) = (self.base(), base.base());
                let (la, lb) = (a.ln(), b.ln());
                let v = la / lb;
                self.binary(base, v, (a * lb).recip(), -v / (b * lb))
            }
            #[inline]
            fn to_degrees(self) -> Self { self * (180.0 / core::f64::consts::PI) }
            #[inline]
            fn to_radians(self) -> Self { self * (core::f64::consts::PI / 180.0) }
            /// The larger operand itself (its derivative); NaN loses, as for `f64::max`.
            #[inline]
            fn max(self, o: Self) -> Self {
                let (a, b) = (self.base(), o.base());
                if a.is_nan() || b > a { o } else { self }
            }
            /// The smaller operand itself (its derivative); NaN loses, as for `f64::min`.
            #[inline]
            fn min(self, o: Self) -> Self {
                let (a, b) = (self.base(), o.base());
                if a.is_nan() || b < a { o } else { self }
            }
            #[inline]
            #[allow(deprecated)]
            fn abs_sub(self, o: Self) -> Self {
                if self.base() <= o.base() { num_traits::Zero::zero() } else { self - o }
            }
            #[inline]
            fn hypot(self, o: Self) -> Self {
                let (a, b) = (self.base(), o.base());
                let h = a.hypot(b);
                let zero = <<Self as Lift>::Base as num_traits::Zero>::zero();
                if h == zero {
                    return self.binary(o, h, zero, zero);
                }
                self.binary(o, h, a / h, b / h)
            }
            #[inline]
            fn sin(self) -> Self {
                let (s, c) = self.base().sin_cos();
                self.unary(s, c)
            }
            #[inline]
            fn cos(self) -> Self {
                let (s, c) = self.base().sin_cos();
                self.unary(c, -s)
            }
            #[inline]
            fn sin_cos(self) -> (Self, Self) {
                let (s, c) = self.base().sin_cos();
                (self.unary(s, c), self.unary(c, -s))
            }
            #[inline]
            fn tan(self) -> Self {
                let t = self.base().tan();
                self.unary(t, t * t + <<Self as Lift>::Base as num_traits::One>::one())
            }
            #[inline]
            fn asin(self) -> Self {
                let v = self.base();
                let one = <<Self as Lift>::Base as num_traits::One>::one();
                self.unary(v.asin(), (one - v * v).sqrt().recip())
            }
            #[inline]
            fn acos(self) -> Self {
                let v = self.base();
                let one = <<Self as Lift>::Base as num_traits::One>::one();
                self.unary(v.acos(), -(one - v * v).sqrt().recip())
            }
            #[inline]
            fn atan(self) -> Self {
                let v = self.base();
                self.unary(v.atan(), (v * v + <<Self as Lift>::Base as num_traits::One>::one()).recip())
            }
            #[inline]
            fn atan2(self, o: Self) -> Self {
                let (y, x) = (self.base(), o.base());
                let r = x * x + y * y;
                self.binary(o, y.atan2(x), x / r, -y / r)
            }
            #[inline]
            fn sinh(self) -> Self {
                let v = self.base();
                self.unary(v.sinh(), v.cosh())
            }
            #[inline]
            fn cosh(self) -> Self {
                let v = self.base();
                self.unary(v.cosh(), v.sinh())
            }
            #[inline]
            fn tanh(self) -> Self {
                let t = self.base().tanh();
                let one = <<Self as Lift>::Base as num_traits::One>::one();
                self.unary(t, one - t * t)
            }
            #[inline]
            fn asinh(self) -> Self {
                let v = self.base();
                self.unary(v.asinh(), (v * v + <<Self as Lift>::Base as num_traits::One>::one()).sqrt().recip())
            }
            #[inline]
            fn acosh(self) -> Self {
                let v = self.base();
                self.unary(v.acosh(), (v * v - <<Self as Lift>::Base as num_traits::One>::one()).sqrt().recip())
            }
            #[inline]
            fn atanh(self) -> Self {
                let v = self.base();
                let one = <<Self as Lift>::Base as num_traits::One>::one();
                self.unary(v.atanh(), (one - v * v).recip())
            }
            #[inline]
            fn copysign(self, sign: Self) -> Self {
                if self.base().is_sign_negative() == sign.base().is_sign_negative() { self } else { -self }
            }
        }
    };
    (@consts $($c:ident)*) => {$(
        #[inline]
        fn $c() -> Self { <Self as Lift>::constant(<<Self as Lift>::Base as num_traits::FloatConst>::$c()) }
    )*};
    (@constants $($c:ident)*) => {$(
        #[inline]
        fn $c() -> Self { <Self as Lift>::constant(<<Self as Lift>::Base as num_traits::Float>::$c()) }
    )*};
    (@predicates $($c:ident)*) => {$(
        #[inline]
        fn $c(self) -> bool { self.base().$c() }
    )*};
    (@flat $($c:ident)*) => {$(
        /// Piecewise constant: the derivative is zero (the result is a constant).
        #[inline]
        fn $c(self) -> Self { <Self as Lift>::constant(self.base().$c()) }
    )*};
}

pub(crate) use impl_number;

/// `erf` through [`Lift`], shared by the `Real` impls of the number types.
#[inline]
pub(crate) fn lift_erf<L: Lift>(x: L) -> L {
    use num_traits::Float;
    let v = x.base();
    let d = (-(v * v)).exp() * <L::Base as num_traits::FloatConst>::FRAC_2_SQRT_PI();
    x.unary(v.erf(), d)
}
