//! The record kinds of the tape and the reverse sweep over them.
//!
//! Each record is one kind byte and one value; its operand indices go to the `args`
//! stream and the partials its kind does not imply go to the `parts` stream, both in
//! record order, so the sweep walks them backwards with two cursors. Layouts (`args`;
//! `parts`), with an operand list `L(n)` being `[first]` if flagged contiguous, else `n`
//! indices:
//!
//! | kind | args | parts | value |
//! |------|------|-------|-------|
//! | `LEAF` | – | – | input or constant |
//! | `COPY` | `a` | – | `a + c` |
//! | `NEG` | `a` | – | `c - a` |
//! | `UNARY` | `a` | `da` | `f(a)` |
//! | `ADD`, `SUB`, `MUL` | `a b` | – | `a ± b`, `a b` (partials from `vals`) |
//! | `BINARY` | `a b` | `da db` | `f(a, b)` |
//! | `SUM` | `i₀ … iₙ₋₁ n` | – | `Σ v[iₖ]` |
//! | `LINEAR` | `i₀ … iₙ₋₁ n` | `p₀ … pₙ₋₁` | `f` with `∂f/∂v[iₖ] = pₖ` |
//! | `DOT` | `L(n) L(n) flags n` | – | `Σ v[aₖ] v[bₖ]` |
//! | `SUM_SQ` | `L(n) flags n` | – | `Σ v[aₖ]²` |
//!
//! `COPY` records are only made for shifted operands of kinds that read operand values
//! from `vals` (`x + c` itself shares `x`'s record).

use super::TraceData;
use crate::scalar::real::Real;

pub(super) const LEAF: u8 = 0;
pub(super) const COPY: u8 = 1;
pub(super) const NEG: u8 = 2;
pub(super) const UNARY: u8 = 3;
pub(super) const ADD: u8 = 4;
pub(super) const SUB: u8 = 5;
pub(super) const MUL: u8 = 6;
pub(super) const BINARY: u8 = 7;
pub(super) const SUM: u8 = 8;
pub(super) const LINEAR: u8 = 9;
pub(super) const DOT: u8 = 10;
pub(super) const SUM_SQ: u8 = 11;

/// An operand list: where its `k`-th index is.
trait Operands: Copy {
    fn at(self, k: usize) -> usize;
}

/// Contiguous indices from a first one.
#[derive(Clone, Copy)]
struct Range(usize);

impl Operands for Range {
    #[inline(always)]
    fn at(self, k: usize) -> usize {
        self.0 + k
    }
}

/// Gathered indices.
#[derive(Clone, Copy)]
struct List<'a>(&'a [u32]);

impl Operands for List<'_> {
    #[inline(always)]
    fn at(self, k: usize) -> usize {
        self.0[k] as usize
    }
}

/// Number of `args` words of an operand list of length `n`.
#[inline(always)]
fn words(contiguous: bool, n: usize) -> usize {
    if contiguous { 1 } else { n }
}

/// `(args, parts)` words of the record of `kind` whose args end at `ac`.
#[inline]
fn extent(kind: u8, args: &[u32], ac: usize) -> (usize, usize) {
    match kind {
        LEAF => (0, 0),
        COPY | NEG => (1, 0),
        UNARY => (1, 1),
        ADD | SUB | MUL => (2, 0),
        BINARY => (2, 2),
        SUM => (1 + args[ac - 1] as usize, 0),
        LINEAR => {
            let n = args[ac - 1] as usize;
            (1 + n, n)
        }
        DOT | SUM_SQ => {
            let n = args[ac - 1] as usize;
            let f = args[ac - 2];
            let nb = if kind == DOT { words(f & 2 != 0, n) } else { 0 };
            (2 + words(f & 1 != 0, n) + nb, 0)
        }
        _ => unreachable!("unknown record kind {kind}"),
    }
}

#[inline(always)]
fn dot_back<T: Real, A: Operands, B: Operands>(
    a: A,
    b: B,
    n: usize,
    g: T,
    vals: &[T],
    adj: &mut [T],
) {
    for k in 0..n {
        let (i, j) = (a.at(k), b.at(k));
        let (vi, vj) = (vals[i], vals[j]);
        adj[i] += vj * g;
        adj[j] += vi * g;
    }
}

