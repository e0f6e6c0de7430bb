//! Reverse mode: the tape [`Tape`] and its number type [`Var`].
//!
//! A [`Var`] is a `Copy` handle (value, record index, reference to the recording) so
//! user code reads like plain math. Every operation on variables appends one compact
//! record holding its operands' indices and local partials; constants record nothing.
//! The reverse sweep walks the records backwards once, accumulating adjoints.
//!
//! Shifts by a constant (`x + c`, `x - c`) record nothing either: their adjoint is the
//! adjoint of `x`, so the result shares `x`'s record ([`Var::id`] is `x`'s) and only
//! carries its own value. Consequently the adjoint that [`Tape::backward`] reports at an
//! intermediate variable is not a promise: at a shifted value it is its operand's total
//! adjoint. Adjoints of the inputs (what every entry point returns) are exact.
//!
//! Storage is reused: after [`Tape::reset`] the record vectors keep their capacity and
//! the bump arena (which holds the input variables handed to the function) keeps its
//! largest chunk, so a warm tape records and sweeps without touching the heap.

use super::lift::{Lift, impl_number, lift_erf};
use super::real::{Real, ScalarRule};
use crate::error::{AdError, AdResult};
use bumpalo::Bump;
use core::cell::RefCell;
use core::panic::Location;
#[allow(unused_imports)]
use num_traits::{Float, One, ToPrimitive, Zero};

mod fused;
mod sweep;

/// Largest number of records one recording may hold (indices are `u32`).
pub(crate) const MAX_RECORDS: usize = u32::MAX as usize - 1;

/// The records, structure of arrays: one kind byte and one value per record; operand
/// indices and the partials that are not implied by the kind go to two streams that the
/// reverse sweep reads backwards (see [`sweep`] for each kind's layout).
#[derive(Debug, Default)]
pub(super) struct TraceData<T> {
    pub(super) kinds: Vec<u8>,
    pub(super) vals: Vec<T>,
    pub(super) args: Vec<u32>,
    pub(super) parts: Vec<T>,
    pub(super) overflow: bool,
    /// Where a recorded value was first read as a plain number ([`Real::value`] on a
    /// recorded [`Var`]): the recording's derivative is refused.
    pub(super) read: Option<&'static Location<'static>>,
    /// Reused buffer for operand lists that need copies recorded first.
    scratch: Vec<u32>,
}

impl<T: Real> TraceData<T> {
    /// Appends a record of `kind` with value `v` (its operands are pushed before).
    #[inline(always)]
    fn record(&mut self, kind: u8, v: T) -> Option<u32> {
        let idx = self.kinds.len();
        if idx >= MAX_RECORDS {
            self.overflow = true;
            return None;
        }
        self.kinds.push(kind);
        self.vals.push(v);
        Some(idx as u32)
    }
}

/// The recording side of a [`Tape`], shared by the [`Var`]s of one evaluation.
#[derive(Debug)]
pub struct Trace<T> {
    pub(super) data: RefCell<TraceData<T>>,
}

impl<T: Real> Trace<T> {
    fn new() -> Self {
        Trace {
            data: RefCell::new(TraceData {
                kinds: Vec::new(),
                vals: Vec::new(),
                args: Vec::new(),
                parts: Vec::new(),
                overflow: false,
                read: None,
                scratch: Vec::new(),
            }),
        }
    }

    /// Wraps the index of a new record (a constant if the recording overflowed).
    #[inline(always)]
    fn wrap(&self, idx: Option<u32>, v: T) -> Var<'_, T> {
        match idx {
            Some(idx) => Var {
                v,
                idx,
                state: RECORDED,
                tape: Some(self),
            },
            None => Var {
                v,
                idx: 0,
                state: CONSTANT,
                tape: None,
            },
        }
    }

    #[inline(always)]
    fn push1(&self, kind: u8, a: u32, v: T) -> Var<'_, T> {
        let mut d = self.data.borrow_mut();
        d.args.push(a);
        let i = d.record(kind, v);
        drop(d);
        self.wrap(i, v)
    }

    #[inline(always)]
    fn push2(&self, kind: u8, a: u32, b: u32, v: T) -> Var<'_, T> {
        let mut d = self.data.borrow_mut();
        d.args.extend_from_slice(&[a, b]);
        let i = d.record(kind, v);
        drop(d);
        self.wrap(i, v)
    }

    /// A new input variable with value `v`.
    #[inline]
    pub fn var(&self, v: T) -> Var<'_, T> {
        let i = self.data.borrow_mut().record(sweep::LEAF, v);
        self.wrap(i, v)
    }
}

