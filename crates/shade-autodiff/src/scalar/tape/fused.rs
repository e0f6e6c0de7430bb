//! Recording of the fused n-ary helpers of [`Real`] on [`Var`]s: one record for the
//! whole operation, operand lists stored as ranges when contiguous (see [`sweep`] for the
//! layouts).

use super::{CONSTANT, RECORDED, SHIFTED, Trace, TraceData, Var, sweep};
use crate::scalar::real::Real;

/// `Σ a[k].v b[k]` with four accumulators, as `f64`'s [`Real::dot`] sums (so that
/// recorded rows equal the plain `f64` ones and the sum is not one dependency chain).
#[inline(always)]
fn dot_values<T: Real>(a: &[Var<'_, T>], b: &[T]) -> T {
    let mut acc = [T::zero(); 4];
    let mut ca = a.chunks_exact(4);
    let mut cb = b.chunks_exact(4);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for l in 0..4 {
            acc[l] += x[l].v * y[l];
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        s += x.v * *y;
    }
    s
}

impl<T: Real> TraceData<T> {
    /// Pushes the operand list of `xs` for a kind whose sweep reads the operands' values
    /// from `vals`: a range if all are recorded, unshifted and contiguous (`[first]`,
    /// returns `true`), else their indices, with constants materialised as leaves and
    /// shifted entries as copies so that the sweep finds their values (returns `false`).
    ///
    /// Copies push operands of their own before the list: a record may use this for its
    /// first list only (later lists go through [`Self::operands_with_values`]).
    #[inline]
    fn operands(&mut self, xs: &[Var<'_, T>]) -> bool {
        let Some(first) = xs.first() else {
            return false;
        };
        // One branch-free pass for the checks, one copy of the indices.
        let i0 = first.idx;
        let (mut state, mut contiguous) = (RECORDED, true);
        for (k, x) in xs.iter().enumerate() {
            state |= x.state;
            contiguous &= x.idx == i0.wrapping_add(k as u32);
        }
        if state == RECORDED {
            if contiguous {
                self.args.push(i0);
            } else {
                self.args.extend(xs.iter().map(|x| x.idx));
            }
            return contiguous;
        }
        let mut list = core::mem::take(&mut self.scratch);
        list.clear();
        for x in xs {
            // On overflow the recording is discarded: any index will do.
            let i = match x.tape {
                Some(_) if x.state == SHIFTED => {
                    self.args.push(x.idx);
                    self.record(sweep::COPY, x.v).unwrap_or(0)
                }
                Some(_) => x.idx,
                None => self.record(sweep::LEAF, x.v).unwrap_or(0),
            };
            list.push(i);
        }
        self.args.extend_from_slice(&list);
        self.scratch = list;
        false
    }

    /// Pushes the operand list of `xs` and their values (to `parts`), for a kind whose
    /// sweep reads the values from there, so shifted entries need no copy: a range if
    /// all are recorded and contiguous (returns `true`), else indices with constants
    /// materialised as leaves (returns `false`).
    #[inline]
    fn operands_with_values(&mut self, xs: &[Var<'_, T>]) -> bool {
        self.parts.extend(xs.iter().map(|x| x.v));
        let Some(first) = xs.first() else {
            return false;
        };
        let i0 = first.idx;
        let mut contiguous = true;
        for (k, x) in xs.iter().enumerate() {
            contiguous &= (x.state != CONSTANT) & (x.idx == i0.wrapping_add(k as u32));
        }
        if contiguous {
            self.args.push(first.idx);
            return true;
        }
        for x in xs {
            let i = match x.tape {
                Some(_) => x.idx,
                None => self.record(sweep::LEAF, x.v).unwrap_or(0),
            };
            self.args.push(i);
        }
        false
    }

    /// Pushes one term of a `LINEAR` record if `x` is recorded.
    #[inline(always)]
    pub(super) fn term(&mut self, x: &Var<'_, T>, p: T, len: &mut u32) {
        if x.tape.is_some() {
            self.args.push(x.idx);
            self.parts.push(p);
            *len += 1;
        }
    }

    /// Closes a `LINEAR` record of `len` terms with value `v`.
    #[inline(always)]
    pub(super) fn linear(&mut self, len: u32, v: T) -> Option<u32> {
        self.args.push(len);
        self.record(sweep::LINEAR, v)
    }
}

impl<T: Real> Trace<T> {
    /// Records `f` with value `v` and partials `p` for the recorded entries of `x`.
    pub(super) fn linear(
        &self,
        x: &[Var<'_, T>],
        p: impl Fn(&Var<'_, T>) -> T,
        v: T,
    ) -> Var<'_, T> {
        let mut d = self.data.borrow_mut();
        let mut len = 0u32;
        for xi in x {
            d.term(xi, p(xi), &mut len);
        }
        let i = d.linear(len, v);
        drop(d);
        self.wrap(i, v)
    }

    /// Records `Σ a_i b_i` over the common length (`n > 0`, both sides recorded).
    pub(super) fn dot(&self, a: &[Var<'_, T>], b: &[Var<'_, T>]) -> Var<'_, T> {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let mut v = T::zero();
        for (x, y) in a.iter().zip(b) {
            v += x.v * y.v;
        }
        let mut d = self.data.borrow_mut();
        let i = if a.iter().chain(b).any(|x| x.state == SHIFTED) {
            // Operand values are not all in `vals`: store the partials.
            let mut len = 0u32;
            for (x, y) in a.iter().zip(b) {
                d.term(x, y.v, &mut len);
                d.term(y, x.v, &mut len);
            }
            d.linear(len, v)
        } else {
            let fa = d.operands(a);
            let fb = d.operands(b);
            d.args
                .extend_from_slice(&[u32::from(fa) | u32::from(fb) << 1, n as u32]);
            d.record(sweep::DOT, v)
        };
        drop(d);
        self.wrap(i, v)
    }

    /// Records `Σ a_i²` (`a` non-empty, some entry recorded).
    pub(super) fn sum_sq(&self, a: &[Var<'_, T>]) -> Var<'_, T> {
        let mut v = T::zero();
        for x in a {
            v += x.v * x.v;
        }
        if a.iter().any(|x| x.state == SHIFTED) {
            return self.linear(a, |x| x.v + x.v, v);
        }
        let mut d = self.data.borrow_mut();
        let fa = d.operands(a);
        d.args.extend_from_slice(&[u32::from(fa), a.len() as u32]);
        let i = d.record(sweep::SUM_SQ, v);
        drop(d);
        self.wrap(i, v)
    }

    /// Records `y = L x` for `L` lower-triangular, packed by rows (`n = y.len() > 0`,
    /// shapes checked).
    pub(super) fn lower_tri_matvec<'s>(
        &'s self,
        l: &[Var<'_, T>],
        x: &[Var<'_, T>],
        y: &mut [Var<'s, T>],
    ) {
        let n = y.len();
        let mut d = self.data.borrow_mut();
        let fl = d.operands(l);
        let fx = d.operands_with_values(x);
        d.args
            .extend_from_slice(&[u32::from(fl) | u32::from(fx) << 1, n as u32]);
        // The block record sits at the first output; the others are placeholders the
        // sweep passes over (their adjoints are read by the block record).
        let mut off = 0;
        for r in 0..n {
            let mut v = T::zero();
            for (lv, xv) in l[off..off + r + 1].iter().zip(&x[..r + 1]) {
                v += lv.v * xv.v;
            }
            off += r + 1;
            let kind = if r == 0 { sweep::TRI } else { sweep::LEAF };
            let i = d.record(kind, v);
            y[r] = self.wrap(i, v);
        }
    }

    /// Records `‖L x‖²` for `L` lower-triangular, packed by rows (`n = x.len() > 0`,
    /// shapes checked).
    pub(super) fn lower_tri_matvec_sum_sq(&self, l: &[Var<'_, T>], x: &[Var<'_, T>]) -> Var<'_, T> {
        let n = x.len();
        let mut guard = self.data.borrow_mut();
        let d = &mut *guard;
        // `L`'s indices, and whether they can be used as they are, in one pass.
        let base = d.args.len();
        let mut state = RECORDED;
        d.args.extend(l.iter().map(|lv| {
            state |= lv.state;
            lv.idx
        }));
        let fl = if state == RECORDED {
            let i0 = d.args[base];
            let contiguous = d.args[base..]
                .iter()
                .enumerate()
                .all(|(k, &i)| i == i0.wrapping_add(k as u32));
            if contiguous {
                d.args.truncate(base + 1);
            }
            contiguous
        } else {
            d.args.truncate(base);
            d.operands(l)
        };
        let fx = d.operands_with_values(x);
        d.args
            .extend_from_slice(&[u32::from(fl) | u32::from(fx) << 1, n as u32]);
        // The rows of `L x` follow `x`'s values in `parts`: the sweep needs them
        // (`ȳ = 2 ȳ' L x`).
        let p0 = d.parts.len() - n;
        d.parts.resize(p0 + 2 * n, T::zero());
        let (xv, yv) = d.parts[p0..].split_at_mut(n);
        let (mut v, mut off) = (T::zero(), 0);
        for (r, y) in yv.iter_mut().enumerate() {
            *y = dot_values(&l[off..=off + r], &xv[..=r]);
            off += r + 1;
            v += *y * *y;
        }
        let i = d.record(sweep::TRI_SQ, v);
        drop(guard);
        self.wrap(i, v)
    }
}
