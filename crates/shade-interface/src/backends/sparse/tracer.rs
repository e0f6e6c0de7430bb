//! A local sparsity tracer: a number carrying its value and the set of inputs it
//! depends on (an index set in a per-thread arena, so that the number stays `Copy`).
//!
//! Every operation unions its operands' sets; constants have the empty set. Control flow
//! follows the values, so the detected pattern is the one at the evaluation point
//! (a *local* pattern, as DifferentiationInterface's `TracerLocalSparsityDetector`).

use core::cell::RefCell;
use core::cmp::Ordering;
use core::num::FpCategory;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, Sub, SubAssign};
use num_traits::{Float, FloatConst, Num, NumCast, One, ToPrimitive, Zero};
use shade_autodiff::scalar::{Real, ScalarRule};
use smallvec::SmallVec;

type Set = SmallVec<[u32; 8]>;

thread_local! {
    /// Index sets; entry 0 is the empty set.
    static SETS: RefCell<Vec<Set>> = RefCell::new(vec![Set::new()]);
}

/// Clears the arena (keeps the empty set).
pub(crate) fn reset() {
    SETS.with(|s| s.borrow_mut().truncate(1));
}

/// The sorted input indices `t` depends on.
pub(crate) fn inputs(t: &Tracer) -> Set {
    SETS.with(|s| s.borrow()[t.set as usize].clone())
}

fn push(set: Set) -> u32 {
    SETS.with(|s| {
        let mut s = s.borrow_mut();
        s.push(set);
        (s.len() - 1) as u32
    })
}

fn union(a: u32, b: u32) -> u32 {
    if a == b || b == 0 {
        return a;
    }
    if a == 0 {
        return b;
    }
    let merged = SETS.with(|s| {
        let s = s.borrow();
        let (x, y) = (&s[a as usize], &s[b as usize]);
        let mut out = Set::with_capacity(x.len() + y.len());
        let (mut i, mut j) = (0, 0);
        while i < x.len() || j < y.len() {
            let next = match (x.get(i), y.get(j)) {
                (Some(&p), Some(&q)) if p == q => {
                    i += 1;
                    j += 1;
                    p
                }
                (Some(&p), Some(&q)) if p < q => {
                    i += 1;
                    p
                }
                (_, Some(&q)) => {
                    j += 1;
                    q
                }
                (Some(&p), None) => {
                    i += 1;
                    p
                }
                (None, None) => break,
            };
            out.push(next);
        }
        out
    });
    push(merged)
}

/// A value and the inputs it depends on.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tracer {
    v: f64,
    set: u32,
}

impl Tracer {
    /// Input number `i` with value `v`.
    pub(crate) fn input(v: f64, i: u32) -> Self {
        Tracer {
            v,
            set: push(SmallVec::from_slice(&[i])),
        }
    }
    #[inline]
    fn c(v: f64) -> Self {
        Tracer { v, set: 0 }
    }
    #[inline]
    fn with(self, v: f64) -> Self {
        Tracer { v, set: self.set }
    }
    #[inline]
    fn join(self, o: Self, v: f64) -> Self {
        Tracer {
            v,
            set: union(self.set, o.set),
        }
    }
}

impl PartialEq for Tracer {
    fn eq(&self, o: &Self) -> bool {
        self.v == o.v
    }
}

impl PartialOrd for Tracer {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        self.v.partial_cmp(&o.v)
    }
}

macro_rules! binops {
    ($($tr:ident $m:ident $atr:ident $am:ident),*) => {$(
        impl $tr for Tracer {
            type Output = Self;
            #[inline]
            fn $m(self, o: Self) -> Self { self.join(o, $tr::$m(self.v, o.v)) }
        }
        impl $tr<f64> for Tracer {
            type Output = Self;
            #[inline]
            fn $m(self, o: f64) -> Self { self.with($tr::$m(self.v, o)) }
        }
        impl $atr for Tracer {
            #[inline]
            fn $am(&mut self, o: Self) { *self = $tr::$m(*self, o); }
        }
    )*};
}
binops!(Add add AddAssign add_assign, Sub sub SubAssign sub_assign, Mul mul MulAssign mul_assign, Div div DivAssign div_assign);

impl Rem for Tracer {
    type Output = Self;
    fn rem(self, o: Self) -> Self {
        self.join(o, self.v % o.v)
    }
}

impl Neg for Tracer {
    type Output = Self;
    fn neg(self) -> Self {
        self.with(-self.v)
    }
}

impl core::iter::Sum for Tracer {
    fn sum<I: Iterator<Item = Self>>(it: I) -> Self {
        it.fold(Tracer::c(0.0), |a, b| a + b)
    }
}

impl Zero for Tracer {
    fn zero() -> Self {
        Tracer::c(0.0)
    }
    fn is_zero(&self) -> bool {
        self.v == 0.0 && self.set == 0
    }
}