#[inline(always)]
fn sum_sq_back<T: Real, A: Operands>(a: A, n: usize, g: T, vals: &[T], adj: &mut [T]) {
    let g2 = g + g;
    for k in 0..n {
        let i = a.at(k);
        adj[i] += vals[i] * g2;
    }
}

/// Splits an operand list of `n` off the end of `args[..ac]`, calling `f` with it.
macro_rules! with_list {
    ($args:expr, $ac:ident, $contiguous:expr, $n:expr, |$o:ident| $body:expr) => {{
        if $contiguous {
            $ac -= 1;
            let $o = Range($args[$ac] as usize);
            $body
        } else {
            $ac -= $n;
            let $o = List(&$args[$ac..$ac + $n]);
            $body
        }
    }};
}

/// Accumulates adjoints from record `top` down to the first (`adj` holds the seeds).
pub(super) fn sweep<T: Real>(d: &TraceData<T>, adj: &mut [T], top: usize) {
    let (kinds, vals, args, parts) = (&d.kinds[..], &d.vals[..], &d.args[..], &d.parts[..]);
    // One length for values and adjoints: an index checked against one is checked
    // against both.
    let adj = &mut adj[..vals.len()];
    let (mut ac, mut pc) = (args.len(), parts.len());
    // Records above the highest seed have zero adjoints: only move the cursors.
    for &kind in kinds[top + 1..].iter().rev() {
        let (a, p) = extent(kind, args, ac);
        ac -= a;
        pc -= p;
    }
    for i in (0..=top).rev() {
        let g = adj[i];
        match kinds[i] {
            LEAF => {}
            COPY => {
                ac -= 1;
                adj[args[ac] as usize] += g;
            }
            NEG => {
                ac -= 1;
                adj[args[ac] as usize] -= g;
            }
            UNARY => {
                ac -= 1;
                pc -= 1;
                adj[args[ac] as usize] += parts[pc] * g;
            }
            ADD => {
                ac -= 2;
                adj[args[ac] as usize] += g;
                adj[args[ac + 1] as usize] += g;
            }
            SUB => {
                ac -= 2;
                adj[args[ac] as usize] += g;
                adj[args[ac + 1] as usize] -= g;
            }
            MUL => {
                ac -= 2;
                let (a, b) = (args[ac] as usize, args[ac + 1] as usize);
                let (va, vb) = (vals[a], vals[b]);
                adj[a] += vb * g;
                adj[b] += va * g;
            }
            BINARY => {
                ac -= 2;
                pc -= 2;
                adj[args[ac] as usize] += parts[pc] * g;
                adj[args[ac + 1] as usize] += parts[pc + 1] * g;
            }
            SUM => {
                let n = args[ac - 1] as usize;
                ac -= 1 + n;
                for &a in &args[ac..ac + n] {
                    adj[a as usize] += g;
                }
            }
            LINEAR => {
                let n = args[ac - 1] as usize;
                ac -= 1 + n;
                pc -= n;
                for (&a, &p) in args[ac..ac + n].iter().zip(&parts[pc..pc + n]) {
                    adj[a as usize] += p * g;
                }
            }
            DOT => {
                let (n, f) = (args[ac - 1] as usize, args[ac - 2]);
                ac -= 2;
                with_list!(args, ac, f & 2 != 0, n, |b| with_list!(
                    args,
                    ac,
                    f & 1 != 0,
                    n,
                    |a| dot_back(a, b, n, g, vals, adj)
                ));
            }
            SUM_SQ => {
                let (n, f) = (args[ac - 1] as usize, args[ac - 2]);
                ac -= 2;
                with_list!(args, ac, f & 1 != 0, n, |a| sum_sq_back(a, n, g, vals, adj));
            }
            kind => unreachable!("unknown record kind {kind}"),
        }
    }
    debug_assert_eq!((ac, pc), (0, 0), "sweep cursors out of step");
}