/// [`Var::state`]: the value is record `idx`'s.
const RECORDED: u8 = 0;
/// [`Var::state`]: the value differs from record `idx`'s by a constant (`x ± c` shares
/// its operand's record), so kinds whose sweep reads operand values from the records
/// must not use `idx`'s.
const SHIFTED: u8 = 1;
/// [`Var::state`]: a constant (`tape` is `None`).
const CONSTANT: u8 = 2;

/// The reverse-mode number type: a value recorded on a [`Tape`].
///
/// `Copy`, three words. Operations between variables of one recording append records;
/// operations with constants record nothing or a one-parent record.
///
/// Shifts by a constant (`x + c`, `x - c`) record nothing: the result shares `x`'s record
/// (same [`Var::id`]) and carries its own value. Adjoints at intermediate variables are
/// therefore not a promise ([`Tape::backward`] reports `x`'s total adjoint at `x + c`);
/// adjoints of inputs are exact.
#[derive(Clone, Copy)]
pub struct Var<'t, T = f64> {
    v: T,
    idx: u32,
    /// [`RECORDED`], [`SHIFTED`] or [`CONSTANT`] (one byte, so that fused records
    /// check a whole operand list with one `or` per entry).
    state: u8,
    tape: Option<&'t Trace<T>>,
}

impl<T: core::fmt::Debug> core::fmt::Debug for Var<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.tape {
            Some(_) => write!(f, "Var({:?} @ {})", self.v, self.idx),
            None => write!(f, "Var({:?}, constant)", self.v),
        }
    }
}

impl<'t, T: Real> Var<'t, T> {
    /// The value, as a plain number of the level below.
    ///
    /// Reading a recorded variable is refused as [`Real::value`] is: the recording's
    /// derivative then fails with [`AdError::TrackedValueRead`] naming this call. Read
    /// [`Real::detach`]ed values on purpose.
    #[inline]
    #[track_caller]
    pub fn val(&self) -> T {
        self.note_read();
        self.v
    }

    /// The value, for the engine's own use (reading a result is not a read by the user).
    #[inline]
    pub(crate) fn primal(&self) -> T {
        self.v
    }

    /// Notes (once per recording) that the user read this recorded variable's value.
    #[inline]
    #[track_caller]
    fn note_read(&self) {
        if let Some(t) = self.tape {
            let loc = Location::caller();
            t.data.borrow_mut().read.get_or_insert(loc);
        }
    }

    /// The record index, or `None` for a constant. A value shifted by a constant
    /// (`x + c`) has its operand's index (see [`Var`]).
    #[inline]
    pub fn id(&self) -> Option<VarId> {
        self.tape.map(|_| VarId(self.idx))
    }

    #[inline]
    pub(crate) fn raw_index(&self) -> Option<u32> {
        self.tape.map(|_| self.idx)
    }
}

/// The index of a recorded [`Var`], usable after the recording ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VarId(pub(crate) u32);