impl One for Tracer {
    fn one() -> Self {
        Tracer::c(1.0)
    }
}

impl Num for Tracer {
    type FromStrRadixErr = <f64 as Num>::FromStrRadixErr;
    fn from_str_radix(s: &str, radix: u32) -> Result<Self, Self::FromStrRadixErr> {
        f64::from_str_radix(s, radix).map(Tracer::c)
    }
}

impl ToPrimitive for Tracer {
    fn to_i64(&self) -> Option<i64> {
        self.v.to_i64()
    }
    fn to_u64(&self) -> Option<u64> {
        self.v.to_u64()
    }
    fn to_f64(&self) -> Option<f64> {
        Some(self.v)
    }
}

impl NumCast for Tracer {
    fn from<T: ToPrimitive>(n: T) -> Option<Self> {
        n.to_f64().map(Tracer::c)
    }
}

macro_rules! consts {
    ($($name:ident),*) => {
        impl FloatConst for Tracer {
            $(fn $name() -> Self { Tracer::c(<f64 as FloatConst>::$name()) })*
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
        fn $name(self) -> Self { self.with(self.v.$name()) }
    )*};
}
macro_rules! piecewise_constant {
    ($($name:ident),*) => {$(
        #[inline]
        fn $name(self) -> Self { Tracer::c(self.v.$name()) }
    )*};
}
macro_rules! binary {
    ($($name:ident),*) => {$(
        #[inline]
        fn $name(self, o: Self) -> Self { self.join(o, self.v.$name(o.v)) }
    )*};
}
macro_rules! pred {
    ($($name:ident),*) => {$(
        #[inline]
        fn $name(self) -> bool { self.v.$name() }
    )*};
}

impl Float for Tracer {
    fn nan() -> Self {
        Tracer::c(f64::NAN)
    }
    fn infinity() -> Self {
        Tracer::c(f64::INFINITY)
    }
    fn neg_infinity() -> Self {
        Tracer::c(f64::NEG_INFINITY)
    }
    fn neg_zero() -> Self {
        Tracer::c(-0.0)
    }
    fn min_value() -> Self {
        Tracer::c(f64::MIN)
    }
    fn min_positive_value() -> Self {
        Tracer::c(f64::MIN_POSITIVE)
    }
    fn max_value() -> Self {
        Tracer::c(f64::MAX)
    }
    pred!(
        is_nan,
        is_infinite,
        is_finite,
        is_normal,
        is_sign_positive,
        is_sign_negative
    );
    fn classify(self) -> FpCategory {
        self.v.classify()
    }
    piecewise_constant!(floor, ceil, round, trunc, signum);
    unary!(
        fract, abs, recip, sqrt, exp, exp2, ln, log2, log10, cbrt, sin, cos, tan, asin, acos, atan,
        exp_m1, ln_1p, sinh, cosh, tanh, asinh, acosh, atanh
    );
    binary!(powf, log, hypot, atan2);
    fn abs_sub(self, o: Self) -> Self {
        if self.v > o.v {
            self - o
        } else {
            Tracer::c(0.0)
        }
    }
    fn mul_add(self, a: Self, b: Self) -> Self {
        self * a + b
    }
    fn powi(self, n: i32) -> Self {
        self.with(self.v.powi(n))
    }
    fn max(self, o: Self) -> Self {
        if self.v >= o.v || o.v.is_nan() {
            self
        } else {
            o
        }
    }
    fn min(self, o: Self) -> Self {
        if self.v <= o.v || o.v.is_nan() {
            self
        } else {
            o
        }
    }
    fn sin_cos(self) -> (Self, Self) {
        (self.sin(), self.cos())
    }
    fn integer_decode(self) -> (u64, i16, i8) {
        self.v.integer_decode()
    }
}

impl Real for Tracer {
    fn cst(c: f64) -> Self {
        Tracer::c(c)
    }
    fn value(&self) -> f64 {
        self.v
    }
    fn erf(self) -> Self {
        self.with(<f64 as Real>::erf(self.v))
    }
    fn custom<R: ScalarRule<N>, const N: usize>(rule: &R, x: [Self; N]) -> Self {
        let v = rule.primal(x.map(|t| t.v));
        x.iter().fold(Tracer::c(v), |acc, t| acc.join(*t, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_union_through_operations_and_constants_add_nothing() {
        reset();
        let (a, b, c) = (
            Tracer::input(1.0, 0),
            Tracer::input(2.0, 3),
            Tracer::input(3.0, 1),
        );
        let y = (a * b).sin() + c * 2.0 - Tracer::cst(5.0);
        assert_eq!(inputs(&y).as_slice(), &[0, 1, 3]);
        assert_eq!(y.value(), 2.0f64.sin() + 6.0 - 5.0);
        assert!(inputs(&(a.floor() + 1.0)).is_empty());
        assert_eq!(inputs(&a.max(b)).as_slice(), &[3]);
    }
}
