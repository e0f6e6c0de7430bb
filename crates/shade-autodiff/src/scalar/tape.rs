//! Reverse mode: the tape [`Tape`] and its number type [`Var`].
//!
//! A [`Var`] is a `Copy` handle (value, record index, reference to the recording) so
//! user code reads like plain math. Every operation on variables appends one compact
//! record holding its operands' indices and local partials; constants record nothing.
//! The reverse sweep walks the records backwards once, accumulating adjoints.
//!
//! Storage is reused: after [`Tape::reset`] the record vectors keep their capacity and
//! the bump arena (which holds the input variables handed to the function) keeps its
//! largest chunk, so a warm tape records and sweeps without touching the heap.

use super::lift::{Lift, impl_number, lift_erf};
use super::real::{Real, ScalarRule};
use crate::error::{AdError, AdResult};
use bumpalo::Bump;
use core::cell::RefCell;
#[allow(unused_imports)]
use num_traits::{Float, One, ToPrimitive, Zero};
use smallvec::SmallVec;

/// Largest number of records (and of operand slots) one recording may hold.
pub(crate) const MAX_RECORDS: usize = u32::MAX as usize - 1;

/// One record: how the value at this index depends on earlier ones.
#[derive(Clone, Copy, Debug)]
enum Node<T> {
    /// An input or a materialised constant: no parents.
    Leaf,
    /// One parent.
    Unary { a: u32, da: T },
    /// Two parents.
    Binary { a: u32, b: u32, da: T, db: T },
    /// `len` parents with partials, stored in `edges[start..start + len]`.
    Linear { start: u32, len: u32 },
    /// `Σ v[a_i]` over indices `ops[start..start + len]`.
    Sum { start: u32, len: u32 },
    /// `Σ v[a_i] v[b_i]` with `a = ops[start..start+len]`, `b = ops[start+len..start+2len]`.
    Dot { start: u32, len: u32 },
    /// `Σ v[a_i] v[b + i]` with `a = ops[start..start + len]`: second operand contiguous.
    DotGather { start: u32, b: u32, len: u32 },
    /// `Σ v[a + i] v[b + i]` over `i < len`: both operands contiguous on the tape.
    DotRange { a: u32, b: u32, len: u32 },
}

#[derive(Debug, Default)]
struct TraceData<T> {
    nodes: Vec<Node<T>>,
    vals: Vec<T>,
    ops: Vec<u32>,
    edges: Vec<(u32, T)>,
    overflow: bool,
}

/// The recording side of a [`Tape`], shared by the [`Var`]s of one evaluation.
#[derive(Debug)]
pub struct Trace<T> {
    data: RefCell<TraceData<T>>,
}

impl<T: Real> Trace<T> {
    fn new() -> Self {
        Trace {
            data: RefCell::new(TraceData {
                nodes: Vec::new(),
                vals: Vec::new(),
                ops: Vec::new(),
                edges: Vec::new(),
                overflow: false,
            }),
        }
    }

    #[inline]
    fn push(&self, node: Node<T>, v: T) -> Var<'_, T> {
        let mut d = self.data.borrow_mut();
        let idx = d.nodes.len();
        if idx >= MAX_RECORDS {
            d.overflow = true;
            return Var {
                v,
                idx: 0,
                tape: None,
            };
        }
        d.nodes.push(node);
        d.vals.push(v);
        Var {
            v,
            idx: idx as u32,
            tape: Some(self),
        }
    }

    /// A new input variable with value `v`.
    #[inline]
    pub fn var(&self, v: T) -> Var<'_, T> {
        self.push(Node::Leaf, v)
    }

    /// The index of `x` on this trace, materialising a constant as a leaf.
    #[inline]
    fn index_of(&self, x: &Var<'_, T>) -> u32 {
        match x.tape {
            Some(_) => x.idx,
            None => self.var(x.v).idx,
        }
    }

    fn dot(&self, a: &[Var<'_, T>], b: &[Var<'_, T>]) -> Var<'_, T> {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        if a.iter().chain(b).any(|x| x.tape.is_none()) {
            // Materialise constant operands as leaves so the sweep finds their values.
            let fix = |x: &Var<'_, T>| Var {
                v: x.v,
                idx: self.index_of(x),
                tape: None::<&Trace<T>>,
            };
            let a2: SmallVec<[Var<'_, T>; 16]> = a.iter().map(fix).collect();
            let b2: SmallVec<[Var<'_, T>; 16]> = b.iter().map(fix).collect();
            return self.dot_indices(&a2, &b2);
        }
        self.dot_indices(a, b)
    }

    /// Records `Σ a_i b_i`, reading only `v` and `idx` of the operands.
    #[inline]
    fn dot_indices(&self, a: &[Var<'_, T>], b: &[Var<'_, T>]) -> Var<'_, T> {
        let n = a.len();
        let mut v = T::zero();
        for (x, y) in a.iter().zip(b) {
            v += x.v * y.v;
        }
        let contiguous = |s: &[Var<'_, T>]| {
            s.iter()
                .enumerate()
                .all(|(k, x)| x.idx as usize == s[0].idx as usize + k)
        };
        let (ca, cb) = (contiguous(a), contiguous(b));
        let mut d = self.data.borrow_mut();
        let node = match (ca, cb) {
            (true, true) => Node::DotRange {
                a: a[0].idx,
                b: b[0].idx,
                len: n as u32,
            },
            // The product is symmetric: keep the gathered operand first.
            (false, true) | (true, false) => {
                let (g, c) = if cb { (a, b) } else { (b, a) };
                let start = d.ops.len();
                d.ops.extend(g.iter().map(|x| x.idx));
                Node::DotGather {
                    start: start as u32,
                    b: c[0].idx,
                    len: n as u32,
                }
            }
            (false, false) => {
                let start = d.ops.len();
                d.ops.extend(a.iter().map(|x| x.idx));
                d.ops.extend(b.iter().map(|x| x.idx));
                Node::Dot {
                    start: start as u32,
                    len: n as u32,
                }
            }
        };
        if d.ops.len() > MAX_RECORDS {
            d.overflow = true;
        }
        drop(d);
        self.push(node, v)
    }
}