impl VarId {
    /// The position of the variable's adjoint in [`Tape::backward`]'s result.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl<'t, T: Real> Lift for Var<'t, T> {
    type Base = T;
    #[inline(always)]
    fn base(&self) -> T {
        self.v
    }
    #[inline(always)]
    #[track_caller]
    fn on_read(&self) {
        self.note_read();
    }
    #[inline(always)]
    fn constant(v: T) -> Self {
        Var {
            v,
            idx: 0,
            state: CONSTANT,
            tape: None,
        }
    }
    #[inline(always)]
    fn unary(self, v: T, d: T) -> Self {
        match self.tape {
            Some(t) => {
                let mut data = t.data.borrow_mut();
                data.args.push(self.idx);
                data.parts.push(d);
                let i = data.record(sweep::UNARY, v);
                drop(data);
                t.wrap(i, v)
            }
            None => Self::constant(v),
        }
    }
    #[inline(always)]
    fn binary(self, o: Self, v: T, da: T, db: T) -> Self {
        match (self.tape, o.tape) {
            (Some(t), Some(_)) => {
                let mut data = t.data.borrow_mut();
                data.args.extend_from_slice(&[self.idx, o.idx]);
                data.parts.extend_from_slice(&[da, db]);
                let i = data.record(sweep::BINARY, v);
                drop(data);
                t.wrap(i, v)
            }
            (Some(_), None) => self.unary(v, da),
            (None, Some(_)) => o.unary(v, db),
            (None, None) => Self::constant(v),
        }
    }
    #[inline(always)]
    fn shift(self, v: T) -> Self {
        // No record: the adjoint of `x + c` is the adjoint of `x`, so the result shares
        // `x`'s record and only remembers that its value differs.
        Var {
            v,
            state: self.state.max(SHIFTED),
            ..self
        }
    }
    #[inline(always)]
    fn negate(self, v: T) -> Self {
        match self.tape {
            Some(t) => t.push1(sweep::NEG, self.idx, v),
            None => Self::constant(v),
        }
    }
    #[inline(always)]
    fn plus(self, o: Self, v: T) -> Self {
        match (self.tape, o.tape) {
            (Some(t), Some(_)) => t.push2(sweep::ADD, self.idx, o.idx, v),
            (Some(_), None) => self.shift(v),
            (None, Some(_)) => o.shift(v),
            (None, None) => Self::constant(v),
        }
    }
    #[inline(always)]
    fn minus(self, o: Self, v: T) -> Self {
        match (self.tape, o.tape) {
            (Some(t), Some(_)) => t.push2(sweep::SUB, self.idx, o.idx, v),
            (Some(_), None) => self.shift(v),
            (None, Some(_)) => o.negate(v),
            (None, None) => Self::constant(v),
        }
    }
    #[inline(always)]
    fn times(self, o: Self, v: T) -> Self {
        match (self.tape, o.tape) {
            // A shifted operand's value is not its record's: store the partials.
            (Some(_), Some(_)) if self.state | o.state != RECORDED => {
                self.binary(o, v, o.v, self.v)
            }
            (Some(t), Some(_)) => t.push2(sweep::MUL, self.idx, o.idx, v),
            (Some(_), None) => self.unary(v, o.v),
            (None, Some(_)) => o.unary(v, self.v),
            (None, None) => Self::constant(v),
        }
    }
}

impl_number!(impl['t, T: Real] Var<'t, T> where []);

impl<'t, T: Real> Var<'t, T> {
    /// The trace of the first recorded entry of `xs`, if any.
    #[inline]
    fn trace_of(xs: &[Self]) -> Option<&'t Trace<T>> {
        xs.iter().find_map(|x| x.tape)
    }
}

