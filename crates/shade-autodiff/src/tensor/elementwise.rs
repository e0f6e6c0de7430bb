//! Elementwise maps: `neg scale exp ln sqrt powi abs tanh sigmoid relu leaky_relu elu
//! gelu softplus clamp`.
//!
//! Every map is a [`Unary`] with its value `f(x)` and its derivative `f'(x)` written
//! in terms of the input `x` and the output `y`; the reverse rule is
//! `dx += g · f'(x)` and the forward rule `ẏ = ẋ · f'(x)`.

pub(crate) mod math;

use super::simd;
use super::tape::{Bwd, Op, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayViewD, Zip};
use smallvec::SmallVec;

/// An elementwise map with its derivative.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Unary<T> {
    Neg,
    Scale(T),
    Exp,
    Ln,
    Sqrt,
    Powi(i32),
    Abs,
    Tanh,
    Sigmoid,
    Relu,
    LeakyRelu(T),
    Elu(T),
    Gelu,
    Softplus,
    Clamp(T, T),
}

/// The logistic function without overflow (vectorised: [`math`]).
#[inline(always)]
fn sigmoid<T: Element>(x: T) -> T {
    x.sigmoid_v()
}

const GELU_C: f64 = 0.797_884_560_802_865_4; // sqrt(2 / pi)
const GELU_A: f64 = 0.044_715;

impl<T: Element> Unary<T> {
    // `inline(always)`: the loops of `unswitch!` rely on the match folding away.
    #[inline(always)]
    pub(crate) fn f(self, x: T) -> T {
        let z = T::zero();
        match self {
            Unary::Neg => -x,
            Unary::Scale(c) => c * x,
            Unary::Exp => x.exp_v(),
            Unary::Ln => x.ln(),
            Unary::Sqrt => x.sqrt(),
            Unary::Powi(n) => x.powi(n),
            Unary::Abs => x.abs(),
            Unary::Tanh => x.tanh_v(),
            Unary::Sigmoid => sigmoid(x),
            Unary::Relu => x.max(z),
            Unary::LeakyRelu(a) => {
                if x > z {
                    x
                } else {
                    a * x
                }
            }
            Unary::Elu(a) => {
                if x > z {
                    x
                } else {
                    a * x.expm1_v()
                }
            }
            Unary::Gelu => {
                let u = T::cst(GELU_C) * (x + T::cst(GELU_A) * x * x * x);
                T::cst(0.5) * x * (T::one() + u.tanh_v())
            }
            Unary::Softplus => x.max(z) + (-x.abs()).exp().ln_1p(),
            // NaN stays NaN (`max` would make it `lo`).
            Unary::Clamp(lo, hi) => {
                if x.is_nan() {
                    x
                } else {
                    x.max(lo).min(hi)
                }
            }
        }
    }

    /// `f'(x)`, given `y = f(x)`.
    #[inline(always)]
    pub(crate) fn df(self, x: T, y: T) -> T {
        let (z, one) = (T::zero(), T::one());
        match self {
            Unary::Neg => -one,
            Unary::Scale(c) => c,
            Unary::Exp => y,
            Unary::Ln => one / x,
            Unary::Sqrt => T::cst(0.5) / y,
            Unary::Powi(0) => z,
            Unary::Powi(n) => T::cst(f64::from(n)) * x.powi(n - 1),
            Unary::Abs => {
                if x > z {
                    one
                } else if x < z {
                    -one
                } else {
                    z
                }
            }
            Unary::Tanh => one - y * y,
            Unary::Sigmoid => y * (one - y),
            // From the output: `relu(x) > 0` exactly when `x > 0` (NaN gives 0 both
            // ways), so the reverse sweep can free the input.
            Unary::Relu => {
                if y > z {
                    one
                } else {
                    z
                }
            }
            Unary::LeakyRelu(a) => {
                if x > z {
                    one
                } else {
                    a
                }
            }
            Unary::Elu(a) => {
                if x > z {
                    one
                } else {
                    y + a
                }
            }
            Unary::Gelu => {
                let c = T::cst(GELU_C);
                let a = T::cst(GELU_A);
                let t = (c * (x + a * x * x * x)).tanh_v();
                let h = T::cst(0.5);
                h * (one + t) + h * x * (one - t * t) * c * (one + T::cst(3.0) * a * x * x)
            }
            Unary::Softplus => sigmoid(x),
            Unary::Clamp(lo, hi) => {
                if x >= lo && x <= hi {
                    one
                } else {
                    z
                }
            }
        }
    }
}

