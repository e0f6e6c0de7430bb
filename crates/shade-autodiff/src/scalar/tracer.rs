//! [`Tracer`]: the sparsity-detection number type, a value and the set of inputs it
//! depends on (an index set in a per-thread arena, so that the number stays `Copy`).
//!
//! It is a number type like [`Dual`](super::Dual) and [`Var`](super::Var): the
//! elementary functions come from the one definition in `lift.rs`, through the [`Lift`]
//! hook, which here unions the operands' sets and ignores the partials. Constants have
//! the empty set, piecewise-constant functions (`floor`, `signum`, ...) return
//! constants, and control flow follows the values, so the pattern detected is the one
//! at the evaluation point (a *local* pattern, as DifferentiationInterface's
//! `TracerLocalSparsityDetector`).
//!
//! ```
//! use shade_autodiff::scalar::{Real, Tracer, trace_sparsity};
//!
//! fn f<S: Real>(x: &[S]) -> S {
//!     (x[0] * x[2]).sin() + x[3].floor()
//! }
//! let deps = trace_sparsity(|| {
//!     let x: Vec<Tracer> = [0.5, 1.0, 2.0, 3.5].iter().enumerate().map(|(i, &v)| Tracer::input(v, i as u32)).collect();
//!     f(&x).inputs()
//! });
//! assert_eq!(deps.as_slice(), &[0, 2]);
//! ```

use super::lift::{Lift, impl_number, lift_erf};
use super::real::{Real, ScalarRule};
use core::cell::RefCell;
use smallvec::SmallVec;

/// A sorted set of input indices.
pub type IndexSet = SmallVec<[u32; 8]>;

thread_local! {
    /// Index sets; entry 0 is the empty set.
    static SETS: RefCell<Vec<IndexSet>> = RefCell::new(vec![IndexSet::new()]);
}

/// Runs `f` with a fresh arena of index sets (cleared before and after), so that the
/// sets of one detection neither see nor keep those of another. The [`Tracer`]s made
/// inside must not be read after it returns.
pub fn trace_sparsity<R>(f: impl FnOnce() -> R) -> R {
    let reset = || SETS.with(|s| s.borrow_mut().truncate(1));
    reset();
    let r = f();
    reset();
    r
}

fn push(set: IndexSet) -> u32 {
    SETS.with(|s| {
        let mut s = s.borrow_mut();
        s.push(set);
        u32::try_from(s.len() - 1).expect("fewer than 2^32 traced operations")
    })
}

/// The union of two sets (by their arena indices).
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
        let mut out = IndexSet::with_capacity(x.len() + y.len());
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

/// A value and the set of inputs it depends on: the sparsity-detection number type.
///
/// Every operation unions its operands' sets (constants have the empty set); control
/// flow follows the values, so the pattern is the local one at the evaluation point.
/// Make inputs with [`Tracer::input`] inside [`trace_sparsity`].
#[derive(Clone, Copy, Debug)]
pub struct Tracer {
    v: f64,
    set: u32,
}

impl Tracer {
    /// Input number `i` with value `v`.
    pub fn input(v: f64, i: u32) -> Self {
        Tracer {
            v,
            set: push(SmallVec::from_slice(&[i])),
        }
    }

    /// The sorted indices of the inputs this number depends on.
    pub fn inputs(&self) -> IndexSet {
        SETS.with(|s| {
            s.borrow()
                .get(self.set as usize)
                .cloned()
                .unwrap_or_default()
        })
    }
}

impl Lift for Tracer {
    type Base = f64;
    #[inline(always)]
    fn base(&self) -> f64 {
        self.v
    }
    #[inline(always)]
    fn constant(v: f64) -> Self {
        Tracer { v, set: 0 }
    }
    #[inline(always)]
    fn unary(self, v: f64, _: f64) -> Self {
        Tracer { v, set: self.set }
    }
    #[inline(always)]
    fn binary(self, o: Self, v: f64, _: f64, _: f64) -> Self {
        Tracer {
            v,
            set: union(self.set, o.set),
        }
    }
}

impl_number!(impl[] Tracer where []);

impl Real for Tracer {
    #[inline]
    fn cst(c: f64) -> Self {
        Tracer::constant(c)
    }
    #[inline]
    fn value(&self) -> f64 {
        self.v
    }
    #[inline]
    fn detach(self) -> Self {
        Tracer::constant(self.v)
    }
    #[inline]
    fn erf(self) -> Self {
        lift_erf(self)
    }
    /// The rule's primal; the result depends on every argument.
    fn custom<R: ScalarRule<N>, const N: usize>(rule: &R, x: [Self; N]) -> Self {
        let v = rule.primal(x.map(|t| t.v));
        x.iter()
            .fold(Tracer::constant(v), |acc, t| acc.binary(*t, v, 0.0, 0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_traits::Float;

    #[test]
    fn sets_union_through_operations_and_constants_add_nothing() {
        trace_sparsity(|| {
            let (a, b, c) = (
                Tracer::input(1.0, 0),
                Tracer::input(2.0, 3),
                Tracer::input(3.0, 1),
            );
            let y = (a * b).sin() + c * 2.0 - Tracer::cst(5.0);
            assert_eq!(y.inputs().as_slice(), &[0, 1, 3]);
            assert_eq!(y.value(), 2.0f64.sin() + 6.0 - 5.0);
            assert!((a.floor() + 1.0).inputs().is_empty());
            assert_eq!(a.max(b).inputs().as_slice(), &[3]);
            assert_eq!((a / b).powf(c).inputs().as_slice(), &[0, 1, 3]);
            assert_eq!(a.erf().inputs().as_slice(), &[0]);
        });
    }

    #[test]
    fn each_detection_starts_from_an_empty_arena() {
        let first = trace_sparsity(|| Tracer::input(1.0, 7).set);
        let second = trace_sparsity(|| Tracer::input(1.0, 9).set);
        assert_eq!(first, second);
    }
}