impl<'t, T: Real> Real for Var<'t, T> {
    #[inline]
    fn cst(c: f64) -> Self {
        Self::constant(T::cst(c))
    }
    #[inline]
    fn value(&self) -> f64 {
        self.note_read();
        self.v.value()
    }
    #[inline]
    fn detach(self) -> Self {
        Self::constant(self.v.detach())
    }
    #[inline]
    fn erf(self) -> Self {
        lift_erf(self)
    }
    fn dot(a: &[Self], b: &[Self]) -> Self {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let (la, lb) = (Self::trace_of(a), Self::trace_of(b));
        match la.or(lb) {
            Some(t) if la.is_some() && lb.is_some() => t.dot(a, b),
            // One side constant: a linear combination with the constants as partials.
            Some(t) => {
                let (x, c) = if la.is_some() { (a, b) } else { (b, a) };
                let mut v = T::zero();
                for (xi, ci) in x.iter().zip(c) {
                    v += xi.v * ci.v;
                }
                let mut d = t.data.borrow_mut();
                let mut len = 0u32;
                for (xi, ci) in x.iter().zip(c) {
                    d.term(xi, ci.v, &mut len);
                }
                let i = d.linear(len, v);
                drop(d);
                t.wrap(i, v)
            }
            None => {
                let mut v = T::zero();
                for (x, y) in a.iter().zip(b) {
                    v += x.v * y.v;
                }
                Self::constant(v)
            }
        }
    }
    fn sum_of(a: &[Self]) -> Self {
        let mut v = T::zero();
        for x in a {
            v += x.v;
        }
        let Some(t) = Self::trace_of(a) else {
            return Self::constant(v);
        };
        let mut d = t.data.borrow_mut();
        let n0 = d.args.len();
        d.args
            .extend(a.iter().filter(|x| x.tape.is_some()).map(|x| x.idx));
        let len = (d.args.len() - n0) as u32;
        d.args.push(len);
        let i = d.record(sweep::SUM, v);
        drop(d);
        t.wrap(i, v)
    }
    fn sum_sq(a: &[Self]) -> Self {
        match Self::trace_of(a) {
            Some(t) => t.sum_sq(a),
            None => {
                let mut v = T::zero();
                for x in a {
                    v += x.v * x.v;
                }
                Self::constant(v)
            }
        }
    }
    fn logsumexp(a: &[Self]) -> Self {
        let mx = a
            .iter()
            .map(|x| x.v)
            .fold(T::neg_infinity(), |m, x| if x > m { x } else { m });
        let Some(t) = Self::trace_of(a).filter(|_| mx.is_finite()) else {
            // Empty, all `-∞`, or `+∞`/NaN present: no finite derivative to record.
            let s: T = a.iter().map(|x| (x.v - mx).exp()).sum();
            return Self::constant(if mx.is_finite() { s.ln() + mx } else { mx });
        };
        // The partials are the softmax: keep each `exp(x - max)` and scale by `1/s`.
        let mut d = t.data.borrow_mut();
        let p0 = d.parts.len();
        let (mut s, mut len) = (T::zero(), 0u32);
        for x in a {
            let e = (x.v - mx).exp();
            s += e;
            d.term(x, e, &mut len);
        }
        let y = s.ln() + mx;
        let r = s.recip();
        for p in &mut d.parts[p0..] {
            *p *= r;
        }
        let i = d.linear(len, y);
        drop(d);
        t.wrap(i, y)
    }
    fn custom<R: ScalarRule<N>, const N: usize>(rule: &R, x: [Self; N]) -> Self {
        let xv = x.map(|xi| xi.v);
        let y = rule.primal(xv);
        let Some(t) = x.iter().find_map(|xi| xi.tape) else {
            return Self::constant(y);
        };
        let partials = rule.reverse(xv, y, T::one());
        let mut d = t.data.borrow_mut();
        let mut len = 0u32;
        for (xi, p) in x.iter().zip(partials) {
            d.term(xi, p, &mut len);
        }
        let i = d.linear(len, y);
        drop(d);
        t.wrap(i, y)
    }
}

/// A reusable reverse-mode tape: records, adjoints and the arena for input variables.
///
/// Keep one and call the entry points with it ([`Tape::gradient_into`],
/// [`autodiff_with`](crate::scalar::autodiff_with), ...): once it has seen a problem of
/// a given size it records and sweeps without heap allocation.
///
/// The tape can also be driven by hand:
///
/// ```
/// use shade_autodiff::scalar::Tape;
///
/// let mut tape = Tape::<f64>::new();
/// let (x, y) = {
///     let t = tape.trace();
///     let x = t.var(3.0);
///     let y = x * x + x;
///     (x.id().unwrap(), y.id().unwrap())
/// };
/// let adj = tape.backward(y, 1.0).unwrap();
/// assert_eq!(adj[x.index()], 7.0);
/// ```
#[derive(Debug)]
pub struct Tape<T = f64> {
    pub(crate) trace: Trace<T>,
    pub(crate) bump: Bump,
    pub(crate) adj: Vec<T>,
    /// Output record indices of the last in-place recording (`u32::MAX`: constant).
    pub(crate) out_ids: Vec<u32>,
    /// Scratch for multi-seed sweeps.
    pub(crate) seeds: Vec<(u32, T)>,
    /// Scratch for unit vectors (Hessian columns).
    pub(crate) unit: Vec<f64>,
}

impl<T: Real> Default for Tape<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Real> Tape<T> {
    /// An empty tape.
    pub fn new() -> Self {
        Tape {
            trace: Trace::new(),
            bump: Bump::new(),
            adj: Vec::new(),
            out_ids: Vec::new(),
            seeds: Vec::new(),
            unit: Vec::new(),
        }
    }

    /// Forgets the last recording, keeping every buffer's capacity.
    pub fn reset(&mut self) {
        let d = self.trace.data.get_mut();
        d.kinds.clear();
        d.vals.clear();
        d.args.clear();
        d.parts.clear();
        d.overflow = false;
        d.read = None;
        self.bump.reset();
    }

    /// The recording side, to create input variables by hand with [`Trace::var`].
    pub fn trace(&self) -> &Trace<T> {
        &self.trace
    }

