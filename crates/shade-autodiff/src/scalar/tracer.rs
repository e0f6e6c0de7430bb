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

/// One node of the arena: the empty set, one input, or the union of two nodes.
///
/// Unions are kept unevaluated (a DAG), so that an operation costs O(1) whatever the
/// size of its operands' sets: a running sum over `n` inputs builds `n` nodes, not
/// `n²/2` indices. A set is materialised only when asked for ([`Tracer::inputs`]).
#[derive(Clone, Copy, Debug)]
enum Node {
    Empty,
    Leaf(u32),
    Union(u32, u32),
}

/// The arena of one detection, and the visit marks of [`Tracer::inputs`].
struct Arena {
    /// Entry 0 is the empty set.
    nodes: Vec<Node>,
    /// `marks[i] == epoch`: node `i` was visited by the current query.
    marks: Vec<u32>,
    epoch: u32,
    /// Depth-first stack of a query.
    stack: Vec<u32>,
}

impl Arena {
    fn new() -> Self {
        Arena {
            nodes: vec![Node::Empty],
            marks: Vec::new(),
            epoch: 0,
            stack: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.nodes.truncate(1);
        self.marks.clear();
        self.epoch = 0;
        self.stack.clear();
    }

    /// The sorted leaves reachable from node `root`, each once.
    fn leaves(&mut self, root: u32) -> IndexSet {
        let mut out = IndexSet::new();
        if root == 0 || root as usize >= self.nodes.len() {
            return out;
        }
        if let Node::Leaf(i) = self.nodes[root as usize] {
            out.push(i);
            return out;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.marks.fill(0);
            self.epoch = 1;
        }
        self.marks.resize(self.nodes.len(), 0);
        self.stack.clear();
        self.stack.push(root);
        while let Some(i) = self.stack.pop() {
            let seen = &mut self.marks[i as usize];
            if *seen == self.epoch {
                continue;
            }
            *seen = self.epoch;
            match self.nodes[i as usize] {
                Node::Empty => {}
                Node::Leaf(j) => out.push(j),
                Node::Union(a, b) => {
                    self.stack.push(b);
                    self.stack.push(a);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

thread_local! {
    static ARENA: RefCell<Arena> = RefCell::new(Arena::new());
}

/// Runs `f` with a fresh arena of index sets (cleared before and after), so that the
/// sets of one detection neither see nor keep those of another. The [`Tracer`]s made
/// inside must not be read after it returns.
pub fn trace_sparsity<R>(f: impl FnOnce() -> R) -> R {
    let reset = || ARENA.with(|a| a.borrow_mut().clear());
    reset();
    let r = f();
    reset();
    r
}

fn push(node: Node) -> u32 {
    ARENA.with(|a| {
        let mut a = a.borrow_mut();
        a.nodes.push(node);
        u32::try_from(a.nodes.len() - 1).expect("fewer than 2^32 traced operations")
    })
}

/// The union of two sets (by their arena indices): O(1), a new node unless one side is
/// empty or both are the same.
#[inline]
fn union(a: u32, b: u32) -> u32 {
    if a == b || b == 0 {
        return a;
    }
    if a == 0 {
        return b;
    }
    push(Node::Union(a, b))
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
            set: push(Node::Leaf(i)),
        }
    }

    /// The sorted indices of the inputs this number depends on.
    pub fn inputs(&self) -> IndexSet {
        ARENA.with(|a| a.borrow_mut().leaves(self.set))
    }

    /// Whether `self` is `other` itself (the same value and the same set node): a value
    /// no operation has produced since `other` was made. [`probe_outputs`] uses this to
    /// tell outputs a function never wrote.
    ///
    /// [`probe_outputs`]: crate::scalar::probe_outputs
    pub fn is_same(&self, other: &Tracer) -> bool {
        self.set == other.set && self.v.to_bits() == other.v.to_bits()
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
    fn a_running_sum_builds_one_node_per_term() {
        trace_sparsity(|| {
            let x: Vec<Tracer> = (0..1000).map(|i| Tracer::input(0.5, i)).collect();
            let before = ARENA.with(|a| a.borrow().nodes.len());
            let s: Tracer = x.iter().copied().sum();
            let after = ARENA.with(|a| a.borrow().nodes.len());
            assert_eq!(after - before, 999);
            assert_eq!(s.inputs().len(), 1000);
            // Shared sub-sets are visited once: (s + s) * s has the same 1000 inputs.
            assert_eq!(((s + s) * s).inputs().as_slice(), s.inputs().as_slice());
        });
    }

    #[test]
    fn each_detection_starts_from_an_empty_arena() {
        let first = trace_sparsity(|| Tracer::input(1.0, 7).set);
        let second = trace_sparsity(|| Tracer::input(1.0, 9).set);
        assert_eq!(first, second);
    }
}