impl<T> Unary<T> {
    /// Which of the input `x` and the output `y` [`Unary::df`] reads: `(x, y)`. The
    /// reverse sweep frees a value that no rule reads before it starts.
    pub(crate) fn reads(&self) -> (bool, bool) {
        match self {
            Unary::Neg | Unary::Scale(_) => (false, false),
            Unary::Exp | Unary::Sqrt | Unary::Tanh | Unary::Sigmoid | Unary::Relu => (false, true),
            Unary::Elu(_) => (true, true),
            Unary::Ln
            | Unary::Powi(_)
            | Unary::Abs
            | Unary::LeakyRelu(_)
            | Unary::Gelu
            | Unary::Softplus
            | Unary::Clamp(..) => (true, false),
        }
    }
}

/// A map whose kind is in its type: the loops of [`unswitch!`] capture one of these
/// (zero-sized, or the map's parameter alone), so that the kind is known in every
/// instantiation of the loop, inlined or not, and the per-element `match` of
/// [`Unary::f`] and [`Unary::df`] folds away (a captured `Unary` value kept a jump
/// table in the loop and the activations scalar).
trait Kernel<T: Element>: Copy + Send + Sync {
    fn f(self, x: T) -> T;
    fn df(self, x: T, y: T) -> T;
}

impl<T: Element> Kernel<T> for Unary<T> {
    #[inline(always)]
    fn f(self, x: T) -> T {
        Unary::f(self, x)
    }
    #[inline(always)]
    fn df(self, x: T, y: T) -> T {
        Unary::df(self, x, y)
    }
}

/// The kernels of the hot maps, one type each.
mod kernels {
    use super::{Element, Kernel, Unary};

    macro_rules! kernel {
        ($($name:ident),*) => {$(
            #[derive(Clone, Copy)]
            pub(super) struct $name;
            impl<T: Element> Kernel<T> for $name {
                #[inline(always)]
                fn f(self, x: T) -> T {
                    Unary::<T>::$name.f(x)
                }
                #[inline(always)]
                fn df(self, x: T, y: T) -> T {
                    Unary::<T>::$name.df(x, y)
                }
            }
        )*};
    }
    kernel!(Relu, Tanh, Sigmoid, Exp, Neg);

    macro_rules! kernel_with {
        ($($name:ident),*) => {$(
            #[derive(Clone, Copy)]
            pub(super) struct $name<T>(pub(super) T);
            impl<T: Element> Kernel<T> for $name<T> {
                #[inline(always)]
                fn f(self, x: T) -> T {
                    Unary::$name(self.0).f(x)
                }
                #[inline(always)]
                fn df(self, x: T, y: T) -> T {
                    Unary::$name(self.0).df(x, y)
                }
            }
        )*};
    }
    kernel_with!(Scale, LeakyRelu, Elu);
}