/// The reverse-mode number type: a value recorded on a [`Tape`].
///
/// `Copy`, three words. Operations between variables of one recording append records;
/// operations with constants record nothing or a one-parent record.
#[derive(Clone, Copy)]
pub struct Var<'t, T = f64> {
    v: T,
    idx: u32,
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
    /// The value.
    #[inline]
    pub fn val(&self) -> T {
        self.v
    }

    /// The record index, or `None` for a constant.
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
    fn val(&self) -> T {
        self.v
    }
    #[inline(always)]
    fn constant(v: T) -> Self {
        Var {
            v,
            idx: 0,
            tape: None,
        }
    }
    #[inline(always)]
    fn unary(self, v: T, d: T) -> Self {
        match self.tape {
            Some(t) => t.push(Node::Unary { a: self.idx, da: d }, v),
            None => Self::constant(v),
        }
    }
    #[inline(always)]
    fn binary(self, o: Self, v: T, da: T, db: T) -> Self {
        match (self.tape, o.tape) {
            (Some(t), Some(_)) => t.push(
                Node::Binary {
                    a: self.idx,
                    b: o.idx,
                    da,
                    db,
                },
                v,
            ),
            (Some(t), None) => t.push(Node::Unary { a: self.idx, da }, v),
            (None, Some(t)) => t.push(Node::Unary { a: o.idx, da: db }, v),
            (None, None) => Self::constant(v),
        }
    }
}