    /// Number of records of the current recording.
    pub fn len(&self) -> usize {
        self.trace.data.borrow().kinds.len()
    }

    /// Whether nothing has been recorded since the last reset.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by the record buffers (capacity, not length).
    pub fn footprint_bytes(&self) -> usize {
        let d = self.trace.data.borrow();
        d.kinds.capacity()
            + (d.vals.capacity() + d.parts.capacity()) * core::mem::size_of::<T>()
            + d.args.capacity() * 4
            + self.adj.capacity() * core::mem::size_of::<T>()
            + self.bump.allocated_bytes()
    }

    /// Checks that the recording fit the index space and that no recorded value was
    /// read as a plain number ([`AdError::TrackedValueRead`]).
    pub(crate) fn check_recording(&mut self) -> AdResult<()> {
        let d = self.trace.data.get_mut();
        if let Some(location) = d.read {
            return Err(AdError::TrackedValueRead {
                location,
                what: "the value of a recorded scalar `Var`".into(),
                mode: "reverse mode",
            });
        }
        if d.overflow {
            return Err(AdError::TapeOverflow {
                records: d.kinds.len(),
                limit: MAX_RECORDS,
            });
        }
        Ok(())
    }

    /// Runs the reverse sweep from `out` with adjoint `seed`, returning the adjoints of
    /// every record (index them with [`VarId::index`]). Those of the inputs are the
    /// gradient; an intermediate shifted by a constant shares its operand's (see
    /// [`Var`]).
    pub fn backward(&mut self, out: VarId, seed: T) -> AdResult<&[T]> {
        self.check_recording()?;
        self.sweep(&[(out.0, seed)]);
        Ok(&self.adj)
    }

    /// The reverse sweep with several seeded records (adjoints are zeroed first).
    pub(crate) fn sweep(&mut self, seeds: &[(u32, T)]) {
        let d = self.trace.data.get_mut();
        self.adj.clear();
        self.adj.resize(d.kinds.len(), T::zero());
        let Some(top) = seeds.iter().map(|s| s.0 as usize).max() else {
            return;
        };
        for &(i, s) in seeds {
            self.adj[i as usize] += s;
        }
        sweep::sweep(d, &mut self.adj, top);
    }

    /// Adjoint of record `i` after a sweep.
    #[inline]
    pub(crate) fn adjoint(&self, i: u32) -> T {
        self.adj[i as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_records_one_entry_and_matches_products() {
        let mut tape = Tape::<f64>::new();
        let (ids, y) = {
            let t = tape.trace();
            let a: Vec<_> = [1.0, 2.0, 3.0].iter().map(|&v| t.var(v)).collect();
            // Non-contiguous second operand, with a constant in it.
            let b = [a[2], Var::cst(5.0), a[0]];
            let y = Var::dot(&a, &b);
            assert_eq!(y.detach().val(), 3.0 + 10.0 + 3.0);
            (
                a.iter().map(|x| x.id().unwrap()).collect::<Vec<_>>(),
                y.id().unwrap(),
            )
        };
        let adj = tape.backward(y, 1.0).unwrap().to_vec();
        // y = a0 a2 + 5 a1 + a2 a0 = 2 a0 a2 + 5 a1
        assert_eq!(adj[ids[0].index()], 6.0);
        assert_eq!(adj[ids[1].index()], 5.0);
        assert_eq!(adj[ids[2].index()], 2.0);
    }

    #[test]
    fn contiguous_dot_records_ranges() {
        let mut tape = Tape::<f64>::new();
        let (ids, y) = {
            let t = tape.trace();
            let a: Vec<_> = [1.0, 2.0, 3.0].iter().map(|&v| t.var(v)).collect();
            let y = Var::dot(&a, &a);
            // One record; both operand lists stored as ranges: `[a, b, flags, n]`.
            let d = t.data.borrow();
            assert_eq!(d.kinds.last(), Some(&sweep::DOT));
            assert_eq!(d.args[..], [0, 0, 3, 3]);
            drop(d);
            (
                a.iter().map(|x| x.id().unwrap()).collect::<Vec<_>>(),
                y.id().unwrap(),
            )
        };
        let adj = tape.backward(y, 1.0).unwrap().to_vec();
        assert_eq!(
            ids.iter().map(|i| adj[i.index()]).collect::<Vec<_>>(),
            vec![2.0, 4.0, 6.0]
        );
    }
}