/// Runs `$body` with `$k` bound to a [`Kernel`] for `$kind`, one branch per hot map, so
/// that each gets a specialised loop (the other maps share one loop over `Unary`).
macro_rules! unswitch {
    ($kind:expr, |$k:ident| $body:expr) => {
        match $kind {
            Unary::Relu => {
                let $k = kernels::Relu;
                $body
            }
            Unary::Tanh => {
                let $k = kernels::Tanh;
                $body
            }
            Unary::Sigmoid => {
                let $k = kernels::Sigmoid;
                $body
            }
            Unary::Exp => {
                let $k = kernels::Exp;
                $body
            }
            Unary::Neg => {
                let $k = kernels::Neg;
                $body
            }
            Unary::Scale(c) => {
                let $k = kernels::Scale(c);
                $body
            }
            Unary::LeakyRelu(a) => {
                let $k = kernels::LeakyRelu(a);
                $body
            }
            Unary::Elu(a) => {
                let $k = kernels::Elu(a);
                $body
            }
            other => {
                let $k = other;
                $body
            }
        }
    };
}

/// `o[i] = k.f(s[i])`: the loop compiled for AVX-512F or AVX2 where the processor has
/// them ([`simd::wide`]: sixteen or eight `f32` lanes instead of SSE2's four, the same
/// results bit for bit).
///
/// The vectorised activations ([`math`]) are arithmetic-bound: twice the lanes halve
/// their time (the maps were 14% of the policy model's gradient on SSE2).
#[inline]
fn map_into<T: Element, K: Kernel<T>>(k: K, s: &[T], o: &mut [T]) {
    simd::wide(
        #[inline(always)]
        || map_plain(k, s, o),
    );
}

#[inline(always)]
fn map_plain<T: Element, K: Kernel<T>>(k: K, s: &[T], o: &mut [T]) {
    for (o, &x) in o.iter_mut().zip(s) {
        *o = k.f(x);
    }
}

/// `y[i] = e^{y[i]}` with the vectorised `exp` ([`math`]), AVX-512F or AVX2 where the processor
/// has it (for the kernels that exponentiate a buffer of their own, e.g. the segment
/// softmax).
pub(crate) fn exp_in_place<T: Element>(y: &mut [T]) {
    simd::wide(
        #[inline(always)]
        || y.iter_mut().for_each(|v| *v = kernels::Exp.f(*v)),
    );
}

/// Backward record of an elementwise map.
#[derive(Debug)]
pub(crate) struct Rec<T> {
    a: usize,
    kind: Unary<T>,
}

impl<T: Element> Unary<T> {
    /// The operation's name, as the user calls it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Unary::Neg => "neg",
            Unary::Scale(_) => "scale",
            Unary::Exp => "exp",
            Unary::Ln => "ln",
            Unary::Sqrt => "sqrt",
            Unary::Powi(_) => "powi",
            Unary::Abs => "abs",
            Unary::Tanh => "tanh",
            Unary::Sigmoid => "sigmoid",
            Unary::Relu => "relu",
            Unary::LeakyRelu(_) => "leaky_relu",
            Unary::Elu(_) => "elu",
            Unary::Gelu => "gelu",
            Unary::Softplus => "softplus",
            Unary::Clamp(..) => "clamp",
        }
    }
}