impl_number!(impl['t, T: Real] Var<'t, T> where []);

impl<'t, T: Real> Real for Var<'t, T> {
    #[inline]
    fn cst(c: f64) -> Self {
        Self::constant(T::cst(c))
    }
    #[inline]
    fn value(&self) -> f64 {
        self.v.value()
    }
    #[inline]
    fn erf(self) -> Self {
        lift_erf(self)
    }
    fn dot(a: &[Self], b: &[Self]) -> Self {
        let n = a.len().min(b.len());
        match a[..n].iter().chain(&b[..n]).find_map(|x| x.tape) {
            Some(t) if n > 0 => t.dot(a, b),
            _ => {
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
        let Some(t) = a.iter().find_map(|x| x.tape) else {
            return Self::constant(v);
        };
        let start = {
            let mut d = t.data.borrow_mut();
            let start = d.ops.len();
            d.ops
                .extend(a.iter().filter(|x| x.tape.is_some()).map(|x| x.idx));
            if d.ops.len() > MAX_RECORDS {
                d.overflow = true;
            }
            start
        };
        let len = t.data.borrow().ops.len() - start;
        t.push(
            Node::Sum {
                start: start as u32,
                len: len as u32,
            },
            v,
        )
    }
    fn custom<R: ScalarRule<N>, const N: usize>(rule: &R, x: [Self; N]) -> Self {
        let xv = x.map(|xi| xi.v);
        let y = rule.primal(xv);
        let Some(t) = x.iter().find_map(|xi| xi.tape) else {
            return Self::constant(y);
        };
        let partials = rule.reverse(xv, y, T::one());
        let start = {
            let mut d = t.data.borrow_mut();
            let start = d.edges.len();
            for (xi, p) in x.iter().zip(partials) {
                if xi.tape.is_some() {
                    d.edges.push((xi.idx, p));
                }
            }
            if d.edges.len() > MAX_RECORDS {
                d.overflow = true;
            }
            start
        };
        let len = t.data.borrow().edges.len() - start;
        t.push(
            Node::Linear {
                start: start as u32,
                len: len as u32,
            },
            y,
        )
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
        d.nodes.clear();
        d.vals.clear();
        d.ops.clear();
        d.edges.clear();
        d.overflow = false;
        self.bump.reset();
    }

    /// The recording side, to create input variables by hand with [`Trace::var`].
    pub fn trace(&self) -> &Trace<T> {
        &self.trace
    }

    /// Number of records of the current recording.
    pub fn len(&self) -> usize {
        self.trace.data.borrow().nodes.len()
    }

    /// Whether nothing has been recorded since the last reset.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by the record buffers (capacity, not length).
    pub fn footprint_bytes(&self) -> usize {
        let d = self.trace.data.borrow();
        d.nodes.capacity() * core::mem::size_of::<Node<T>>()
            + d.vals.capacity() * core::mem::size_of::<T>()
            + d.ops.capacity() * 4
            + d.edges.capacity() * core::mem::size_of::<(u32, T)>()
            + self.adj.capacity() * core::mem::size_of::<T>()
            + self.bump.allocated_bytes()
    }

    /// Checks that the recording fit the index space.
    pub(crate) fn check_overflow(&mut self) -> AdResult<()> {
        let d = self.trace.data.get_mut();
        if d.overflow {
            return Err(AdError::TapeOverflow {
                records: d.nodes.len().max(d.ops.len()).max(d.edges.len()),
                limit: MAX_RECORDS,
            });
        }
        Ok(())
    }

    /// Runs the reverse sweep from `out` with adjoint `seed`, returning the adjoints of
    /// every record (index them with [`VarId::index`]).
    pub fn backward(&mut self, out: VarId, seed: T) -> AdResult<&[T]> {
        self.check_overflow()?;
        self.sweep(&[(out.0, seed)]);
        Ok(&self.adj)
    }

    /// The reverse sweep with several seeded records (adjoints are zeroed first).
    pub(crate) fn sweep(&mut self, seeds: &[(u32, T)]) {
        let d = self.trace.data.get_mut();
        let n = d.nodes.len();
        self.adj.clear();
        self.adj.resize(n, T::zero());
        let Some(top) = seeds.iter().map(|s| s.0 as usize).max() else {
            return;
        };
        for &(i, s) in seeds {
            self.adj[i as usize] += s;
        }
        let adj = &mut self.adj[..];
        let (nodes, vals, ops, edges) = (&d.nodes[..], &d.vals[..], &d.ops[..], &d.edges[..]);
        for i in (0..=top).rev() {
            let g = adj[i];
            match nodes[i] {
                Node::Leaf => {}
                Node::Unary { a, da } => adj[a as usize] += da * g,
                Node::Binary { a, b, da, db } => {
                    adj[a as usize] += da * g;
                    adj[b as usize] += db * g;
                }
                Node::Linear { start, len } => {
                    let s = start as usize;
                    for &(a, p) in &edges[s..s + len as usize] {
                        adj[a as usize] += p * g;
                    }
                }
                Node::Sum { start, len } => {
                    let s = start as usize;
                    for &a in &ops[s..s + len as usize] {
                        adj[a as usize] += g;
                    }
                }
                Node::Dot { start, len } => {
                    let (s, l) = (start as usize, len as usize);
                    let (ia, ib) = ops[s..s + 2 * l].split_at(l);
                    for (&a, &b) in ia.iter().zip(ib) {
                        let (a, b) = (a as usize, b as usize);
                        let (va, vb) = (vals[a], vals[b]);
                        adj[a] += vb * g;
                        adj[b] += va * g;
                    }
                }
                Node::DotGather { start, b, len } => {
                    let (s, b, l) = (start as usize, b as usize, len as usize);
                    for (k, &a) in ops[s..s + l].iter().enumerate() {
                        let a = a as usize;
                        let (va, vb) = (vals[a], vals[b + k]);
                        adj[a] += vb * g;
                        adj[b + k] += va * g;
                    }
                }
                Node::DotRange { a, b, len } => {
                    let (a, b, l) = (a as usize, b as usize, len as usize);
                    if a == b {
                        let two_g = g + g;
                        for (x, v) in adj[a..a + l].iter_mut().zip(&vals[a..a + l]) {
                            *x += *v * two_g;
                        }
                    } else {
                        for k in 0..l {
                            adj[a + k] += vals[b + k] * g;
                            adj[b + k] += vals[a + k] * g;
                        }
                    }
                }
            }
        }
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
            assert_eq!(y.val(), 3.0 + 10.0 + 3.0);
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
    fn contiguous_dot_uses_range_record() {
        let mut tape = Tape::<f64>::new();
        let (ids, y) = {
            let t = tape.trace();
            let a: Vec<_> = [1.0, 2.0, 3.0].iter().map(|&v| t.var(v)).collect();
            let y = Var::dot(&a, &a);
            assert!(matches!(
                t.data.borrow().nodes.last(),
                Some(Node::DotRange { .. })
            ));
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
