//! Forward mode: [`DualVec<T, N>`], a value with `N` tangents, and [`Dual<T>`], its
//! one-tangent case.

use super::lift::{Lift, impl_number, lift_erf};
use super::real::{Real, ScalarRule};
#[allow(unused_imports)]
use num_traits::{Float, One, ToPrimitive, Zero};

/// A value with `N` tangents, propagated together (chunked forward mode).
///
/// `N` columns of a Jacobian come out of one evaluation. `T` is the value type: `f64`,
/// or another number type for higher derivatives (`Dual<Dual<f64>>` gives second
/// derivatives).
///
/// ```
/// use num_traits::Float;
/// use shade_autodiff::scalar::DualVec;
///
/// let x = DualVec::<f64, 2>::with_tangents(0.5, [1.0, 0.0]);
/// let y = DualVec::<f64, 2>::with_tangents(2.0, [0.0, 1.0]);
/// let f = x.sin() * y;
/// assert_eq!(f.v, 0.5_f64.sin() * 2.0);
/// assert_eq!(f.d, [0.5_f64.cos() * 2.0, 0.5_f64.sin()]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct DualVec<T, const N: usize> {
    /// The value.
    pub v: T,
    /// The tangents.
    pub d: [T; N],
}

/// A value with one tangent: forward mode's number type.
///
/// ```
/// use shade_autodiff::scalar::Dual;
///
/// let x = Dual::new(3.0, 1.0);
/// let y = x * x + 1.0;
/// assert_eq!((y.v, y.d[0]), (10.0, 6.0));
/// ```
pub type Dual<T> = DualVec<T, 1>;

impl<T: Real> DualVec<T, 1> {
    /// A value `v` with tangent `d`.
    #[inline]
    pub fn new(v: T, d: T) -> Self {
        DualVec { v, d: [d] }
    }

    /// The tangent.
    #[inline]
    pub fn tangent(&self) -> T {
        self.d[0]
    }
}

impl<T: Real, const N: usize> DualVec<T, N> {
    /// A value `v` with the given tangents.
    #[inline]
    pub fn with_tangents(v: T, d: [T; N]) -> Self {
        DualVec { v, d }
    }

    /// A constant: every tangent zero.
    #[inline]
    pub fn constant(v: T) -> Self {
        DualVec {
            v,
            d: [T::zero(); N],
        }
    }

    /// A variable seeded in direction `k`: tangent `k` is one, the others zero.
    ///
    /// # Panics
    /// If `k >= N` (a programming error in the caller's seeding loop).
    #[inline]
    #[track_caller]
    pub fn seeded(v: T, k: usize) -> Self {
        let mut d = [T::zero(); N];
        d[k] = T::one();
        DualVec { v, d }
    }
}

impl<T: Real, const N: usize> Lift for DualVec<T, N> {
    type Base = T;
    #[inline(always)]
    fn base(&self) -> T {
        self.v
    }
    #[inline(always)]
    fn constant(v: T) -> Self {
        DualVec::constant(v)
    }
    #[inline(always)]
    fn unary(self, v: T, d: T) -> Self {
        let mut out = self.d;
        for t in &mut out {
            *t *= d;
        }
        DualVec { v, d: out }
    }
    #[inline(always)]
    fn binary(self, o: Self, v: T, da: T, db: T) -> Self {
        let mut out = self.d;
        for (t, u) in out.iter_mut().zip(o.d) {
            *t = *t * da + u * db;
        }
        DualVec { v, d: out }
    }
}

impl_number!(impl[T: Real, const N: usize] DualVec<T, N> where []);

impl<T: Real, const N: usize> Real for DualVec<T, N> {
    #[inline]
    fn cst(c: f64) -> Self {
        DualVec::constant(T::cst(c))
    }
    #[inline]
    fn value(&self) -> f64 {
        self.v.value()
    }
    #[inline]
    fn detach(self) -> Self {
        DualVec::constant(self.v.detach())
    }
    #[inline]
    fn erf(self) -> Self {
        lift_erf(self)
    }
    #[inline]
    fn custom<R: ScalarRule<N2>, const N2: usize>(rule: &R, x: [Self; N2]) -> Self {
        let xv = x.map(|xi| xi.v);
        let y = rule.primal(xv);
        let mut d = [T::zero(); N];
        for (k, dk) in d.iter_mut().enumerate() {
            *dk = rule.forward(xv, y, x.map(|xi| xi.d[k]));
        }
        DualVec { v: y, d }
    }
}