impl<T: Element> Rec<T> {
    pub(crate) fn name(&self) -> &'static str {
        self.kind.name()
    }

    pub(crate) fn inputs(&self) -> SmallVec<[usize; 4]> {
        smallvec::smallvec![self.a]
    }

    /// The values the reverse rule reads (see [`Unary::reads`]).
    pub(crate) fn value_reads(&self, me: usize) -> SmallVec<[usize; 4]> {
        let (rx, ry) = self.kind.reads();
        let mut v = SmallVec::new();
        if rx {
            v.push(self.a);
        }
        if ry {
            v.push(me);
        }
        v
    }

    pub(crate) fn backward(&self, me: usize, g: ArrayViewD<'_, T>, b: &mut Bwd<'_, '_, T>) {
        // A value `df` does not read may have been freed (its shape kept): stand the
        // other one (or the adjoint, of the same shape) in for it.
        let (rx, ry) = self.kind.reads();
        let (x, y) = match (rx, ry) {
            (true, true) => (b.vals[self.a].view(), b.vals[me].view()),
            (true, false) => (b.vals[self.a].view(), b.vals[self.a].view()),
            (false, true) => (b.vals[me].view(), b.vals[me].view()),
            (false, false) => (g.view(), g.view()),
        };
        if let Some((mut ga, fresh)) = b.gs.acc_or_fresh(self.a, x.shape()) {
            let k = self.kind;
            if let (Some(d), Some(gs), Some(xs), Some(ys)) =
                (ga.as_slice_mut(), g.as_slice(), x.as_slice(), y.as_slice())
            {
                // All in standard layout: one pass over contiguous slices, written
                // (`0 + v`, the bits of adding to zeros) into a fresh adjoint; over
                // rayon's threads in pieces from `SPLIT_MIN` elements (each element
                // alone: the same bits on any number of threads).
                let pass = |d: &mut [T], gs: &[T], xs: &[T], ys: &[T]| {
                    unswitch!(k, |k| {
                        let it = d.iter_mut().zip(gs.iter().zip(xs).zip(ys));
                        if fresh {
                            for (d, ((&g, &x), &y)) in it {
                                *d = T::zero() + g * k.df(x, y);
                            }
                        } else {
                            for (d, ((&g, &x), &y)) in it {
                                *d += g * k.df(x, y);
                            }
                        }
                    })
                };
                let min = super::par::SPLIT_MIN;
                super::par::pieces(d, 16, gs.len(), min, |o, d| {
                    let r = o..o + d.len();
                    simd::wide(
                        #[inline(always)]
                        || pass(d, &gs[r.clone()], &xs[r.clone()], &ys[r]),
                    );
                });
                return;
            }
            if fresh {
                ga.fill(T::zero());
            }
            Zip::from(&mut ga)
                .and(&g)
                .and(&x)
                .and(&y)
                .for_each(|ga, &g, &x, &y| *ga += g * k.df(x, y));
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    #[track_caller]
    pub(crate) fn unary(&mut self, a: Var, kind: Unary<T>) -> AdResult<Var> {
        let ia = self.index(a)?;
        let x = self.vals[ia].view();
        let y = match x.as_slice() {
            // Contiguous maps: the dispatched loop (AVX-512F or AVX2 where the processor
            // has it), on each thread's piece from `SPLIT_MIN` elements.
            Some(xs) => {
                // Every element is written by the map.
                let mut y = self.pool.overwritten(x.shape());
                let ys = y.as_slice_mut().expect("standard layout");
                let min = super::par::SPLIT_MIN;
                unswitch!(kind, |k| super::par::pieces(
                    ys,
                    16,
                    xs.len(),
                    min,
                    |o, ys| { map_into(k, &xs[o..o + ys.len()], ys) }
                ));
                y
            }
            None => unswitch!(kind, |k| self
                .pool
                .collect(x.shape(), x.iter().map(|&v| k.f(v)))),
        };
        let tracked = self.tracked[ia];
        let mut tan = Tan::None;
        if self.forward()
            && let Some(ta) = self.tans[ia].view()
        {
            let t = match (ta.as_slice(), x.as_slice(), y.as_slice()) {
                // All in standard layout: one pass over contiguous slices.
                (Some(ts), Some(xs), Some(ys)) => unswitch!(kind, |k| self.pool.collect(
                    x.shape(),
                    ts.iter()
                        .zip(xs.iter().zip(ys))
                        .map(|(&ta, (&x, &y))| ta * k.df(x, y)),
                )),
                _ => {
                    let mut t = self.pool.zeros(x.shape());
                    Zip::from(&mut t)
                        .and(&ta)
                        .and(&x)
                        .and(&y)
                        .for_each(|t, &ta, &x, &y| *t = ta * kind.df(x, y));
                    t
                }
            };
            tan = Tan::Own(t);
        }
        Ok(self.push(y, tracked, Op::Unary(Rec { a: ia, kind }), tan))
    }

    /// `-a`.
    #[track_caller]
    pub fn neg(&mut self, a: Var) -> AdResult<Var> {
        self.unary(a, Unary::Neg)
    }

    /// `c · a` for a constant `c`.
    #[track_caller]
    pub fn scale(&mut self, a: Var, c: T) -> AdResult<Var> {
        self.unary(a, Unary::Scale(c))
    }

    /// `exp(a)`.
    #[track_caller]
    pub fn exp(&mut self, a: Var) -> AdResult<Var> {
        self.unary(a, Unary::Exp)
    }

    /// Natural logarithm (NaN below 0, `-inf` at 0, as IEEE says).
    #[track_caller]
    pub fn ln(&mut self, a: Var) -> AdResult<Var> {
        self.unary(a, Unary::Ln)
    }

    /// Square root (its derivative is infinite at 0).
    #[track_caller]
    pub fn sqrt(&mut self, a: Var) -> AdResult<Var> {
        self.unary(a, Unary::Sqrt)
    }

    /// `a^n` for an integer `n`.
    #[track_caller]
    pub fn powi(&mut self, a: Var, n: i32) -> AdResult<Var> {
        self.unary(a, Unary::Powi(n))
    }

    /// `|a|` (derivative 0 at 0).
    #[track_caller]
    pub fn abs(&mut self, a: Var) -> AdResult<Var> {
        self.unary(a, Unary::Abs)
    }

    /// `tanh(a)`.
    #[track_caller]
    pub fn tanh(&mut self, a: Var) -> AdResult<Var> {
        self.unary(a, Unary::Tanh)
    }

    /// The logistic function `1 / (1 + e^-a)`, computed without overflow.
    #[track_caller]
    pub fn sigmoid(&mut self, a: Var) -> AdResult<Var> {
        self.unary(a, Unary::Sigmoid)
    }

    /// `max(a, 0)` (derivative 0 at 0).
    #[track_caller]
    pub fn relu(&mut self, a: Var) -> AdResult<Var> {
        self.unary(a, Unary::Relu)
    }

    /// `a` where positive, `alpha · a` elsewhere.
    #[track_caller]
    pub fn leaky_relu(&mut self, a: Var, alpha: T) -> AdResult<Var> {
        self.unary(a, Unary::LeakyRelu(alpha))
    }

    /// `a` where positive, `alpha · (e^a - 1)` elsewhere.
    #[track_caller]
    pub fn elu(&mut self, a: Var, alpha: T) -> AdResult<Var> {
        self.unary(a, Unary::Elu(alpha))
    }

    /// GELU in its tanh form (PyTorch's `approximate="tanh"`):
    /// `a/2 · (1 + tanh(√(2/π)(a + 0.044715 a³)))`.
    #[track_caller]
    pub fn gelu(&mut self, a: Var) -> AdResult<Var> {
        self.unary(a, Unary::Gelu)
    }

    /// `ln(1 + e^a)`, computed without overflow.
    #[track_caller]
    pub fn softplus(&mut self, a: Var) -> AdResult<Var> {
        self.unary(a, Unary::Softplus)
    }

    /// `min(max(a, lo), hi)`, NaN where `a` is NaN; derivative 1 on `[lo, hi]`, 0
    /// outside.
    ///
    /// Errors with [`AdError::InvalidArgument`] when `lo > hi` or either is NaN.
    #[track_caller]
    pub fn clamp(&mut self, a: Var, lo: T, hi: T) -> AdResult<Var> {
        if lo.is_nan() || hi.is_nan() || lo > hi {
            return Err(AdError::InvalidArgument {
                op: "clamp",
                what: format!("bounds must satisfy lo <= hi, got lo = {lo:?}, hi = {hi:?}"),
            });
        }
        self.unary(a, Unary::Clamp(lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The maps and their reverse rules over rayon's threads (from `SPLIT_MIN` elements, one piece a thread)
    /// against the derivatives written out, for a map that reads its output (`tanh`:
    /// `1 - y²` from its output) and one that reads its input (`relu`), into a fresh
    /// adjoint and into one that already holds a sum (the value used twice); the same
    /// bits on one thread and on two.
    #[test]
    fn reverse_rules_over_threads_match_the_derivatives() {
        use crate::Duplicated;
        use crate::tensor::{self as tn, TapeBuffers};
        let n = super::super::par::SPLIT_MIN + 12_345;
        let x = ndarray::Array1::from_shape_fn(n, |i| ((i as f64) * 0.37).sin() * 3.0);
        let want: Vec<f64> = x
            .iter()
            .map(|&v| 2.0 * (1.0 - v.tanh().powi(2)) + f64::from(v > 0.0))
            .collect();
        let mut runs = Vec::new();
        for threads in [1, 2] {
            let pool = crate::tensor::par::test_pool(threads);
            let mut g = ndarray::Array1::zeros(n);
            pool.install(|| {
                tn::gradient(
                    &mut TapeBuffers::new(),
                    |t, (x,)| {
                        let a = t.tanh(x)?;
                        let b = t.relu(x)?;
                        let s = t.add(a, b)?;
                        let s = t.add(s, a)?;
                        t.sum(s)
                    },
                    (Duplicated(&x, &mut g),),
                )
                .expect("gradient")
            });
            let err = g
                .iter()
                .zip(&want)
                .fold(0.0f64, |e, (&g, &w)| e.max((g - w).abs()));
            assert!(err < 1e-14, "{threads} threads: error {err}");
            runs.push(g);
        }
        assert_eq!(runs[0], runs[1], "bits differ between one thread and two");
    }

    /// The dispatched map (AVX-512F or AVX2 here when the processor has them) gives the same bits
    /// as the baseline loop for every map, over values from tiny to overflowing, in
    /// both element types.
    #[test]
    fn the_dispatched_map_equals_the_baseline_loop_bit_for_bit() {
        fn check<T: Element>(kinds: &[Unary<T>]) {
            let xs: Vec<T> = (0..4099)
                .map(|i| T::cst(((i as f64) * 0.618).sin() * 2f64.powi(i % 15 - 6)))
                .chain([
                    T::zero(),
                    -T::zero(),
                    T::infinity(),
                    T::neg_infinity(),
                    T::nan(),
                ])
                .collect();
            for &kind in kinds {
                let (mut got, mut want) = (vec![T::zero(); xs.len()], vec![T::zero(); xs.len()]);
                unswitch!(kind, |k| map_into(k, &xs, &mut got));
                map_plain(kind, &xs, &mut want);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        g == w || (g.is_nan() && w.is_nan()),
                        "{} at {:?}: {g:?} vs {w:?}",
                        kind.name(),
                        xs[i]
                    );
                }
            }
        }
        let kinds = |c: f64| {
            vec![
                Unary::Tanh,
                Unary::Sigmoid,
                Unary::Exp,
                Unary::Relu,
                Unary::Neg,
                Unary::Scale(c),
                Unary::LeakyRelu(0.1),
                Unary::Elu(0.7),
                Unary::Gelu,
                Unary::Softplus,
            ]
        };
        check::<f64>(&kinds(1.5));
        let k32: Vec<Unary<f32>> = kinds(1.5)
            .into_iter()
            .map(|k| match k {
                Unary::Scale(c) => Unary::Scale(c as f32),
                Unary::LeakyRelu(a) => Unary::LeakyRelu(a as f32),
                Unary::Elu(a) => Unary::Elu(a as f32),
                Unary::Tanh => Unary::Tanh,
                Unary::Sigmoid => Unary::Sigmoid,
                Unary::Exp => Unary::Exp,
                Unary::Relu => Unary::Relu,
                Unary::Neg => Unary::Neg,
                Unary::Gelu => Unary::Gelu,
                _ => Unary::Softplus,
            })
            .collect();
        check::<f32>(&k32);
    }
}
